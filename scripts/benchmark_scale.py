"""The 3-D cantilever at 0.4, 1.6, 6.9 and 26 M dofs on the voxel path: time, phases, memory.

Each case runs in its own process (its peak resident memory, ``VmHWM``, is
then its own): the cantilever of ``problems/cantilever3d.py`` (volfrac 0.3,
rmin 1.5, density filter, MMA) on the matrix-free path (``solver="voxel"``,
warm-started CG to rtol 1e-8), `--evals` design iterations, its run folder
written (design.npz, design.vti, design.stl, pictures, checkpoint). Reported
per case: setup seconds (grid, model, filter, multigrid levels: everything
before the first solve), seconds per design iteration (median over the
iterations after the first; the first is cold, its CG starts from zero) and
the mean split by phase (fine-level products, coarse-level products,
transfers, coarsest solves, Galerkin cells per design, the rest of CG and
smoothing: vector work, sensitivities, filter, and NLopt with the rest of
the driver), CG iterations per solve, peak memory and bytes per dof.

``--crossover`` runs both paths (10 iterations) on small grids: the size
from which ``solver="auto"`` takes the voxel path (`VOXEL_MIN_DOFS`).
``--reference`` adds today's mesh path (scikit-fem, assembled matrices,
``mg-cg``) at 128 x 64 x 64, the issue's baseline; ``--spmv`` the product
``K(E) u``: the matrix-free operator against the assembled CSR matrix
(scipy) at 0.4 and 1.6 M dofs (medians of 7).

    python scripts/benchmark_scale.py [--sizes 0.4,1.6,6.9,26] [--evals 3] [--reference] [--spmv]

writes ``results/benchmark_scale.json``. The figures need numpy and scipy
only (no extra); the table of docs/notes/grids.md quotes them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

#: `--crossover`: where the voxel path starts to win over the mesh path (``solver="auto"``).
CROSSOVER = [(16, 8, 8), (24, 12, 12), (32, 16, 16), (48, 24, 24)]
SIZES = {"0.4": (80, 40, 40), "1.6": (128, 64, 64), "6.9": (208, 104, 104),
         "26": (336, 160, 160)}


def peak_bytes() -> int:
    """The process's peak resident memory (``VmHWM``)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _timed_responses(problem) -> list:
    """Wrap ``problem.responses`` to record when each evaluation starts."""
    starts, inner = [], problem.responses

    def responses(x, beta=None):
        starts.append(time.perf_counter())
        return inner(x, beta)
    problem.responses = responses
    return starts


def run_case(kind: str, shape: tuple, evals: int) -> dict:
    """One cantilever run; its setup, per-iteration seconds, phases and memory."""
    from topopt_problems import cantilever3d
    from topopt.formulations.compliance import ComplianceProblem
    from topopt.io.folder import run_compliance
    t0 = time.perf_counter()
    voxel = kind == "voxel"
    mesh, model, f = cantilever3d.setup(*shape, voxel=voxel)
    problem = ComplianceProblem(model, f, 0.3, 1.5, solver="voxel" if voxel else "mg-cg",
                                solver_options={"warm_start": True})
    setup = time.perf_counter() - t0
    S = problem.system
    problem.c0 = float(problem.compliance(problem.start()))        # the scale, then reset
    for timers in (S.timers, getattr(S._iterative, "timers", {})):
        timers.clear()
    flt = problem.filter
    flt.seconds = 0.0
    S.counts.clear()
    starts = _timed_responses(problem)
    with tempfile.TemporaryDirectory() as out:
        t1 = time.perf_counter()
        res = run_compliance("cantilever3d", problem, title="benchmark", notes={},
                             sizes=dict(zip(("nelx", "nely", "nelz"), shape)), out=out,
                             maxeval=evals, verbose=False)
        total = time.perf_counter() - t1
        files = {name: os.path.getsize(os.path.join(out, name)) for name in os.listdir(out)}
    n = res["evaluations"]
    per = np.diff(starts + [starts[0] + res["seconds"]])
    mg = dict(getattr(S._iterative, "timers", {}))
    solve = S.timers["solve"] + S.timers["adjoint"]
    solver_parts = sum(mg.get(k, 0.0) for k in ("fine_operator", "coarse_operators",
                                                  "transfer", "coarse_solve"))
    phases = {k: mg.get(k, 0.0) / n for k in ("fine_operator", "coarse_operators", "transfer",
                                                "coarse_solve")}
    phases["galerkin_cells"] = (mg.get("setup", 0.0) if voxel else
                                S.timers["factorization"]) / n
    phases["cg_and_smoothing_vectors"] = (solve - solver_parts) / n
    phases["sensitivities"] = S.timers["sensitivity"] / n
    phases["filter"] = flt.seconds / n
    phases["nlopt_and_driver"] = (res["seconds"] - solve - S.timers["sensitivity"]
                                  - flt.seconds - (mg.get("setup", 0.0) if voxel
                                                   else S.timers["factorization"])) / n
    ndof = int(model.ndof)
    peak = peak_bytes()
    return {"kind": kind, "shape": list(shape), "elements": int(model.n_el), "dofs": ndof,
            "setup_s": setup, "setup_s_per_million_dofs": setup / (ndof / 1e6),
            "evaluations": n, "s_per_iteration_median": float(np.median(per[1:] if n > 1 else per)),
            "s_per_iteration_mean": res["seconds"] / n, "first_iteration_s": float(per[0]),
            "run_with_outputs_s": total, "phases_s_per_iteration": phases,
            "cg_iterations_per_solve": res.get("cg_iterations_per_solve"),
            "cg_iterations_max": res.get("cg_iterations_max"),
            "compliance": res["compliance"], "peak_rss_bytes": peak,
            "bytes_per_dof": peak / ndof, "files_bytes": files,
            "levels": [list(g.shape) for g in S._iterative.grids] if voxel else None}


