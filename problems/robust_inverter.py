"""Robust displacement inverter: eroded, intermediate and dilated designs (Wang, Lazarov & Sigmund 2011).

The inverter of ``problems/inverter.py`` (half model ``nelx x nely``, the
symmetry line on the left edge, input push up at its bottom against
``k_in``, output spring ``k_out`` at its top, far corners clamped; E0 = 1,
Emin = 1e-9, nu = 0.3, SIMP p = 3, density filter `rmin`), made robust to
a uniform error of its edges: the filtered field projected at ``eta =
0.75 / 0.5 / 0.25`` gives the eroded, intermediate and dilated designs,
and MMA minimises the largest of their output displacements through a
bound variable ``z`` (``min z`` s.t. ``u_out_k / u_scale <= z``). The
volume constraint is on the dilated design, its limit updated every
`every` evaluations so that the intermediate design keeps `volfrac`;
``beta`` doubles from 1 to 16, `per_beta` evaluations each.

    python problems/robust_inverter.py [--nelx 40 --nely 80 --per_beta 80 ...]

writes ``results/robust_inverter/{design.png, eroded.png, dilated.png,
history.png, result.json}`` and the design; ``result.json`` holds
``u_out`` of the three blueprints (``x_tilde >= eta``, solved afresh) and
whether all three invert.
"""

from __future__ import annotations

import os

from topopt import cli
from topopt.cli import Option, at_least, compliance_options, positive_float, positive_int
from topopt.formulations.mechanism import MechanismProblem, robust_constraint_names, robust_run
from topopt.io.folder import write_results
from topopt.io.result import RunResult
from topopt.io import check_writable_folder
from topopt._keywords import keywords

from topopt_problems.inverter import markers, setup

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "robust_inverter")
BETAS = (1.0, 2.0, 4.0, 8.0, 16.0)
OPTIONS = compliance_options(dict(nelx=40, nely=80), volfrac=0.3, rmin=2.4)[:-1] + (
    Option("k_in", positive_float, 0.1, "input spring stiffness"),
    Option("k_out", positive_float, 0.1, "output spring stiffness"),
    Option("per_beta", positive_int, 80, "MMA evaluations per beta (1, 2, 4, 8, 16)"),
    Option("every", at_least(1, int), 20, "evaluations between volume-limit updates"),
)


@keywords
def run(nelx: int = 40, nely: int = 80, volfrac: float = 0.3, rmin: float = 2.4,
        penal: float = 3.0, k_in: float = 0.1, k_out: float = 0.1, per_beta: int = 80,
        every: int = 20, maxeval: int | None = None, solver: str = "auto",
        out: str | None = None, verbose: bool = False, **options) -> RunResult:
    """Optimize the robust inverter; `maxeval` caps the evaluations of all stages (None:
    ``5 per_beta``); `options` go to `topopt.formulations.robust_run`."""
    if out is not None:
        check_writable_folder(out, "out")
    mesh, model, f, l_out = setup(nelx, nely, k_in, k_out)
    problem = MechanismProblem(model, f, l_out, volfrac, rmin, penal=penal, solver=solver)
    result = robust_run(problem, BETAS, per_beta, every, verbose=verbose, maxeval=maxeval,
                        **options)
    if out is not None:
        write(out, problem, result, dict(
            problem="robust_inverter", nelx=nelx, nely=nely, volfrac=volfrac, rmin=rmin,
            penal=penal, filter="density", k_in=k_in, k_out=k_out, f_in=1.0,
            hold=problem.hold, betas=list(BETAS), per_beta=per_beta, every=every,
            etas=[0.75, 0.5, 0.25], maxeval=maxeval))
    return result


def write(out: str, problem: MechanismProblem, result: RunResult, setup: dict) -> None:
    """The intermediate design (`write_results`), the eroded and dilated blueprints' pictures."""
    pictures = {name: (result["blueprint_designs"][k], f"{name} blueprint: u_out = "
                       f"{result['blueprints'][name]['u_out']:.4g}")
                for k, name in ((0, "eroded"), (2, "dilated"))}
    write_results(out, problem.model.mesh, result, setup, title=f"Robust inverter "
                  f"{setup['nelx']}x{setup['nely']}, intermediate", mirror=True,
                  point_data=problem.nodal_state(result["u"]), objective="u_out",
                  symbol="u_out", constraint_names=robust_constraint_names(problem),
                  objective_scale=problem.u_scale, objective_label="max of the three u_out (z)",
                  markers=markers(problem.model, problem.f, setup["nely"]), pictures=pictures)


def summary(result: RunResult) -> str:
    """The line the script prints after its run."""
    b = result["blueprints"]
    return (f"u_out of the blueprints: eroded {b['eroded']['u_out']:.4f}, intermediate "
            f"{b['intermediate']['u_out']:.4f}, dilated {b['dilated']['u_out']:.4f}; "
            f"volume {result['volume']:.4f}  evaluations {result.evaluations}  "
            f"{result['seconds']:.1f} s")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, summary=summary,
                    maxeval=5 * 80, maxeval_help="MMA evaluations of the five stages together, "
                    "at most (each stage: --per_beta)")


if __name__ == "__main__":
    main()
