"""A stress-constrained minimum-volume design beside the minimum-compliance design of its volume.

`MinimumVolumeStress` (p-norm of the relaxed von Mises stress, adaptive
normalisation) runs a schedule of projection blocks (`StressSchedule`); the
reference, a `ComplianceProblem` at the volume it reached with the same
filter and blocks, has its stresses evaluated the same way
(`stress_figures`): the maxima and the largest stress at chosen elements
(a re-entrant corner).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..io.result import RunResult, run_record
from ..design.measures import grey_level
from ..optimize.options import Stage
from .stress import MinimumVolumeStress
from .._files import check_writable_folder
from .._validate import check_int, check_mapping, check_positive, check_range, check_sequence
from ..io.folder import write_results
from .base import before_resume
from .compliance import ComplianceProblem

__all__ = ["StressSchedule", "stress_figures", "run_stress_reference", "write_stress_reference"]


@dataclass(frozen=True)
class StressSchedule:
    """The continuation of a stress run and the reference's MMA.

    Parameters
    ----------
    betas : tuple
        Projection sharpness of each block of MMA evaluations (None: none).
    x0, step : float
        The uniform start and MMA's initial move.
    settle : int
        Blocks at the last beta after the schedule, until the largest stress
        is within 5 % of sigma_allow.
    reference_mma : dict
        MMA options of the minimum-compliance reference.

    Examples
    --------
    >>> StressSchedule((None, 2.0), 0.5, 0.1, 4, {}).betas[-1]
    2.0
    """

    betas: tuple
    x0: float
    step: float
    settle: int
    reference_mma: dict

    def __post_init__(self):
        for i, beta in enumerate(check_sequence("betas", self.betas)):
            if beta is not None:
                check_positive(f"betas[{i}]", beta, "projection sharpness, or None")
        check_range("x0", self.x0, 0.0, 1.0, lo_open=True, what="the uniform start density")
        check_positive("step", self.step, "MMA's initial move")
        check_int("settle", self.settle, 0, what="blocks at the last beta")
        check_mapping("reference_mma", self.reference_mma)


def stress_figures(problem: MinimumVolumeStress, x, beta, corner) -> dict:
    """Volume, largest relaxed stress, the largest at `corner`, grey level of a design."""
    s = problem.summary(x, beta)
    rel = problem.relaxed(x, beta)
    x_phys = np.asarray(problem.x_phys(x, beta))
    return {"volume": s["volume"], "max_von_mises": s["max_von_mises"],
            "max_over_allow": s["max_von_mises"] / problem.sigma_allow,
            "corner_von_mises": float(np.max(rel[corner])),
            "corner_density": float(np.mean(x_phys[corner])),
            "grey_level": grey_level(x_phys)}


def _reference(problem, schedule, block, rmin, solver, design, corner) -> tuple:
    """The minimum-compliance design at the volume of `design`: its run and figures."""
    reference = ComplianceProblem(problem.model, problem.f, design["volume"], rmin,
                                  solver=solver)
    ref = reference.run(stages=[Stage(block, {"beta": b}) for b in schedule.betas],
                        verbose=False, mma_params=schedule.reference_mma)
    figures = stress_figures(problem, ref.x, schedule.betas[-1], corner)
    return ref, figures | {"compliance": ref["compliance"], "evaluations": ref.evaluations,
                           "status": ref.status}


def run_stress_reference(build: Callable, schedule: StressSchedule, sigma_allow: float,
                         rmin: float, q: float, P: float, alpha: float, maxeval: int,
                         solver: str = "auto", out: str | None = None, verbose: bool = False,
                         checkpoint: str | None = None, resume: str | None = None,
                         record: dict | None = None) -> RunResult:
    """The stress-constrained design and the minimum-compliance design of its volume.

    `build()` gives ``(mesh, model, f, corner)``; `maxeval` is split evenly
    over the schedule's blocks. The metrics are the design's
    `stress_figures`, ``c`` (the normalisation reached) and
    ``compliance_design`` (the reference's); `record` is written with the
    design to `out`.
    """
    if out is not None:
        check_writable_folder(out, "out")
    block = maxeval // len(schedule.betas)
    if block < 1:
        raise ValueError(f"maxeval must be >= {len(schedule.betas)} (one evaluation per "
                         f"block), got {maxeval}")
    t0 = time.perf_counter()
    mesh, model, f, corner = build()
    problem = MinimumVolumeStress(model, f, sigma_allow, rmin, q=q, P=P, alpha=alpha,
                                  solver=solver)
    res = problem.run(schedule.betas, block, x0=np.full(problem.n, schedule.x0),
                      verbose=verbose, checkpoint=checkpoint, resume=resume,
                      initial_step=schedule.step, settle=schedule.settle)
    design = stress_figures(problem, res.x, schedule.betas[-1], corner)
    seconds = time.perf_counter() - t0 + before_resume(res, "seconds", 0.0)
    ref, compliance_design = _reference(problem, schedule, block, rmin, solver, design, corner)
    metrics = {**design, "sigma_allow": sigma_allow, "c": problem.norm.c,
               "evaluations_per_block": block, "seconds": seconds,
               "compliance_design": compliance_design,
               "total_seconds": time.perf_counter() - t0 + before_resume(res, "seconds", 0.0)}
    result = RunResult.from_record(
        run_record(res, checkpoint), metrics, x=res.x,
        x_phys=np.asarray(problem.x_phys(res.x, schedule.betas[-1])), history=res.history,
        arrays={"x_phys_compliance": ref.x_phys})
    if out is not None:
        write_stress_reference(out, mesh, problem, result, record or {}, schedule.betas[-1])
    return result


def write_stress_reference(out: str, mesh, problem: MinimumVolumeStress, result: RunResult,
                           setup: dict, beta) -> None:
    """``design.png`` etc. (`write_results`) and the reference's ``compliance_design.png``."""
    from ..plot.markers import boundary_markers
    ref = result["compliance_design"]
    u = problem.analysis(result.x, beta)[1]
    supports, loads = boundary_markers(problem.model, problem.f)
    write_results(out, mesh, result, setup=setup,
                  title=f"L-bracket, max sigma_vm = {result['max_von_mises']:.3f} "
                        f"(allow {problem.sigma_allow:g})",
                  point_data={"displacement": np.asarray(u)[problem.model.basis.nodal_dofs].T},
                  objective="volume", symbol="V", constraint_names=["c PN / sigma_allow - 1"],
                  objective_scale=1.0, objective_label="volume fraction V",
                  supports=supports, loads=loads,
                  pictures={"compliance_design": (
                      result["x_phys_compliance"],
                      f"min compliance, V = {ref['volume']:.3f}: max sigma_vm = "
                      f"{ref['max_von_mises']:.3f}, corner {ref['corner_von_mises']:.3f}")})
