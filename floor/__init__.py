"""A simulated casino floor: the central service, a process per simulated table, the desk and the
patrons, on one clock (`showdown demo`, `showdown simulate floor`); and the rehearsal of one
table on its simulated devices (`showdown simulate table`, floor.rehearsal)."""
