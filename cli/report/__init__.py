"""`showdown report`: the reports a casino reads, and the simulated score distribution."""
