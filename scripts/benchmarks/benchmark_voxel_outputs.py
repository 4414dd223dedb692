"""Time and peak memory of a grid design's outputs: design.npz, design.vti, design.stl.

A 320 x 160 x 160 design (8.2 M elements, 25 M dofs): a smooth random field
(white noise, Gaussian-smoothed, thresholded at its median). Each output is
written in a fresh process (so
that its peak RSS, VmHWM (`harness.peak_bytes`), is its own plus the design's arrays),
with a displacement field of 3 float64 per node for the VTI. Writes
``results/benchmark_voxel_outputs.json`` (``--out``) with the machine and the commit; the
median of ``--repeats`` (3) runs, min and max beside it, only where one run takes under a
minute. ``--smallest``: 16 x 8 x 8, one run each.

    python scripts/benchmarks/benchmark_voxel_outputs.py [--shape 320 160 160]
"""

import argparse
import json
import os
import sys
import tempfile
import time

import harness

ROOT = harness.ROOT


def _design(shape, seed=0):
    """A smooth random design: white noise, Gaussian-smoothed (sigma 4 elements),
    thresholded at its median; densities 1e-3 and 1 (float64, as a run holds them)."""
    import numpy as np
    from scipy.ndimage import gaussian_filter
    x = gaussian_filter(np.random.default_rng(seed).random(shape, dtype=np.float32), 4.0)
    return np.where(x.ravel() > np.median(x), 1.0, 1e-3)


def child(what: str, shape, out: str) -> dict:
    """One output in this process: {seconds, peak_rss_bytes, bytes, ...}."""
    import numpy as np
    from topopt.grid import Grid
    from topopt.io import save_grid_design, write_grid_stl, write_vti
    grid = Grid(tuple(shape))
    x = _design(grid.shape)
    base = harness.peak_bytes()
    extra = {}
    if what == "vti":
        u = np.zeros((grid.n_nodes, 3))
        u[:, 1] = -1e-3
        base = harness.peak_bytes()
    t = time.perf_counter()
    if what == "npz":
        path = save_grid_design(out, grid, x, x, {"problem": "benchmark"}, stl=False)[0]
        os.unlink(os.path.join(out, "design.vti"))
    elif what == "vti":
        path = write_vti(os.path.join(out, "design.vti"), grid, {"x": x, "x_phys": x},
                         {"displacement": u})
    else:
        path = write_grid_stl(os.path.join(out, "design.stl"), grid, x)
        extra["triangles"] = (os.path.getsize(path) - 84) // 50
    seconds = time.perf_counter() - t
    peak = harness.peak_bytes()
    return {"seconds": seconds, "peak_rss_bytes": peak, "rss_before_bytes": base,
            "peak_over_before_bytes": peak - base, "file_bytes": os.path.getsize(path),
            "n_el": grid.n_el, **extra}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", type=int, nargs=3, default=[320, 160, 160])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    harness.options(ap, repeats=3, smallest="16 x 8 x 8",
                    out=os.path.join(ROOT, "results", "benchmark_voxel_outputs.json"))
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.shape, args.folder)))
        return
    if args.smallest:
        args.shape, args.repeats = [16, 8, 8], 1
    runs = {}
    for what in ("npz", "vti", "stl"):
        runs[what] = []
        while len(runs[what]) < args.repeats:
            with tempfile.TemporaryDirectory() as out:
                runs[what].append(harness.child([sys.executable, __file__, "--child", what,
                                                 "--folder", out, "--shape",
                                                 *map(str, args.shape)]))
            print(what, runs[what][-1], flush=True)
            if runs[what][-1]["seconds"] >= 60:
                break
    summary = {}
    for what, rs in runs.items():
        seconds = harness.spread(r["seconds"] for r in rs)
        med = rs[0]                                   # sizes: the same in every run
        summary[what] = {"runs": len(rs), "median_seconds": seconds["median"],
                         "seconds": seconds,
                         "peak_rss_bytes": max(r["peak_rss_bytes"] for r in rs),
                         "peak_over_design_bytes": max(r["peak_over_before_bytes"] for r in rs),
                         "file_bytes": med["file_bytes"],
                         "peak_over_design_bytes_per_element":
                             max(r["peak_over_before_bytes"] for r in rs) / med["n_el"],
                         **({"triangles": med["triangles"]} if "triangles" in med else {})}
    record = {"command": harness.command(__file__, argv), "shape": args.shape,
              "n_el": runs["npz"][0]["n_el"], "outputs": summary,
              "runs": runs, "note": "each output in a fresh process; peak_over_design: VmHWM "
              "during the write minus VmHWM with the design (and, for vti, the "
              "displacement) in memory"}
    harness.write(args.out, harness.record(record, args.repeats))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
