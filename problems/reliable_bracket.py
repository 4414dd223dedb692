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
import time

import numpy as np

from topopt import cli
from topopt import fem, reliability as rel
from topopt.cli.script import Option, at_least, open_unit, signals_held
from topopt.io.result import run_record
from topopt.design.interpolation import simp
from topopt.responses.structural import compliance_coefficients
from topopt.optimize.driver import minimize
from topopt.formulations.compliance import ComplianceProblem, plot_record, write_json
from topopt.io.result import RunResult
from topopt.io import check_writable_file, check_writable_folder

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "reliable_bracket")
SIGMA_V, SIGMA_H, PA, K_PENALTY = 0.1, 0.1, 1e-3, 100.0
# the objective in compliance units: c_det (c / c_det + K [(ln pf - ln pa)^+]^2)
OBJECTIVE_NAME = "c + c_det K [(ln pf - ln pa)^+]^2"
DETERMINISTIC = ".deterministic"       # the deterministic phase's checkpoint: PATH's sibling
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
    ``scripts/benchmark_workers.py`` (importable by name in worker processes).

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


class ReliableBracket:
    """Volume + failure penalty, and the tools to evaluate a design's pf."""

    def __init__(self, n: int = 40, rmin: float = 1.5, penal: float = 3.0,
                 method: str = "sorm", solver: str = "auto"):
        if method not in rel.ASYMPTOTIC:
            raise ValueError(f"method must be one of {rel.ASYMPTOTIC}, got {method!r}")
        self.mesh, self.model, self.f0, self.G = setup(n)
        self.compliance = ComplianceProblem(self.model, self.f0, 0.5, rmin, penal=penal,
                                            solver=solver)
        self.system = self.compliance.system
        self.method = method
        self.limit_state = rel.QuadraticLimitState(self.coefficients)
        self.c_allow = None

    def coefficients(self, x):
        """``(c0, b, A)`` of the compliance under ``f0 + G theta`` at design `x`."""
        return compliance_coefficients(self.system, self.compliance.stiffness(x), self.f0,
                                       self.G)

    def ln_pf(self, x, method: str | None = None):
        return rel.ln_pf(self.limit_state, x, self.c_allow, method=method or self.method)

    def responses(self, x, c_det: float, volfrac: float):
        """``(c / c_det + K [(ln pf - ln pa)^+]^2, v / volfrac - 1)``."""
        c = self.compliance.compliance(x) / c_det
        penalty = rel.failure_penalty(self.ln_pf(x), np.log(PA), K_PENALTY)
        return c + penalty, self.compliance.volume(x) / volfrac - 1.0

    def monte_carlo(self, x, samples: int, seed: int):
        return rel.sampling_estimate(self.limit_state, x, self.c_allow, method="mc",
                                     n_samples=samples, seed=seed)

    def importance_sampling(self, x, samples: int, seed: int):
        return rel.sampling_estimate(self.limit_state, x, self.c_allow, method="is",
                                     n_samples=samples, seed=seed)


def _pf_summary(prob: ReliableBracket, x, samples: int, seed: int) -> dict:
    mc = prob.monte_carlo(x, samples, seed)
    out = {"volume": float(prob.compliance.volume(x)),
           "nominal_compliance": float(prob.compliance.compliance(x)),
           "pf_mc": mc.pf, "pf_mc_std": mc.pf_std, "ln_pf_mc": mc.ln_pf,
           "mc_failures": int(mc.n_failures)}
    for method in ("form", "sorm", "ldt-prefactor"):
        out[f"ln_pf_{method}"] = float(prob.ln_pf(x, method))
    return out


def deterministic_checkpoint(path: str) -> str:
    """The deterministic phase's checkpoint beside the reliability phase's `path`.

    Examples
    --------
    >>> deterministic_checkpoint("out/checkpoint.npz")
    'out/checkpoint.deterministic.npz'
    """
    root, ext = os.path.splitext(path)
    return root + DETERMINISTIC + (ext or ".npz")


def phase_checkpoints(checkpoint: str | None, resume: str | None):
    """``(deterministic, reliability)`` pairs ``(checkpoint, resume)`` of the two phases."""
    det_ck = None if checkpoint is None else deterministic_checkpoint(checkpoint)
    if resume is None:
        return (det_ck, None), (checkpoint, None)
    if os.path.splitext(resume)[0].endswith(DETERMINISTIC):
        return (det_ck, resume), (checkpoint, None)
    det_resume = deterministic_checkpoint(resume)
    if not os.path.exists(det_resume):
        raise FileNotFoundError(f"resume: {resume} continues the reliability-based phase, "
                                f"whose deterministic design {det_resume} is missing")
    return (det_ck, det_resume), (checkpoint, resume)


