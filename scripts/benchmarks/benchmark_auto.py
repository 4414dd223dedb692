"""What ``solver="auto"`` picks against the fastest installed backend (issue 16).

For the 2-D MBB beam and the 3-D cantilever at several sizes, every
installed backend (direct ones with and without reanalysis) runs MMA on
the compliance problem through ``scripts/benchmarks/benchmark.py`` (``--iters``
designs, median of ``--repeat`` runs, one at a time); the table gives the
seconds per design iteration, the fastest backend and ``auto``'s pick with
its ratio to the fastest. `topopt.fem.solvers.auto` and
`topopt.fem.solvers.AUTO_MIN_DOFS` take their thresholds from this
table.

    python scripts/benchmarks/benchmark_auto.py --out results/benchmark_auto.json
    python scripts/benchmarks/benchmark_auto.py --quick          # two small cases, one run each

The JSON records the machine, the commit and each time's spread over the repeats
(`harness`); ``--smallest`` is ``--quick``.

Needs the ``fast`` extra for CHOLMOD/UMFPACK and pyamg (else those rows are
missing, as they would be for ``auto``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import benchmark  # noqa: E402
import harness  # noqa: E402
from topopt import fem  # noqa: E402

CASES = [("mbb", (60, 20)), ("mbb", (150, 50)), ("mbb", (300, 100)),
         ("cantilever3d", (8, 4, 4)), ("cantilever3d", (16, 8, 8)),
         ("cantilever3d", (24, 12, 12)), ("cantilever3d", (40, 20, 20))]
QUICK = [("mbb", (30, 10)), ("cantilever3d", (6, 3, 3))]
# 3-D LU factorizations above these free dofs are skipped (at 24 x 12 x 12, 11 k dofs, they
# are already the slowest rows: the table in results/benchmark_auto.json)
SLOW = {"superlu": 30_000, "umfpack": 30_000}


def backends(problem: str, dofs: int) -> list[str]:
    """The installed backends to time for a case (SuperLU only while it is not hopeless)."""
    names = []
    for name in fem.available_solvers(iterative=True):
        if name == "petsc" or (problem == "cantilever3d" and dofs > SLOW.get(name, 10 ** 9)):
            continue
        names.append(name)
        if not fem.solvers.BACKENDS[name].iterative:
            names.append(name + "+reanalysis")
    return names


def run_case(problem: str, sizes: tuple, iters: int, repeat: int) -> dict:
    """Seconds per iteration of every backend and of ``auto`` for one case."""
    argv = ["--problem", problem, "--nelx", str(sizes[0]), "--nely", str(sizes[1]),
            "--iters", str(iters), "--repeats", str(repeat), "--json", "--no-pymoto"]
    if len(sizes) == 3:
        argv += ["--nelz", str(sizes[2])]
    auto = benchmark.make_problem(argparse.Namespace(
        problem=problem, nelx=sizes[0], nely=sizes[1], nelz=sizes[2] if len(sizes) == 3 else 1,
        rmin=None), "auto").system
    pick = auto.solver + ("+reanalysis" if auto.reanalysis is not None else "")
    dofs = int(auto.free.size)
    rows, spreads = {}, {}
    for name in backends(problem, dofs):
        solver, _, extra = name.partition("+")
        with contextlib.redirect_stdout(io.StringIO()):        # its JSON
            row = benchmark.main(argv + ["--solver", solver,
                                         "--reanalysis", "on" if extra else "off"])[0]
        rows[name] = row["per_iteration_s"]
        spreads[name] = row["spread"]["per_iteration_s"]
        print(f"  {problem} {sizes} {name:20s} {rows[name]:.4f} s/iteration", file=sys.stderr,
              flush=True)
    best = min(rows, key=rows.get)
    return dict(problem=problem, sizes=list(sizes), dofs=dofs, seconds=rows, best=best,
                auto=pick, auto_over_best=rows[pick] / rows[best] if pick in rows else None,
                spread=spreads)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small cases, one run each")
    parser.add_argument("--iters", type=int, default=None, help="designs per run (default 20)")
    harness.options(parser, repeats=None, smallest="--quick")
    args = parser.parse_args(argv)
    args.quick = args.quick or args.smallest
    cases = QUICK if args.quick else CASES
    iters = args.iters or (5 if args.quick else 20)
    repeat = args.repeats or (1 if args.quick else 3)
    out = [run_case(problem, sizes, iters, repeat) for problem, sizes in cases]
    for r in out:
        ratio = "-" if r["auto_over_best"] is None else f"{r['auto_over_best']:.2f}"
        print(f"{r['problem']:13s} {'x'.join(map(str, r['sizes'])):10s} {r['dofs']:8d} dofs  "
              f"best {r['best']:20s} {r['seconds'][r['best']]:.4f} s   auto {r['auto']:20s} "
              f"x{ratio}")
    if args.out:
        harness.write(args.out, harness.record(
            dict(command=harness.command(__file__, argv), iters=iters, repeat=repeat, cases=out), repeat))
    return out


if __name__ == "__main__":
    main()
