"""NLopt's LD_MMA at 1, 4 and 8 M variables: seconds per evaluation and bytes per variable.

A separable test problem shaped like compliance, cheap and with analytic
gradients (blockwise, so the problem itself holds only ``c`` and ``x0``)::

    minimize   f(x) = sum_i c_i / x_i^3,  c_i = 0.027 (1 + (i mod 10) / 10) / n
    subject to g(x) = mean(x) - 0.3 <= 0,  1e-3 <= x_i <= 1,  x0 = 0.3

run for a few evaluations (a) by raw ``nlopt.opt(LD_MMA)`` with the
driver's parameters (the SLSQP dual, Svanberg's ``rho_init``) and (b)
through `topopt.optimize.minimize` with a checkpoint written after every
evaluation. Each size and mode runs in a fresh subprocess, so its peak
resident memory (`harness.peak_bytes`, reset before the run by `harness.reset_peak`)
is its own. Per mode (medians: `harness.spread`, its min and max beside them):

* ``nlopt_s``: NLopt's own time per evaluation, the median over the
  evaluations 2.. of the gap between the last callback of one design and the
  first callback of the next (the dual solve and the asymptote update);
* ``driver_s``: the time in our callbacks per evaluation minus the time in
  the problem's own functions and minus the checkpoint write (median);
* ``checkpoint_s`` and ``checkpoint_bytes``: one checkpoint write (median)
  and its file size;
* ``peak_bytes_per_var``: (peak RSS of the run - RSS just before it) / n,
  with the problem's ``c`` and ``x0`` allocated before (raw: before
  ``nlopt.opt``, whose bounds count);
* ``objectives``: the objective of each evaluation (raw and driver must agree).

Writes ``results/benchmark_mma_scale.json`` (``--out``) with the machine and the commit
and prints a table; the figures are in ``docs/notes/mma.md`` ("At millions of
variables"). ``--smallest``: 10 000 variables, 4 evaluations.

Usage::

    PYTHONPATH=. python scripts/benchmarks/benchmark_mma_scale.py [--sizes 1,4,8] [--evals 6]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import harness

BLOCK = 1 << 18          # entries per block of the test problem's loops
LOWER, VOLUME = 1e-3, 0.3


def _median(values) -> float:
    return harness.spread(values)["median"]


class Problem:
    """``sum(c / x^3)`` and ``mean(x) - 0.3``, value and gradient blockwise."""

    def __init__(self, n: int):
        import numpy as np
        self.n = n
        self.c = 0.027 * (1.0 + 0.1 * (np.arange(n) % 10)) / n
        self.seconds = 0.0                  # time in the problem's functions

    def objective(self, x, grad=None) -> float:
        import numpy as np
        t0, f = time.perf_counter(), 0.0
        for s in range(0, self.n, BLOCK):
            inv = 1.0 / x[s:s + BLOCK]
            inv3 = inv * inv * inv
            f += float(np.dot(self.c[s:s + BLOCK], inv3))
            if grad is not None:             # d/dx c x^-3 = -3 c x^-4
                np.multiply(self.c[s:s + BLOCK], -3.0 * inv3 * inv, out=grad[s:s + BLOCK])
        self.seconds += time.perf_counter() - t0
        return f

    def volume(self, x, grad=None) -> float:
        t0 = time.perf_counter()
        g = float(x.mean()) - VOLUME
        if grad is not None:
            grad[:] = 1.0 / self.n
        self.seconds += time.perf_counter() - t0
        return g

    def rho_init(self, x) -> float:
        """Svanberg's ``0.1 mean |df/dx| (ub - lb)``, as `minimize`'s ``rho_init="auto"``."""
        import numpy as np
        grad = np.empty(self.n)
        self.objective(x, grad)
        return max(0.1 * float(np.mean(np.abs(grad) * (1.0 - LOWER))), 1e-5)


def _gaps(calls: list, designs: list) -> list:
    """NLopt's time before each new design: last exit of the previous one to its first entry."""
    out = []
    for k in range(1, len(designs)):
        prev_exit = max(t1 for (t0, t1, d) in calls if d == designs[k - 1])
        first_entry = min(t0 for (t0, t1, d) in calls if d == designs[k])
        out.append(first_entry - prev_exit)
    return out


