"""The voxel path split across MPI ranks (`topopt.grid.slab_system`) against the serial one.

``mpirun -n P python tests/mpi_voxel.py OUT.json CASE [CASE ...]``; rank 0
writes the numbers as JSON and tests/test_slabs.py asserts them.

* ``peak``: each rank's traced peak memory with 16 element planes per rank.
* ``run``: 10 MMA evaluations of `topopt.formulations.SlabCompliance` at 32 x 8 x 8
  (the serial reference runs in tests/test_slabs.py).
* ``solve``: the 3-D cantilever (problems/cantilever3d.py, voxel) at
  32 x 8 x 8 with a graded design: the slab solution against the serial
  `GridSystem`'s, the compliance, the CG iterations, and the design gradient
  of the compliance (reverse through `fem.solve` and `ad.allsum`) and its
  forward derivative, each against the serial one.
"""

import json
import os
import sys

import numpy as np
from mpi4py import MPI

from topopt import ad, fem
from topopt.formulations.slab_compliance import SlabCompliance
from topopt.grid import Grid
from topopt.grid.slab_system import SlabSystem, slab_align
from topopt.grid.slabs import Slabs
from topopt_problems.cantilever3d import setup, slab_setup

COMM = MPI.COMM_WORLD
SHAPE = (32, 8, 8)
OPTIONS = {"rtol": 1e-10, "coarse_size": 500, "precision": "mixed"}
#: the run case: problems/cantilever3d.py's setup, volfrac 0.3, rmin 1.5 (tests/test_slabs.py
#: runs the serial reference with the same options)
RUN_SHAPE = (32, 8, 8)
RUN_OPTIONS = {"rtol": 1e-10, "coarse_size": 3000, "precision": "mixed", "warm_start": True}


def _design(grid, seed=3):
    """A graded design in [0.05, 1]: smooth along x, noisy across."""
    c = grid.element_centers()
    rng = np.random.default_rng(seed)
    return np.clip(0.4 + 0.4 * np.sin(c[:, 0] / 5) * np.cos(c[:, 1] / 3)
                   + 0.1 * rng.standard_normal(grid.n_el), 0.05, 1.0)


def _slab_model(grid, model, f, options):
    """This rank's slab, system, load (additive) and the slab's element range."""
    comps = model.components
    slabs = Slabs(grid, COMM, slab_align(grid.shape, comps, options))
    fixed = np.zeros(model.ndof)
    fixed[model.fixed] = 1.0
    fixed_local = np.flatnonzero(slabs.take(fixed, comps))
    S = SlabSystem(slabs, model.Ke, comps, fixed_local, dict(options))
    f_local = slabs.additive(slabs.take(f, comps), comps)
    plane = grid.shape[1] * grid.shape[2]
    return slabs, S, f_local, slice(slabs.e0 * plane, slabs.e1 * plane)


def case_solve():
    grid, model, f = setup(*SHAPE, voxel=True)
    comps = model.components
    E = 1e-9 + _design(grid) ** 3
    serial = model.system("voxel", solver_options=dict(OPTIONS))
    u_serial = fem.solve(serial, E, f)
    its_serial = serial._iterative.log[-1]
    slabs, S, f_local, own = _slab_model(grid, model, f, OPTIONS)
    E_local = E[own]
    u = fem.solve(S, E_local, f_local)
    err_u = slabs.max(float(np.max(np.abs(u - slabs.take(u_serial, comps)))))

    def c_local(E_part):
        return ad.allsum(f_local @ fem.solve(S, E_part, f_local), COMM)

    def c_serial(E_all):
        return f @ fem.solve(serial, E_all, f)
    c, g = ad.value_and_allgradient(c_local, E_local, comm=COMM)
    c_ref, g_ref = ad.value_and_gradient(c_serial, E)
    err_g = slabs.max(float(np.max(np.abs(g - g_ref[own]))))
    d = np.random.default_rng(7).standard_normal(grid.n_el)
    _, cdot = ad.jvp(c_local, (E_local,), (d[own],))
    _, cdot_ref = ad.jvp(c_serial, (E,), (d,))
    return {"u_scale": float(np.max(np.abs(u_serial))), "u_error": err_u,
            "compliance": float(c), "compliance_serial": float(c_ref),
            "gradient_scale": float(np.max(np.abs(g_ref))), "gradient_error": err_g,
            "tangent": float(cdot), "tangent_serial": float(cdot_ref),
            "cg_iterations": int(S._iterative.log[0]), "cg_iterations_serial": its_serial,
            "levels": [list(g.shape) for g in S._iterative.grids]}


def _slab_cantilever(shape, options, volfrac=0.3, rmin=1.5):
    """problems/cantilever3d.py's voxel setup on this rank's slab (`slab_setup`)."""
    S, f = slab_setup(*shape, COMM, dict(options))
    return S.slabs, SlabCompliance(S, f, volfrac, rmin)


