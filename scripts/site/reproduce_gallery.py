"""Does the committed gallery reproduce? Each default command re-run with its start perturbed.

::

    python scripts/site/reproduce_gallery.py                  # every problem but em_robust (~45 min)
    python scripts/site/reproduce_gallery.py buckling_column  # some; the others' rows are kept
    python scripts/site/reproduce_gallery.py --check          # exit 1 if a committed figure is
                                                         # outside its stated spread

Each problem's default command (`scripts/site/gallery.py`: ``python problems/<name>.py
--out <tmp>``, here with ``--quiet``) runs once as typed and once for each seed
``k = 1 .. 5`` with ``TOPOPT_PERTURB=1e-12:k`` (`topopt.optimize.perturb`: the
start moved by ``1e-12 U(-1, 1)``, far below any meaning, of the order of two
machines' rounding differences after a few evaluations). The problem's figure
(`FIGURES`: its objective, read from ``result.json``) of the committed run
(``results/gallery/<name>/result.json``), of the re-run and of the five
perturbed runs, and their spread ``(max - min) / |median|`` over these six
finals in % (the re-run as typed is one more sample of a machine's rounding:
the dynamic beam's sits below the perturbed five), go to
``results/reproduce_gallery.json``; the gallery pages quote
the spread from there (``docs/gallery/generate.py``). At most two runs at a
time (``--workers``).

A committed figure is *within its spread* when it lies within the stated
spread (the JSON's, or this run's when the JSON has none) of the median of
this run's six finals: ``|committed - median| <= max(spread, 0.01 %) |median|``.
``--check`` re-runs, compares, prints the table and exits 1 when a committed
figure is not, without rewriting the JSON (``--json`` writes this run's
record elsewhere).

`SKIPPED` problems are not run, with the reason in the JSON.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GALLERY = os.path.join(ROOT, "results", "gallery")
RECORD = os.path.join(ROOT, "results", "reproduce_gallery.json")
sys.path[:0] = [os.path.join(ROOT, "scripts", "site"), os.path.join(ROOT, "scripts", "benchmarks")]

import harness  # noqa: E402

#: The start perturbation and the seeds of the perturbed runs.
AMPLITUDE = 1e-12
SEEDS = (1, 2, 3, 4, 5)
#: Each problem's figure: its objective, a key of ``result.json`` (``a.b``: nested).
FIGURES = {
    "mbb_beam": "compliance", "cantilever": "compliance", "cantilever3d": "compliance",
    "em_focus": "g", "reliable_bracket": "reliability_based.nominal_compliance",
    "cantilever_hole": "compliance", "cantilever_two_loads": "compliance",
    "heat_sink": "compliance", "inverter": "u_out", "robust_inverter": "u_out",
    "eigen_beam": "omega1", "l_bracket": "volume", "arch": "compliance",
    "robust_cantilever": "robust_objective", "dynamic_beam": "dynamic_compliance",
    "thermo_beam": "compliance", "transient_heat": "temperature",
    "printable_cantilever": "compliance", "multimaterial_beam": "compliance",
    "buckling_column": "lambda1", "mesh_bracket": "compliance",
    "em_robust": "field_enhancement", "double_pipe": "dissipated_power",
    "heat_sink_flow": "mean_temperature",
    "diffuser": "dissipated_power", "pipe_bend": "dissipated_power",
    "pipe_bend3d": "dissipated_power",
}
#: Problems not re-run, and why.
SKIPPED = {
    "em_robust": "cost: one default run takes ~33 min on 2 cores (1 000 Monte Carlo "
                 "samples per design), six of them ~3.3 hours",
}
#: The least tolerance of the check, in %: where the six runs here agree to every
#: digit, another machine's rounding (and a committed run's) may still move the
#: figure in its fifth digit (eigen_beam's committed omega1 lies 0.003 % off).
FLOOR_PCT = 0.01


def figure(record: dict, key: str) -> float:
    """The figure `key` (``a.b``: nested) of a ``result.json`` record (its ``result`` part)."""
    part = record.get("result", record)
    for name in key.split("."):
        part = part[name]
    return float(part)


def committed(name: str) -> float:
    with open(os.path.join(GALLERY, name, "result.json"), encoding="utf-8") as fh:
        return figure(json.load(fh), FIGURES[name])


def run_one(name: str, seed: int | None, folder: str) -> tuple[float, float]:
    """``(figure, seconds)`` of the default command, the start perturbed with `seed`."""
    out = os.path.join(folder, name, "plain" if seed is None else f"seed{seed}")
    env = {k: v for k, v in os.environ.items() if k != "TOPOPT_PERTURB"}
    if seed is not None:
        env["TOPOPT_PERTURB"] = f"{AMPLITUDE:g}:{seed}"
    cmd = [sys.executable, os.path.join(ROOT, "problems", f"{name}.py"), "--quiet",
           "--out", out]
    seconds, done = harness.timed(
        lambda: subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True), 1)
    seconds = seconds["median"]
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} (TOPOPT_PERTURB={env.get('TOPOPT_PERTURB')}) "
                           f"exited with {done.returncode}: {done.stderr[-2000:]}")
    with open(os.path.join(out, "result.json"), encoding="utf-8") as fh:
        return figure(json.load(fh), FIGURES[name]), seconds


def spread_pct(values) -> float:
    """``(max - min) / |median|`` in %."""
    s = harness.spread(values)
    return 100.0 * (s["max"] - s["min"]) / abs(s["median"])


def off_pct(value: float, finals) -> float:
    """`value` off the median of `finals`, in % of it."""
    med = harness.spread(finals)["median"]
    return 100.0 * (value - med) / abs(med)


def within(value: float, finals, spread: float) -> bool:
    """`value` within `spread` % of the median of `finals` (at least `FLOOR_PCT`)."""
    return abs(off_pct(value, finals)) <= max(spread, FLOOR_PCT)


def row(name: str, plain: float, perturbed: list, seconds: float) -> dict:
    c = committed(name)
    finals = [plain, *perturbed]
    s = harness.spread(finals)
    spread = spread_pct(finals)
    return {"figure": FIGURES[name], "committed": c, "unperturbed": plain,
            "perturbed": perturbed, "median": s["median"],
            "min": s["min"], "max": s["max"], "spread_pct": spread,
            "committed_off_pct": off_pct(c, finals),
            "within": within(c, finals, spread), "seconds": seconds}


def measure(names, workers: int, folder: str, done=None, log=print) -> dict:
    """Run every problem of `names` unperturbed and with each seed; their rows.

    The problems run in the order given (`main`: all of them, the cheapest
    first by the committed run's seconds); ``done(name, row)`` follows each
    problem's last run.
    """
    order = list(names)
    jobs = [(n, s) for n in order for s in (None, *SEEDS)]
    results: dict = {n: {} for n in names}
    errors: dict = {}
    rows = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(run_one, n, s, folder): (n, s) for n, s in jobs}
        for fut in concurrent.futures.as_completed(futures):
            n, s = futures[fut]
            what = "unperturbed" if s is None else f"seed {s}"
            try:
                results[n][s] = fut.result()
                log(f"{n} {what}: {results[n][s][0]:.6g} ({results[n][s][1]:.0f} s)",
                    flush=True)
            except RuntimeError as e:               # one failed run: said, the rest go on
                results[n][s] = (None, 0.0)
                errors.setdefault(n, []).append(f"{what}: {e}")
                log(f"{n} {what}: FAILED {e}", flush=True)
            if len(results[n]) < 1 + len(SEEDS):
                continue
            r = results[n]
            rows[n] = ({"figure": FIGURES[n], "committed": committed(n), "within": False,
                        "error": errors[n]} if n in errors else
                       row(n, r[None][0], [r[k][0] for k in SEEDS],
                           sum(v[1] for v in r.values())))
            if done is not None:
                done(n, rows[n])
    return {n: rows[n] for n in order}


def _cost(name: str) -> float:
    """The committed run's seconds (0 if unknown): the longest runs start first."""
    try:
        with open(os.path.join(GALLERY, name, "result.json"), encoding="utf-8") as fh:
            record = json.load(fh)
        return float(record.get("result", record).get("seconds") or 0.0)
    except (OSError, ValueError, TypeError):
        return 0.0


def table(rows: dict, skipped: dict) -> str:
    head = (f"{'problem':22s} {'figure':20s} {'committed':>12s} {'re-run':>12s} "
            f"{'perturbed min..max':>27s} {'spread %':>9s} {'within':>6s}")
    lines = [head, "-" * len(head)]
    for n, r in rows.items():
        if "error" in r:
            lines.append(f"{n:22s} FAILED: {r['error'][0][:100]}")
            continue
        lines.append(f"{n:22s} {r['figure'][:20]:20s} {r['committed']:12.6g} "
                     f"{r['unperturbed']:12.6g} {min(r['perturbed']):13.6g}.."
                     f"{max(r['perturbed']):<13.6g} {r['spread_pct']:9.3f} "
                     f"{'yes' if r['within'] else 'NO':>6s}")
    for n, why in skipped.items():
        lines.append(f"{n:22s} not run: {why}")
    return "\n".join(lines)


def _load(path: str | None) -> dict:
    if path is None or not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _save(path: str, record: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)


def refresh(path: str) -> int:
    """The record at `path` with each row's ``committed`` figure read again from the
    gallery and judged against its recorded runs (nothing is run); 1 if one is outside."""
    record = _load(path)
    outside = []
    for name, r in record.get("problems", {}).items():
        if "error" in r:
            continue
        r["committed"] = committed(name)
        finals = [r["unperturbed"], *r["perturbed"]]
        r["committed_off_pct"] = off_pct(r["committed"], finals)
        r["within"] = within(r["committed"], finals, r["spread_pct"])
        if not r["within"]:
            outside.append(name)
    _save(path, record)
    print(table(record.get("problems", {}), record.get("skipped", {})))
    if outside:
        print(f"outside their recorded spread: {', '.join(outside)}", file=sys.stderr)
    return 1 if outside else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="problems (default: all but SKIPPED)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a committed figure is outside its stated spread; "
                             "the committed JSON is left as it is")
    parser.add_argument("--workers", type=int, default=2, choices=(1, 2),
                        help="runs at a time (default: %(default)s)")
    parser.add_argument("--json", default=None,
                        help=f"the record to write, its other problems' rows kept (default: "
                             f"{os.path.relpath(RECORD, ROOT)}; none with --check)")
    parser.add_argument("--refresh", action="store_true",
                        help="run nothing: read each row's committed figure again from "
                             "results/gallery/ (after scripts/site/gallery.py remade it) and "
                             "judge it against the recorded runs")
    args = parser.parse_args(argv)
    if args.refresh:
        return refresh(args.json or RECORD)
    from gallery import commands
    try:
        commands(args.names)                       # the names checked as gallery.py does
    except ValueError as e:
        parser.error(f"argument names: {e}")
    names = [n for n in (args.names or sorted(FIGURES, key=_cost)) if n not in SKIPPED]
    skipped = {n: SKIPPED[n] for n in (args.names or FIGURES) if n in SKIPPED}
    stated = _load(RECORD)
    path = args.json or (None if args.check else RECORD)
    record = _load(path) if path is not None else {}
    record.update({"amplitude": AMPLITUDE, "seeds": list(SEEDS),
                   "spread": "(max - min) / |median| of the six finals (the re-run as typed "
                             "and the perturbed five), in %",
                   "within": f"|committed - median of the six finals| <= max(spread, "
                             f"{FLOOR_PCT:g} %) |median|", "machine": harness.machine(),
                   "commit": harness.commit()})
    record.setdefault("problems", {})
    record.setdefault("skipped", {})
    for n in names:
        record["skipped"].pop(n, None)
    record["skipped"].update(SKIPPED)

    def done(name: str, r: dict) -> None:            # each problem's row, once it is done
        if args.check and "error" not in r:        # the committed JSON's spreads are stated
            s = stated.get("problems", {}).get(name, {}).get("spread_pct", r["spread_pct"])
            r["stated_spread_pct"] = s
            r["within"] = within(r["committed"], [r["unperturbed"], *r["perturbed"]], s)
        if path is not None:
            record["problems"][name] = r
            record["problems"] = {n: record["problems"][n] for n in FIGURES
                                  if n in record["problems"]}
            _save(path, record)

    with tempfile.TemporaryDirectory(prefix="reproduce_gallery_") as folder:
        rows = measure(names, args.workers, folder, done)
    print(table(rows, skipped))
    if path is not None:
        _save(path, record)
        print(f"-> {path}")
    return 1 if args.check and not all(r["within"] for r in rows.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
