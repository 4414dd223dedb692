"""The 3-D cantilever at 0.4, 1.6, 6.9 and 26 M dofs on the voxel path: time, phases, memory.

Each case runs in its own process (its peak resident memory, ``VmHWM``:
`harness.peak_bytes`, is then its own): the cantilever of ``problems/cantilever3d.py`` (volfrac 0.3,
rmin 1.5, density filter, MMA) on the matrix-free path (``solver="voxel"``,
warm-started CG to rtol 1e-8, its V-cycle in float32: ``precision="mixed"``), `--evals` design iterations, its run folder
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

Each run also measures the machine's memory bandwidth, STREAM's triad
``a = b + s c`` (3 arrays of 200 MB, 10 repeats, best and median; counted as
3 arrays x 8 B per element, write-allocate not counted:
``scripts/benchmarks/benchmark_scale_parts.py``), with numpy (one thread) and with numba
(``prange`` on all its threads) when numba is importable; and, per case, the
fine-level product `GridOperator.apply` of the solver alone (median of 7, 3
from 30 M dofs) against the least traffic it needs: the nodal vector read,
the result read and written, the element coefficients read,
``8 (3 ndof) + 8 n_el`` bytes in float64 (``K0``, 4.6 kB, stays in cache),
as bytes per second and as a fraction of the best triad.

``--baseline REF`` runs the same sizes on the library of commit REF as well
(checked out by ``git worktree add --detach`` in a temporary folder, removed
afterwards), each case in its own process beside the current one, the case
runner (this script) the same for both: per size, seconds per iteration of
both and their ratio, CG iterations, peak memory and bytes per dof. Solver
options the baseline does not know are left out (``options_dropped``).
Size ``100`` (512 x 256 x 256, 101.6 M dofs, 2 design iterations) runs only
when named. ``--smallest`` runs every part at its smallest size in seconds
(cases, reference and spmv at 32 x 16 x 16, the first crossover grid, 2
iterations each; the triad on 3 x 32 MB, 3 repeats; the baseline when
asked), into a temporary file unless ``--out`` names one.

    python scripts/benchmarks/benchmark_scale.py [--sizes 0.4,1.6,6.9,26[,100]] [--evals 3] [--optimizer mma]
        [--reference] [--spmv] [--crossover] [--baseline REF] [--smallest] [--out PATH]

writes ``results/benchmark_scale.json`` with the machine (CPU, cores, caches,
memory, versions), the commit (each case carries its own) and the statement of the
spread (`harness.record`; the medians' least values beside them). The figures
need numpy and scipy only (no extra; numba for its triad); the table of
docs/notes/grids.md quotes them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

import harness
from benchmark_scale_parts import accepted, triad, worktree

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

#: `--crossover`: where the voxel path starts to win over the mesh path (``solver="auto"``).
CROSSOVER = [(16, 8, 8), (24, 12, 12), (32, 16, 16), (48, 24, 24)]
SIZES = {"0.03": (32, 16, 16), "0.4": (80, 40, 40), "1.6": (128, 64, 64),
         "6.9": (208, 104, 104), "26": (336, 160, 160), "100": (512, 256, 256)}
DEFAULT_SIZES = "0.4,1.6,6.9,26"
#: Design iterations where not `--evals`: 100 M dofs take minutes each.
EVALS = {"100": 2}
#: `--smallest`: each part at its smallest size.
SMALLEST = {"size": "0.03", "evals": 2, "triad": (32_000_000, 3), "spmv": [(32, 16, 16)],
            "crossover": CROSSOVER[:1], "reference": (32, 16, 16)}
#: The solver options of the cases (those a baseline lacks are dropped).
SOLVER_OPTIONS = {"warm_start": True, "precision": "mixed"}
#: The mesh path's (``mg-cg``: no grid options).
MESH_OPTIONS = {"warm_start": True}


def _timed_responses(problem) -> list:
    """Wrap ``problem.responses`` to record when each evaluation starts."""
    starts, inner = [], problem.responses

    def responses(x, beta=None):
        starts.append(time.perf_counter())
        return inner(x, beta)
    problem.responses = responses
    return starts


def run_case(kind: str, shape: tuple, evals: int, optimizer: str = "nlopt") -> dict:
    """One cantilever run; its setup, per-iteration seconds, phases and memory.

    `optimizer` other than NLopt's goes to the problem's ``run`` where that knows
    it (a baseline's may not: then it is dropped, and said in ``options_dropped``).
    """
    cantilever3d = _problem()
    from topopt.formulations.compliance import ComplianceProblem
    from topopt.io.folder import run_compliance
    t0 = time.perf_counter()
    voxel = kind == "voxel"
    options, dropped = _known_options(SOLVER_OPTIONS if voxel else MESH_OPTIONS)
    run_options = {}
    if optimizer != "nlopt":
        import inspect
        if "optimizer" in inspect.signature(ComplianceProblem.run).parameters:
            run_options["optimizer"] = optimizer
        else:
            dropped = dropped + ["optimizer"]
    mesh, model, f = cantilever3d.setup(*shape, voxel=voxel)
    problem = ComplianceProblem(model, f, 0.3, 1.5, solver="voxel" if voxel else "mg-cg",
                                solver_options=options)
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
                             maxeval=evals, verbose=False, **run_options)
        total = time.perf_counter() - t1
        files = {name: os.path.getsize(os.path.join(out, name)) for name in os.listdir(out)}
    n = res["evaluations"]
    per = np.diff(starts + [starts[0] + res["seconds"]])
    steady = harness.spread(per[1:] if n > 1 else per)     # the first iteration is cold
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
    peak = harness.peak_bytes()
    return {"kind": kind, "shape": list(shape), "elements": int(model.n_el), "dofs": ndof,
            "setup_s": setup, "setup_s_per_million_dofs": setup / (ndof / 1e6),
            "evaluations": n, "s_per_iteration_median": steady["median"],
            "s_per_iteration": steady,
            "s_per_iteration_mean": res["seconds"] / n, "first_iteration_s": float(per[0]),
            "run_with_outputs_s": total, "phases_s_per_iteration": phases,
            "cg_iterations_per_solve": res.get("cg_iterations_per_solve"),
            "cg_iterations_max": res.get("cg_iterations_max"),
            "compliance": res["compliance"], "peak_rss_bytes": peak,
            "bytes_per_dof": peak / ndof, "files_bytes": files,
            "levels": [list(g.shape) for g in S._iterative.grids] if voxel else None,
            "options_dropped": dropped, "optimizer": run_options.get("optimizer", "nlopt"),
            "fine_product": fine_product(S._iterative.fine, 7 if ndof < 3e7 else 3)
            if voxel else None}


def _problem():
    """``cantilever3d`` of the checkout under test (``problems`` before it installed as
    ``topopt_problems``), never an installed copy of another checkout."""
    import importlib

    import topopt
    root = os.path.dirname(os.path.dirname(os.path.abspath(topopt.__file__)))
    for name in ("topopt_problems.cantilever3d", "problems.cantilever3d"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if os.path.abspath(module.__file__).startswith(root + os.sep):
            return module
    raise ImportError(f"no cantilever3d problem in {root}")


def _known_options(options: dict) -> tuple[dict, list]:
    """The `options` the library under test accepts, and the names it lacks (a baseline's)."""
    try:
        from topopt.fem.solvers.krylov import _options
        from topopt.grid.multigrid import GRID_OPTIONS
    except ImportError:
        return dict(options), []
    return accepted(options, list(_options(None)) + list(GRID_OPTIONS))


def fine_product(A, repeats: int) -> dict:
    """``K(E) u`` of the finest level (`GridOperator.apply`) alone: median seconds, bytes/s.

    The least traffic: ``u`` read, ``y`` read and written (zeroed, then the
    element vectors added), ``E`` read: ``8 (3 ndof) + 8 n_el`` bytes.
    """
    rng = np.random.default_rng(0)
    E, u = rng.uniform(1e-3, 1.0, A.grid.n_el), rng.standard_normal(A.ndof)
    y = np.empty(A.ndof)
    seconds, _ = harness.timed(lambda: A.apply(E, u, out=y), repeats, warmup=1)  # work arrays
    nbytes = 8 * 3 * A.ndof + 8 * A.grid.n_el
    median = seconds["median"]
    return {"seconds_median": median, "seconds_min": seconds["min"], "repeats": repeats,
            "seconds": seconds,
            "bytes_min": nbytes, "bytes_formula": "8 (3 ndof) + 8 n_el",
            "bytes_per_s": nbytes / median}


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
    free, _ = harness.timed(lambda: A.apply(E, u, out=y), repeats)
    csr, _ = harness.timed(lambda: K @ u, repeats)
    assert np.allclose(A.apply(E, u), K @ u, rtol=1e-10, atol=1e-10 * abs(y).max())
    return {"shape": list(shape), "dofs": A.ndof, "matrix_free_s": free["median"],
            "csr_spmv_s": csr["median"], "ratio": free["median"] / csr["median"],
            "spread": {"matrix_free_s": free, "csr_spmv_s": csr},
            "csr_nnz": int(K.nnz), "csr_bytes": int(
                K.data.nbytes + K.indices.nbytes + K.indptr.nbytes)}


def _child(argv) -> None:
    import topopt
    getattr(topopt, "tune_malloc", lambda: None)()           # as the problem scripts do
    kind = argv[0]
    if kind == "triad":
        result = triad(int(argv[1]), int(argv[2]))
    else:
        shape = tuple(int(s) for s in argv[1].split("x"))
        result = (spmv_case(shape) if kind == "spmv"
                  else run_case(kind, shape, int(argv[2]), *argv[3:]))
    # which checkout ran it, without a machine's absolute path
    here = os.path.dirname(os.path.dirname(os.path.abspath(topopt.__file__)))
    result["library"] = "this checkout" if here == ROOT else "the baseline's worktree"
    result["load_average"] = list(os.getloadavg())           # others' work on the machine
    print(json.dumps(result))


def _spawn(args: list, library: str = ROOT) -> dict:
    """Run ``--child args`` in a new process importing topopt from `library`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return harness.child([sys.executable, __file__, "--child", *args],
                         env=dict(env, MPLBACKEND="Agg"), library=library)


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES,
                        help=f"labels of {sorted(SIZES)} or grids NXxNYxNZ, comma-separated")
    parser.add_argument("--evals", type=int, default=3)
    parser.add_argument("--optimizer", choices=("nlopt", "mma"), default="nlopt",
                        help="the voxel cases' MMA: NLopt's or ours (a baseline without it: NLopt's)")
    parser.add_argument("--reference", action="store_true")
    parser.add_argument("--spmv", action="store_true")
    parser.add_argument("--crossover", action="store_true")
    parser.add_argument("--baseline", metavar="REF", help="a commit to compare with")
    parser.add_argument("--smallest", action="store_true",
                        help="every part at its smallest size, in seconds")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.evals < 1:
        parser.error(f"--evals must be at least 1, got {args.evals}")
    if args.smallest:
        args.sizes, args.evals = SMALLEST["size"], SMALLEST["evals"]
        args.reference = args.spmv = args.crossover = True
        args.out = args.out or os.path.join(tempfile.gettempdir(), "benchmark_scale_smallest.json")
    args.out = args.out or os.path.join(ROOT, "results", "benchmark_scale.json")
    args.labels = args.sizes.split(",")
    return args


def _shape(label: str) -> tuple:
    return SIZES[label] if label in SIZES else tuple(int(n) for n in label.split("x"))


def main(argv=None) -> dict:
    args = _parse(argv)
    report = {"voxel": [], "reference": None, "spmv": [], "crossover": [], "baseline": None}
    if os.path.exists(args.out):
        with open(args.out) as fh:
            report.update(json.load(fh))
        report["voxel"] = [c for c in report["voxel"] if str(c.get("label")) not in args.labels]
    report.update(harness.record(
        {"command": harness.command(__file__, argv)}, repeats=7, statistic="median (per iteration: over "
         "the iterations after the first; products: of 7 repeats, 3 from 30 M dofs)"))
    nbytes, repeats = SMALLEST["triad"] if args.smallest else (200_000_000, 10)
    report["triad"] = t = _spawn(["triad", str(nbytes), str(repeats)])
    print(f"triad 3 x {t['array_bytes'] / 1e6:.0f} MB: numpy (1 thread) "
          f"{t['numpy']['best_gb_s']:.1f} GB/s best, {t['numpy']['median_gb_s']:.1f} median"
          + (f"; numba ({t['numba']['threads']} threads) {t['numba']['best_gb_s']:.1f} best, "
             f"{t['numba']['median_gb_s']:.1f} median" if t["numba"] else "; no numba"))
    _write(args.out, report)
    if args.baseline:
        with worktree(ROOT, args.baseline) as (path, sha):
            report["baseline"] = {"ref": args.baseline, "sha": sha, "cases": [], "comparison": []}
            _sizes(args, report, path)
    else:
        _sizes(args, report, None)
    _others(args, report)
    return report


def _case(args, label: str, triad_gb_s: float, library: str = ROOT) -> dict:
    """One voxel case in its own process; its fine product as a fraction of `triad_gb_s`."""
    shape = _shape(label)
    case = _spawn(["voxel", "x".join(map(str, shape)), str(EVALS.get(label, args.evals)),
                   args.optimizer], library)
    case["label"] = label
    fine = case.get("fine_product")
    if fine:
        fine["triad_gb_s"] = triad_gb_s
        fine["fraction_of_triad"] = fine["bytes_per_s"] / (triad_gb_s * 1e9)
    return case


#: The comparison of a baseline case with the current one, per size.
COMPARED = ("s_per_iteration_median", "cg_iterations_per_solve", "peak_rss_bytes",
            "bytes_per_dof")


def _sizes(args, report: dict, baseline: str | None) -> None:
    """The voxel cases of `args.labels` (and the baseline's beside each)."""
    gb_s = report["triad"]["best_gb_s"]
    for label in args.labels:
        if baseline:
            try:
                old = _case(args, label, gb_s, baseline)
            except RuntimeError as err:
                old = {"label": label, "error": str(err)}
            report["baseline"]["cases"].append(old)
        case = _case(args, label, gb_s)
        case["commit"] = report["commit"]["sha"]
        report["voxel"].append(case)
        _print_case(label, case)
        if baseline and "error" not in old:
            _print_case(label, old, f" baseline {report['baseline']['sha'][:9]}")
            row = {"label": label, "dofs": case["dofs"]}
            for key in COMPARED + ("fine_product",):
                pick = (lambda c: c[key]["seconds_median"]) if key == "fine_product" else (
                    lambda c: c[key])
                name = key + "_s" if key == "fine_product" else key
                row[f"baseline_{name}"], row[f"current_{name}"] = pick(old), pick(case)
            row["speedup"] = old["s_per_iteration_median"] / case["s_per_iteration_median"]
            row["fine_product_speedup"] = (row["baseline_fine_product_s"]
                                           / row["current_fine_product_s"])
            report["baseline"]["comparison"].append(row)
            print(f"{label:>4} M  speed-up {row['speedup']:.2f}x per iteration, "
                  f"{row['fine_product_speedup']:.2f}x fine product")
        _write(args.out, report)


def _print_case(label: str, case: dict, tag: str = "") -> None:
    fine = case["fine_product"]
    print(f"{label:>4} M{tag}  {case['dofs']:>10} dofs  setup {case['setup_s']:6.1f} s  "
          f"{case['s_per_iteration_median']:7.2f} s/it  CG {case['cg_iterations_per_solve']:.1f}"
          f"  peak {case['peak_rss_bytes'] / 2**30:5.2f} GiB  {case['bytes_per_dof']:5.0f} B/dof"
          f"  K u {fine['seconds_median'] * 1e3:.1f} ms = {fine['bytes_per_s'] / 1e9:.2f} GB/s"
          f" ({100 * fine['fraction_of_triad']:.1f} % of triad)")


def _others(args, report: dict) -> None:
    """`--reference`, `--crossover` and `--spmv`."""
    if args.reference:
        shape = SMALLEST["reference"] if args.smallest else (128, 64, 64)
        ref = _spawn(["mesh", "x".join(map(str, shape)), str(args.evals)])
        report["reference"] = ref
        print(f"mesh mg-cg {ref['shape']}: setup {ref['setup_s']:.1f} s, "
              f"{ref['s_per_iteration_median']:.2f} s/it, "
              f"peak {ref['peak_rss_bytes'] / 2**30:.2f} GiB")
        _write(args.out, report)
    if args.crossover:
        report["crossover"], evals = [], SMALLEST["evals"] if args.smallest else 10
        for shape in SMALLEST["crossover"] if args.smallest else CROSSOVER:
            both = [_spawn([kind, "x".join(map(str, shape)), str(evals)])
                    for kind in ("voxel", "mesh")]
            report["crossover"].append({"shape": list(shape), "dofs": both[0]["dofs"], **{
                f"{c['kind']}_{k}": c[k] for c in both
                for k in ("setup_s", "s_per_iteration_median", "peak_rss_bytes")}})
            row = report["crossover"][-1]
            print(f"{row['dofs']:>8} dofs: voxel {row['voxel_setup_s']:.2f} s + "
                  f"{row['voxel_s_per_iteration_median']:.3f} s/it, mesh mg-cg "
                  f"{row['mesh_setup_s']:.2f} s + {row['mesh_s_per_iteration_median']:.3f} s/it")
        _write(args.out, report)
    if args.spmv:
        shapes = SMALLEST["spmv"] if args.smallest else [(80, 40, 40), (128, 64, 64)]
        report["spmv"] = [_spawn(["spmv", "x".join(map(str, s))]) for s in shapes]
        for c in report["spmv"]:
            print(f"K u at {c['dofs']} dofs: matrix-free {c['matrix_free_s'] * 1e3:.1f} ms, "
                  f"CSR {c['csr_spmv_s'] * 1e3:.1f} ms ({c['ratio']:.2f}x)")
        _write(args.out, report)


def _write(path: str, report: dict) -> None:
    report["voxel"].sort(key=lambda c: c["dofs"])
    harness.write(path, report)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2:])
    else:
        main()
