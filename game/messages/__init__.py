"""Every message a table sends and every command the desk sends, one typed definition each, and the
field checks they share."""
