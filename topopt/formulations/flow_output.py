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

__all__ = ["run_flow", "OBJECTIVE_LABELS"]

#: The history's axis label of each objective.
OBJECTIVE_LABELS = {"dissipated_power": "dissipated power J",
                    "pressure_drop": "pressure drop"}


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
    write_results(out, problem.mesh, result, setup, title,
                  point_data=problem.nodal_state(result["u"]), objective=kind,
                  symbol="J" if kind == "dissipated_power" else "dp",
                  constraint_names=problem.constraint_names,
                  objective_scale=problem.objective_scale,
                  objective_label=OBJECTIVE_LABELS[kind], markers=markers)
    if problem.model.space.dim == 2:
        from ..plot.flow import save_flow
        interrupted = (f" (interrupted after {result.evaluations} evaluations)"
                       if result.status == "interrupted" else "")
        save_flow(problem.model.space, result["u"], result.x_phys,
                  os.path.join(out, "flow.png"),
                  title=f"{title}{interrupted}: J = {result[kind]:.4g}")
    return result
