"""The tournament: entries and their ledgers, its settings, the calendar, standings, prizes and the
Final's seat draw."""
