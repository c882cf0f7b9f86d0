"""A simulated casino floor: the central service, a process per simulated table, the desk and the
patrons, on one clock (`showdown demo`, `showdown simulate floor`)."""
