"""`showdown recall`: a table's last hands from its journal, in full or one screen a hand."""
