"""Reliability-based compliance: ``c / c_det + K [(ln pf - ln pa)^+]^2`` under a random load.

The load is ``f = f0 + G theta``, ``theta ~ N(0, I)``; a design fails when its
compliance exceeds ``c_allow``. The compliance is quadratic in ``theta``, so
the most probable failure point is exact (`topopt.reliability`), and the
penalty (`topopt.reliability.failure_penalty`) of the asymptotic ``ln pf``
drives the design from the deterministic one towards ``pf <= pa``.
"""

from __future__ import annotations

import numpy as np

from ..responses.structural import compliance_coefficients
from .compliance import ComplianceProblem
from .run_template import phase_checkpoint, phase_paths


def _rel():
    """`topopt.reliability`, imported on first use (``import topopt`` stays light)."""
    from .. import reliability
    return reliability

__all__ = ["ReliableCompliance", "pf_summary", "deterministic_checkpoint",
           "phase_checkpoints"]

#: The deterministic phase: its checkpoint is a sibling of the reliability phase's.
DETERMINISTIC = "deterministic"


class ReliableCompliance:
    """Compliance + failure penalty of the load ``f0 + G theta``, and a design's pf.

    Parameters
    ----------
    mesh, model, f0, G
        The mesh, the supported model, the nominal load and its random
        directions (one column per standard normal ``theta_i``).
    pa, K : float
        The allowed failure probability and the penalty's weight.
    rmin, penal : float
        Density filter radius and SIMP exponent.
    method : str
        Asymptotic ``pf`` of the penalty (`topopt.reliability.ASYMPTOTIC`).

    Examples
    --------
    >>> from topopt import fem
    >>> mesh = fem.rectangle(4, 4)
    >>> model = fem.elasticity(mesh).fix(nodes=lambda x: np.isclose(x[1], 0.0))
    >>> f0 = model.point_load((2.0, 4.0), (0.0, -1.0))
    >>> G = 0.1 * np.stack([f0, model.point_load((2.0, 4.0), (1.0, 0.0))], axis=1)
    >>> prob = ReliableCompliance(mesh, model, f0, G, pa=1e-3, K=100.0)
    >>> prob.c_allow = 3 * float(prob.compliance.compliance(np.full(16, 0.5)))
    >>> bool(prob.ln_pf(np.full(16, 0.5)) < 0)
    True
    """

    def __init__(self, mesh, model, f0, G, pa: float, K: float, rmin: float = 1.5,
                 penal: float = 3.0, method: str = "sorm", solver: str = "auto"):
        if method not in _rel().ASYMPTOTIC:
            raise ValueError(f"method must be one of {_rel().ASYMPTOTIC}, got {method!r}")
        self.mesh, self.model, self.f0, self.G = mesh, model, f0, G
        self.pa, self.K = pa, K
        self.compliance = ComplianceProblem(self.model, self.f0, 0.5, rmin, penal=penal,
                                            solver=solver)
        self.system = self.compliance.system
        self.method = method
        self.limit_state = _rel().QuadraticLimitState(self.coefficients)
        self.c_allow = None

    def coefficients(self, x):
        """``(c0, b, A)`` of the compliance under ``f0 + G theta`` at design `x`."""
        return compliance_coefficients(self.system, self.compliance.stiffness(x), self.f0,
                                       self.G)

    def ln_pf(self, x, method: str | None = None):
        return _rel().ln_pf(self.limit_state, x, self.c_allow, method=method or self.method)

    def responses(self, x, c_det: float, volfrac: float):
        """``(c / c_det + K [(ln pf - ln pa)^+]^2, v / volfrac - 1)``."""
        c = self.compliance.compliance(x) / c_det
        penalty = _rel().failure_penalty(self.ln_pf(x), np.log(self.pa), self.K)
        return c + penalty, self.compliance.volume(x) / volfrac - 1.0

    def monte_carlo(self, x, samples: int, seed: int):
        return _rel().sampling_estimate(self.limit_state, x, self.c_allow, method="mc",
                                     n_samples=samples, seed=seed)

    def importance_sampling(self, x, samples: int, seed: int):
        return _rel().sampling_estimate(self.limit_state, x, self.c_allow, method="is",
                                     n_samples=samples, seed=seed)


def pf_summary(prob: ReliableCompliance, x, samples: int, seed: int) -> dict:
    """Volume, nominal compliance, Monte Carlo pf and the asymptotic ``ln pf`` of `x`."""
    mc = prob.monte_carlo(x, samples, seed)
    out = {"volume": float(prob.compliance.volume(x)),
           "nominal_compliance": float(prob.compliance.compliance(x)),
           "pf_mc": mc.pf, "pf_mc_std": mc.pf_std, "ln_pf_mc": mc.ln_pf,
           "mc_failures": int(mc.n_failures)}
    for method in ("form", "sorm", "ldt-prefactor"):
        out[f"ln_pf_{method}"] = float(prob.ln_pf(x, method))
    out["meets_pa"] = bool(out["pf_mc"] - 3 * out["pf_mc_std"] <= prob.pa)
    return out


def deterministic_checkpoint(path: str) -> str:
    """The deterministic phase's checkpoint beside the reliability phase's `path`.

    Examples
    --------
    >>> deterministic_checkpoint("out/checkpoint.npz")
    'out/checkpoint.deterministic.npz'
    """
    return phase_checkpoint(path, DETERMINISTIC)


def phase_checkpoints(checkpoint: str | None, resume: str | None):
    """``(deterministic, reliability)`` pairs ``(checkpoint, resume)`` of the two phases
    (`topopt.formulations.run_template.phase_paths`).

    Examples
    --------
    >>> phase_checkpoints("ck.npz", None)
    (('ck.deterministic.npz', None), ('ck.npz', None))
    """
    return tuple(phase_paths(checkpoint, resume, (DETERMINISTIC, "reliability")))
