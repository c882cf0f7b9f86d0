"""The technician's bench (docs/operations/bench.md): a page and a JSON API, served by the
table daemon only when ``[bench] enabled``, with which a person drives the table's simulated
devices. It works on the `drivers.adapter` protocols of the simulated devices the table's
wiring hands it, never on `simulators/`."""

from controller.sim_bench.bench import Bench, BenchDevices, BenchRefusal
from controller.sim_bench.server import serve_bench

__all__ = ["Bench", "BenchDevices", "BenchRefusal", "serve_bench"]
