"""`showdown journal`: the technician's tools for a table's journal."""
