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

writes ``results/cantilever3d/{design.png, history.png, result.json}``.
Large meshes want ``--solver mg-cg`` (multigrid-preconditioned CG);
``auto`` is a direct solver (CHOLMOD when cvxopt is installed).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from topopt import fem
from topopt.problem import ComplianceProblem, compliance_main, write_results
from topopt.runio import check_writable_folder

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "results", "cantilever3d"))


def setup(nelx: int, nely: int, nelz: int):
    """Mesh, elasticity model clamped at x = 0, and the end-edge line load.

    Examples
    --------
    >>> mesh, model, f = setup(4, 2, 2)
    >>> model.fixed.size, float(f.sum())
    (27, -1.0)
    """
    mesh = fem.box(nelx, nely, nelz)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0))                    # clamped face
    f = np.zeros(model.ndof)
    p = mesh.p
    edge = np.flatnonzero(np.isclose(p[0], nelx) & np.isclose(p[1], 0.0))
    weight = np.full(edge.size, 1.0 / nelz)                          # trapezoid rule
    weight[np.isclose(p[2, edge], 0.0) | np.isclose(p[2, edge], nelz)] *= 0.5
    f[model.basis.nodal_dofs[1, edge]] = -weight                     # total load -1 in y
    return mesh, model, f


def run(nelx: int = 60, nely: int = 20, nelz: int = 4, volfrac: float = 0.3, rmin: float = 1.5,
        penal: float = 3.0, filter: str = "density", maxeval: int = 150,
        out: str | None = None, solver: str = "auto", verbose: bool = False,
        solver_options: dict | None = None, **options) -> dict:
    """Optimize the 3-D cantilever; returns the metrics of `ComplianceProblem.run`.

    `solver_options` tune the iterative solvers (``{"rtol": 1e-8,
    "coarse_size": 10000, ...}``, see `topopt.fem.multigrid`); `options` go to
    `ComplianceProblem.run` (``checkpoint``, ``resume``, ``ftol_rel``, ...).
    """
    if min(nelx, nely, nelz) < 1 or not all(isinstance(n, (int, np.integer))
                                            for n in (nelx, nely, nelz)):
        raise ValueError(f"nelx, nely, nelz must be positive integers, got "
                         f"{(nelx, nely, nelz)!r}")
    if out is not None:
        check_writable_folder(out, "out")                    # before any work
    mesh, model, f = setup(nelx, nely, nelz)
    problem = ComplianceProblem(model, f, volfrac, rmin, penal=penal, filter=filter,
                                solver=solver)
    S = problem.system
    if S.solver in fem.solvers.ITERATIVE:
        # compliance stays second-order accurate from a warm start (multigrid.py)
        S.solver_options.setdefault("warm_start", True)
        S.solver_options.update(solver_options or {})
    result = problem.run(maxeval=maxeval, verbose=verbose, **options)
    if S.counts.get("cg_solves"):
        log = S._iterative.log
        result["cg_iterations_per_solve"] = S.counts["cg_iterations"] / S.counts["cg_solves"]
        result["cg_iterations_max"] = int(max(log))
    if out is not None:
        write_results(out, mesh, result,
                      title=f"Cantilever 3D {nelx}x{nely}x{nelz}, {filter} filter",
                      setup=dict(problem="cantilever3d", nelx=nelx, nely=nely, nelz=nelz,
                                 volfrac=volfrac, rmin=rmin, penal=penal, filter=filter,
                                 maxeval=maxeval, load="total -1 (y) on the edge x=nelx, "
                                 "y=0, consistent nodal forces"))
    return result


def main(argv=None) -> dict:
    return compliance_main(argv, __doc__, run, sizes=dict(nelx=60, nely=20, nelz=4),
                           defaults=dict(volfrac=0.3, rmin=1.5, maxeval=150), out=DEFAULT_OUT)


if __name__ == "__main__":
    main(sys.argv[1:])