def run(n: int = 40, volfrac: float = 0.3, allow: float = 3.0, method: str = "sorm",
        maxeval: int = 200, samples: int = 10**6, seed: int = 0, out: str | None = None,
        verbose: bool = False, checkpoint: str | None = None,
        resume: str | None = None, solver: str = "auto") -> RunResult:
    """Deterministic and reliability-based designs at one volume; pf of both by MC.

    `checkpoint` and `resume` as in the module docstring. The `RunResult`
    says how the run ended and in which ``phase``; its metrics hold the pf
    summaries ``reliability_based`` and ``deterministic``; ``x`` is the
    reliability-based design, ``result["x_deterministic"]`` the other. A run
    interrupted in the deterministic phase returns (and writes) only that
    phase's record.
    """
    if not 0 < volfrac < 1:
        raise ValueError(f"volfrac must lie in (0, 1), got {volfrac!r}")
    if allow <= 1:
        raise ValueError(f"allow must be > 1 (c_allow / nominal compliance), got {allow!r}")
    if samples < 1000:
        raise ValueError(f"samples must be >= 1000, got {samples!r}")
    if out is not None:
        check_writable_folder(out, "out")                    # before any work
    (det_ck, det_resume), (rel_ck, rel_resume) = phase_checkpoints(checkpoint, resume)
    for path in (det_ck, rel_ck):
        if path is not None:
            check_writable_file(path, "checkpoint")
    t0 = time.perf_counter()
    prob = ReliableBracket(n, method=method, solver=solver)
    det = ComplianceProblem(prob.model, prob.f0, volfrac, 1.5, solver=solver)
    det_result = det.run(maxeval=maxeval, verbose=verbose, checkpoint=det_ck,
                         resume=det_resume)
    if det_result.status == "interrupted":
        return _interrupted_deterministic(out, prob, det_result)
    x_det, c_det = det_result.x, det_result["compliance"]
    prob.c_allow = allow * c_det
    # minimized: c / c_det + K [(ln pf - ln pa)^+]^2; times c_det in compliance units
    res = minimize(lambda x: prob.responses(x, c_det, volfrac), x_det, bounds=(0.0, 1.0),
                   maxeval=maxeval, ftol_rel=1e-8, verbose=verbose, checkpoint=rel_ck,
                   resume=rel_resume, count_solves=lambda: prob.system.counts["factorizations"],
                   objective_scale=c_det, objective_name=OBJECTIVE_NAME)
    x_rel = res.x
    reliable = _pf_summary(prob, x_rel, samples, seed)
    deterministic = _pf_summary(prob, x_det, samples, seed + 1)
    for summary in (reliable, deterministic):
        summary["meets_pa"] = bool(summary["pf_mc"] - 3 * summary["pf_mc_std"] <= PA)
    metrics = {
        "c_allow": prob.c_allow, "pa": PA, "ln_pa": float(np.log(PA)), "K": K_PENALTY,
        "method": method, "sigma_v": SIGMA_V, "sigma_h": SIGMA_H, "samples": samples,
        "volfrac": volfrac, "allow": allow, "n": n,
        "reliability_based": reliable, "deterministic": deterministic,
        "seconds": time.perf_counter() - t0, "phase": "reliability",
        "deterministic_evaluations": det_result.evaluations,
    }
    result = RunResult.from_record(
        run_record(res, rel_ck), metrics, x=x_rel, history=res.history,
        x_phys=np.asarray(prob.compliance.x_phys(x_rel)),
        arrays={"x_reliable": x_rel, "x_deterministic": x_det,
                "x_phys_deterministic": det_result.x_phys})
    if out is not None:
        with signals_held():                     # a signal waits for complete files
            write(out, prob, result)
    return result


def _interrupted_deterministic(out: str | None, prob: ReliableBracket,
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
        from topopt.plot.figures import save_design
        with signals_held():                     # a signal waits for complete files
            save_design(prob.mesh, det_result.x_phys, os.path.join(out, "deterministic.png"),
                        title=f"deterministic, interrupted after {det_result.evaluations} "
                              "evaluations")
            write_json(os.path.join(out, "result.json"), result.summary())
    return result


def write(out: str, prob: ReliableBracket, result: RunResult) -> None:
    """Both designs, the history and the metrics (``result.json``, flat).

    ``design.npz`` / ``design.vtu`` (`topopt.io.save_design`): the
    reliability-based ``x``, ``x_phys`` and its displacement under the nominal
    load, and the deterministic design as ``x_deterministic``,
    ``x_phys_deterministic``.
    """
    from topopt.plot.figures import boundary_markers, save_design, save_history
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
    c_det = result["deterministic"]["nominal_compliance"]
    save_history(result.history, os.path.join(out, "history.png"),
                 title="reliability-based design (from the deterministic one)",
                 objective_label=OBJECTIVE_NAME, constraint_names=names, objective_scale=c_det)
    record = plot_record(result.history, OBJECTIVE_NAME, c_det, names,
                         supports=supports, loads=loads)
    write_json(os.path.join(out, "result.json"), result.metrics | result.record() | record)
    from topopt.io.designs import save_design as keep_design
    setup = {"problem": "reliable_bracket", **{k: result[k] for k in (
        "n", "volfrac", "allow", "method", "samples", "c_allow", "pa", "K", "sigma_v",
        "sigma_h")}, "rmin": prob.compliance.rmin, "penal": prob.compliance.penal,
        "Emin": prob.compliance.Emin}
    keep_design(out, prob.mesh, result.x, result.x_phys, setup,
                point_data=prob.compliance.displacement(result.x_phys),
                cell_data={"x_deterministic": result["x_deterministic"],
                           "x_phys_deterministic": result["x_phys_deterministic"]})


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
