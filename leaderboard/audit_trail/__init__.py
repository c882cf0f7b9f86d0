"""The audit trail that shows tampering (docs/audit-trail.md): the hash-chained audit rows
(`chain`), their signed heads (`heads`), the database triggers that record writes made
outside the service (`outside_writes`), the `[audit]` settings (`settings`) and the check
of all of it (`verify`)."""
