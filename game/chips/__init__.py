"""Chips: the registry of RFID chips, what lies on each spot, the table's float and the
inventory."""
