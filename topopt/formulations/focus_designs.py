"""Three focusing designs side by side: nominal, robust (band + fabrication), reliability-based.

`run_focus_designs` runs them one after the other, each from the one
before (the robust design from the nominal optimum, the reliability-based
one from the robust design), then evaluates each on one grid of edge
shifts x wavelengths and estimates each one's ``pf`` by Monte Carlo on the
executor of `topopt.parallel`. With the performance measure approach
(``spec.approach = "pma"``) the reliability-based design starts from the
worst case over its disk of standard-normal points (``spec.disk_maxeval``
evaluations of `WorstFocus.on_pairs` from the robust design): the PMA's
constraints, which MMA did not make feasible from the robust or the
nominal design (a notch of the enhancement between the robust design's
shifts; the dead plateau of the nominal one's dilations), hold there.
Each phase checkpoints: ``PATH.nominal.npz``, ``PATH.robust.npz``,
``PATH.disk.npz`` and ``PATH`` (``--checkpoint PATH``); ``--resume`` takes
any of them: that phase continues, the phases before it come (finished)
from their siblings. An interrupted phase ends the run (no Monte Carlo):
its result names the phase and the checkpoint to resume from.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from .._validate import check_choice, check_int, check_range, check_sequence
from .._files import check_writable_file, check_writable_folder
from ..io.folder import signals_held, write_json
from ..io.result import RunResult, grey_level, run_record
from .base import before_resume
from .focus import FocusProblem, FocusSetup, run_focus
from .focus_output import write_focus
from .focus_reliable import APPROACHES, FocusReliability, ReliableFocus
from .focus_robust import robust_focus_stages
from .focus_variations import FocusVariations, WorstFocus
from .run_template import phase_paths

__all__ = ["FocusDesigns", "run_focus_designs", "PHASES"]

#: The phases before the last (reliability-based) one, in order.
PHASES = ("nominal", "robust", "disk")


@dataclass(frozen=True)
class FocusDesigns:
    """The specification of the three designs (lengths and wavelengths in nm)."""

    shifts: tuple = (-2.0, -1.0, 0.0, 1.0, 2.0)       # robust design's edge shifts
    band: tuple = (512.0, 532.0, 552.0)                # robust design's wavelengths
    grid_shifts: tuple = (-2.0, -1.0, 0.0, 1.0, 2.0)   # the evaluation grid
    grid_wavelengths: tuple = (512.0, 522.0, 532.0, 542.0, 552.0)
    target_fraction: float = 0.25    # E_t of pf = P(E < E_t): this x the nominal design's E
    pa: float = 0.01
    sigma_shift: float = 1.0
    sigma_wavelength: float = 5.0
    reliable_maxeval: int = 30                         # MMA evaluations of the last phase
    approach: str = "pma"                              # `ReliableFocus`'s formulation
    n_shifts: int = 51                                 # its disk's chords ("pma")
    disk_maxeval: int = 25          # "pma": the worst case over the disk first, from the robust

    def __post_init__(self):
        for name in ("shifts", "band", "grid_shifts", "grid_wavelengths"):
            values = check_sequence(name, getattr(self, name))
            if not values:
                raise ValueError(f"{name} must hold at least one value")
            lo = 0.0 if name in ("band", "grid_wavelengths") else None
            for i, v in enumerate(values):
                check_range(f"{name}[{i}]", v, lo, None, lo_open=True)
        check_range("target_fraction", self.target_fraction, 0.0, 1.0, lo_open=True)
        check_range("pa", self.pa, 0.0, 1.0, lo_open=True, hi_open=True)
        for name in ("sigma_shift", "sigma_wavelength"):
            check_range(name, getattr(self, name), 0.0, None, lo_open=True)
        check_int("reliable_maxeval", self.reliable_maxeval, 1)
        check_int("disk_maxeval", self.disk_maxeval, 0)
        check_choice("approach", self.approach, APPROACHES)
        check_int("n_shifts", self.n_shifts, 2)


def _figures(var, rel, x, spec, beta, samples, seed, executor) -> dict:
    grid = var.grid(x, spec.grid_shifts, spec.grid_wavelengths, beta)
    mc = rel.monte_carlo(x, samples, seed, executor)
    E0 = float(var.enhancement(x, 0.0, None, beta))
    out = {"enhancement_nominal": E0, "grid": grid.tolist(), "worst_on_grid": float(grid.min()),
           "loss_at_worst": 1.0 - float(grid.min()) / E0,
           "pf_mc": mc.pf, "pf_mc_std": mc.pf_std, "mc_failures": int(mc.n_failures),
           "mc_solves": int(samples), "grey_level": grey_level(var.p_phys(x, 0.0, beta))}
    try:
        out["pf_form"] = float(np.exp(float(rel.ln_pf(x, "form", warm=False))))
    except Exception as err:                       # noqa: BLE001 -- reported, not hidden
        out["pf_form"], out["form_error"] = None, str(err).splitlines()[0]
    return out


def run_focus_designs(setup: FocusSetup, h: float = 4.0, maxeval: int = 100,
                      spec: FocusDesigns = FocusDesigns(), samples: int = 1000,
                      workers: int = 2, seed: int = 0, out: str | None = None,
                      verbose: bool = False, checkpoint: str | None = None,
                      resume: str | None = None, solver: str = "auto") -> RunResult:
    """The three designs (`maxeval` MMA evaluations per stage and phase), their grids and pf.

    ``x`` of the result is the reliability-based design; its metrics hold,
    per design, the grid of enhancements (rows: `spec.grid_shifts`), the
    worst, the Monte Carlo ``pf`` (`samples` solves on `workers`
    processes; 0 workers: in this process) and FORM's.
    """
    samples = check_int("samples", samples, 1, what="Monte Carlo solves per design")
    workers = check_int("workers", workers, 0, what="worker processes (0: this process)")
    if not isinstance(spec, FocusDesigns):
        raise TypeError(f"spec must be a FocusDesigns, got {type(spec).__name__}")
    with_disk = spec.approach == "pma" and spec.disk_maxeval > 0
    paths = phase_paths(checkpoint, resume,
                        (*(PHASES if with_disk else PHASES[:2]), "reliability_based"))
    if out is not None:
        check_writable_folder(out, "out")                    # before any work
    for ck, _ in paths:
        if ck is not None:
            check_writable_file(ck, "checkpoint")
    t0 = time.perf_counter()
    nominal = run_focus(setup, h, maxeval, None, verbose, *paths[0], solver=solver)
    if nominal.status == "interrupted":
        return nominal
    beta = setup.betas[-1]
    prob = FocusProblem(setup, h, solver=solver)
    var = FocusVariations(prob)
    worst = WorstFocus(var, spec.shifts, spec.band)
    res_r = worst.minimize(nominal.x, robust_focus_stages((beta,), maxeval), verbose=verbose,
                           checkpoint=paths[1][0], resume=paths[1][1])
    if res_r.status == "interrupted":
        return _stopped("robust", res_r, paths[1][0], prob, h, beta, out)
    x_r = res_r.x[:-1]
    target = spec.target_fraction * float(var.enhancement(nominal.x, 0.0, None, beta))
    rel = FocusReliability(var, target, spec.sigma_shift, spec.sigma_wavelength, beta)
    design = ReliableFocus(rel, spec.pa, spec.approach, spec.n_shifts)
    res_d, x_d = None, x_r
    if with_disk:
        # a feasible start for the PMA: the worst case over its disk points (an epigraph)
        disk = WorstFocus.on_pairs(var, [rel.physical(t) for t in design.points])
        stages = robust_focus_stages((beta,), min(maxeval, spec.disk_maxeval))
        res_d = disk.minimize(x_r, stages, verbose=verbose, checkpoint=paths[2][0],
                              resume=paths[2][1])
        if res_d.status == "interrupted":
            return _stopped("disk", res_d, paths[2][0], prob, h, beta, out)
        x_d = res_d.x[:-1]
    res = design.minimize(x_d, min(maxeval, spec.reliable_maxeval), beta, verbose=verbose,
                          checkpoint=paths[-1][0], resume=paths[-1][1])
    if res.status == "interrupted":
        return _stopped("reliability_based", res, paths[-1][0], prob, h, beta, out)
    x = res.x[:prob.n]
    designs = {"nominal": nominal.x, "robust": x_r, "reliability_based": x}   # x_d: a step
    with cf.ProcessPoolExecutor(workers) if workers else nullcontext() as ex:
        figs = {k: _figures(var, rel, v, spec, beta, samples, seed, ex if workers else None)
                for k, v in designs.items()}
    metrics = {"resolution_nm": h, "subcell": False, "isolated": False,
               "spec": spec.__dict__, "target": target, "beta_a": design.beta_a,
               "E_ref": design.E_ref, "n_constraints": design.n_constraints,
               "designs": figs, "seconds": time.perf_counter() - t0 + sum(
                   before_resume(r, "seconds", 0.0) for r in (res_r, res_d, res)),
               "field_enhancement": figs["reliability_based"]["enhancement_nominal"],
               "evaluations_per_phase": [nominal.evaluations, res_r.evaluations,
                                         0 if res_d is None else res_d.evaluations,
                                         res.evaluations]}
    result = RunResult.from_record(run_record(res, checkpoint), metrics, x=x,
                                   x_phys=prob.element_density(x, beta), history=res.history,
                                   arrays={"x_nominal": nominal.x, "x_robust": x_r})
    if out is not None:
        with signals_held():
            _write(out, prob, var, result, designs, spec, beta)
    return result


def _stopped(phase, res, checkpoint, prob, h, beta, out) -> RunResult:
    """An interrupted `phase`: its last design (the checkpoint holds it), no Monte Carlo.

    ``OUT/result.json`` says which phase stopped, after how many evaluations
    and how to resume.
    """
    x = res.x[:prob.n]
    result = RunResult.from_record(run_record(res, checkpoint),
                                   {"phase": phase, "resolution_nm": h}, x=x,
                                   x_phys=prob.element_density(x, beta), history=res.history)
    if out is not None:
        with signals_held():
            write_json(os.path.join(out, "result.json"),
                       {**result.record(), "result": result.summary()})
    return result


def _write(out, prob, var, result, designs, spec, beta) -> None:
    from .focus_plots import save_designs, save_heatmaps
    what = ("E >= E_t on %d disk points (PMA)" % result["n_constraints"]
            if spec.approach == "pma" else "ln pf <= ln pa (FORM)")
    write_focus(out, prob, result, prob.field(result.x, beta),
                objective_label="nominal enhancement E(0, lambda_0)",
                objective_scale=-result["E_ref"],
                history_title=f"reliability-based phase: {what}, beta = {beta:g}")
    save_designs(os.path.join(out, "designs.png"), prob, designs, result["designs"], beta)
    save_heatmaps(os.path.join(out, "heatmap.png"), result["designs"], spec)
    write_json(os.path.join(out, "designs.json"), {"spec": spec.__dict__,
                                                   "target": result["target"],
                                                   "designs": result["designs"]})