def raw_nlopt(prob: Problem, evals: int, calls: list, objectives: list) -> tuple[int, float]:
    """Raw ``nlopt.opt(LD_MMA)`` with `minimize`'s parameters, its callbacks timed into
    `calls` and `objectives`: the RSS before it (bytes, after the peak's reset) and the wall
    seconds of ``optimize`` (also `scripts/benchmarks/benchmark_mma.py`'s NLopt run)."""
    import nlopt
    import numpy as np
    n = prob.n
    x0 = np.full(n, VOLUME)
    rho = prob.rho_init(x0)
    harness.reset_peak()                     # NLopt's own bounds (2 n) count
    before = harness.rss_bytes()
    opt = nlopt.opt(nlopt.LD_MMA, n)
    opt.set_lower_bounds(LOWER)
    opt.set_upper_bounds(1.0)
    opt.set_maxeval(evals)
    opt.set_ftol_rel(1e-12)
    opt.set_param("dual_algorithm", nlopt.LD_SLSQP)
    opt.set_param("rho_init", rho)

    def objective(x, grad):
        t0 = time.perf_counter()
        f = prob.objective(x, grad if grad.size else None)
        objectives.append(f)
        calls.append((t0, time.perf_counter(), len(objectives)))
        return f

    def constraint(result, x, grad):
        t0 = time.perf_counter()
        result[0] = prob.volume(x, grad[0] if grad.size else None)
        calls.append((t0, time.perf_counter(), len(objectives)))

    opt.set_min_objective(objective)
    opt.add_inequality_mconstraint(constraint, [1e-8])
    t0 = time.perf_counter()
    opt.optimize(x0)
    return before, time.perf_counter() - t0


def run_raw(prob: Problem, evals: int) -> dict:
    """Raw ``nlopt.opt(LD_MMA)``: callbacks fill NLopt's arrays in place."""
    calls, objectives = [], []
    before, wall = raw_nlopt(prob, evals, calls, objectives)
    peak = harness.peak_bytes()
    in_callbacks = sum(t1 - t0 for (t0, t1, d) in calls)
    designs = sorted({d for (_, _, d) in calls})
    gaps = _gaps(calls, designs)
    return {"nlopt_s": _median(gaps), "nlopt_gaps_s": gaps,
            "spread": {"nlopt_s": harness.spread(gaps)},
            "nlopt_total_s": wall - in_callbacks, "driver_s": 0.0,
            "evaluations": len(objectives), "objectives": objectives,
            "rss_before_bytes": before, "peak_bytes": peak}


def _primitives(prob: Problem):
    """The test problem as two `topopt.ad` primitives with analytic pullbacks."""
    import numpy as np
    from topopt import ad

    @ad.primitive
    def compliance(x):
        return prob.objective(np.asarray(x))

    @ad.rrule(compliance)
    def _compliance_rule(x):
        x = np.asarray(x)

        def pullback(ybar):
            grad = np.empty(prob.n)
            prob.objective(x, grad)
            grad *= ybar
            return (grad,)
        return prob.objective(x), pullback

    @ad.primitive
    def volume(x):
        return prob.volume(np.asarray(x))

    @ad.rrule(volume)
    def _volume_rule(x):
        def pullback(ybar):
            return (np.full(prob.n, ybar / prob.n),)
        return prob.volume(np.asarray(x)), pullback

    return compliance, volume


