"""Our MMA against NLopt's on the problem scripts (issue 38's acceptance).

Each problem runs its default script (`topopt_problems.<name>.run`, no output
written; ``--maxeval`` and sizes may be overridden) twice in this process:
with NLopt's ``LD_MMA`` and with ours (``optimizer="mma"``, forced over the
problem's own choices by wrapping `topopt.optimize.options.Options.check`).
Per run: the final objective (that of the last feasible evaluation, max
constraint <= 1e-3, of the last stage), ``to_1pct`` (the first evaluation of
the last stage whose feasible objective is within 1 % of the run's own final
objective), the evaluations, the wall time. Issue 38 asks: ours within
0.5 % of NLopt's final objective, and ``to_1pct`` at most 1.2x NLopt's.

    python scripts/benchmarks/compare_mma.py --problems mbb_beam cantilever --out results/compare_mma.json
    python scripts/benchmarks/compare_mma.py --problems mbb_beam --set nelx=120 nely=40 --maxeval 100

``--out`` is updated per problem (a rerun replaces that problem's entry), with the
machine and the commit (`harness.record`; one run per optimizer: no spread).
``--smallest``: ``mbb_beam`` at 30 x 10 for 10 evaluations.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts", "benchmarks"))

import harness  # noqa: E402

FEASIBLE = 1e-3


def run_one(name: str, optimizer: str, kwargs: dict) -> dict:
    """Problem `name`'s default run with `optimizer` forced."""
    from topopt.optimize.options import Options
    original = Options.__dict__["check"]

    def forced(cls, x0, **kw):
        return original.__func__(cls, x0, **{**kw, "optimizer": optimizer})

    Options.check = classmethod(forced)
    try:
        module = importlib.import_module(f"topopt_problems.{name}")
        seconds, result = harness.timed(lambda: module.run(**kwargs), 1)
        seconds = seconds["median"]
    finally:
        Options.check = original
    h = result.history
    return {"objective": [r["objective"] for r in h],
            "max_constraint": [r["max_constraint"] for r in h],
            "stage": [r["stage"] for r in h], "seconds": round(seconds, 2),
            "status": result.status, "evaluations": len(h)}


def summary(run: dict) -> dict:
    """``final`` (last feasible objective of the last stage) and ``to_1pct``."""
    stage = np.asarray(run["stage"])
    keep = stage == stage.max()
    f = np.asarray(run["objective"], float)[keep]
    g = np.array([0.0 if v is None else v for v in run["max_constraint"]], float)[keep]
    f = np.where(g <= FEASIBLE, f, np.nan)
    evals = np.flatnonzero(keep) + 1
    if not np.isfinite(f).any():
        return {"final": None, "to_1pct": None}
    final = float(f[np.isfinite(f)][-1])
    hit = np.flatnonzero(np.isfinite(f) & (np.abs(f - final) <= 0.01 * abs(final)))
    return {"final": final, "to_1pct": int(evals[hit[0]])}


def compare(name: str, kwargs: dict) -> dict:
    runs = {opt: run_one(name, opt, kwargs) for opt in ("nlopt", "mma")}
    rows = {opt: {**summary(r), "evaluations": r["evaluations"], "seconds": r["seconds"],
                  "status": r["status"]} for opt, r in runs.items()}
    a, b = rows["nlopt"], rows["mma"]
    rel = None if a["final"] is None or b["final"] is None else \
        (b["final"] - a["final"]) / abs(a["final"])
    ratio = None if not (a["to_1pct"] and b["to_1pct"]) else b["to_1pct"] / a["to_1pct"]
    n = min(len(runs["nlopt"]["objective"]), len(runs["mma"]["objective"]))
    same = next((k for k in range(n) if abs(runs["mma"]["objective"][k] /
                 runs["nlopt"]["objective"][k] - 1) > 1e-6), n)
    return {"kwargs": kwargs, "nlopt": rows["nlopt"], "mma": rows["mma"],
            "final_rel_diff": rel, "to_1pct_ratio": ratio,
            "same_to_1e-6_evaluations": same,
            "pass": rel is not None and abs(rel) <= 5e-3 and ratio is not None and ratio <= 1.2,
            "histories": {opt: r["objective"] for opt, r in runs.items()}}


def _value(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+",
                    default=["mbb_beam", "cantilever", "cantilever3d", "heat_sink"])
    ap.add_argument("--maxeval", type=int, default=None)
    ap.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                    help="keyword arguments of the problems' run()")
    ap.add_argument("--out", default="results/compare_mma.json")
    ap.add_argument("--smallest", action="store_true",
                    help="mbb_beam at 30 x 10, 10 evaluations: a few seconds (the tests)")
    args = ap.parse_args(argv)
    if args.smallest:
        args.problems, args.set, args.maxeval = ["mbb_beam"], ["nelx=30", "nely=10"], 10
    kwargs = {k: _value(v) for k, v in (s.split("=", 1) for s in args.set)}
    if args.maxeval is not None:
        kwargs["maxeval"] = args.maxeval
    data = {}
    if os.path.exists(args.out):
        with open(args.out) as fh:
            data = json.load(fh)
    data.setdefault("problems", {})
    data.update(harness.record({"command": harness.command(__file__, argv)}, repeats=1))
    for name in args.problems:
        row = compare(name, kwargs)
        data["problems"][name] = row
        a, b = row["nlopt"], row["mma"]
        print(f"{name:14s} final {a['final']:.6g} vs {b['final']:.6g} "
              f"({100 * (row['final_rel_diff'] or 0):+.3f} %), to 1 %: {a['to_1pct']} vs "
              f"{b['to_1pct']}, evaluations {a['evaluations']} vs {b['evaluations']}, "
              f"identical to 1e-6 for {row['same_to_1e-6_evaluations']}, "
              f"{a['seconds']} s vs {b['seconds']} s, pass={row['pass']}", flush=True)
        harness.write(args.out, data)


if __name__ == "__main__":
    main()
