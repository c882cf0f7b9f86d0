"""One module per `showdown` subcommand."""