def run_driver(prob: Problem, evals: int, folder: str) -> dict:
    """`minimize` with a checkpoint after every evaluation, its callbacks timed."""
    import numpy as np
    from topopt.optimize import minimize
    from topopt.optimize.run import _Run
    compliance, volume = _primitives(prob)
    calls, saves, path = [], [], os.path.join(folder, "run.npz")
    evaluate, save = _Run.evaluate, _Run.save

    def timed_evaluate(self, x, gradients=True):
        t0, user0, n0 = time.perf_counter(), prob.seconds, len(saves)
        out = evaluate(self, x, gradients)
        t1 = time.perf_counter()
        ck = sum(s for s, _ in saves[n0:])
        calls.append((t0, t1, len(self.history), prob.seconds - user0, ck))
        return out

    def timed_save(self, *args, **kwargs):
        t0 = time.perf_counter()
        save(self, *args, **kwargs)
        saves.append((time.perf_counter() - t0, os.path.getsize(path)))

    _Run.evaluate, _Run.save = timed_evaluate, timed_save
    x0 = np.full(prob.n, VOLUME)
    harness.reset_peak()
    before = harness.rss_bytes()
    res = minimize(lambda x: (compliance(x), volume(x)), x0, bounds=(LOWER, 1.0),
                   maxeval=evals, ftol_rel=1e-12, checkpoint=path, checkpoint_every=1,
                   verbose=False)
    peak = harness.peak_bytes()
    designs = sorted({c[2] for c in calls})
    driver = [sum(t1 - t0 - user - ck for (t0, t1, d, user, ck) in calls if d == k)
              for k in designs]
    gaps = _gaps([c[:3] for c in calls], designs)
    spreads = {"nlopt_s": harness.spread(gaps), "driver_s": harness.spread(driver[1:]),
               "checkpoint_s": harness.spread(s for s, _ in saves)}
    return {"nlopt_s": spreads["nlopt_s"]["median"], "nlopt_gaps_s": gaps,
            "driver_s": spreads["driver_s"]["median"], "driver_first_s": driver[0],
            "checkpoint_s": spreads["checkpoint_s"]["median"],
            "checkpoint_bytes": _median(b for _, b in saves), "spread": spreads,
            "checkpoints": len(saves), "evaluations": res.evaluations,
            "objectives": [h["objective"] for h in res.history],
            "rss_before_bytes": before, "peak_bytes": peak}


def child(mode: str, n: int, evals: int) -> None:
    """One size and mode in this (fresh) process; the record as JSON on the last line."""
    import nlopt  # noqa: F401  (imported before the baseline)
    import numpy as np  # noqa: F401
    import topopt.optimize  # noqa: F401
    base = harness.rss_bytes()
    prob = Problem(n)
    with tempfile.TemporaryDirectory() as folder:
        rec = run_raw(prob, evals) if mode == "raw" else run_driver(prob, evals, folder)
    rec.update(mode=mode, n=n, rss_imports_bytes=base,
               peak_bytes_per_var=(rec["peak_bytes"] - rec["rss_before_bytes"]) / n,
               process_peak_bytes=harness.peak_bytes())
    print(json.dumps(rec))


def _table(records: list) -> str:
    rows = [f"{'n':>9} {'mode':>6} {'nlopt s/ev':>10} {'driver s/ev':>11} "
            f"{'ckpt s':>7} {'ckpt MB':>8} {'peak B/var':>10} {'process MB':>10}"]
    for r in records:
        ck = (f"{r['checkpoint_s']:7.3f} {r['checkpoint_bytes'] / 1e6:8.1f}"
              if "checkpoint_s" in r else f"{'-':>7} {'-':>8}")
        rows.append(f"{r['n']:>9} {r['mode']:>6} {r['nlopt_s']:10.3f} {r['driver_s']:11.3f} "
                    f"{ck} {r['peak_bytes_per_var']:10.1f} "
                    f"{r['process_peak_bytes'] / 1e6:10.0f}")
    return "\n".join(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,4,8", help="millions of variables, comma-separated")
    ap.add_argument("--evals", type=int, default=6, help="MMA evaluations per run")
    ap.add_argument("--out", default="results/benchmark_mma_scale.json")
    ap.add_argument("--smallest", action="store_true",
                    help="10 000 variables, 4 evaluations: a few seconds (the tests)")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child[0], int(args.child[1]), args.evals)
    if args.smallest:
        args.sizes, args.evals = "0.01", 4
    records = []
    for size in (float(s) for s in args.sizes.split(",")):
        n = int(round(size * 1_000_000))
        for mode in ("raw", "driver"):
            records.append(harness.child([sys.executable, __file__, "--evals", str(args.evals),
                                          "--child", mode, str(n)]))
            print(_table(records[-1:]).splitlines()[-1], flush=True)
    for r in records:
        if r["mode"] == "driver":
            raw = next(q for q in records if q["mode"] == "raw" and q["n"] == r["n"])
            r["same_objectives_as_raw"] = r["objectives"] == raw["objectives"]
    harness.write(args.out, harness.record(
        {"command": harness.command(__file__, argv), "evals": args.evals, "block": BLOCK, "records": records},
        repeats=args.evals - 1, statistic="median over the evaluations 2.."))
    print(_table(records))


if __name__ == "__main__":
    main()