def spmv_case(shape: tuple, repeats: int = 7) -> dict:
    """``K(E) u``: `GridOperator.apply` against the CSR matrix assembled in slabs."""
    import scipy.sparse as sps
    from topopt.grid import Grid, GridOperator, elasticity_matrix
    grid = Grid(shape)
    K0 = elasticity_matrix(grid)
    A = GridOperator(grid, K0, 3)
    rng = np.random.default_rng(0)
    E, u = rng.uniform(1e-3, 1.0, grid.n_el), rng.standard_normal(A.ndof)
    K, step = None, 1 << 16
    for e0 in range(0, grid.n_el, step):
        el = np.arange(e0, min(grid.n_el, e0 + step))
        nodes = grid.element_nodes(el)
        dofs = (np.arange(3)[None, None, :] * grid.n_nodes + nodes[:, :, None]).reshape(
            el.size, -1)
        data = E[el, None, None] * K0[None]
        part = sps.csr_matrix((data.ravel(), (np.repeat(dofs, 24, axis=1).ravel(),
                                              np.tile(dofs, (1, 24)).ravel())),
                              shape=(A.ndof, A.ndof))
        K = part if K is None else K + part
    y = np.empty(A.ndof)

    def median(fun):
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fun()
            times.append(time.perf_counter() - t)
        return float(np.median(times))
    free = median(lambda: A.apply(E, u, out=y))
    csr = median(lambda: K @ u)
    assert np.allclose(A.apply(E, u), K @ u, rtol=1e-10, atol=1e-10 * abs(y).max())
    return {"shape": list(shape), "dofs": A.ndof, "matrix_free_s": free, "csr_spmv_s": csr,
            "ratio": free / csr, "csr_nnz": int(K.nnz), "csr_bytes": int(
                K.data.nbytes + K.indices.nbytes + K.indptr.nbytes)}


def _child(argv) -> None:
    import topopt
    topopt.tune_malloc()                           # as the problem scripts do
    kind, out = argv[0], argv[-1]
    shape = tuple(int(s) for s in argv[1].split("x"))
    result = spmv_case(shape) if kind == "spmv" else run_case(kind, shape, int(argv[2]))
    with open(out, "w") as fh:
        json.dump(result, fh)


def _spawn(args: list) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        path = tmp.name
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=ROOT)
    subprocess.run([sys.executable, __file__, "--child", *args, path], check=True, env=env)
    with open(path) as fh:
        out = json.load(fh)
    os.unlink(path)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(SIZES))
    parser.add_argument("--evals", type=int, default=3)
    parser.add_argument("--reference", action="store_true")
    parser.add_argument("--spmv", action="store_true")
    parser.add_argument("--crossover", action="store_true")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "benchmark_scale.json"))
    args = parser.parse_args()
    report = {"voxel": [], "reference": None, "spmv": [], "crossover": []}
    if os.path.exists(args.out):
        with open(args.out) as fh:
            report.update(json.load(fh))
        report["voxel"] = [c for c in report["voxel"]
                           if str(c.get("label")) not in args.sizes.split(",")]
    for label in args.sizes.split(","):
        shape = SIZES[label] if label in SIZES else tuple(int(n) for n in label.split("x"))
        case = _spawn(["voxel", "x".join(map(str, shape)), str(args.evals)])
        case["label"] = label
        report["voxel"].append(case)
        print(f"{label:>4} M  {case['dofs']:>10} dofs  setup {case['setup_s']:6.1f} s  "
              f"{case['s_per_iteration_median']:7.2f} s/it  CG {case['cg_iterations_per_solve']:.1f}"
              f"  peak {case['peak_rss_bytes'] / 2**30:5.2f} GiB  {case['bytes_per_dof']:5.0f} B/dof")
        _write(args.out, report)
    if args.reference:
        ref = _spawn(["mesh", "128x64x64", str(args.evals)])
        report["reference"] = ref
        print(f"mesh mg-cg 128x64x64: setup {ref['setup_s']:.1f} s, "
              f"{ref['s_per_iteration_median']:.2f} s/it, peak {ref['peak_rss_bytes'] / 2**30:.2f} GiB")
        _write(args.out, report)
    if args.crossover:
        report["crossover"] = []
        for shape in CROSSOVER:
            both = [_spawn([kind, "x".join(map(str, shape)), "10"]) for kind in ("voxel", "mesh")]
            report["crossover"].append({"shape": list(shape), "dofs": both[0]["dofs"], **{
                f"{c['kind']}_{k}": c[k] for c in both
                for k in ("setup_s", "s_per_iteration_median", "peak_rss_bytes")}})
            row = report["crossover"][-1]
            print(f"{row['dofs']:>8} dofs: voxel {row['voxel_setup_s']:.2f} s + "
                  f"{row['voxel_s_per_iteration_median']:.3f} s/it, mesh mg-cg "
                  f"{row['mesh_setup_s']:.2f} s + {row['mesh_s_per_iteration_median']:.3f} s/it")
        _write(args.out, report)
    if args.spmv:
        report["spmv"] = [_spawn(["spmv", s]) for s in ("80x40x40", "128x64x64")]
        for c in report["spmv"]:
            print(f"K u at {c['dofs']} dofs: matrix-free {c['matrix_free_s'] * 1e3:.1f} ms, "
                  f"CSR {c['csr_spmv_s'] * 1e3:.1f} ms ({c['ratio']:.2f}x)")
        _write(args.out, report)


def _write(path: str, report: dict) -> None:
    report["voxel"].sort(key=lambda c: c["dofs"])
    with open(path, "w") as fh:
        json.dump(report, fh, indent=1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2:])
    else:
        main()
