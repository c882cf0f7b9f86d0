"""How many examples a property test with a count of its own tries, by Hypothesis profile.

``examples(n)`` is ``n`` under the ``thorough`` profile (``make test-soak``: the counts the
tests always had) and a share of it under ``light`` (``make test``): the share is the light
profile's ``max_examples`` over the thorough one's, as for every property test without a
count of its own. The profiles are registered, and the one of ``HYPOTHESIS_PROFILE`` loaded,
in tests/conftest.py, before any test module is imported.
"""

from __future__ import annotations

from hypothesis import settings

__all__ = ["THOROUGH_EXAMPLES", "examples"]

THOROUGH_EXAMPLES = 100  # the thorough profile's max_examples: Hypothesis's own default


def examples(thorough: int) -> int:
    """``thorough`` scaled by the loaded profile (never below 1)."""
    return max(1, thorough * settings().max_examples // THOROUGH_EXAMPLES)
