"""Robust cantilever: minimum E[c] + k std[c] under a load of uncertain size and direction.

The short cantilever of top99 (Sigmund 2001, Sec. 4): ``nelx x nely`` unit
bilinear elements, E0 = 1, Emin = 1e-9, nu = 0.3, SIMP p = 3, density or
Helmholtz filter of radius `rmin`, the left edge clamped, volume fraction
`volfrac`. A point load at the middle of the right edge, ``f = B theta``
with ``theta = (F_x, F_y)`` Gaussian: mean ``mu = (0, -1)`` (the nominal unit
downward load), standard deviations ``sigma_x = 0.7`` (its direction:
about ``atan(0.7) = 35`` degrees of scatter in angle) and ``sigma_y = 0.05``
(its size), uncorrelated; ``k = 3``.

* Deterministic design: minimum nominal compliance ``c(mu)`` (top88 chain,
  `topopt.formulations.ComplianceProblem`).
* Mean-optimal design: minimum ``E[c]`` (``k = 0``).
* Robust design: minimum ``E[c] + k std[c]``.

All three at the same volume from the same uniform start. The compliance is
quadratic in ``theta``, so the second-order moments of
`topopt.robust.mean_std` (SOSM) are exact: ``E[c] = c(mu) + tr(A
Sigma)``, ``Var[c] = 4 b^T Sigma b + 2 tr((A Sigma)^2)`` (robust compliance
under random loads: e.g. Guest & Igusa 2008, Dunning, Kim & Mullineux 2011);
their design derivatives come from nested AD.

The designs are evaluated under the same uncertainty (SOSM with the same
``k``, and a Monte Carlo check of ``--samples`` draws, the same for each);
``result.json`` holds the figures of each (``robust``, ``mean_optimal``,
``deterministic``). Writes ``results/robust_cantilever/{design.png,
mean_optimal.png, deterministic.png, history.png, result.json}`` and the
robust design (``design.npz``, ``design.vtu``). ``--checkpoint``/
``--resume`` apply to the robust phase, run last; the other two are
repeated (an interruption there ends the run without results).

    python problems/robust_cantilever.py [--nelx 80 --nely 40 --k 3 --sigma_x 0.7 ...]
"""

from __future__ import annotations

import os
import time

import numpy as np

from topopt import cli
from topopt import fem
from topopt.fem.budget import check_samples
from topopt._validate import check_int, check_range
from topopt.cli.script import Option, at_least
from topopt.io.result import run_record
from topopt.responses.structural import compliance
from topopt.optimize.driver import load_checkpoint, minimize
from topopt.formulations.compliance import ComplianceProblem, compliance_options, write_results
from topopt.io.result import RunResult
from topopt.robust.moments import mean_std, monte_carlo_moments
from topopt.io import check_writable_file, check_writable_folder

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "robust_cantilever")
MU = np.array([0.0, -1.0])                              # nominal load (F_x, F_y)
OPTIONS = compliance_options(dict(nelx=80, nely=40), volfrac=0.4, rmin=2.4) + (
    Option("k", at_least(0.0), 3.0, "weight of std[c] in E[c] + k std[c]"),
    Option("sigma_x", at_least(0.0), 0.7, "standard deviation of F_x (direction)"),
    Option("sigma_y", at_least(0.0), 0.05, "standard deviation of F_y (size)"),
    Option("samples", at_least(100, int), 2000, "Monte Carlo draws of the check"),
)


def setup(nelx: int, nely: int):
    """Mesh, model clamped on the left edge, and ``B``: unit loads ``e_x, e_y`` at the tip."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0))                    # clamped edge
    tip = (nelx, nely / 2)
    B = np.stack([model.point_load(tip, (1.0, 0.0)),
                  model.point_load(tip, (0.0, 1.0))], axis=1)           # f = B theta
    return mesh, model, B


class RobustCompliance:
    """``E[c] + k std[c]`` of a `ComplianceProblem` under the load ``B theta``.

    ``theta ~ N(mu, Sigma)``; moments by `mean_std` (SOSM, exact for
    compliance). `responses` is MMA's ``(objective / scale, v / volfrac - 1)``.
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

    def figures(self, x, samples: int, seed: int) -> dict:
        """SOSM moments, the nominal compliance and a Monte Carlo check of a design."""
        E = np.asarray(self.problem.stiffness(x))
        mean, std = (float(v) for v in mean_std(self.compliance, E, self.mu, self.Sigma))
        mc = monte_carlo_moments(self.compliance, E, self.mu, self.Sigma,
                                 n_samples=samples, seed=seed)
        return {"mean": mean, "std": std, "objective": mean + self.k * std,
                "nominal_compliance": float(self.compliance(E, self.mu)),
                "volume": float(self.problem.volume(x)),
                "mc_mean": mc.mean, "mc_mean_error": mc.mean_error,
                "mc_std": mc.std, "mc_std_error": mc.std_error}


def _check(k, sigma_x, sigma_y, samples, out, checkpoint, resume):
    """``(k, Sigma, samples)`` checked, and the paths, before any work."""
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


