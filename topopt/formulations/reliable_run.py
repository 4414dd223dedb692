"""The two-phase run of `ReliableCompliance`: the deterministic design, then the reliable one.

Both phases checkpoint (`phase_checkpoints`); the reliability-based one starts
from the deterministic design and minimizes ``c / c_det + K [(ln pf - ln
pa)^+]^2`` at its volume; both designs are then checked by Monte Carlo.
"""

from __future__ import annotations

import os
import time
from typing import Callable

import numpy as np

from ..io.result import RunResult, run_record
from ..optimize.driver import minimize
from .._files import check_writable_file, check_writable_folder
from ..io.folder import plot_record, write_json
from .base import before_resume
from .compliance import ComplianceProblem
from .reliable import ReliableCompliance, pf_summary, phase_checkpoints

__all__ = ["run_reliable", "write_reliable"]

#: The objective in compliance units: c_det (c / c_det + K [(ln pf - ln pa)^+]^2).
OBJECTIVE_NAME = "c + c_det K [(ln pf - ln pa)^+]^2"


def _check(volfrac, allow, samples, out, checkpoint, resume):
    """The arguments checked before any work: the phases' checkpoint pairs."""
    if not 0 < volfrac < 1:
        raise ValueError(f"volfrac must lie in (0, 1), got {volfrac!r}")
    if allow <= 1:
        raise ValueError(f"allow must be > 1 (c_allow / nominal compliance), got {allow!r}")
    if samples < 1000:
        raise ValueError(f"samples must be >= 1000, got {samples!r}")
    if out is not None:
        check_writable_folder(out, "out")                    # before any work
    phases = phase_checkpoints(checkpoint, resume)
    for path, _ in phases:
        if path is not None:
            check_writable_file(path, "checkpoint")
    return phases


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
    phase's record.
    """
    (det_ck, det_resume), (rel_ck, rel_resume) = _check(volfrac, allow, samples, out,
                                                         checkpoint, resume)
    t0 = time.perf_counter()
    prob = build()
    det = ComplianceProblem(prob.model, prob.f0, volfrac, 1.5, solver=solver)
    t_det = time.perf_counter()
    det_result = det.run(maxeval=maxeval, verbose=verbose, checkpoint=det_ck,
                         resume=det_resume)
    # the deterministic phase's time before a resume: its whole-run seconds beyond this call's
    det_before = max(det_result["seconds"] - (time.perf_counter() - t_det), 0.0)
    if det_result.status == "interrupted":
        return _interrupted_deterministic(out, prob, det_result)
    x_det, c_det = det_result.x, det_result["compliance"]
    prob.c_allow = allow * c_det
    # minimized: c / c_det + K [(ln pf - ln pa)^+]^2; times c_det in compliance units
    res = minimize(lambda x: prob.responses(x, c_det, volfrac), x_det, bounds=(0.0, 1.0),
                   maxeval=maxeval, ftol_rel=1e-8, verbose=verbose, checkpoint=rel_ck,
                   resume=rel_resume, count_solves=lambda: prob.system.counts["factorizations"],
                   objective_scale=c_det, objective_name=OBJECTIVE_NAME)
    metrics = {
        "c_allow": prob.c_allow, "pa": prob.pa, "ln_pa": float(np.log(prob.pa)), "K": prob.K,
        "method": prob.method, "samples": samples, "volfrac": volfrac, "allow": allow,
        **(about or {}),
        "reliability_based": pf_summary(prob, res.x, samples, seed),
        "deterministic": pf_summary(prob, x_det, samples, seed + 1),
        "seconds": time.perf_counter() - t0 + det_before + before_resume(res, "seconds", 0.0),
        "phase": "reliability",
        "deterministic_evaluations": det_result.evaluations,
    }
    result = RunResult.from_record(
        run_record(res, rel_ck), metrics, x=res.x, history=res.history,
        x_phys=np.asarray(prob.compliance.x_phys(res.x)),
        arrays={"x_reliable": res.x, "x_deterministic": x_det,
                "x_phys_deterministic": det_result.x_phys})
    if out is not None:
        from ..io.folder import signals_held
        with signals_held():                     # a signal waits for complete files
            write_reliable(out, prob, result)
    return result


def _interrupted_deterministic(out: str | None, prob: ReliableCompliance,
                               det_result: RunResult) -> RunResult:
    """The record of a run interrupted in its deterministic phase (and its picture)."""
    result = RunResult.from_record(
        det_result.record(),
        {"phase": "deterministic",
         "deterministic": {"nominal_compliance": det_result["compliance"],
                           "volume": det_result["volume"]}},
        x=det_result.x, x_phys=det_result.x_phys, history=det_result.history,
        arrays={"x_deterministic": det_result.x})
    if out is not None:
        from ..io.folder import signals_held
        from ..plot.figures import save_design
        with signals_held():                     # a signal waits for complete files
            save_design(prob.mesh, det_result.x_phys, os.path.join(out, "deterministic.png"),
                        title=f"deterministic, interrupted after {det_result.evaluations} "
                              "evaluations")
            write_json(os.path.join(out, "result.json"), result.summary())
    return result


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
