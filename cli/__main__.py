"""`python -m cli` is the `showdown` command."""

from cli.main import main

raise SystemExit(main())
