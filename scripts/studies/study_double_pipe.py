"""Double pipe (issue 36): raw and thresholded J against Borrvall & Petersson by mesh.

Runs `problems/double_pipe.py`'s ``run`` (default stages q = 0.01 then 0.1,
240 MMA evaluations, nothing written but the table) at aspect 1 and 1.5 on
n = 18, 24, 30 and 36 rows of Q2/Q1 squares (``--cells quad``, the script's
default) or of P2/P1 triangles, two per square (``--cells tri``), and
records per run the cells, J of the optimized design (raw, the paper's
convention), J of that design thresholded at rho = 1/2, both relative to the
published 25.67 (aspect 1) and 27.64 (aspect 1.5), the grey level and the
seconds. One run at a time; a rerun skips the cases the JSON already holds
(rows recorded before the ``cells`` option are triangles, 120 evaluations);
``--table`` prints the JSON's table and runs nothing.

    python scripts/studies/study_double_pipe.py [--out results/study_double_pipe.json --n 24 30
                                         --cells tri --maxeval 120]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


#: The cells of the rows recorded before the study had a ``cells`` column.
OLD_CELLS = "tri"


def case(aspect: float, n: int, maxeval: int, cells: str) -> dict:
    from topopt_problems import double_pipe
    r = double_pipe.run(aspect=aspect, n=n, cells=cells, maxeval=maxeval, out=None)
    pub = double_pipe.PUBLISHED[aspect]
    raw, crisp = float(r["dissipated_power"]), float(r["dissipated_power_thresholded"])
    return dict(aspect=aspect, n=n, maxeval=maxeval, cells=cells, J=raw, J_thresholded=crisp,
                published=pub, raw_vs_published=raw / pub - 1,
                thresholded_vs_published=crisp / pub - 1,
                grey_level=float(r["grey_level"]), fluid_fraction=float(r["fluid_fraction"]),
                fluid_fraction_thresholded=float(r["fluid_fraction_thresholded"]),
                evaluations=int(r.evaluations), seconds=float(r["seconds"]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "study_double_pipe.json"))
    ap.add_argument("--n", type=int, nargs="+", default=[18, 24, 30, 36])
    ap.add_argument("--aspect", type=float, nargs="+", default=[1.0, 1.5])
    ap.add_argument("--maxeval", type=int, default=240)
    ap.add_argument("--cells", choices=("quad", "tri"), default="quad")
    ap.add_argument("--table", action="store_true", help="print the JSON's table, run nothing")
    a = ap.parse_args(argv)
    rows = json.load(open(a.out)) if os.path.exists(a.out) else []
    for r in rows:
        r.setdefault("cells", OLD_CELLS)
    if a.table:
        return table(rows)
    keys = [(a.cells, aspect, n, a.maxeval) for n in a.n for aspect in a.aspect]
    record(rows, keys, ("cells", "aspect", "n", "maxeval"),
           lambda cells, aspect, n, maxeval: case(aspect, n, maxeval, cells), a.out)
    table(rows)


def record(rows, keys, fields, case, path):
    """Run ``case(*key)`` for each key of `keys` whose row (`fields`) `rows` lacks; after
    each run the rows, sorted by `fields`, go to the JSON at `path` (a stopped study keeps
    what it measured, and a rerun goes on from there)."""
    for key in keys:
        if any(tuple(r[f] for f in fields) == tuple(key) for r in rows):
            continue
        row = case(*key)
        rows.append(row)
        rows.sort(key=lambda r: tuple(r[f] for f in fields))
        with open(path, "w") as f:
            json.dump(rows, f, indent=1)
        print(json.dumps(row), flush=True)


def table(rows):
    """Print the markdown table of `rows`."""
    print("| cells | aspect | n | evaluations | raw J | vs published | thresholded J "
          "| vs published | grey level | s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.get('cells', OLD_CELLS)} | {r['aspect']:g} | {r['n']} | {r['evaluations']} "
              f"| {r['J']:.2f} | {100 * r['raw_vs_published']:+.1f} % "
              f"| {r['J_thresholded']:.2f} | {100 * r['thresholded_vs_published']:+.1f} % "
              f"| {r['grey_level']:.3f} | {r['seconds']:.0f} |")


if __name__ == "__main__":
    main()
