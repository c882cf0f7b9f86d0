"""The `showdown` command line: the entry point (`cli.main`), one module or sub-package per command
group."""
