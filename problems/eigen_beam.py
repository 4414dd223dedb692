"""Clamped beam with a concentrated mass: maximum fundamental eigenfrequency (Du & Olhoff 2007).

Design domain 8 x 1 (``nelx x nely`` unit square bilinear elements, plane
stress, unit thickness); E0 = 1, nu = 0.3, rho0 = 1. Both ends clamped
(``--supports simple``: the mid-height node of each end pinned). A
non-structural mass at the centre, `mass` times the structural mass of the
admissible material (``volfrac x nelx x nely``), spread evenly over the
nodes of the 2 x 2 elements around the centre. SIMP stiffness ``E = Emin
+ (1 - Emin) x^3`` (Emin = 1e-9) and Du & Olhoff's mass ``m = x`` above
``x = 0.1``, ``m = x^6 / 0.1^5`` below (no spurious localised modes in
void). Maximise ``omega_1`` in the bound formulation (``max beta`` subject
to ``beta <= lambda_j / lambda_ref`` for the lowest three eigenvalues and
the volume fraction), density filter with the radius continued ``2 rmin
-> 4/3 rmin -> rmin``, `maxeval` MMA evaluations per stage.

    python problems/eigen_beam.py [--nelx 160 --nely 20 --volfrac 0.5 --rmin 3 --mass 0.2]

writes ``results/eigen_beam/{design.png, history.png, result.json}`` and the
design with its first mode (``design.npz``, ``design.vtu``); ``result.json``
has ``omega1`` of the uniform design, at the end of each stage and of the
final design.
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import Option, at_least, open_unit, positive_float, positive_int
from topopt.formulations.eigen import EigenProblem, eigen_summary
from topopt.fem.modal import point_mass
from topopt.optimize import Stage
from topopt.io.folder import write_results
from topopt.io.result import RunResult
from topopt.io import check_writable_file, check_writable_folder
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "eigen_beam")
RADII = (2.0, 4.0 / 3.0, 1.0)            # the filter radius of each stage, times rmin
N_MODES = 3
SUPPORTS = ("clamped", "simple")
OPTIONS = (
    Option("nelx", positive_int, 160, "elements along x"),
    Option("nely", positive_int, 20, "elements along y"),
    Option("volfrac", open_unit, 0.5, "volume fraction"),
    Option("rmin", positive_float, 3.0, "filter radius of the last stage (element widths)"),
    Option("mass", at_least(0.0, strict=True), 0.2,
           "non-structural mass / structural mass of volfrac"),
    Option("supports", str, "clamped", "clamped ends or pinned mid-height nodes",
           choices=SUPPORTS),
)


def check_beam(nelx: int, nely: int, supports: str) -> None:
    """A beam that has `N_MODES` modes to bound and its supports' nodes; ValueError else."""
    if supports not in SUPPORTS:
        raise ValueError(f"supports must be one of {SUPPORTS}, got {supports!r}")
    if supports == "simple" and nely % 2:
        raise ValueError(f"--nely {nely}: the simple supports sit at mid-height nodes; give an "
                         "even nely")
    free = 2 * (nelx - 1) * (nely + 1) if supports == "clamped" else 2 * (nelx + 1) * (nely + 1) - 4
    if free < N_MODES + 2:
        raise ValueError(f"--nelx {nelx} --nely {nely}: {free} free dofs; the {N_MODES} bound "
                         f"modes need at least {N_MODES + 2}: give a larger mesh")


def setup(nelx: int, nely: int, volfrac: float = 0.5, mass: float = 0.2,
          supports: str = "clamped"):
    """Mesh, elasticity model with the end supports, and the non-structural mass ``M0``."""
    check_beam(nelx, nely, supports)
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    if supports == "clamped":
        model.fix(nodes=lambda x: np.isclose(x[0], 0.0) | np.isclose(x[0], nelx))
    else:
        model.fix(nodes=(0.0, nely / 2)).fix(nodes=(nelx, nely / 2))
    centre = lambda x: ((np.abs(x[0] - nelx / 2) <= 1.0)           # noqa: E731
                        & (np.abs(x[1] - nely / 2) <= 1.0))
    nodes = np.count_nonzero(centre(mesh.p))
    M0 = point_mass(model, centre, mass * volfrac * nelx * nely / nodes)
    return mesh, model, M0


def markers(model, M0, mass: float):
    """The setup drawn on the design: the supports and the non-structural mass."""
    from topopt.plot import Markers
    nodes = np.flatnonzero(M0.diagonal()[model.basis.nodal_dofs[0]])
    return Markers.of(model).add("mass", model.mesh.p[:, nodes].mean(axis=1),
                                 label=f"non-structural mass ({mass:g} x structural)")


@keywords
def run(nelx: int = 160, nely: int = 20, volfrac: float = 0.5, rmin: float = 3.0,
        mass: float = 0.2, supports: str = "clamped", maxeval: int = 80,
        solver: str = "auto", out: str | None = None, verbose: bool = False,
        checkpoint: str | None = None, resume: str | None = None) -> RunResult:
    """Optimize the beam; `maxeval` evaluations per stage. Returns a `RunResult`."""
    if out is not None:
        check_writable_folder(out, "out")                    # before any work
    if checkpoint is not None:
        check_writable_file(checkpoint, "checkpoint")
    mesh, model, M0 = setup(nelx, nely, volfrac, mass, supports)
    problem = EigenProblem(model, volfrac, rmin, M0=M0, n_modes=N_MODES, solver=solver)
    stages = [Stage(maxeval=maxeval, params={"rmin": f * rmin}) for f in RADII]
    result = problem.run(stages=stages, verbose=verbose, checkpoint=checkpoint,
                         resume=resume)
    if out is not None:
        setup_record = dict(problem="eigen_beam", nelx=nelx, nely=nely, volfrac=volfrac,
                            rmin=rmin, stage_rmin=[f * rmin for f in RADII], mass=mass,
                            supports=supports, penal=problem.penal, Emin=problem.Emin,
                            mass_interpolation="du_olhoff (threshold 0.1, q = 6)",
                            bound_modes=N_MODES, maxeval_per_stage=maxeval)
        write_results(out, mesh, result, setup_record,
                      title=f"{supports} beam {nelx}x{nely}, mass {mass:g}",
                      point_data=problem.mode_shape(result.x_phys), objective="omega1",
                      symbol="ω1", constraint_names=[
                          *(f"β - λ{j + 1}/λref" for j in range(N_MODES)), "V/Vmax - 1"],
                      objective_scale=result["omega1_uniform"],
                      objective_label="fundamental frequency ω1",
                      markers=markers(model, M0, mass))
    return result


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=80,
                    maxeval_help="MMA evaluations per stage; 3 stages (filter radius 2, 4/3, 1 rmin): "
                                 "up to 3 N in all", solvers=cli.DIRECT_SOLVERS,
                    summary=eigen_summary,
                    check=lambda kw: check_beam(kw["nelx"], kw["nely"], kw["supports"]))


if __name__ == "__main__":
    main()
