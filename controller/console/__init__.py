"""The table console: the dealer's touch screen, the participant's view and the score slip,
served by the table daemon itself (Starlette on uvicorn, in the daemon's loop).

`server.serve_console` runs it; `app` holds the routes, `guard` the checks every request
passes, `views` what the pages read from the daemon, `slip` the printable score slip, and
`static/` the pages, script and stylesheet (no external assets). docs/console.md describes
the screens, the routes and the security rules.
"""

from controller.console.server import serve_console

__all__ = ["serve_console"]
