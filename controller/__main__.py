"""`python -m controller` is the `showdown` command."""

from controller.cli import main

raise SystemExit(main())