def case_run(shape=RUN_SHAPE, maxeval=10):
    """10 MMA evaluations on the slabs; rank 0 gathers the design (a test's gather)."""
    slabs, problem = _slab_cantilever(shape, RUN_OPTIONS)
    run = problem.run(maxeval)
    x = COMM.gather(run.x, root=0)
    x_phys = COMM.gather(np.asarray(run.x_phys), root=0)
    return {"compliance": run.compliance, "volume": run.volume, "status": run.status,
            "x": None if x is None else np.concatenate(x).tolist(),
            "x_phys": None if x_phys is None else np.concatenate(x_phys).tolist(),
            "cg_iterations": run.cg_iterations}
def case_peak():
    """Each rank's traced peak (tracemalloc: numpy's arrays included) over 3 evaluations with
    16 element planes per rank, and the largest array any rank gathered from the others
    (`Slabs.gather`, `Slabs.gather_cells`: the coarsest level's, solved on every rank)."""
    import tracemalloc
    gathered = {"vector": 0, "cells": 0}

    def counted(name, fun):
        def wrapper(self, *args, **kw):
            out = fun(self, *args, **kw)
            gathered[name] = max(gathered[name], out.size)
            return out
        return wrapper
    saved = Slabs.gather, Slabs.gather_cells
    Slabs.gather, Slabs.gather_cells = counted("vector", saved[0]), counted("cells", saved[1])
    try:
        tracemalloc.start()
        slabs, problem = _slab_cantilever((16 * COMM.size, 8, 8), RUN_OPTIONS)
        problem.run(3)
        peaks = COMM.gather(tracemalloc.get_traced_memory()[1], root=0)
        tracemalloc.stop()
    finally:
        Slabs.gather, Slabs.gather_cells = saved
    coarse = problem.system._iterative.slabs[-1].grid
    return {"peaks": peaks, "gathered_vector": gathered["vector"],
            "gathered_cells": gathered["cells"], "coarsest_dofs": 3 * coarse.n_nodes,
            "coarsest_cell_entries": coarse.n_el * 24 * 24,
            "fine_dofs": 3 * slabs.grid.n_nodes}


def case_write(folder):
    """4 evaluations checkpointed every 2 into `folder`, the pieces written; a second run
    resumes from them; rank 0 reads every piece back."""
    slabs, problem = _slab_cantilever(RUN_SHAPE, RUN_OPTIONS)
    run = problem.run(4, checkpoint=folder, checkpoint_every=2)
    problem.write(folder, run)
    _, again = _slab_cantilever(RUN_SHAPE, RUN_OPTIONS)
    resumed = again.run(1, resume=folder)
    same = slabs.max(float(np.max(np.abs(resumed.x - run.x))))
    files = sorted(os.listdir(folder)) if COMM.rank == 0 else None
    return {"files": files, "resumed_start_error": same, "compliance": run.compliance,
            "resumed_compliance": resumed.compliance}


def case_filters(shape=(32, 8, 8), rmin=2.5):
    """Both filters on the slabs against the serial grid filters: forward and transpose."""
    from topopt.grid import GridDensityFilter, GridHelmholtzFilter, SlabDensityFilter
    from topopt.grid import SlabHelmholtzFilter
    grid = Grid(shape)
    slabs = Slabs(grid, COMM, slab_align(shape, 1, {"coarse_size": 500}))
    rng = np.random.default_rng(11)
    x, y = rng.uniform(0, 1, grid.n_el), rng.standard_normal(grid.n_el)
    plane = shape[1] * shape[2]
    own = slice(slabs.e0 * plane, slabs.e1 * plane)
    out = {}
    for name, split, whole in (
            ("density", SlabDensityFilter(slabs, rmin), GridDensityFilter(grid, rmin)),
            ("helmholtz", SlabHelmholtzFilter.from_rmin(slabs, rmin, {"coarse_size": 500}),
             GridHelmholtzFilter.from_rmin(grid, rmin))):
        fwd = slabs.max(float(np.max(np.abs(split(x[own]) - whole(x)[own]))))
        adj = slabs.max(float(np.max(np.abs(split.transpose(y[own]) - whole.transpose(y)[own]))))
        out[name] = {"forward_error": fwd, "transpose_error": adj}
    return out


CASES = {"solve": case_solve, "run": case_run, "peak": case_peak, "filters": case_filters}

if __name__ == "__main__":
    out = {name: CASES[name]() for name in sys.argv[2:] if name in CASES}
    if "write" in sys.argv[2:]:
        out["write"] = case_write(os.path.join(os.path.dirname(sys.argv[1]), "pieces"))
    if COMM.rank == 0:
        with open(sys.argv[1], "w") as fh:
            json.dump(out, fh, indent=1)
