"""Axially loaded column: maximum buckling load (Ferrari, Sigmund & Guest 2021, Sec. 5.1).

Design domain 2 x 1 (``nelx x nely`` unit square bilinear elements, plane
stress, unit thickness); E0 = 1, nu = 0.3. The left edge is clamped; a
compressive force of unit resultant along -x is spread evenly over the
right-edge nodes within ``nely / 12`` of mid-height, and the elements within
``nely / 10`` of mid-height in the last ``nelx / 24`` columns are passive
solid (the load's seat, as in Ferrari et al.). The right end is free: a
clamped-free column, whose slender solid would buckle sideways. SIMP
stiffness ``E = Emin + (1 - Emin) x^6`` (Emin = 1e-6) and stress
interpolation ``E_G = x^6`` (no stress stiffness in void; with ``E_G = x^3``
grey material buckled at a fraction of solid's load factor and its spurious
modes made the objective jump 100-fold between evaluations), the design
symmetric about the column's axis (`mirror`). Maximise the lowest buckling
load factors: minimise the KS aggregate (rho = 40) of ``log(lambda_ref /
lambda_j)`` over the lowest six (`topopt.formulations.BucklingProblem`;
``lambda_ref`` the uniform start's ``lambda_1``) subject to the volume
fraction, density filter of radius `rmin`; a first stage without
projection, then the tanh projection with beta = 2, 4, 8, 16; `maxeval` MMA
evaluations per stage, each stage starting with MMA's move limit 0.1
(`BucklingProblem.initial_step`).

    python problems/buckling_column.py [--nelx 60 --nely 30 --volfrac 0.25 --rmin 2 ...]

writes ``results/buckling_column/{design.png, history.png, result.json}``
and the design with its prebuckling displacement and first buckling mode
(``design.npz``, ``design.vtu``).
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import Option, open_unit, positive_float, positive_int
from topopt.design.passive import Passive
from topopt.formulations.buckling import BucklingProblem
from topopt.io import check_writable_file, check_writable_folder
from topopt.io.folder import write_results
from topopt.io.result import RunResult
from topopt.optimize import Stage
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "buckling_column")
BETAS = (None, 2.0, 4.0, 8.0, 16.0)           # the projection of each stage (None: none)
N_MODES = 6
PENAL, PENAL_G = 6.0, 6.0       # SIMP exponents of K and of G (penal_G < penal: spurious modes)
OPTIONS = (
    Option("nelx", positive_int, 60, "elements along x (the column's axis)"),
    Option("nely", positive_int, 30, "elements along y"),
    Option("volfrac", open_unit, 0.25, "volume fraction"),
    Option("rmin", positive_float, 2.0, "filter radius (element widths)"),
)


def check_column(nelx: int, nely: int) -> None:
    """A column whose load band and passive seat hold nodes and elements; ValueError else."""
    if nely < 6 or nelx < 12:
        raise ValueError(f"--nelx {nelx} --nely {nely}: the load band (nely/12 about "
                         "mid-height) and the passive seat need nelx >= 12 and nely >= 6")


def mirror(mesh) -> np.ndarray:
    """Each element's mirror image in the column's axis ``y = nely / 2`` (element indices)."""
    c = mesh.p[:, mesh.t].mean(axis=1)                     # centroids, half-integers
    top = c[1].max() + c[1].min()
    index = {(round(2 * cx), round(2 * cy)): e for e, (cx, cy) in enumerate(c.T)}
    return np.array([index[round(2 * cx), round(2 * (top - cy))] for cx, cy in c.T])


def setup(nelx: int, nely: int):
    """Mesh, clamped elasticity model, the axial load and the passive solid seat."""
    check_column(nelx, nely)
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0).fix(nodes=lambda x: np.isclose(x[0], 0.0))
    band = lambda x: (np.isclose(x[0], nelx)                       # noqa: E731
                      & (np.abs(x[1] - nely / 2) <= nely / 12 + 1e-9))
    f = model.point_load(band, [-1.0 / np.count_nonzero(band(mesh.p)), 0.0])
    passive = Passive.from_mesh(mesh, solid=lambda c: (c[0] > nelx - nelx / 24)
                                & (np.abs(c[1] - nely / 2) < nely / 10))
    return mesh, model, f, passive


def markers(model, f, passive):
    """The setup drawn on the design: the clamp, the axial load, the passive seat."""
    from topopt.plot import Markers
    return Markers.of(model, f, labels={"load": "axial load (unit resultant)"}).region(
        model.mesh, passive.solid, "passive solid seat")


@keywords
def run(nelx: int = 60, nely: int = 30, volfrac: float = 0.25, rmin: float = 2.0,
        maxeval: int = 20, solver: str = "auto", out: str | None = None,
        verbose: bool = False, checkpoint: str | None = None,
        resume: str | None = None) -> RunResult:
    """Optimize the column; `maxeval` evaluations per stage. Returns a `RunResult`."""
    if out is not None:
        check_writable_folder(out, "out")                    # before any work
    if checkpoint is not None:
        check_writable_file(checkpoint, "checkpoint")
    mesh, model, f, passive = setup(nelx, nely)
    problem = BucklingProblem(model, f, volfrac, rmin, n_modes=N_MODES, passive=passive,
                              penal=PENAL, penal_G=PENAL_G, mirror=mirror(mesh),
                              solver=solver, nu=0.3)
    stages = [Stage(maxeval=maxeval, params={} if b is None else {"beta": b}) for b in BETAS]
    result = problem.run(stages=stages, verbose=verbose, checkpoint=checkpoint,
                         resume=resume)
    if out is not None:
        setup_record = dict(problem="buckling_column", nelx=nelx, nely=nely, volfrac=volfrac,
                            rmin=rmin, stage_beta=list(BETAS), penal=problem.penal,
                            penal_G=problem.penal_G, Emin=problem.Emin, n_modes=N_MODES,
                            rho=problem.rho, maxeval_per_stage=maxeval,
                            symmetric=True, initial_step=problem.initial_step,
                            passive_solid=int(passive.solid.size))
        write_results(out, mesh, result, setup_record,
                      title=f"clamped-free column {nelx}x{nely}",
                      point_data=problem.mode_shape(result.x_phys), objective="lambda1",
                      symbol="λ1", constraint_names=["V/Vmax - 1"],
                      markers=markers(model, f, passive))
    return result


def summary(result: RunResult) -> str:
    """The line printed after a run."""
    lam = ", ".join(f"{v:.4g}" for v in result["lambda"][:3])
    return (f"lambda1 {result['lambda1']:.5g} (uniform {result['lambda1_start']:.5g}; "
            f"lowest {lam})  volume {result['volume']:.4f}  evaluations "
            f"{result.evaluations}  {result['seconds']:.1f} s")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=20,
                    maxeval_help="MMA evaluations per stage; 5 stages (no projection, then "
                                 "beta 2, 4, 8, 16): up to 5 N in all", solvers=cli.DIRECT_SOLVERS,
                    summary=summary, check=lambda kw: check_column(kw["nelx"], kw["nely"]))


if __name__ == "__main__":
    main()
