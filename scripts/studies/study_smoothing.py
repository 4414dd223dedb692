"""Smoothing schedules of the voxel multigrid by the time of a converged solve, not by CG iterations.

The 3-D cantilever of ``problems/cantilever3d.py`` on the voxel path, one
smooth random design (a seeded random field, the density filter of radius
3, a projection at 0.5 with beta 8, SIMP p = 3: at 128 x 64 x 64 E from
7e-5 to 0.88, 0.02 to 0.37 between the 5th and 95th percentiles; a contrast
of 1e4, not an optimized design's 1e9: a random field thresholded to 0 and 1
leaves solid islands in the void, which CG did not solve in 500
iterations), solved cold to rtol 1e-8 with each
schedule of `SCHEDULES`: the Chebyshev degree on the finest level (one more
on the coarser ones) and its interval ratio, the V-cycle in float32
(``precision="mixed"``). Per schedule: the median seconds of `--repeats`
solves (a new factor each, the first compiling nothing: a solve before the
timing warms the kernels), CG iterations, and the seconds in fine products.

    python scripts/studies/study_smoothing.py [--shape 128x64x64] [--repeats 3] [--out PATH]

writes ``results/study_smoothing.json`` (machine, commit, spread: `harness.record`;
schedules, each time with its min and max); the
notes of docs/notes/grids.md quote it. Needs numba for the kernels'
figures (without it the numpy path is timed).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.join(ROOT, "scripts", "benchmarks")]
import harness  # noqa: E402

#: (degree, eig_ratio): the default (2, 30) and its neighbours.
SCHEDULES = [(1, 30.0), (2, 30.0), (3, 30.0), (4, 30.0), (2, 10.0), (2, 60.0), (3, 10.0)]


def design(grid, seed: int = 0) -> np.ndarray:
    """E of the smooth random design (see the module docstring)."""
    from topopt.grid.filters import GridDensityFilter
    x = np.random.default_rng(seed).random(grid.n_el)
    x = GridDensityFilter(grid, 3.0)(x)
    x = (np.tanh(8 * 0.5) + np.tanh(8 * (x - 0.5))) / (np.tanh(8 * 0.5) + np.tanh(8 * 0.5))
    return 1e-9 + (1 - 1e-9) * x ** 3


def solve_time(model, f, E, degree: int, ratio: float, repeats: int) -> dict:
    """Median seconds of cold solves of ``K(E) u = f`` with one schedule."""
    S = model.system(solver="voxel", solver_options={
        "degree": degree, "eig_ratio": ratio, "precision": "mixed"})
    b = np.asarray(f, dtype=float) * S._free
    S._iterative.factor(E).solve(b)                  # compiles and warms the kernels
    times, its, fine = [], [], []
    for _ in range(repeats):
        S._iterative.timers.clear()
        t0 = time.perf_counter()
        F = S._iterative.factor(E)
        F.solve(b)
        times.append(time.perf_counter() - t0)
        its.append(F.last_iterations)
        fine.append(S._iterative.timers["fine_operator"])
    spread = {"seconds": harness.spread(times), "fine_product_seconds": harness.spread(fine)}
    return {"degree": degree, "eig_ratio": ratio, "seconds_median": spread["seconds"]["median"],
            "seconds": times, "cg_iterations": its[-1],
            "fine_product_seconds": spread["fine_product_seconds"]["median"], "spread": spread}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="128x64x64")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "study_smoothing.json"))
    args = parser.parse_args(argv)
    from problems import cantilever3d
    shape = tuple(int(s) for s in args.shape.split("x"))
    grid, model, f = cantilever3d.setup(*shape, voxel=True)
    E = design(grid)
    out = harness.record({
        "command": harness.command(__file__, argv), "shape": shape, "dofs": 3 * grid.n_nodes,
        "E_percentiles_0_5_50_95_100": np.percentile(E, [0, 5, 50, 95, 100]).tolist(),
        "schedules": []}, args.repeats)
    for degree, ratio in SCHEDULES:
        case = solve_time(model, f, E, degree, ratio, args.repeats)
        out["schedules"].append(case)
        print(f"degree {degree} ratio {ratio:4.0f}: {case['seconds_median']:6.2f} s  "
              f"CG {case['cg_iterations']:3d}  fine products {case['fine_product_seconds']:.2f} s",
              flush=True)
    harness.write(args.out, out)
    return out


if __name__ == "__main__":
    main()
