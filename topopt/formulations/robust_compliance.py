"""Robust compliance: minimum ``E[c] + k std[c]`` under a Gaussian load ``f = B theta``.

``theta ~ N(mu, Sigma)``. The compliance is quadratic in ``theta``, so the
second-order moments of `topopt.robust.mean_std` (SOSM) are exact: ``E[c] =
c(mu) + tr(A Sigma)``, ``Var[c] = 4 b^T Sigma b + 2 tr((A Sigma)^2)`` (e.g.
Guest & Igusa 2008, Dunning, Kim & Mullineux 2011); their design derivatives
come from nested AD. `run_robust` compares the deterministic, mean-optimal
(``k = 0``) and robust designs at one volume under one uncertainty.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .. import fem
from .._validate import check_int, check_range
from ..fem.budget import check_samples
from ..io.result import RunResult
from ..optimize.driver import minimize
from ..optimize.checkpoint import load_checkpoint
from ..responses.structural import compliance
from ..robust.moments import mean_std, monte_carlo_moments
from .._files import check_writable_file, check_writable_folder
from ..io.folder import write_results
from .compliance import ComplianceProblem
from .run_template import GalleryRun

__all__ = ["RobustCompliance", "check_robust", "run_robust", "write_robust"]


class RobustCompliance:
    """``E[c] + k std[c]`` of a `ComplianceProblem` under the load ``B theta``.

    ``theta ~ N(mu, Sigma)``; moments by `mean_std` (SOSM, exact for
    compliance). `responses` is MMA's ``(objective / scale, v / volfrac - 1)``.

    Examples
    --------
    >>> from topopt import fem
    >>> model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda x: np.isclose(x[0], 0))
    >>> B = np.stack([model.point_load((4, 1), (1, 0)), model.point_load((4, 1), (0, 1))], 1)
    >>> mu = np.array([0.0, -1.0])
    >>> det = ComplianceProblem(model, B @ mu, 0.5, 1.5)
    >>> robust = RobustCompliance(det, B, mu, np.diag([0.01, 0.0]), 3.0)
    >>> mean, std = robust.moments(np.full(8, 0.5))
    >>> bool(mean > 0 and std > 0)
    True
    """

    def __init__(self, problem: ComplianceProblem, B, mu, Sigma, k: float):
        self.problem, self.B, self.mu, self.Sigma, self.k = problem, B, mu, Sigma, k
        self.scale = None

    def compliance(self, E, theta):
        """``c(E, theta) = f^T K(E)^{-1} f``, ``f = B theta``."""
        f = self.B @ theta
        return compliance(fem.solve(self.problem.system, E, f), f)

    def moments(self, x):
        """``(E[c], std[c])`` of the design `x`; differentiable."""
        return mean_std(self.compliance, self.problem.stiffness(x), self.mu, self.Sigma)

    def objective(self, x):
        mean, std = self.moments(x)
        return mean + self.k * std

    def responses(self, x):
        return (self.objective(x) / self.scale,
                self.problem.volume(x) / self.problem.volfrac - 1.0)

    def optimize(self, maxeval: int, verbose: bool, checkpoint: str | None = None,
                 resume: str | None = None):
        """MMA from the uniform design (the deterministic run's start); a `Result`."""
        problem = self.problem
        x0 = np.full(problem.n, problem.volfrac)
        self.scale = float(self.objective(x0))
        return minimize(self.responses, x0, n_constraints=1, bounds=(0.0, 1.0),
                        maxeval=maxeval, ftol_rel=0.0, verbose=verbose, checkpoint=checkpoint,
                        resume=resume, mma_params={"inner_maxeval": 1, "dual_ftol_rel": 1e-10},
                        count_solves=lambda: problem.system.counts["factorizations"],
                        objective_scale=self.scale,
                        objective_name=f"E[c] + {self.k:g} std[c]")

    def sosm(self, x) -> dict:
        """The SOSM moments, the objective, the nominal compliance and the volume of `x`."""
        E = np.asarray(self.problem.stiffness(x))
        mean, std = (float(v) for v in mean_std(self.compliance, E, self.mu, self.Sigma))
        return {"mean": mean, "std": std, "objective": mean + self.k * std,
                "nominal_compliance": float(self.compliance(E, self.mu)),
                "volume": float(self.problem.volume(x))}

    def figures(self, x, samples: int, seed: int) -> dict:
        """`sosm` and a Monte Carlo check of `samples` draws of a design."""
        E = np.asarray(self.problem.stiffness(x))
        mc = monte_carlo_moments(self.compliance, E, self.mu, self.Sigma,
                                 n_samples=samples, seed=seed)
        return self.sosm(x) | {"mc_mean": mc.mean, "mc_mean_error": mc.mean_error,
                               "mc_std": mc.std, "mc_std_error": mc.std_error}


def check_robust(k, sigma_x, sigma_y, samples, out, checkpoint, resume):
    """``(k, Sigma, samples)`` checked, and the paths, before any work.

    Examples
    --------
    >>> k, Sigma, samples = check_robust(3.0, 0.5, 0.0, 100, None, None, None)
    >>> Sigma.tolist()
    [[0.25, 0.0], [0.0, 0.0]]
    """
    k = check_range("k", k, 0.0, None, what="weight of std[c]")
    Sigma = np.diag([check_range("sigma_x", sigma_x, 0.0, None) ** 2,
                     check_range("sigma_y", sigma_y, 0.0, None) ** 2])
    if not np.any(Sigma):
        raise ValueError("sigma_x and sigma_y are both 0: no uncertainty (std[c] = 0 is not "
                         "differentiable); give one > 0")
    samples = check_int("samples", samples, 100, what="Monte Carlo draws")
    check_samples(samples, len(Sigma), f"--samples {samples}")      # drawn after the run
    if out is not None:
        check_writable_folder(out, "out")
    if checkpoint is not None:
        check_writable_file(checkpoint, "checkpoint")
    if resume is not None:
        load_checkpoint(resume)                              # a readable checkpoint
    return k, Sigma, samples


class _RobustRun(GalleryRun):
    """`run_robust` on the run template: the deterministic, mean-optimal, robust phases."""

    PHASES = ("deterministic", "mean_optimal", "robust")

    def __init__(self, build, mu, k, Sigma, samples, maxeval, seed, about, out, verbose,
                 checkpoint, resume):
        super().__init__(out, verbose, checkpoint, resume)
        self._build, self.mu, self.k, self.Sigma = build, mu, k, Sigma
        self.samples, self.maxeval, self.seed, self.about = samples, maxeval, seed, about

    def build(self) -> None:
        self.det, self.B = self._build()

    def moments_of(self, k: float) -> RobustCompliance:
        return RobustCompliance(self.det, self.B, self.mu, self.Sigma, k)

    def phase(self, name, checkpoint, resume):
        if name == "deterministic":
            return self.det.run(maxeval=self.maxeval, verbose=self.verbose,
                                checkpoint=checkpoint, resume=resume)
        robust = self.moments_of(self.k if name == "robust" else 0.0)
        if name == "robust":
            self.robust = robust
        return robust.optimize(self.maxeval, self.verbose, checkpoint, resume)

    def result(self) -> RunResult:
        det, robust, res, samples, seed = (self.det, self.robust, self.outcomes["robust"],
                                           self.samples, self.seed)
        designs = {name: self.outcomes[name].x for name in ("robust", "mean_optimal",
                                                            "deterministic")}
        figures = {name: robust.figures(x, samples, seed) for name, x in designs.items()}
        metrics = {"robust_objective": figures["robust"]["objective"], **figures,
                   "k": self.k, "sigma_x": self.about["sigma_x"],
                   "sigma_y": self.about["sigma_y"], "mu": self.mu.tolist(),
                   "samples": samples, "objective_scale": robust.scale,
                   "seconds": self.elapsed()}
        arrays = {}
        for name in ("mean_optimal", "deterministic"):
            arrays[f"x_{name}"] = designs[name]
            arrays[f"x_phys_{name}"] = np.asarray(det.x_phys(designs[name]))
        return RunResult.from_record(self.record("robust"), metrics, x=res.x,
                                     x_phys=np.asarray(det.x_phys(res.x)),
                                     history=res.history, arrays=arrays)

    def stopped(self, name) -> RunResult:
        """The last good design of the interrupted phase `name`, its SOSM figures."""
        res = self.outcomes[name]
        metrics = {"phase": name, **self.moments_of(self.k).sosm(res.x)}
        return RunResult.from_record(self.record(name), metrics, x=res.x,
                                     x_phys=np.asarray(self.det.x_phys(res.x)),
                                     history=res.history)

    def write_stopped(self, result: RunResult) -> None:
        """The interrupted phase's design (`write_results`: ``design.png``, ``history.png``,
        ``result.json``, the design files)."""
        from ..plot.markers import boundary_markers
        det, name = self.det, result["phase"]
        supports, loads = boundary_markers(det.model, det.f)
        write_results(self.out, det.model.mesh, result, self.about,
                      title=f"{name.replace('_', '-')} phase, k = {self.k:g}",
                      point_data=det.displacement(result.x_phys), objective="objective",
                      symbol="E + k std", constraint_names=[f"volume V / {det.volfrac:g} - 1"],
                      supports=supports, loads=loads)

    def write(self, result: RunResult) -> None:
        write_robust(self.out, self.det, result, self.about)


def run_robust(build: Callable, mu, k: float, Sigma, samples: int, maxeval: int, seed: int,
               about: dict, out: str | None = None, verbose: bool = False,
               checkpoint: str | None = None, resume: str | None = None) -> RunResult:
    """Deterministic, mean-optimal and robust designs at one volume, under one uncertainty.

    `build()` gives ``(det, B)``: the deterministic `ComplianceProblem` (load
    ``B mu``) and the load directions. The `RunResult` holds
    ``robust_objective`` and the `RobustCompliance.figures` ``robust``,
    ``mean_optimal`` and ``deterministic`` (the same `k` and Monte Carlo
    draws); ``x`` is the robust design, ``x_mean_optimal`` and
    ``x_deterministic`` the others. `about`: the problem's parameters,
    ``sigma_x`` and ``sigma_y`` among them (metrics), all of them written
    with the design to `out` (`write_robust`).

    The run follows `topopt.formulations.run_template.GalleryRun`: the phases
    ``deterministic``, ``mean_optimal`` and ``robust`` checkpoint at
    ``PATH.deterministic.npz``, ``PATH.mean_optimal.npz`` and `checkpoint`
    (`phase_paths`; `resume` takes any of them). A run interrupted before the
    robust phase returns (and writes) that phase's last good design, its
    ``phase`` and SOSM figures (``mean``, ``std``, ``objective``, ...).
    """
    return _RobustRun(build, mu, k, Sigma, samples, maxeval, seed, about, out, verbose,
                      checkpoint, resume).run()


def write_robust(out: str, det: ComplianceProblem, result: RunResult, setup: dict) -> None:
    """The robust design (`write_results`), ``mean_optimal.png`` and ``deterministic.png``."""
    from ..plot.markers import boundary_markers
    mesh = det.model.mesh
    supports, loads = boundary_markers(det.model, det.f)
    pictures = {name: (result[f"x_phys_{name}"],
                       f"{name.replace('_', '-')}: E[c] = {result[name]['mean']:.4g}, "
                       f"std[c] = {result[name]['std']:.4g}, "
                       f"c(mu) = {result[name]['nominal_compliance']:.4g}")
                for name in ("mean_optimal", "deterministic")}
    r = result["robust"]
    write_results(out, mesh, result, setup,
                  title=f"robust (k = {setup['k']:g}): E[c] = {r['mean']:.4g}, "
                        f"std[c] = {r['std']:.4g}, c(mu) = {r['nominal_compliance']:.4g}",
                  point_data=det.displacement(result.x_phys), objective="robust_objective",
                  symbol="E + k std", constraint_names=[f"volume V / {det.volfrac:g} - 1"],
                  objective_scale=result["objective_scale"],
                  objective_label=f"E[c] + {setup['k']:g} std[c]",
                  supports=supports, loads=loads, pictures=pictures)
