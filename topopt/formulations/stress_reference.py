"""A stress-constrained minimum-volume design beside the minimum-compliance design of its volume.

`MinimumVolumeStress` (p-norm of the relaxed von Mises stress, adaptive
normalisation) runs a schedule of projection blocks (`StressSchedule`); the
reference, a `ComplianceProblem` at the volume it reached with the same
filter and blocks, has its stresses evaluated the same way
(`stress_figures`): the maxima and the largest stress at chosen elements
(a re-entrant corner).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..io.result import RunResult
from ..design.measures import grey_level
from ..optimize.options import Stage
from .stress import MinimumVolumeStress
from .._validate import check_int, check_mapping, check_positive, check_range, check_sequence
from ..io.folder import write_results
from .base import before_resume
from .compliance import ComplianceProblem
from .run_template import GalleryRun

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


class _StressRun(GalleryRun):
    """`run_stress_reference` on the run template: the stress design (checkpoint
    `checkpoint`), then its minimum-compliance reference (``PATH.reference.npz``)."""

    PHASES, MAIN = ("stress", "reference"), "stress"

    def __init__(self, build, schedule, sigma_allow, rmin, q, P, alpha, maxeval, solver, out,
                 verbose, checkpoint, resume, record):
        super().__init__(out, verbose, checkpoint, resume)
        self._build, self.schedule = build, schedule
        self.sigma_allow, self.rmin = sigma_allow, rmin
        self.q, self.P, self.alpha, self.maxeval, self.solver = q, P, alpha, maxeval, solver
        self.about = record or {}

    def check(self) -> None:
        self.block = self.maxeval // len(self.schedule.betas)
        if self.block < 1:
            raise ValueError(f"maxeval must be >= {len(self.schedule.betas)} (one evaluation "
                             f"per block), got {self.maxeval}")

    def build(self) -> None:
        self.mesh, model, f, self.corner = self._build()
        self.problem = MinimumVolumeStress(model, f, self.sigma_allow, self.rmin, q=self.q,
                                           P=self.P, alpha=self.alpha, solver=self.solver)

    def phase(self, name, checkpoint, resume):
        problem, schedule = self.problem, self.schedule
        if name == "stress":
            res = problem.run(schedule.betas, self.block, x0=np.full(problem.n, schedule.x0),
                              verbose=self.verbose, checkpoint=checkpoint, resume=resume,
                              initial_step=schedule.step, settle=schedule.settle)
            self.design = stress_figures(problem, res.x, schedule.betas[-1], self.corner)
            self.seconds = self.clock() + before_resume(res, "seconds", 0.0)
            return res
        reference = ComplianceProblem(problem.model, problem.f, self.design["volume"],
                                      self.rmin, solver=self.solver)
        return reference.run(stages=[Stage(self.block, {"beta": b}) for b in schedule.betas],
                             verbose=False, mma_params=schedule.reference_mma,
                             checkpoint=checkpoint, resume=resume)

    def _result(self, name: str, metrics: dict) -> RunResult:
        res, arrays = self.outcomes["stress"], {}
        if "reference" in self.outcomes:
            arrays["x_phys_compliance"] = self.outcomes["reference"].x_phys
        return RunResult.from_record(
            self.record(name), metrics, x=res.x, history=res.history, arrays=arrays,
            x_phys=np.asarray(self.problem.x_phys(res.x, self.schedule.betas[-1])))

    def _metrics(self) -> dict:
        return {**self.design, "sigma_allow": self.sigma_allow, "c": self.problem.norm.c,
                "evaluations_per_block": self.block, "seconds": self.seconds}

    def result(self) -> RunResult:
        """The stress design's figures and its reference's; an interrupted reference
        phase says so (its record, ``phase``)."""
        ref = self.outcomes["reference"]
        figures = stress_figures(self.problem, ref.x, self.schedule.betas[-1], self.corner)
        metrics = self._metrics() | {
            "compliance_design": figures | {"compliance": ref["compliance"],
                                            "evaluations": ref.evaluations,
                                            "status": ref.status},
            "total_seconds": self.elapsed()}
        if ref.status == "interrupted":
            return self._result("reference", metrics | {"phase": "reference"})
        return self._result("stress", metrics)

    def stopped(self, name) -> RunResult:
        """The last good stress design, its figures (no reference)."""
        return self._result(name, self._metrics() | {"phase": name})

    def write(self, result: RunResult) -> None:
        write_stress_reference(self.out, self.mesh, self.problem, result, self.about,
                               self.schedule.betas[-1])

    write_stopped = write


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

    The run follows `topopt.formulations.run_template.GalleryRun`: the phases
    ``stress`` (checkpoint `checkpoint`) and ``reference`` (``PATH.reference.npz``,
    `phase_paths`). A run interrupted in the stress phase returns (and writes) its
    last good design without a reference; one interrupted in the reference phase
    has the reference's record (``phase``: ``"reference"``).
    """
    return _StressRun(build, schedule, sigma_allow, rmin, q, P, alpha, maxeval, solver, out,
                      verbose, checkpoint, resume, record).run()


def write_stress_reference(out: str, mesh, problem: MinimumVolumeStress, result: RunResult,
                           setup: dict, beta) -> None:
    """``design.png`` etc. (`write_results`) and the reference's ``compliance_design.png``
    (when `result` has a reference)."""
    from ..plot.markers import boundary_markers
    u = problem.analysis(result.x, beta)[1]
    supports, loads = boundary_markers(problem.model, problem.f)
    pictures = {}
    if "compliance_design" in result:              # none after an interrupted stress phase
        ref = result["compliance_design"]
        pictures["compliance_design"] = (
            result["x_phys_compliance"],
            f"min compliance, V = {ref['volume']:.3f}: max sigma_vm = "
            f"{ref['max_von_mises']:.3f}, corner {ref['corner_von_mises']:.3f}")
    write_results(out, mesh, result, setup=setup,
                  title=f"L-bracket, max sigma_vm = {result['max_von_mises']:.3f} "
                        f"(allow {problem.sigma_allow:g})",
                  point_data={"displacement": np.asarray(u)[problem.model.basis.nodal_dofs].T},
                  objective="volume", symbol="V", constraint_names=["c PN / sigma_allow - 1"],
                  objective_scale=1.0, objective_label="volume fraction V",
                  supports=supports, loads=loads, pictures=pictures)
