"""`showdown simulate`: the device simulators, one rehearsed table, a whole simulated floor."""
