"""Installing a venue's machines (`showdown install`) and checking them (`showdown doctor`).

`deploy.plan` turns what the technician asked for into a list of typed steps without touching
the machine; `deploy.execute` carries the steps out, each one idempotent; `cli.doctor.table`
checks a configured table. Only `cli.install` and `cli.doctor.command`
import this package.
"""
