"""Pipe bend (issue 36): how much of the gap to Alexandersen 2023 is mesh, how much iterations.

Runs `problems/pipe_bend.py`'s ``run`` (Taylor-Hood P2/P1, his four q stages,
MMA; nothing written but the table) for each case ``re:n:maxeval`` and records
J in our convention (``mu/2 grad u : grad u``) and in his (symmetric gradient),
J of the design thresholded at rho = 1/2, the grey level, the seconds, and
both J relative to his Table 5 (Stokes: his Fig. 17 / Table 3 setup, 9.1862).
One run at a time; a rerun skips the cases the JSON already holds; ``--table``
prints the JSON's table and runs nothing.

    python scripts/studies/study_pipe_bend.py [--out results/study_pipe_bend.json]
    python scripts/studies/study_pipe_bend.py --cases 0:30:300 0:50:300 100:30:300
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from study_double_pipe import record  # noqa: E402  (this folder: the script's own)
CASES = ("0:30:100", "0:30:300", "0:50:300", "0:70:300", "0:100:300", "100:30:100", "100:30:300",
         "100:50:300", "100:70:300")


def case(re: int, n: int, maxeval: int) -> dict:
    from topopt_problems import pipe_bend
    r = pipe_bend.run(re=re, n=n, maxeval=maxeval, out=None)
    pub = pipe_bend.PUBLISHED[re]
    ours, his = float(r["dissipated_power_borrvall"]), float(r["dissipated_power_alexandersen"])
    crisp = r["dissipated_power_thresholded"]
    crisp = None if crisp is None else float(crisp)
    return dict(re=re, n=n, maxeval=maxeval, J=ours, J_alexandersen=his, J_thresholded=crisp,
                published=pub, ours_vs_published=ours / pub - 1,
                his_convention_vs_published=his / pub - 1,
                thresholded_vs_published=None if crisp is None else crisp / pub - 1,
                grey_level=float(r["grey_level"]), fluid_fraction=float(r["fluid_fraction"]),
                evaluations=int(r.evaluations), seconds=float(r["seconds"]),
                newton_per_solve=float(r["newton_iterations_per_solve"]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "study_pipe_bend.json"))
    ap.add_argument("--cases", nargs="+", default=list(CASES), help="re:n:maxeval")
    ap.add_argument("--table", action="store_true", help="print the JSON's table, run nothing")
    a = ap.parse_args(argv)
    rows = json.load(open(a.out)) if os.path.exists(a.out) else []
    if a.table:
        return table(rows)
    keys = [tuple(map(int, text.split(":"))) for text in a.cases]
    record(rows, keys, ("re", "n", "maxeval"), case, a.out)
    table(rows)


def table(rows):
    """Print the markdown table of `rows`."""
    print("| Re | n | evaluations | J (ours) | his convention | vs his | thresholded J | vs his "
          "| grey level | s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        c, t = r["J_thresholded"], r["thresholded_vs_published"]
        print(f"| {r['re'] or 'Stokes'} | {r['n']} | {r['maxeval']} | {r['J']:#.5g} "
              f"| {r['J_alexandersen']:#.5g} | {100 * r['his_convention_vs_published']:+.1f} % "
              f"| {'-' if c is None else f'{c:#.5g}'} | "
              f"{'-' if c is None else f'{100 * t:+.1f} %'} "
              f"| {r['grey_level']:.3f} | {r['seconds']:.0f} |")


if __name__ == "__main__":
    main()
