"""3-D cantilever, the setup of top3d (Liu & Tovar 2014, Struct. Multidisc. Optim. 50:1175).

Design domain ``nelx x nely x nelz`` unit trilinear hexahedra (default
60 x 20 x 4, x along the beam, y up, z through the thickness); E0 = 1,
Emin = 1e-9, nu = 0.3, SIMP penalty p = 3, density filter of radius 1.5;
the face x = 0 clamped (all three components); a downward (-y) line load of
total magnitude 1 on the free end's bottom edge (x = nelx, y = 0, all z),
as consistent nodal forces: ``1 / nelz`` per edge node, half at the two
end nodes. (top3d puts -1 on every edge node, a total of ``nelz + 1``:
its compliances are ``(nelz + 1)^2`` times larger for the same design up
to the end-node weights.) Minimum compliance subject to volume fraction
`volfrac` by NLopt MMA.

    python problems/cantilever3d.py [--nelx 60 --nely 20 --nelz 4 --solver mg-cg ...]

writes ``results/cantilever3d/{design.png, history.png, result.json}`` and the
design (`topopt.io`): ``design.npz``, ``design.vtu`` (ParaView) and ``design.stl``.
``auto`` picks the matrix-free voxel path (`topopt.grid`, ``--solver voxel``:
no mesh, no assembled matrix) on large grids, multigrid-preconditioned CG
(``mg-cg``) from a few thousand dofs on and a direct solver below
(`topopt.fem.solvers.auto`); the run prints which.
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import GRID_SOLVERS, compliance_options, compliance_summary
from topopt.fem.solvers.auto import auto_voxel
from topopt.formulations.compliance import ComplianceProblem
from topopt.grid import Grid, SlabSystem, Slabs, elasticity_matrix, grid_elasticity, slab_align
from topopt.io.folder import run_compliance
from topopt.io.result import RunResult
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "cantilever3d")
OPTIONS = compliance_options(dict(nelx=60, nely=20, nelz=4), volfrac=0.3, rmin=1.5)
LOAD = "total -1 (y) on the edge x=nelx, y=0, consistent nodal forces"


def setup(nelx: int, nely: int, nelz: int, voxel: bool = False):
    """Mesh (or grid), elasticity model clamped at x = 0, and the end-edge line load.

    With `voxel` the model is a `topopt.grid.GridModel` on a `Grid` (the
    matrix-free path) instead of scikit-fem's.

    Examples
    --------
    >>> mesh, model, f = setup(4, 2, 2)
    >>> model.fixed.size, float(f.sum())
    (27, -1.0)
    >>> grid, model, f = setup(4, 2, 2, voxel=True)
    >>> model.fixed.size, float(f.sum())
    (27, -1.0)
    """
    if min(nelx, nely, nelz) < 1 or not all(isinstance(n, (int, np.integer))
                                            for n in (nelx, nely, nelz)):
        raise ValueError(f"nelx, nely, nelz must be positive integers, got "
                         f"{(nelx, nely, nelz)!r}")
    end_edge = _end_edge(nelx)
    if voxel:
        mesh = Grid((nelx, nely, nelz))
        model = grid_elasticity(mesh, nu=0.3, E0=1.0)
        edge = mesh.nodes_where(end_edge)
        z, y_dofs = mesh.node_coordinates(edge)[2], mesh.n_nodes + edge
    else:
        mesh = fem.box(nelx, nely, nelz)
        model = fem.elasticity(mesh, nu=0.3, E0=1.0)
        edge = np.flatnonzero(end_edge(mesh.p))
        z, y_dofs = mesh.p[2, edge], model.basis.nodal_dofs[1, edge]
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0))                    # clamped face
    f = np.zeros(model.ndof)
    f[y_dofs] = _end_load(z, nelz)                                   # total load -1 in y
    return mesh, model, f


def _end_edge(nelx):
    return lambda x: np.isclose(x[0], nelx) & np.isclose(x[1], 0.0)


def _end_load(z, nelz):
    """The line load's consistent nodal forces: ``-1 / nelz`` per node, half at the ends."""
    weight = np.full(z.size, 1.0 / nelz)                             # trapezoid rule
    weight[np.isclose(z, 0.0) | np.isclose(z, nelz)] *= 0.5
    return -weight


def slab_setup(nelx: int, nely: int, nelz: int, comm, solver_options: dict | None = None):
    """This MPI rank's slab of the voxel setup (`topopt.grid.slabs`), built without an array
    of the whole grid: the slab's `SlabSystem` (face x = 0 clamped) and its additive load."""
    grid = Grid((nelx, nely, nelz))
    slabs = Slabs(grid, comm, slab_align(grid.shape, 3, solver_options))
    local = slabs.local
    edge = local.nodes_where(slabs.where(_end_edge(nelx)))
    f = np.zeros(3 * local.n_nodes)
    f[local.n_nodes + edge] = _end_load(local.node_coordinates(edge)[2], nelz)
    S = SlabSystem(slabs, elasticity_matrix(local, nu=0.3), 3,
                   slabs.dofs_where(lambda x: np.isclose(x[0], 0.0), 3), solver_options)
    return S, slabs.additive(f, 3)


@keywords
def run(nelx: int = 60, nely: int = 20, nelz: int = 4, volfrac: float = 0.3, rmin: float = 1.5,
        penal: float = 3.0, filter: str = "density", maxeval: int = 150,
        solver: str = "auto", out: str | None = None, verbose: bool = False,
        solver_options: dict | None = None, **options) -> RunResult:
    """Optimize the 3-D cantilever; `options` go to `ComplianceProblem.run`.

    `solver_options` tune the solver (``{"rtol": 1e-8, "coarse_size":
    10000, ...}`` for the multigrid ones, see `topopt.fem.solvers.multigrid`;
    ``{"reanalysis": True}`` for a direct one, `topopt.fem.solvers.reanalysis`). The
    multigrid solvers start from the previous solution (``warm_start``:
    compliance stays second-order accurate from a warm start).
    """
    voxel = solver == "voxel" or (solver == "auto" and auto_voxel(
        3, 3 * (nelx + 1) * (nely + 1) * (nelz + 1)))
    if voxel:
        solver_options = dict(solver_options or {})
        solver_options.setdefault("warm_start", True)
    mesh, model, f = setup(nelx, nely, nelz, voxel=voxel)
    problem = ComplianceProblem(model, f, volfrac, rmin, penal=penal, filter=filter,
                                solver=solver, solver_options=solver_options)
    if problem.system.solver in ("mg-cg", "amg-cg"):
        problem.system.solver_options.setdefault("warm_start", True)
    return run_compliance("cantilever3d", problem,
                          title=f"Cantilever 3D {nelx}x{nely}x{nelz}", notes=dict(load=LOAD),
                          sizes=dict(nelx=nelx, nely=nely, nelz=nelz), out=out,
                          maxeval=maxeval, verbose=verbose, **options)


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=150,
                    summary=compliance_summary, solvers=GRID_SOLVERS)


if __name__ == "__main__":
    main()