def run(nelx: int = 80, nely: int = 40, volfrac: float = 0.4, rmin: float = 2.4,
        penal: float = 3.0, filter: str = "density", k: float = 3.0, sigma_x: float = 0.7,
        sigma_y: float = 0.05, samples: int = 2000, maxeval: int = 200, seed: int = 0,
        solver: str = "auto", out: str | None = None, verbose: bool = False,
        checkpoint: str | None = None, resume: str | None = None) -> RunResult:
    """Deterministic, mean-optimal and robust designs at one volume, under one uncertainty.

    The `RunResult` holds ``robust_objective`` (E[c] + k std[c] of the robust
    design) and the figures ``robust``, ``mean_optimal`` and ``deterministic``
    (`RobustCompliance.figures`, all with the same `k` and Monte Carlo draws);
    ``x`` is the robust design, ``x_mean_optimal`` and ``x_deterministic``
    the others. A run interrupted before the robust phase returns that
    phase's record.
    """
    k, Sigma, samples = _check(k, sigma_x, sigma_y, samples, out, checkpoint, resume)
    t0 = time.perf_counter()
    mesh, model, B = setup(nelx, nely)
    det = ComplianceProblem(model, B @ MU, volfrac, rmin, penal=penal, filter=filter,
                            solver=solver)
    det_result = det.run(maxeval=maxeval, verbose=verbose)
    if det_result.status == "interrupted":
        return det_result
    mean_res = RobustCompliance(det, B, MU, Sigma, 0.0).optimize(maxeval, verbose)
    if mean_res.status == "interrupted":
        return RunResult.from_record(run_record(mean_res, None), {"phase": "mean_optimal"},
                                     x=mean_res.x, x_phys=np.asarray(det.x_phys(mean_res.x)),
                                     history=mean_res.history)
    robust = RobustCompliance(det, B, MU, Sigma, k)
    res = robust.optimize(maxeval, verbose, checkpoint, resume)
    designs = {"robust": res.x, "mean_optimal": mean_res.x, "deterministic": det_result.x}
    figures = {name: robust.figures(x, samples, seed) for name, x in designs.items()}
    metrics = {"robust_objective": figures["robust"]["objective"], **figures,
               "k": k, "sigma_x": sigma_x, "sigma_y": sigma_y, "mu": MU.tolist(),
               "samples": samples, "objective_scale": robust.scale,
               "seconds": time.perf_counter() - t0}
    arrays = {}
    for name in ("mean_optimal", "deterministic"):
        arrays[f"x_{name}"] = designs[name]
        arrays[f"x_phys_{name}"] = np.asarray(det.x_phys(designs[name]))
    result = RunResult.from_record(run_record(res, checkpoint), metrics, x=res.x,
                                   x_phys=np.asarray(det.x_phys(res.x)), history=res.history,
                                   arrays=arrays)
    if out is not None:
        write(out, mesh, det, result, dict(problem="robust_cantilever", nelx=nelx, nely=nely,
                                           volfrac=volfrac, rmin=rmin, penal=penal,
                                           filter=filter, k=k, sigma_x=sigma_x,
                                           sigma_y=sigma_y, maxeval=maxeval, seed=seed))
    return result


def write(out: str, mesh, det: ComplianceProblem, result: RunResult, setup: dict) -> None:
    """The robust design (`write_results`), ``mean_optimal.png`` and ``deterministic.png``."""
    from topopt.plot.figures import boundary_markers, save_design
    supports, loads = boundary_markers(det.model, det.f)
    for name in ("mean_optimal", "deterministic"):
        f = result[name]
        save_design(mesh, result[f"x_phys_{name}"], os.path.join(out, f"{name}.png"),
                    title=f"{name.replace('_', '-')}: E[c] = {f['mean']:.4g}, "
                          f"std[c] = {f['std']:.4g}, c(mu) = {f['nominal_compliance']:.4g}")
    r = result["robust"]
    write_results(out, mesh, result, setup,
                  title=f"robust (k = {setup['k']:g}): E[c] = {r['mean']:.4g}, "
                        f"std[c] = {r['std']:.4g}, c(mu) = {r['nominal_compliance']:.4g}",
                  point_data=det.displacement(result.x_phys), objective="robust_objective",
                  symbol="E + k std", constraint_names=[f"volume V / {det.volfrac:g} - 1"],
                  objective_scale=result["objective_scale"],
                  objective_label=f"E[c] + {setup['k']:g} std[c]",
                  supports=supports, loads=loads)


def summary(result: RunResult) -> str:
    """The lines the script prints after its run."""
    lines = [f"{name + ':':14s} E[c] {f['mean']:.4f}  std[c] {f['std']:.4f}  "
             f"E + k std {f['objective']:.4f}  nominal c {f['nominal_compliance']:.4f}"
             for name, f in ((n, result[n]) for n in ("robust", "mean_optimal",
                                                       "deterministic"))]
    return "\n".join(lines) + f"  ({result['seconds']:.1f} s)"


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=200, seed=0,
                    maxeval_help="MMA evaluations of each design (deterministic, mean-optimal, "
                                 "robust: up to 3 N in all)",
                    solvers=cli.DIRECT_SOLVERS, summary=summary, check=_check_options)


def _check_options(kw) -> None:
    if kw["sigma_x"] == 0 and kw["sigma_y"] == 0:
        raise ValueError("--sigma_x 0 --sigma_y 0: no uncertainty (std[c] = 0 is not "
                         "differentiable); give one > 0")


if __name__ == "__main__":
    main()
