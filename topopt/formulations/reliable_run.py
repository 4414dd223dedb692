"""The two-phase run of `ReliableCompliance`: the deterministic design, then the reliable one.

Both phases checkpoint (`phase_checkpoints`); the reliability-based one starts
from the deterministic design and minimizes ``c / c_det + K [(ln pf - ln
pa)^+]^2`` at its volume; both designs are then checked by Monte Carlo.
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np

from ..io.result import RunResult
from ..optimize.driver import minimize
from ..io.folder import plot_record, write_json
from .compliance import ComplianceProblem
from .reliable import ReliableCompliance, pf_summary
from .run_template import GalleryRun

__all__ = ["run_reliable", "write_reliable"]

#: The objective in compliance units: c_det (c / c_det + K [(ln pf - ln pa)^+]^2).
OBJECTIVE_NAME = "c + c_det K [(ln pf - ln pa)^+]^2"


class _ReliableRun(GalleryRun):
    """`run_reliable` on the run template: the deterministic phase, then the reliable one."""

    PHASES = ("deterministic", "reliability")

    def __init__(self, build, volfrac, allow, maxeval, samples, seed, out, verbose, checkpoint,
                 resume, solver, about):
        super().__init__(out, verbose, checkpoint, resume)
        self._build, self.volfrac, self.allow, self.maxeval = build, volfrac, allow, maxeval
        self.samples, self.seed, self.solver, self.about = samples, seed, solver, about

    def check(self) -> None:
        if not 0 < self.volfrac < 1:
            raise ValueError(f"volfrac must lie in (0, 1), got {self.volfrac!r}")
        if self.allow <= 1:
            raise ValueError(f"allow must be > 1 (c_allow / nominal compliance), got "
                             f"{self.allow!r}")
        if self.samples < 1000:
            raise ValueError(f"samples must be >= 1000, got {self.samples!r}")

    def build(self) -> None:
        self.prob = prob = self._build()
        self.det = ComplianceProblem(prob.model, prob.f0, self.volfrac, 1.5, solver=self.solver)

    def phase(self, name, checkpoint, resume):
        if name == "deterministic":
            return self.det.run(maxeval=self.maxeval, verbose=self.verbose,
                                checkpoint=checkpoint, resume=resume)
        prob, det_result, volfrac = self.prob, self.outcomes["deterministic"], self.volfrac
        c_det = det_result["compliance"]
        prob.c_allow = self.allow * c_det
        # minimized: c / c_det + K [(ln pf - ln pa)^+]^2; times c_det in compliance units
        return minimize(lambda x: prob.responses(x, c_det, volfrac), det_result.x,
                        bounds=(0.0, 1.0), maxeval=self.maxeval, ftol_rel=1e-8,
                        verbose=self.verbose, checkpoint=checkpoint, resume=resume,
                        count_solves=lambda: prob.system.counts["factorizations"],
                        objective_scale=c_det, objective_name=OBJECTIVE_NAME)

    def result(self) -> RunResult:
        prob, res, samples, seed = self.prob, self.outcomes["reliability"], self.samples, self.seed
        det_result = self.outcomes["deterministic"]
        x_det = det_result.x
        metrics = {
            "c_allow": prob.c_allow, "pa": prob.pa, "ln_pa": float(np.log(prob.pa)),
            "K": prob.K, "method": prob.method, "samples": samples, "volfrac": self.volfrac,
            "allow": self.allow, **(self.about or {}),
            "reliability_based": pf_summary(prob, res.x, samples, seed),
            "deterministic": pf_summary(prob, x_det, samples, seed + 1),
            "seconds": self.elapsed(),
            "phase": "reliability",
            "deterministic_evaluations": det_result.evaluations,
        }
        return RunResult.from_record(
            self.record("reliability"), metrics, x=res.x, history=res.history,
            x_phys=np.asarray(prob.compliance.x_phys(res.x)),
            arrays={"x_reliable": res.x, "x_deterministic": x_det,
                    "x_phys_deterministic": det_result.x_phys})

    def stopped(self, name) -> RunResult:
        """The record of a run interrupted in its deterministic phase."""
        det_result = self.outcomes[name]
        return RunResult.from_record(
            det_result.record(),
            {"phase": "deterministic",
             "deterministic": {"nominal_compliance": det_result["compliance"],
                               "volume": det_result["volume"]}},
            x=det_result.x, x_phys=det_result.x_phys, history=det_result.history,
            arrays={"x_deterministic": det_result.x})

    def write(self, result: RunResult) -> None:
        write_reliable(self.out, self.prob, result)

    def write_stopped(self, result: RunResult) -> None:
        """``deterministic.png`` of the interrupted phase and ``result.json`` (flat)."""
        from ..plot.figures import save_design
        save_design(self.prob.mesh, result.x_phys, os.path.join(self.out, "deterministic.png"),
                    title=f"deterministic, interrupted after {result.evaluations} "
                          "evaluations")
        write_json(os.path.join(self.out, "result.json"), result.summary())


def run_reliable(build: Callable[[], ReliableCompliance], volfrac: float = 0.3, allow: float = 3.0,
                 maxeval: int = 200, samples: int = 10**6, seed: int = 0,
                 out: str | None = None, verbose: bool = False, checkpoint: str | None = None,
                 resume: str | None = None, solver: str = "auto",
                 about: dict | None = None) -> RunResult:
    """Deterministic and reliability-based designs at one volume; pf of both by MC.

    `build()` makes the problem, once the arguments are checked.

    The `RunResult` says how the run ended and in which ``phase``; its
    metrics hold the pf summaries ``reliability_based`` and ``deterministic``
    (`pf_summary`) and `about` (the problem's parameters); ``x`` is the
    reliability-based design, ``result["x_deterministic"]`` the other. A run
    interrupted in the deterministic phase returns (and writes) only that
    phase's record. The run follows `topopt.formulations.run_template.GalleryRun`
    (phases ``deterministic`` and ``reliability``, checkpoints `phase_checkpoints`).
    """
    return _ReliableRun(build, volfrac, allow, maxeval, samples, seed, out, verbose, checkpoint,
                        resume, solver, about).run()


def write_reliable(out: str, prob: ReliableCompliance, result: RunResult,
                   name: str = "reliable_bracket") -> None:
    """Both designs, the history and the metrics (``result.json``, flat).

    ``design.npz`` / ``design.vtu`` (`topopt.io.save_design`): the
    reliability-based ``x``, ``x_phys`` and its displacement under the nominal
    load, and the deterministic design as ``x_deterministic``,
    ``x_phys_deterministic``; `name` is the problem's in their setup.
    """
    from ..plot.markers import boundary_markers
    from ..plot.figures import save_design
    from ..plot.history import save_history
    os.makedirs(out, exist_ok=True)
    r, d = result["reliability_based"], result["deterministic"]
    supports, loads = boundary_markers(prob.model, prob.f0)           # the nominal load
    save_design(prob.mesh, result.x_phys, os.path.join(out, "design.png"),
                title=f"reliability-based: V = {r['volume']:.3f}, pf(MC) = {r['pf_mc']:.1e}",
                supports=supports, loads=loads)
    save_design(prob.mesh, result["x_phys_deterministic"],
                os.path.join(out, "deterministic.png"),
                title=f"deterministic: V = {d['volume']:.3f}, pf(MC) = {d['pf_mc']:.1e}",
                supports=supports, loads=loads)
    names = [f"volume V / {result['volfrac']:g} - 1"]
    c_det = d["nominal_compliance"]
    save_history(result.history, os.path.join(out, "history.png"),
                 title="reliability-based design (from the deterministic one)",
                 objective_label=OBJECTIVE_NAME, constraint_names=names, objective_scale=c_det)
    record = plot_record(result.history, OBJECTIVE_NAME, c_det, names,
                         supports=supports, loads=loads)
    write_json(os.path.join(out, "result.json"), result.metrics | result.record() | record)
    _keep(out, prob, result, name)


def _keep(out: str, prob: ReliableCompliance, result: RunResult, name: str) -> None:
    """``design.npz`` / ``design.vtu`` of `write_reliable`."""
    from ..io.designs import save_design as keep_design
    keys = ("n", "volfrac", "allow", "method", "samples", "c_allow", "pa", "K", "sigma_v",
            "sigma_h")
    setup = {"problem": name, **{k: result[k] for k in keys if k in result.metrics},
             "rmin": prob.compliance.rmin, "penal": prob.compliance.penal,
             "Emin": prob.compliance.Emin}
    keep_design(out, prob.mesh, result.x, result.x_phys, setup,
                point_data=prob.compliance.displacement(result.x_phys),
                cell_data={"x_deterministic": result["x_deterministic"],
                           "x_phys_deterministic": result["x_phys_deterministic"]})
