"""Installing a venue's machines (`showdown install`) and checking them (`showdown doctor`).

`deploy.plan` turns what the technician asked for into a list of typed steps without touching
the machine; `deploy.execute` carries the steps out, each one idempotent; `deploy.doctor`
checks a configured table. Only `controller.commands.install` and `controller.commands.doctor`
import this package.
"""
