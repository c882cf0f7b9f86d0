"""Helpers of the benchmark scripts in bench/ (imported as ``support.*``: a script's own
directory is first on ``sys.path`` when it runs as ``python bench/<script>.py``)."""
