"""A flow problem script's run and results folder: `run_flow`.

`run_flow` runs a `topopt.formulations.flow.FlowProblem` and writes the
folder as every script's (`topopt.io.folder.write_results`: ``design.png``,
``history.png``, ``result.json``, ``design.npz``, ``design.vtu`` with the
``velocity`` and ``pressure`` at the vertices) and ``flow.png``, the velocity
magnitude and streamlines over the design (`topopt.plot.flow`).
"""

from __future__ import annotations

import os

from .._files import check_writable_folder
from ..io.folder import write_results
from ..io.result import RunResult

__all__ = ["run_flow", "power_summary", "check_lu_solver", "OBJECTIVE_LABELS", "LU_SOLVERS"]

#: The ``solver`` a flow script's ``run`` takes: its Newton steps and adjoint factorize
#: with LU (`topopt.fem.solvers.direct.factorize_lu`), so its command line has no --solver.
LU_SOLVERS = ("auto",)

#: The history's axis label of each objective.
OBJECTIVE_LABELS = {"dissipated_power": "dissipated power J",
                    "pressure_drop": "pressure drop"}


def check_lu_solver(solver: str) -> str:
    """Refuse a `solver` other than ``"auto"`` (LU): a flow script's ``run(solver=...)``.

    Examples
    --------
    >>> check_lu_solver("auto")
    'auto'
    >>> check_lu_solver("cg")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: solver='cg': the flow's Newton steps and adjoint use LU (UMFPACK, ...
    """
    if solver not in LU_SOLVERS:
        raise ValueError(f"solver={solver!r}: the flow's Newton steps and adjoint use LU "
                         "(UMFPACK, else SuperLU); give solver='auto'")
    return solver


def run_flow(name: str, problem, *, title: str, sizes: dict, out: str | None = None,
             maxeval: int = 200, verbose: bool = False, notes: dict | None = None,
             markers=None, **options) -> RunResult:
    """Optimize a flow problem of a problem script; write its results to `out`.

    Parameters
    ----------
    name : str
        The problem's name in ``result.json`` (``"double_pipe"``).
    problem : topopt.formulations.flow.FlowProblem
    title : str
        Title of the pictures.
    sizes : dict
        The mesh counts, recorded in ``setup`` (and the checkpoint's label).
    out : str, optional
        Results folder; created and write-tested before the first solve.
    maxeval, verbose, options
        Passed to the problem's ``run`` (``stages``, ``checkpoint``, ``resume``, ...).
    notes : dict, optional
        More ``setup`` entries (the inlets, the viscosity, ...).
    markers : topopt.plot.Markers, optional
        The setup drawn on ``design.png``.
    """
    if out is not None:
        check_writable_folder(out, "out")
    result = problem.run(maxeval=maxeval, verbose=verbose, **options)
    if out is None:
        return result
    model = problem.model
    setup = dict(problem=name, **sizes, volfrac=problem.volfrac, rmin=problem.rmin,
                 filter=problem.filter_name, mu=model.mu, rho_f=model.rho_f,
                 alpha_min=model.alpha_min, alpha_max=model.alpha_max,
                 objective=problem.objective_kind, convention=problem.convention,
                 maxeval=maxeval, **(notes or {}))
    kind = problem.objective_kind
    # a subclass's objective names itself (objective_label, objective_symbol)
    label = getattr(problem, "objective_label", None) or OBJECTIVE_LABELS[kind]
    symbol = getattr(problem, "objective_symbol", None) or (
        "J" if kind == "dissipated_power" else "dp")
    write_results(out, problem.mesh, result, setup, title,
                  point_data=problem.nodal_state(result["u"]), objective=kind,
                  symbol=symbol, constraint_names=problem.constraint_names,
                  objective_scale=problem.objective_scale,
                  objective_label=label, markers=markers)
    if problem.model.space.dim == 2:
        from ..plot.flow import save_flow
        interrupted = (f" (interrupted after {result.evaluations} evaluations)"
                       if result.status == "interrupted" else "")
        save_flow(problem.model.space, result["u"], result.x_phys,
                  os.path.join(out, "flow.png"),
                  title=f"{title}{interrupted}: {symbol} = {result[kind]:.4g}")
    return result


def power_summary(result) -> str:
    """One line of a dissipated-power run (`run_flow`'s result) for a script's summary.

    The power in the problem's and dolfin-adjoint's conventions, the thresholded design's
    (None when its solve failed), the fluid fraction, the evaluations, seconds per design
    iteration, Newton iterations per solve and the run's seconds.
    """
    crisp = result["dissipated_power_thresholded"]
    return (f"J {result['dissipated_power']:.4f} (dolfin-adjoint convention "
            f"{result['dissipated_power_dolfin']:.4f}; thresholded at 1/2 "
            f"{crisp if crisp is None else round(crisp, 4)})  "
            f"fluid {result['fluid_fraction']:.4f}  "
            f"evaluations {result.evaluations}  {result['seconds_per_iteration']:.2f} s/iteration"
            f"  Newton {result['newton_iterations_per_solve']:.2f}/solve  "
            f"{result['seconds']:.1f} s")
