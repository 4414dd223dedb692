"""Multi-material MBB beam: ordered SIMP (Zuo & Saitou 2017), one volume limit per phase.

The half MBB beam of top88 (``nelx x nely`` unit square bilinear elements,
plane stress, nu = 0.3, a unit downward load at the top left corner,
symmetry along the left edge, a roller at the bottom right corner) built of
void and two (``--materials 3``: three) solid phases. One density per
element; the phases are ordered by normalized density rho_i and their
Young's moduli E_i (over E0 = 1) interpolated between neighbours by the
power law of exponent p = 3 (void: Emin = 1e-9):

    materials 2: rho = (0.5, 1.0), E = (0.3, 1.0), Vmax = (0.2, 0.2)
    materials 3: rho = (0.4, 0.7, 1.0), E = (0.2, 0.6, 1.0), Vmax = (0.15, 0.1, 0.1)

Minimum compliance with one volume limit per solid phase: ``V_i + ... + V_m
<= Vmax_i + ... + Vmax_m`` (``--limits phase``: ``V_i <= Vmax_i``), with
``V_i`` the volume fraction of phase i, its hat's share of each element's
density (`topopt.design.phase_fraction`; why the cumulative form:
`topopt.formulations.multimaterial`). Density or Helmholtz filter of radius
`rmin`, MMA (conservative) from the uniform ``x = rho_1 sum_i Vmax_i``.

    python problems/multimaterial_beam.py [--nelx 120 --nely 40 --rmin 1.5 --materials 2]

writes ``results/multimaterial_beam/{design.png, density.png, history.png,
result.json, design.npz, design.vtu}``: ``design.png`` colours each element
by its nearest phase, ``density.png`` is ``x_phys``.
"""

from __future__ import annotations

import os

from topopt import cli
from topopt.cli import Option, at_least, positive_float, positive_int
from topopt.formulations.base import FILTERS
from topopt.formulations.multimaterial import LIMITS, MultiMaterialCompliance, write_phases
from topopt.io.folder import run_compliance
from topopt.io.result import RunResult
from topopt._keywords import keywords

from topopt_problems.mbb_beam import setup

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "multimaterial_beam")
#: (rho, E, Vmax) of the solid phases, lightest first.
MATERIALS = {"2": ((0.5, 1.0), (0.3, 1.0), (0.2, 0.2)),
             "3": ((0.4, 0.7, 1.0), (0.2, 0.6, 1.0), (0.15, 0.1, 0.1))}
OPTIONS = (
    Option("nelx", positive_int, 120, "elements along x"),
    Option("nely", positive_int, 40, "elements along y"),
    Option("rmin", positive_float, 1.5, "filter radius (element widths)"),
    Option("penal", at_least(1.0), 3.0, "ordered SIMP exponent"),
    Option("filter", str, "density", "density or Helmholtz (PDE) filter", choices=FILTERS),
    Option("materials", str, "2", "solid phases besides void", choices=tuple(MATERIALS)),
    Option("limits", str, "cumulative", "the volume limits, one per phase", choices=LIMITS),
)


def summary(result) -> str:
    """The line printed after a run: compliance, each phase's volume, the time."""
    volumes = " ".join(f"{v:.4f}" for v in result["phase_volumes"])
    return (f"compliance {result['compliance']:.4f}  phase volumes {volumes}  "
            f"evaluations {result.evaluations}  {result['seconds']:.1f} s")


@keywords
def run(nelx: int = 120, nely: int = 40, rmin: float = 1.5, penal: float = 3.0,
        filter: str = "density", materials: str = "2", limits: str = "cumulative",
        maxeval: int = 300, solver: str = "auto", out: str | None = None,
        verbose: bool = False, **options) -> RunResult:
    """Optimize the beam; `options` go to `MultiMaterialCompliance.run`."""
    if materials not in MATERIALS:
        raise ValueError(f"materials must be one of {tuple(MATERIALS)}, got {materials!r}")
    rho, E, vmax = MATERIALS[materials]
    mesh, model, f = setup(nelx, nely)
    problem = MultiMaterialCompliance(model, f, rho, E, vmax, rmin, penal=penal,
                                      filter=filter, solver=solver, limits=limits)
    title = f"MBB {nelx}x{nely}, {problem.m} materials"
    result = run_compliance("multimaterial_beam", problem, title=title, mirror=True,
                            sizes=dict(nelx=nelx, nely=nely), out=out, maxeval=maxeval,
                            verbose=verbose, notes=dict(rho=rho, E=E, vmax=vmax,
                                                        interpolation="ordered SIMP",
                                                        limits=limits),
                            plot=dict(constraint_names=problem.constraint_names),
                            **options)
    if out is not None:
        write_phases(out, problem, result, f"{title}, {filter} filter", mirror=True)
    return result


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=300,
                    summary=summary)


if __name__ == "__main__":
    main()
