"""Import circles between files: the strongly connected groups of the import graph of our
packages (type-only imports included), each a group of files that import one another.

`python -m tests.import_circles` prints each circle and exits 1 when there is one; it reads
the packages found on sys.path (tests/test_layers.py runs it on a copy of the tree).
"""

from __future__ import annotations

import sys

import grimp

PACKAGES = ("game", "wire", "runtime", "drivers", "simulators", "adapters", "controller",
            "leaderboard", "deploy", "cli", "floor")


def import_circles(packages: tuple[str, ...] = PACKAGES) -> list[list[str]]:
    """Every group of two or more modules that reach one another by imports (Tarjan's SCCs)."""
    graph = grimp.build_graph(*packages, cache_dir=None)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        # An iterative Tarjan: (module, its next edge to look at).
        work = [(root, 0)]
        while work:
            module, at = work.pop()
            if at == 0:
                index[module] = low[module] = len(index)
                stack.append(module)
                on_stack.add(module)
            for i in range(at, len(edges[module])):
                other = edges[module][i]
                if other not in index:
                    work.append((module, i + 1))
                    work.append((other, 0))
                    break
                if other in on_stack:
                    low[module] = min(low[module], index[other])
            else:
                if low[module] == index[module]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == module:
                            break
                    if len(group) > 1:
                        circles.append(sorted(group))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
    return sorted(circles)


def main() -> int:
    """Print the circles; exit 1 when there is one."""
    circles = import_circles()
    for group in circles:
        print("circle: " + " <-> ".join(group))
    print(f"{len(circles)} import circles between files")
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
