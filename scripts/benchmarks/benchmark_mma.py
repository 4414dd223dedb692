"""NLopt's MMA against ours (`topopt.optimize.mma`) serially: seconds per iteration, bytes per variable.

The separable test problem of ``scripts/benchmarks/benchmark_mma_scale.py``, shaped like
compliance with one volume constraint, values and gradients blockwise::

    minimize   f(x) = sum_i c_i / x_i^3,  c_i = 0.027 (1 + (i mod 10) / 10) / n
    subject to g(x) = mean(x) - 0.3 <= 0,  1e-3 <= x_i <= 1,  x0 = 0.3

Each optimizer runs `--evals` evaluations with the same settings (NLopt:
``LD_MMA`` with the SLSQP dual and Svanberg's ``rho_init``, as `minimize`
sets it; ours: `MMA` with the same ``rho_init``), in two modes:

* ``raw``: the optimizer alone. NLopt's callbacks fill NLopt's arrays; ours
  returns fresh ``(2, n)`` gradients per call (what `minimize`'s evaluator
  hands it), which it keeps by reference;
* ``driver``: through `topopt.optimize.minimize` (``optimizer="nlopt"`` or
  ``"mma"``), the problem as two `topopt.ad` primitives.

Each size, optimizer and mode runs in a fresh subprocess (`harness.child`), its peak
resident memory (`harness.peak_bytes`, reset by `harness.reset_peak` just before the
run) its own. Per run:

* ``optimizer_s``: the optimizer's own time per iteration, the median over
  evaluations 2.. of the gap between the end of one design's last callback
  and the start of the next design's first (the dual solve and the updates), its
  spread beside it;
* ``peak_bytes_per_var``: (peak RSS of the run - RSS just before it) / n,
  with the problem's ``c`` and ``x0`` allocated before;
* ``objectives``: the objective per evaluation (ours and NLopt's agree to
  ~1e-9 while NLopt's SLSQP dual is accurate).

Writes ``results/benchmark_mma.json`` (with the machine and the commit) and
prints a table. Sizes above 1e6 are refused (a shared machine). ``--smallest``: 10 000
variables, 4 evaluations.

    PYTHONPATH=. python scripts/benchmarks/benchmark_mma.py [--sizes 1e5,1e6] [--evals 8]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "benchmarks"))
sys.path.insert(0, ROOT)

import harness  # noqa: E402
from benchmark_mma_scale import LOWER, VOLUME, Problem, _gaps, _primitives, raw_nlopt  # noqa: E402

MAX_N = 1_000_000


def _raw_mma(prob: Problem, evals: int, calls: list, objectives: list):
    import numpy as np
    from topopt.optimize.mma import MMA
    x0 = np.full(prob.n, VOLUME)
    rho = prob.rho_init(x0)
    harness.reset_peak()
    before = harness.rss_bytes()

    def fun(x, need_grad):
        t0 = time.perf_counter()
        grads = np.empty((2, prob.n)) if need_grad else None
        values = np.array([prob.objective(x, None if grads is None else grads[0]),
                           prob.volume(x, None if grads is None else grads[1])])
        objectives.append(float(values[0]))
        calls.append((t0, time.perf_counter(), len(objectives)))
        return values, grads

    MMA(LOWER, 1.0, maxeval=evals, ftol_rel=1e-12, rho_init=rho,
        constraint_tol=1e-8).minimize(fun, x0)
    return before


def _record(calls: list, objectives: list, before: int) -> dict:
    """The optimizer's seconds per iteration (median and spread of the gaps), the
    objectives and the memory of a run whose callbacks were timed into `calls`."""
    peak = harness.peak_bytes()
    gaps = _gaps(calls, sorted({c[2] for c in calls}))
    seconds = harness.spread(gaps)
    return {"optimizer_s": seconds["median"], "gaps_s": gaps, "spread": seconds,
            "evaluations": len(objectives), "objectives": objectives,
            "rss_before_bytes": before, "peak_bytes": peak}


def run_raw(prob: Problem, optimizer: str, evals: int) -> dict:
    calls, objectives = [], []
    if optimizer == "nlopt":
        before, _ = raw_nlopt(prob, evals, calls, objectives)
    else:
        before = _raw_mma(prob, evals, calls, objectives)
    return _record(calls, objectives, before)


def run_driver(prob: Problem, optimizer: str, evals: int) -> dict:
    import numpy as np
    from topopt.optimize import minimize
    from topopt.optimize.run import _Run
    compliance, volume = _primitives(prob)
    calls, evaluate = [], _Run.evaluate

    def timed_evaluate(self, x, gradients=True):
        t0 = time.perf_counter()
        out = evaluate(self, x, gradients)
        calls.append((t0, time.perf_counter(), len(self.history)))
        return out

    _Run.evaluate = timed_evaluate
    x0 = np.full(prob.n, VOLUME)
    harness.reset_peak()
    before = harness.rss_bytes()
    res = minimize(lambda x: (compliance(x), volume(x)), x0, bounds=(LOWER, 1.0),
                   maxeval=evals, ftol_rel=1e-12, verbose=False, optimizer=optimizer)
    return _record(calls, [h["objective"] for h in res.history], before)


def child(optimizer: str, mode: str, n: int, evals: int) -> None:
    """One run in this (fresh) process; the record as JSON on the last line."""
    import nlopt  # noqa: F401  (imported before the baseline)
    import numpy as np  # noqa: F401
    import topopt.optimize  # noqa: F401
    prob = Problem(n)
    rec = (run_raw if mode == "raw" else run_driver)(prob, optimizer, evals)
    rec.update(optimizer=optimizer, mode=mode, n=n,
               peak_bytes_per_var=(rec["peak_bytes"] - rec["rss_before_bytes"]) / n)
    print(json.dumps(rec))


def _table(records: list) -> str:
    rows = [f"{'n':>9} {'optimizer':>9} {'mode':>6} {'s/iteration':>11} {'peak B/var':>10} "
            f"{'final objective':>16}"]
    for r in records:
        rows.append(f"{r['n']:>9} {r['optimizer']:>9} {r['mode']:>6} {r['optimizer_s']:11.4f} "
                    f"{r['peak_bytes_per_var']:10.1f} {r['objectives'][-1]:16.10g}")
    return "\n".join(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e5,1e6", help="numbers of variables, comma-separated")
    ap.add_argument("--evals", type=int, default=8, help="MMA evaluations per run")
    ap.add_argument("--modes", default="raw,driver")
    ap.add_argument("--out", default="results/benchmark_mma.json")
    ap.add_argument("--smallest", action="store_true",
                    help="10 000 variables, 4 evaluations: a few seconds (the tests)")
    ap.add_argument("--child", nargs=3, metavar=("OPT", "MODE", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        opt, mode, n = args.child
        return child(opt, mode, int(n), args.evals)
    if args.smallest:
        args.sizes, args.evals = "1e4", 4
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    if max(sizes) > MAX_N:
        raise SystemExit(f"--sizes: at most {MAX_N} variables here (a shared machine)")
    records = []
    for n in sizes:
        for mode in args.modes.split(","):
            for opt in ("nlopt", "mma"):
                records.append(harness.child([sys.executable, __file__, "--evals",
                                              str(args.evals), "--child", opt, mode, str(n)]))
                print(_table(records[-1:]).splitlines()[-1], flush=True)
    harness.write(args.out, harness.record(
        {"command": harness.command(__file__, argv), "evals": args.evals, "records": records},
        repeats=args.evals - 1, statistic="median over the evaluations 2.."))
    print(_table(records))


if __name__ == "__main__":
    main()
