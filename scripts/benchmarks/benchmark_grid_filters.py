"""Time and memory of the grid filters (`topopt.grid.filters`) against the mesh filters.

For each case, in a fresh Python process (so each peak resident memory is
its own): setup time, the median of 3 forward (``F x``) and 3 transposed
(``F^T y``) applications, and the peak resident memory above the
process's resident memory before the filter was built (design vector and
mesh already there), in bytes per element. Cases:

* the grid filters at 1 M (160x80x80) and 8.2 M (320x160x160) elements,
  ``rmin = 1.5 h`` and ``3 h``;
* both at the sizes where the assembled mesh filters still fit
  (`DensityFilter` on ``grid.to_mesh()`` up to 64x32x32; `HelmholtzFilter`,
  whose SuperLU factor of ``Kf`` dominates, up to 48x24x24; ``--full`` adds
  64x32x32: about 65 s and 4 GB for its factor alone).

Prints a table and writes ``results/benchmark_grid_filters.json`` (``--out``) with the
machine, the commit and each time's min and max over the repeats (`harness`).
``--smallest``: the grid and mesh density filters at 16 x 8 x 8, one repeat.

    PYTHONPATH=. python scripts/benchmarks/benchmark_grid_filters.py [--full] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

import harness

ROOT = harness.ROOT
OUT = os.path.join(ROOT, "results", "benchmark_grid_filters.json")
REPEATS = 3


def _build(case: dict, grid):
    """The filter of `case` on `grid` (or on its mesh) and the time to build it."""
    from topopt.design import DensityFilter, HelmholtzFilter
    from topopt.grid.filters import GridDensityFilter, GridHelmholtzFilter
    rmin = case["rmin_h"] * grid.h
    if case["path"] == "mesh":
        mesh, _ = grid.to_mesh()
        make = {"density": lambda: DensityFilter(mesh, rmin),
                "helmholtz": lambda: HelmholtzFilter.from_rmin(mesh, rmin)}[case["filter"]]
    else:
        make = {"density": lambda: GridDensityFilter(grid, rmin),
                "helmholtz": lambda: GridHelmholtzFilter.from_rmin(grid, rmin)}[case["filter"]]
    base = harness.rss_bytes()
    setup, flt = harness.timed(make, 1)
    return flt, setup["median"], base


def measure(case: dict, repeats: int = REPEATS) -> dict:
    """One case in this process: setup, median forward / transpose seconds, peak memory."""
    import topopt
    from topopt.grid import Grid
    topopt.tune_malloc()
    grid = Grid(tuple(case["shape"]))
    x = np.random.default_rng(0).uniform(0.0, 1.0, grid.n_el)
    flt, setup, base = _build(case, grid)
    fwd, y = harness.timed(lambda: flt._forward(x), repeats)
    trans, _ = harness.timed(lambda: flt._transpose(y), repeats)
    del y
    peak = harness.peak_bytes()
    return dict(case, n_el=grid.n_el, setup_s=setup, forward_s=fwd["median"],
                transpose_s=trans["median"], spread={"forward_s": fwd, "transpose_s": trans},
                peak_rss_bytes=peak, rss_before_bytes=base,
                bytes_per_element=(peak - base) / grid.n_el)


def cases(full: bool, smallest: bool = False) -> list:
    if smallest:
        return [dict(filter="density", path=p, shape=(16, 8, 8), rmin_h=1.5)
                for p in ("grid", "mesh")]
    big = [(160, 80, 80), (320, 160, 160)]
    small = [(16, 8, 8), (32, 16, 16), (48, 24, 24), (64, 32, 32)]
    out = [dict(filter=f, path="grid", shape=s, rmin_h=r)
           for s in big for f in ("density", "helmholtz") for r in (1.5, 3.0)]
    for s in small:
        for f in ("density", "helmholtz"):
            out.append(dict(filter=f, path="grid", shape=s, rmin_h=1.5))
            if f == "density" or full or s != small[-1]:
                out.append(dict(filter=f, path="mesh", shape=s, rmin_h=1.5))
    return out


def run(case: dict, repeats: int = REPEATS) -> dict:
    """`measure` of `case` in a fresh interpreter."""
    return harness.child([sys.executable, __file__, "--case", json.dumps(case),
                          "--repeats", str(repeats)])


def table(rows: list) -> str:
    head = (f"{'filter':<10}{'path':<6}{'shape':<14}{'n_el':>10}{'rmin/h':>7}{'setup s':>9}"
            f"{'F s':>9}{'F^T s':>9}{'peak MB':>9}{'B/el':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['filter']:<10}{r['path']:<6}{'x'.join(map(str, r['shape'])):<14}"
                     f"{r['n_el']:>10}{r['rmin_h']:>7g}{r['setup_s']:>9.3f}"
                     f"{r['forward_s']:>9.4f}{r['transpose_s']:>9.4f}"
                     f"{r['peak_rss_bytes'] / 2**20:>9.0f}{r['bytes_per_element']:>8.0f}")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="also the mesh Helmholtz filter at 64x32x32 (about 65 s, 4 GB)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    harness.options(parser, repeats=REPEATS, out=OUT,
                    smallest="the density filters at 16 x 8 x 8")
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(measure(json.loads(args.case), args.repeats)))
        return
    if args.smallest:
        args.repeats = 1
    t0 = time.perf_counter()
    rows = []
    for case in cases(args.full, args.smallest):
        rows.append(run(case, args.repeats))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    print(table(rows))
    harness.write(args.out, harness.record(
        {"command": harness.command(__file__, argv), "repeats": args.repeats, "statistic": "median",
         "cores": os.cpu_count(), "wall_s": time.perf_counter() - t0, "rows": rows},
        args.repeats))
    print(f"wrote {args.out} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
