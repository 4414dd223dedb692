#!/usr/bin/env python
"""Peak memory of the transient gradient: O(sqrt N) states with checkpointing, O(N) without.

The problem is `topopt_problems.transient_heat` (40 x 60 elements, 2 460 free
dofs, one state = 19.7 kB) at N = 50, 200 and 800 steps. Each measurement
runs in a fresh process: it builds the problem, evaluates the objective
once (the factorization is then cached), starts `tracemalloc` (numpy's
arrays are traced) and takes the peak of traced memory over one objective
(no state kept: the baseline) and over one gradient; the difference is what
the gradient holds beyond a forward solve. Two schemes: ``sqrt`` (the
default, every ``ceil(sqrt N)``-th state checkpointed, segments recomputed)
and ``all`` (``every=1``: every state kept, as a tape of N solves or
pyMOTO's ``TransientSolve`` keeps them). Medians of `--repeats` processes.

Printed per case: the states the sweep held at once
(`TransientSystem.counts`), the extra bytes, their ratio to one state, and
the solves per gradient; then the growth exponent of the extra bytes from
N = 50 to 800 (sqrt: 0.5; all: 1). JSON to
``results/benchmark_transient_memory.json`` (``--out``) with the machine, the commit and
the extra bytes' spread over the processes (`harness`). ``--smallest``: N = 10 and 20,
one process each.

    python scripts/benchmarks/benchmark_transient_memory.py [--repeats 3] [--steps 50 200 800]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "results", "benchmark_transient_memory.json")

CHILD = """
import json, sys, tracemalloc
sys.path.insert(0, {root!r})
import numpy as np
from topopt import ad
from topopt_problems import transient_heat
from topopt.formulations.transient_heat import TransientHeatProblem
model, Q, s, L, dt = transient_heat.setup(40, 60, {steps}, 0.1)
p = TransientHeatProblem(model, Q, s, L, dt, 0.5, 2 * transient_heat.LX / 40, capacity=1000.0,
                         scale=100.0, Emin=1e-6, every={every})
x = np.random.default_rng(0).uniform(0.2, 0.8, p.n)
p.objective(x)                                    # factorization cached, imports done
tracemalloc.start()
p.objective(x)
base = tracemalloc.get_traced_memory()[1]
tracemalloc.reset_peak()
solves0 = p.transient.counts["solves"]
g = ad.gradient(p.objective, x)
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps(dict(base=base, peak=peak, states=p.transient.counts["states"],
                      solves=p.transient.counts["solves"] - solves0,
                      state_bytes=8 * p.transient.free.size)))
"""


def measure(steps: int, every, repeats: int) -> dict:
    """Median figures of `repeats` fresh processes."""
    code = CHILD.format(root=ROOT, steps=steps, every=every)
    runs = [harness.child([sys.executable, "-c", code]) for _ in range(repeats)]
    out = {k: harness.spread(r[k] for r in runs)["median"] for k in runs[0]}
    extra = harness.spread(r["peak"] - r["base"] for r in runs)
    out["extra"], out["spread"] = extra["median"], {"extra": extra}
    out["ratio"] = out["extra"] / out["state_bytes"]
    return out


def _fit(table, steps) -> dict:
    """Least squares ``extra = working + per_state * states`` over every case."""
    rows = [table[s][n] for s in table for n in steps]
    A = np.array([[1.0, r["states"]] for r in rows])
    working, per_state = np.linalg.lstsq(A, np.array([r["extra"] for r in rows]), rcond=None)[0]
    return {"working": float(working), "per_state": float(per_state),
            "state_bytes": rows[0]["state_bytes"]}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[50, 200, 800])
    harness.options(parser, repeats=3, out=OUT, smallest="N = 10 and 20")
    args = parser.parse_args(argv)
    if args.smallest:
        args.steps, args.repeats = [10, 20], 1
    table = {}
    for scheme, every in (("sqrt", None), ("all", 1)):
        rows = table[scheme] = {}
        for n in args.steps:
            r = rows[n] = measure(n, every, args.repeats)
            print(f"{scheme:4s} N = {n:4d}: {r['states']:4.0f} states held, gradient holds "
                  f"{r['extra'] / 1e6:7.3f} MB beyond the forward solve = {r['ratio']:6.1f} "
                  f"states of {r['state_bytes'] / 1e3:.1f} kB; {r['solves']:.0f} solves",
                  flush=True)
    fit = _fit(table, args.steps)
    print(f"fit over all cases: extra = {fit['working'] / 1e6:.3f} MB (the sweep's working "
          f"arrays) + {fit['per_state'] / 1e3:.2f} kB per state held (one state: "
          f"{fit['state_bytes'] / 1e3:.2f} kB)")
    n0, n1 = min(args.steps), max(args.steps)
    for scheme, rows in table.items():
        held = {n: rows[n]["extra"] - fit["working"] for n in args.steps}
        slope = float(np.log(held[n1] / held[n0]) / np.log(n1 / n0))
        rows["exponent"] = slope
        print(f"{scheme}: states' memory " + ", ".join(
            f"N = {n}: {held[n] / rows[n]['state_bytes']:.1f} states" for n in args.steps)
            + f"; grows like N^{slope:.2f} from N = {n0} to {n1}")
    harness.write(args.out, harness.record(
        {"command": harness.command(__file__, argv),
         "setup": "topopt_problems.transient_heat 40 x 60, implicit Euler, tracemalloc peak "
                  "of one gradient minus that of one objective, medians",
         "repeats": args.repeats, "fit": fit,
         "results": {s: {str(k): v for k, v in rows.items()} for s, rows in table.items()}},
        args.repeats))
    print(f"-> {args.out}")
    return table


if __name__ == "__main__":
    main()
