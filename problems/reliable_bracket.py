"""Reliability-based design of a bracket under a load of uncertain size and direction.

A square block ``n x n`` of unit bilinear elements (E0 = 1, Emin = 1e-9,
nu = 0.3, SIMP p = 3, density filter rmin = 1.5) is clamped along its base
and carries a load spread over the middle fifth of its top edge,
``f = f0 + sigma_v theta_1 e_y + sigma_h theta_2 e_x`` with nominal
``f0 = -e_y`` (unit total), ``theta ~ N(0, I_2)``: magnitude scatter
``sigma_v = 0.1`` and a lateral component ``sigma_h = 0.1`` (direction).
It fails when its compliance exceeds ``c_allow``.

* Deterministic design: minimum nominal compliance ``c_det`` at volume
  fraction ``volfrac`` (the top88 chain).
* Reliability-based design at the same volume: minimum ``c / c_det + K
  [(ln pf - ln pa)^+]^2`` with ``K = 100``, ``pa = 1e-3`` and ``pf = P(c(theta)
  >= c_allow)`` by SORM; the compliance is quadratic in ``theta``, so the
  most probable failure point is exact (`topopt.reliability`). MMA starts
  from the deterministic design.

``c_allow = allow * c_det``. Both designs are checked by Monte Carlo
(``--samples`` draws of ``theta``, exact quadratic compliance per draw).
Writes ``results/reliable_bracket/{design.png, deterministic.png,
history.png, result.json}`` and both designs (`topopt.io`: ``design.npz``,
``design.vtu``).

The two optimizations checkpoint to ``OUT/checkpoint.deterministic.npz``
and ``OUT/checkpoint.npz`` (``--checkpoint PATH``: PATH and its
``.deterministic`` sibling). ``--resume`` takes either: the deterministic
one continues that phase, then runs the reliability-based one; the other
takes the (finished) deterministic design from its sibling and continues
the reliability-based phase. Resume with the options of the interrupted run.

    python problems/reliable_bracket.py [--n 40] [--method sorm] [--maxeval 200] [--seed 0]
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem, reliability as rel
from topopt.cli import Option, at_least, open_unit
from topopt.design.interpolation import simp
from topopt.formulations.reliable import ReliableCompliance, phase_checkpoints
from topopt.formulations.reliable_run import run_reliable
from topopt.io.result import RunResult
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "reliable_bracket")
SIGMA_V, SIGMA_H, PA, K_PENALTY = 0.1, 0.1, 1e-3, 100.0
OPTIONS = (
    Option("n", at_least(4, int, even=True), 40, "elements per side"),
    Option("volfrac", open_unit, 0.3, "volume fraction"),
    Option("allow", at_least(1.0, strict=True), 3.0,
           "c_allow / nominal compliance of the deterministic design"),
    Option("method", str, "sorm", "asymptotic pf of the penalty", choices=rel.ASYMPTOTIC),
    Option("samples", at_least(1000, int), 10**6, "Monte Carlo draws"),
)


def setup(n: int = 40):
    """Mesh, model clamped at the base, nominal load and its random directions ``G``."""
    if not isinstance(n, (int, np.integer)) or n < 4 or n % 2:
        raise ValueError(f"n must be an even integer >= 4, got {n!r}")
    mesh = fem.rectangle(n, n)
    model = fem.elasticity(mesh, nu=0.3).fix(nodes=lambda x: np.isclose(x[1], 0.0))
    half = max(1, n // 10)
    patch = lambda x: np.isclose(x[1], n) & (np.abs(x[0] - n / 2) <= half)     # noqa: E731
    width = 2 * half
    f0 = model.traction(patch, (0.0, -1.0 / width))                    # unit total load
    G = np.stack([SIGMA_V * model.traction(patch, (0.0, -1.0 / width)),
                  SIGMA_H * model.traction(patch, (1.0 / width, 0.0))], axis=1)
    return mesh, model, f0, G


def moduli_limit_state(n: int, sigma_e: float) -> rel.LimitState:
    """The bracket's nominal compliance with lognormal quadrant moduli, ``F(theta, x)``.

    ``F = f^T K(E)^{-1} f`` with ``E_e = simp(x_e) exp(sigma_e theta_zone(e))``,
    one standard normal ``theta`` per quadrant (m = 4): one factorization and
    solve per sample. The sampling workload of `topopt.parallel`'s tests and
    ``scripts/benchmarks/benchmark_workers.py`` (importable by name in worker processes).

    Examples
    --------
    >>> ls = moduli_limit_state(8, 0.2)
    >>> ls.m, bool(ls(np.zeros(4), np.ones(64)) > 0)
    (4, True)
    """
    mesh, model, f0, _ = setup(n)
    system = model.system("auto")
    centre = mesh.p[:, mesh.t].mean(axis=1)
    zones = (centre[0] > n / 2).astype(int) + 2 * (centre[1] > n / 2).astype(int)

    def compliance(theta, x):
        E = simp(x, 3.0, 1e-9) * np.exp(sigma_e * theta[zones])
        return f0 @ fem.solve(system, E, f0)
    return rel.LimitState(compliance, m=4)


def ReliableBracket(n: int = 40, rmin: float = 1.5, penal: float = 3.0,     # noqa: N802
                    method: str = "sorm", solver: str = "auto") -> ReliableCompliance:
    """The bracket's volume + failure penalty (`ReliableCompliance`)."""
    return ReliableCompliance(*setup(n), PA, K_PENALTY, rmin, penal, method, solver)


@keywords
def run(n: int = 40, volfrac: float = 0.3, allow: float = 3.0, method: str = "sorm",
        maxeval: int = 200, samples: int = 10**6, seed: int = 0, out: str | None = None,
        verbose: bool = False, checkpoint: str | None = None,
        resume: str | None = None, solver: str = "auto") -> RunResult:
    """Deterministic and reliability-based designs at one volume; pf of both by MC
    (`run_reliable`; `checkpoint` and `resume` as in the module docstring)."""
    return run_reliable(lambda: ReliableBracket(n, method=method, solver=solver), volfrac,
                        allow, maxeval, samples, seed, out, verbose, checkpoint, resume,
                        solver, about={"sigma_v": SIGMA_V, "sigma_h": SIGMA_H, "n": n})


def summary(result: RunResult) -> str:
    """The lines the script prints after its run."""
    r, d = result["reliability_based"], result["deterministic"]
    return (f"reliability-based: V = {r['volume']:.4f}, pf(MC) = {r['pf_mc']:.2e} "
            f"+- {r['pf_mc_std']:.1e} (pa = {PA:.0e}), ln pf SORM {r['ln_pf_sorm']:.3f} "
            f"vs MC {r['ln_pf_mc']:.3f}\n"
            f"deterministic:     V = {d['volume']:.4f}, pf(MC) = {d['pf_mc']:.2e} "
            f"+- {d['pf_mc_std']:.1e}; nominal compliance {d['nominal_compliance']:.3f} vs "
            f"{r['nominal_compliance']:.3f}")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=200, seed=0,
                    maxeval_help="MMA evaluations of each design (the deterministic one, then "
                                 "the reliability-based one: up to 2 N in all)",
                    solvers=cli.DIRECT_SOLVERS, summary=summary,
                    check=lambda kw: phase_checkpoints(kw["checkpoint"], kw["resume"]),
                    size=lambda kw: cli.grid_dofs({"nelx": kw["n"], "nely": kw["n"]}))


if __name__ == "__main__":
    main()
