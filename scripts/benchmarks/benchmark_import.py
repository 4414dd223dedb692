"""How long ``import topopt`` takes: the median of fresh interpreter processes.

::

    python scripts/benchmarks/benchmark_import.py          # 5 processes, prints the median
    python scripts/benchmarks/benchmark_import.py -n 9 --module topopt.reliability

Each process is timed around the import alone (``time.perf_counter`` inside
the child, so the interpreter's own start-up is not counted). The heavy
modules a bare ``import topopt`` must not pull in (``scipy.stats``,
matplotlib) are listed when they appear. ``python -X importtime -c 'import
topopt'`` gives the per-module breakdown.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

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
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p))
    runs = []
    for _ in range(n):
        out = subprocess.run([sys.executable, "-c", CHILD.format(module=module, heavy=HEAVY)],
                             capture_output=True, text=True, env=env, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    times = [r["seconds"] for r in runs]
    return {"module": module, "n": n, "seconds": times, "median": statistics.median(times),
            "heavy": sorted({m for r in runs for m in r["heavy"]})}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5, help="fresh processes (default: %(default)s)")
    parser.add_argument("--module", default="topopt", help="module to import (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error(f"argument -n: must be an integer >= 1, got {args.n}")
    record = time_import(args.module, args.n)
    print(f"import {record['module']}: median {record['median']:.3f} s over {record['n']} fresh "
          f"processes ({', '.join(f'{t:.3f}' for t in record['seconds'])})")
    if record["heavy"]:
        print(f"heavy modules imported: {', '.join(record['heavy'])}")
    return record


if __name__ == "__main__":
    main()
