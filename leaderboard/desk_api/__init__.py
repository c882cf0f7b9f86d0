"""The registration desk over HTTP: the routes, one module per group of operations, the request
checks and the workstation's client."""
