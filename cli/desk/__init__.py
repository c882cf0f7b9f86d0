"""`showdown desk`: the registration desk on the command line."""
