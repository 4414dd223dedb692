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
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from .._validate import check_choice, check_int, check_range, check_sequence
from ..io.folder import write_json
from ..io.result import RunResult
from ..design.measures import grey_level
from .focus import FocusProblem, FocusSetup, run_focus
from .focus_output import write_focus
from .focus_reliable import APPROACHES, FocusReliability, ReliableFocus
from .focus_robust import robust_focus_stages
from .focus_variations import FocusVariations, WorstFocus
from .run_template import GalleryRun

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


class _DesignsRun(GalleryRun):
    """`run_focus_designs` on the run template: the nominal, robust, (disk) and
    reliability-based phases; any interrupted phase ends the run (no Monte Carlo)."""

    STOP_LAST = True

    def __init__(self, setup, h, maxeval, spec, samples, workers, seed, out, verbose,
                 checkpoint, resume, solver):
        super().__init__(out, verbose, checkpoint, resume)
        self.setup, self.h, self.maxeval, self.spec = setup, h, maxeval, spec
        self.samples, self.workers, self.seed, self.solver = samples, workers, seed, solver
        self.beta = setup.betas[-1]

    def check(self) -> None:
        self.samples = check_int("samples", self.samples, 1,
                                 what="Monte Carlo solves per design")
        self.workers = check_int("workers", self.workers, 0,
                                 what="worker processes (0: this process)")
        spec = self.spec
        if not isinstance(spec, FocusDesigns):
            raise TypeError(f"spec must be a FocusDesigns, got {type(spec).__name__}")
        self.with_disk = spec.approach == "pma" and spec.disk_maxeval > 0
        self.PHASES = (*(PHASES if self.with_disk else PHASES[:2]), "reliability_based")

    def phase(self, name, checkpoint, resume):
        spec, beta, maxeval, verbose = self.spec, self.beta, self.maxeval, self.verbose
        if name == "nominal":
            return run_focus(self.setup, self.h, maxeval, None, verbose, checkpoint, resume,
                             solver=self.solver)
        if name == "robust":
            self.prob = FocusProblem(self.setup, self.h, solver=self.solver)
            var = self.var = FocusVariations(self.prob)
            worst = WorstFocus(var, spec.shifts, spec.band)
            return worst.minimize(self.outcomes["nominal"].x,
                                  robust_focus_stages((beta,), maxeval), verbose=verbose,
                                  checkpoint=checkpoint, resume=resume)
        x_r = self.outcomes["robust"].x[:-1]
        if name == "disk":
            # a feasible start for the PMA: the worst case over its disk points (an epigraph)
            design = self._design()
            disk = WorstFocus.on_pairs(self.var, [self.rel.physical(t) for t in design.points])
            stages = robust_focus_stages((beta,), min(maxeval, spec.disk_maxeval))
            return disk.minimize(x_r, stages, verbose=verbose, checkpoint=checkpoint,
                                 resume=resume)
        x_d = self.outcomes["disk"].x[:-1] if self.with_disk else x_r
        return self._design().minimize(x_d, min(maxeval, spec.reliable_maxeval), beta,
                                        verbose=verbose, checkpoint=checkpoint, resume=resume)

    def _design(self) -> ReliableFocus:
        """The reliability-based design's formulation (made once, from the nominal optimum)."""
        if not hasattr(self, "design"):
            spec, var, beta = self.spec, self.var, self.beta
            self.target = spec.target_fraction * float(
                var.enhancement(self.outcomes["nominal"].x, 0.0, None, beta))
            self.rel = FocusReliability(var, self.target, spec.sigma_shift,
                                        spec.sigma_wavelength, beta)
            self.design = ReliableFocus(self.rel, spec.pa, spec.approach, spec.n_shifts)
        return self.design

    def result(self) -> RunResult:
        spec, beta, prob, design, done = (self.spec, self.beta, self.prob, self.design,
                                          self.outcomes)
        res, x_r = done["reliability_based"], done["robust"].x[:-1]
        x = res.x[:prob.n]
        designs = {"nominal": done["nominal"].x, "robust": x_r, "reliability_based": x}
        with cf.ProcessPoolExecutor(self.workers) if self.workers else nullcontext() as ex:
            figs = {k: _figures(self.var, self.rel, v, spec, beta, self.samples, self.seed,
                                ex if self.workers else None) for k, v in designs.items()}
        metrics = {"resolution_nm": self.h, "subcell": False, "isolated": False,
                   "spec": spec.__dict__, "target": self.target, "beta_a": design.beta_a,
                   "E_ref": design.E_ref, "n_constraints": design.n_constraints,
                   "designs": figs, "seconds": self.elapsed(),
                   "field_enhancement": figs["reliability_based"]["enhancement_nominal"],
                   "evaluations_per_phase": [
                       done["nominal"].evaluations, done["robust"].evaluations,
                       done["disk"].evaluations if self.with_disk else 0, res.evaluations]}
        self.designs = designs                                  # x_d: a step, not a design
        return RunResult.from_record(self.record("reliability_based"), metrics, x=x,
                                     x_phys=prob.element_density(x, beta), history=res.history,
                                     arrays={"x_nominal": designs["nominal"], "x_robust": x_r})

    def stopped(self, name) -> RunResult:
        """An interrupted phase: its last design (the checkpoint holds it), no Monte Carlo."""
        res = self.outcomes[name]
        if name == "nominal":
            x, x_phys = res.x, res.x_phys
        else:
            x = res.x[:self.prob.n]
            x_phys = self.prob.element_density(x, self.beta)
        return RunResult.from_record(self.record(name),
                                     {"phase": name, "resolution_nm": self.h},
                                     x=x, x_phys=x_phys, history=res.history)

    def write(self, result: RunResult) -> None:
        _write(self.out, self.prob, self.var, result, self.designs, self.spec, self.beta)


def run_focus_designs(setup: FocusSetup, h: float = 4.0, maxeval: int = 100,
                      spec: FocusDesigns = FocusDesigns(), samples: int = 1000,
                      workers: int = 2, seed: int = 0, out: str | None = None,
                      verbose: bool = False, checkpoint: str | None = None,
                      resume: str | None = None, solver: str = "auto") -> RunResult:
    """The three designs (`maxeval` MMA evaluations per stage and phase), their grids and pf.

    ``x`` of the result is the reliability-based design; its metrics hold,
    per design, the grid of enhancements (rows: `spec.grid_shifts`), the
    worst, the Monte Carlo ``pf`` (`samples` solves on `workers`
    processes; 0 workers: in this process) and FORM's. The run follows
    `topopt.formulations.run_template.GalleryRun`; an interrupted phase's
    ``OUT/result.json`` says which phase stopped, after how many evaluations
    and how to resume.
    """
    return _DesignsRun(setup, h, maxeval, spec, samples, workers, seed, out, verbose,
                       checkpoint, resume, solver).run()


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

