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
robust design (``design.npz``, ``design.vtu``). The three optimizations
checkpoint to ``OUT/checkpoint.deterministic.npz``, ``.mean_optimal.npz``
and ``OUT/checkpoint.npz`` (the robust one; ``--checkpoint PATH``: PATH and its
siblings); ``--resume`` takes any of them. An interruption ends the run with
the last good design of its phase (``result.json`` names the phase).

    python problems/robust_cantilever.py [--nelx 80 --nely 40 --k 3 --sigma_x 0.7 ...]
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import Option, at_least, compliance_options
from topopt.formulations.compliance import ComplianceProblem
from topopt.formulations.robust_compliance import check_robust, run_robust
from topopt.io.result import RunResult
from topopt._keywords import keywords

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


@keywords
def run(nelx: int = 80, nely: int = 40, volfrac: float = 0.4, rmin: float = 2.4,
        penal: float = 3.0, filter: str = "density", k: float = 3.0, sigma_x: float = 0.7,
        sigma_y: float = 0.05, samples: int = 2000, maxeval: int = 200, seed: int = 0,
        solver: str = "auto", out: str | None = None, verbose: bool = False,
        checkpoint: str | None = None, resume: str | None = None) -> RunResult:
    """Deterministic, mean-optimal and robust designs at one volume, under one uncertainty
    (`run_robust`: ``x`` is the robust design, ``x_mean_optimal``, ``x_deterministic``)."""
    k, Sigma, samples = check_robust(k, sigma_x, sigma_y, samples, out, checkpoint, resume)

    def build():
        _, model, B = setup(nelx, nely)
        return ComplianceProblem(model, B @ MU, volfrac, rmin, penal=penal, filter=filter,
                                 solver=solver), B
    about = dict(problem="robust_cantilever", nelx=nelx, nely=nely, volfrac=volfrac, rmin=rmin,
                 penal=penal, filter=filter, k=k, sigma_x=sigma_x, sigma_y=sigma_y,
                 maxeval=maxeval, seed=seed)
    return run_robust(build, MU, k, Sigma, samples, maxeval, seed, about, out, verbose,
                      checkpoint, resume)


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
