"""NLopt MMA settings across every problem script (issue 16): which defaults to choose.

Each setting overrides the MMA parameters *after* a problem's own choices
(``topopt.optimize.options`` merges `DEFAULT_MMA_PARAMS`, then the problem's
``mma_params``; here the setting is applied last), so every problem runs
its default script (`problems.<name>.run` with its default arguments, no
output written) under the same setting. Per run it records the minimized
objective and the largest constraint of every evaluation, the stage
boundaries and the headline metrics.

Summary per problem and setting (`summarize`): ``final``, the objective of
the last feasible evaluation (max constraint <= 1e-3) of the last stage,
relative to the best final over the settings (1.0 = the best; > 1 worse for
a minimized objective); ``to_1pct``, the first evaluation of the last stage
whose feasible objective is within 1 % of that best final (None: never).

    python scripts/studies/study_mma.py --out /tmp/study_mma.json --table results/study_mma.json
    python scripts/studies/study_mma.py --problems mbb_beam inverter --settings rho_init=1 rho_init=1e-4
    python scripts/studies/study_mma.py --summary /tmp/study_mma.json   # print the table only

``--out`` keeps every run's history (about 1 MB; a rerun with the same file
skips the runs it holds), ``--table`` the summary that is committed.

A setting is ``name=value[,name=value]`` over `topopt.optimize.MMA_PARAMS`
(``default`` = no override). Runs are deterministic (seeded scripts run
with their default seed), so one run per setting; the wall time is printed
but the choice rests on evaluations.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

FEASIBLE = 1e-3
SETTINGS = ("rho_init=1", "rho_init=1e-2", "rho_init=1e-3", "rho_init=1e-4", "rho_init=1e-5",
            "rho_init=auto")
# keywords making a default run lighter without changing its optimization
LIGHTER = {"reliable_bracket": dict(samples=10 ** 4)}


def parse_setting(text: str) -> dict:
    """``"rho_init=1e-4,always_improve=0"`` -> ``{"rho_init": 1e-4, "always_improve": 0.0}``."""
    from topopt.optimize.options import MMA_PARAMS
    if text == "default":
        return {}
    out = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        if name not in MMA_PARAMS or not value:
            raise SystemExit(f"setting {item!r}: expected name=value with name in "
                             f"{', '.join(MMA_PARAMS)}")
        out[name] = value if value == "auto" else float(value)
    return out


def run_one(name: str, setting: dict) -> dict:
    """Run problem `name` with `setting` forced over every MMA parameter choice."""
    import importlib

    from topopt.optimize import options as mma_options
    original = mma_options._check_mma_params

    def forced(mma_params):
        return {**original(mma_params), **setting}

    mma_options._check_mma_params = forced
    try:
        module = importlib.import_module(f"topopt_problems.{name}")
        t0 = time.perf_counter()
        result = module.run(**LIGHTER.get(name, {}))
        seconds = time.perf_counter() - t0
    finally:
        mma_options._check_mma_params = original
    history = result.history
    return {"objective": [h["objective"] for h in history],
            "max_constraint": [h["max_constraint"] for h in history],
            "stage": [h["stage"] for h in history], "seconds": seconds,
            "status": result.status,
            "metrics": {k: v for k, v in result.metrics.items()
                        if isinstance(v, (int, float)) and np.isfinite(v)}}


def last_stage(run: dict) -> tuple[np.ndarray, np.ndarray]:
    """Objectives of the last stage, NaN where infeasible, and their evaluation numbers."""
    stage = np.asarray(run["stage"])
    keep = stage == stage.max()
    f = np.asarray(run["objective"], float)[keep]
    g = np.array([0.0 if v is None else v for v in run["max_constraint"]], float)[keep]
    return np.where(g <= FEASIBLE, f, np.nan), np.flatnonzero(keep) + 1


def summarize(runs: dict) -> dict:
    """Per problem and setting: ``final`` relative to the best, ``to_1pct`` evaluation."""
    table = {}
    for name, by_setting in runs.items():
        finals = {s: last_stage(r)[0] for s, r in by_setting.items()}
        last = {s: f[np.isfinite(f)][-1] if np.isfinite(f).any() else np.nan
                for s, f in finals.items()}
        best = np.nanmin(list(last.values()))
        scale = abs(best) if best != 0 else 1.0
        rows = {}
        for s, f in finals.items():
            evals = last_stage(by_setting[s])[1]
            hit = np.flatnonzero(np.isfinite(f) & (f <= best + 0.01 * scale))
            rows[s] = {"final": 1.0 + (last[s] - best) / scale,
                       "to_1pct": int(evals[hit[0]]) if hit.size else None,
                       "evaluations": len(by_setting[s]["objective"]),
                       "seconds": round(by_setting[s]["seconds"], 2)}
        table[name] = rows
    return table


def print_table(table: dict) -> None:
    settings = sorted({s for rows in table.values() for s in rows}, key=SETTINGS.index
                      if all(s in SETTINGS for rows in table.values() for s in rows) else str)
    print(f"{'problem':22s}" + "".join(f"{s:>22s}" for s in settings))
    print(" " * 22 + "".join(f"{'final / to 1 %':>22s}" for _ in settings))
    for name, rows in table.items():
        cells = []
        for s in settings:
            r = rows.get(s)
            cells.append("" if r is None else
                         f"{r['final']:.4f} / {r['to_1pct'] or '-':>4}".rjust(22))
        print(f"{name:22s}" + "".join(cells))


def main(argv=None) -> None:
    import topopt_problems
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="*", default=list(topopt_problems.__all__))
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS))
    parser.add_argument("--out", default=None, help="JSON file (rewritten after each run)")
    parser.add_argument("--table", default=None, help="JSON file for the summary table")
    parser.add_argument("--summary", default=None, help="print the table of a JSON file")
    args = parser.parse_args(argv)
    if args.summary:
        with open(args.summary) as fh:
            runs = json.load(fh)["runs"]
        print_table(summarize(runs))
        write_table(args.table, runs)
        return
    settings = {s: parse_setting(s) for s in args.settings}
    runs = {}
    if args.out and os.path.exists(args.out):
        with open(args.out) as fh:
            runs = json.load(fh)["runs"]            # resume: keep finished runs
    for name in args.problems:
        for s, setting in settings.items():
            if s in runs.get(name, {}):
                continue
            r = run_one(name, setting)
            runs.setdefault(name, {})[s] = r
            print(f"{name:22s} {s:28s} {len(r['objective']):4d} evaluations "
                  f"{r['seconds']:7.1f} s  {r['status']}", flush=True)
            if args.out:
                with open(args.out + ".tmp", "w") as fh:
                    json.dump({"feasible": FEASIBLE, "runs": runs}, fh)
                os.replace(args.out + ".tmp", args.out)
    print_table(summarize(runs))
    write_table(args.table, runs)


def write_table(path: str | None, runs: dict) -> None:
    """The summary and each run's headline metrics as JSON (nothing without `path`)."""
    if path:
        metrics = {name: {s: r["metrics"] for s, r in by.items()} for name, by in runs.items()}
        with open(path, "w") as fh:
            json.dump({"feasible": FEASIBLE, "table": summarize(runs), "metrics": metrics},
                      fh, indent=1)


if __name__ == "__main__":
    main()
