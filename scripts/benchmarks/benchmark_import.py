"""How long ``import topopt`` takes: the median of fresh interpreter processes.

::

    python scripts/benchmarks/benchmark_import.py          # 5 processes, prints the median
    python scripts/benchmarks/benchmark_import.py -n 9 --module topopt.reliability [--out FILE]

Each process is timed around the import alone (``time.perf_counter`` inside
the child, so the interpreter's own start-up is not counted). The heavy
modules a bare ``import topopt`` must not pull in (``scipy.stats``,
matplotlib) are listed when they appear. ``python -X importtime -c 'import
topopt'`` gives the per-module breakdown. ``--out`` writes the median with its spread,
the machine and the commit (`harness`); ``--smallest``: 2 processes.
"""

from __future__ import annotations

import argparse
import sys

import harness

HEAVY = ("scipy.stats", "matplotlib", "topopt.reliability", "topopt.plot")

CHILD = """
import json, sys, time
t = time.perf_counter()
import {module}
dt = time.perf_counter() - t
print(json.dumps({{"seconds": dt, "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def time_import(module: str = "topopt", n: int = 5) -> dict:
    """Import `module` in `n` fresh processes; the times, their median, heavy modules seen."""
    argv = [sys.executable, "-c", CHILD.format(module=module, heavy=HEAVY)]
    runs = [harness.child(argv) for _ in range(n)]
    times = [r["seconds"] for r in runs]
    stats = harness.spread(times)
    return {"module": module, "n": n, "seconds": times, "median": stats["median"],
            "timing": stats, "heavy": sorted({m for r in runs for m in r["heavy"]})}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", default="topopt", help="module to import (default: %(default)s)")
    harness.options(parser, repeats=5, smallest="2 processes")
    parser.add_argument("-n", dest="repeats", type=int, help="fresh processes (--repeats)")
    args = parser.parse_args(argv)
    args.n = 2 if args.smallest else args.repeats
    if args.n < 1:
        parser.error(f"argument -n: must be an integer >= 1, got {args.n}")
    record = time_import(args.module, args.n)
    print(f"import {record['module']}: median {record['median']:.3f} s over {record['n']} fresh "
          f"processes ({', '.join(f'{t:.3f}' for t in record['seconds'])})")
    if record["heavy"]:
        print(f"heavy modules imported: {', '.join(record['heavy'])}")
    if args.out:
        harness.write(args.out, harness.record(dict(command=harness.command(__file__, argv), **record),
                                               args.n))
    return record


if __name__ == "__main__":
    main()
