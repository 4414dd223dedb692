"""Asymptotic estimates of ``ln pf`` from the MPP, and the derivatives of each.

LDT ``-beta^2/2``, FORM ``ln Phi(-beta)``, SORM (Breitung 1984; Hohenbichler
& Rackwitz 1988; Tvedt 1988, see `curvature`) and the LDT prefactor (Tong,
Vanden-Eijnden & Stadler 2021) at each local MPP, added by logsumexp; ``on_failure="bound"`` gives the documented bounds of
`ReliabilityResult`. `_cotangents` gives ``d ln pf/dz`` and ``d ln pf/dq`` by
the envelope theorem plus, for the curvature factor, the KKT adjoint (see the
package docstring); `ln_pf`'s rules call it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.special as sp

from .. import ad
from .base import ASYMPTOTIC, CURVED, LN_PF_FLOOR, METHODS, MPPError, ReliabilityError
from .curvature import SORM_VARIANTS, _defined, _log_factor
from .curvature import _curvature_term as _sorm_term
from .limit_state import LimitState, _float_like, _tangent_basis
from .mpp import MPPResult, _solve_mpp

__all__ = ["ReliabilityResult"]

_HALF_LN_2PI = 0.5 * np.log(2 * np.pi)


@dataclass
class ReliabilityResult:
    """A failure-probability estimate.

    Attributes
    ----------
    method : str
    ln_pf, pf : float
        The estimate (``pf = exp(ln_pf)``; ``ln_pf`` may be ``-inf`` for a
        sampling estimate without failures, never NaN).
    beta, mpp, multiplier, curvatures
        MPP data (asymptotic methods, and the IS centre).
    ln_pf_std, pf_std : float or None
        Standard errors (sampling methods; ``ln_pf_std`` by the delta method).
    n_samples, n_failures : int or None
    converged : bool
        False when `bound` was returned instead of an estimate.
    bound : str or None
        ``None``, or which documented bound ``on_failure="bound"`` returned:
        ``"unreachable"`` (``LN_PF_FLOOR``), ``"best_feasible"`` (the
        method's formula at the feasible point of smallest norm found:
        ``beta`` there is an upper bound on the true ``beta``),
        ``"trivial"`` (``ln pf <= 0``) or ``"form"`` (FORM where the
        curvature factor is undefined).
    n_mpp : int
        Number of local MPPs whose contributions were added (see
        `QuadraticLimitState`, and ``n_starts`` of `find_mpp`).
    alpha : ndarray or None
        Unit direction of the MPP, ``theta* / beta`` (``-grad g/|grad g|`` in
        the ``g <= 0`` convention); the importance factors are ``alpha**2``
        (they sum to 1).
    design_point : ndarray or None
        The MPP in the physical variables, ``x* = T(theta*)`` for a
        `TransformedLimitState` (``theta*`` itself otherwise).
    """

    method: str
    ln_pf: float
    pf: float
    beta: float | None = None
    mpp: np.ndarray | None = None
    multiplier: float | None = None
    curvatures: np.ndarray | None = None
    ln_pf_std: float | None = None
    pf_std: float | None = None
    n_samples: int | None = None
    n_failures: int | None = None
    converged: bool = True
    bound: str | None = None
    n_mpp: int = 1
    alpha: np.ndarray | None = None
    design_point: np.ndarray | None = None
    mpp_result: MPPResult | None = field(default=None, repr=False)
    info: dict = field(default_factory=dict, repr=False)
    log_terms: np.ndarray | None = field(default=None, repr=False)


def _dlnpf_dbeta(method: str, beta: float) -> float:
    if method == "ldt":
        return -max(beta, 0.0)
    if method == "form" or method in SORM_VARIANTS:
        return -float(np.exp(-0.5 * beta * beta - _HALF_LN_2PI - sp.log_ndtr(-beta)))
    if method == "ldt-prefactor":
        return -1.0 / beta - beta
    raise ValueError(method)


def _base_ln_pf(method: str, beta: float) -> float:
    if method == "ldt":
        return -0.5 * max(beta, 0.0) ** 2
    if method == "form" or method in SORM_VARIANTS:
        return float(sp.log_ndtr(-beta))
    return float(-_HALF_LN_2PI - np.log(beta) - 0.5 * beta * beta)


def _point_estimate(ls, q, z, mpp: MPPResult, method: str, on_failure: str) -> dict:
    """One MPP's contribution: ``ln pf`` and what its pullback needs."""
    theta, lam, beta, g = mpp.theta, mpp.multiplier, mpp.beta, mpp.grad
    gn = float(np.linalg.norm(g))
    pt = dict(grad_method=method, theta=theta, multiplier=lam, beta=beta, grad=g,
              grad_norm=gn, hessian=mpp.hessian, curvatures=None, bound=None)
    if method == "ldt-prefactor" and not beta > 0:
        err = MPPError("origin_fails", "the LDT prefactor needs beta > 0; here F(0) >= z",
                       dict(beta=beta, z=z))
        if on_failure == "raise":
            raise err
        pt.update(grad_method="form", bound="form")
    if method in SORM_VARIANTS and not beta > 0:
        # The origin fails: the curvature factor with beta < 0 would describe the
        # safe set, not the failure set, and can give a tiny pf for a design
        # that fails almost surely. FORM's Phi(-beta) >= 1/2 is used instead.
        pt.update(grad_method="form", bound="form")
    ln = _base_ln_pf(pt["grad_method"], beta)
    if pt["grad_method"] in CURVED:
        ln += _curvature_correction(ls, q, mpp, pt, on_failure)
    pt["ln_pf"] = float(ln)
    return pt


def _curvature_correction(ls, q, mpp: MPPResult, pt: dict, on_failure: str) -> float:
    """``ln pf - base`` of a curved method at one MPP (``pt`` updated in place)."""
    theta, lam, g, gn = mpp.theta, mpp.multiplier, mpp.grad, pt["grad_norm"]
    H = mpp.hessian if mpp.hessian is not None else np.asarray(ls.hessian(theta, *q), float)
    mpp.hessian = pt["hessian"] = H
    if theta.size > 1 and gn > 0:
        T = _tangent_basis(g / gn)
        red = T.T @ H @ T
        mu = np.linalg.eigvalsh(0.5 * (red + red.T))
    else:
        mu = np.zeros(0)
    pt["curvatures"] = kappa = -mu / gn if gn > 0 else mu
    variant = SORM_VARIANTS.get(pt["grad_method"], "breitung")
    beta = lam * gn                    # = |theta*| at the MPP (beta > 0 here)
    if variant == "breitung":
        ok = bool(np.all(1.0 - lam * mu > 1e-12))
    else:
        ok = _defined(variant, beta, kappa)
    if not ok:
        err = MPPError("sorm_singular", f"the {variant} curvature factor is undefined "
                       "(1 + beta kappa_i <= 0: the MPP is not an isolated minimum, or "
                       "the formula's range is left)",
                       dict(beta=pt["beta"], curvatures=kappa))
        if on_failure == "raise":
            raise err
        pt.update(grad_method="form", bound="form")
        return 0.0
    if variant == "breitung":        # also the LDT prefactor's det(I - lam P H P)^(-1/2)
        return -0.5 * float(np.sum(np.log(1.0 - lam * mu)))
    return float(_log_factor(variant, beta, kappa))


def _asymptotic(ls: LimitState, q: tuple, z: float, method: str, on_failure: str,
                opts: dict) -> ReliabilityResult:
    """The estimate, with what its pullback needs in ``info["points"]``."""
    if method not in ASYMPTOTIC:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if on_failure not in ("raise", "bound"):
        raise ValueError(f"on_failure must be 'raise' or 'bound', not {on_failure!r}")
    try:
        mpp = _solve_mpp(ls, q, z, opts)
    except MPPError as err:
        if on_failure == "raise":
            raise
        return _bound_result(ls, q, z, method, err)
    points = [_point_estimate(ls, q, z, mpp, method, on_failure)]
    dropped = []
    for other in (mpp.others if method != "ldt" else []):
        try:
            points.append(_point_estimate(ls, q, z, other, method, "raise"))
        except MPPError as err:
            dropped.append(str(err))
    lns = np.array([pt["ln_pf"] for pt in points])
    top = np.max(lns)
    ln = float(top + np.log(np.sum(np.exp(lns - top))))
    capped = ln > 0.0          # the series bound min(1, sum): where the origin fails
    ln = min(ln, 0.0)          # several MPPs count it; pf = 1, flat in the design
    for pt in points:
        pt["weight"] = 0.0 if capped else float(np.exp(pt["ln_pf"] - ln))
    main = points[0]
    result = ReliabilityResult(method, ln, float(np.exp(ln)), beta=mpp.beta, mpp=mpp.theta,
                               multiplier=mpp.multiplier, curvatures=main["curvatures"],
                               converged=main["bound"] is None, bound=main["bound"],
                               n_mpp=len(points), mpp_result=mpp)
    result.info["points"] = points
    _mpp_summary(ls, result)
    if dropped:
        result.info["dropped"] = dropped
    if capped:
        result.info["capped"] = True
    return result


def _mpp_summary(ls: LimitState, result: ReliabilityResult) -> None:
    """``alpha`` and the physical ``design_point`` of `result`'s MPP."""
    if result.mpp is None:
        return
    beta = float(np.linalg.norm(result.mpp))
    if beta > 0:
        result.alpha = result.mpp / (beta if (result.beta or 0.0) >= 0 else -beta)
    result.design_point = ls.physical(result.mpp)


def _bound_result(ls, q, z, method, err: MPPError) -> ReliabilityResult:
    if err.reason == "unreachable":
        return ReliabilityResult(method, LN_PF_FLOOR, float(np.exp(LN_PF_FLOOR)),
                                 converged=False, bound="unreachable",
                                 info=dict(points=[], error=str(err)))
    best = err.best_feasible
    if best is None:
        return ReliabilityResult(method, 0.0, 1.0, converged=False, bound="trivial",
                                 info=dict(points=[], error=str(err)))
    F, g = ls.value_and_gradient(best, *q)
    gn = float(np.linalg.norm(g))
    beta = float(np.linalg.norm(best))
    gm = "ldt" if method == "ldt" else "form"
    ln = _base_ln_pf(gm, beta)
    lam = beta / gn if gn > 0 else 0.0
    points = [dict(grad_method=gm, theta=best, multiplier=lam, beta=beta, grad=g,
                   grad_norm=gn, hessian=None, ln_pf=ln, weight=1.0)] if gn > 0 else []
    return ReliabilityResult(method, ln, float(np.exp(ln)), beta=beta, mpp=best,
                             multiplier=lam, converged=False, bound="best_feasible",
                             info=dict(points=points, error=str(err)))


def _curvature_term(ls: LimitState, theta, lam, *q):
    """``G = -1/2 ln det(I - lam P H P)``, traceable in theta, lam and q (Breitung)."""
    return _sorm_term(ls, "breitung", theta, lam, *q)


def _point_cotangents(ls: LimitState, q: tuple, idx: list, pt: dict):
    """``(d ln pf_j/dz, [d ln pf_j/dq_i])`` of one MPP's contribution."""
    gm = pt["grad_method"]
    theta, lam, beta, gn = pt["theta"], pt["multiplier"], pt["beta"], pt["grad_norm"]
    if not gn > 0:
        raise ReliabilityError("ln pf is not differentiable here: grad_theta F = 0 at the "
                               "MPP (the origin lies on a critical point of F = z)")
    cF = -_dlnpf_dbeta(gm, beta) / gn          # d/dq = cF dF/dq, d/dz = -cF
    w1, w2 = None, 0.0
    qbar: list = [None] * len(q)
    if gm in CURVED:
        variant = SORM_VARIANTS.get(gm, "breitung")
        argnums = (0, 1) + tuple(2 + i for i in idx)
        grads = ad.gradient(lambda t, la, *qq: _sorm_term(ls, variant, t, la, *qq),
                            theta, float(lam), *q, argnums=argnums)
        Gt, Gl = np.asarray(grads[0], float), float(grads[1])
        for k, i in enumerate(idx):
            qbar[i] = grads[2 + k]
        H, g = pt["hessian"], pt["grad"]
        m = theta.size
        J = np.block([[np.eye(m) - lam * H, -g[:, None]], [g[None, :], np.zeros((1, 1))]])
        w = np.linalg.solve(J.T, np.concatenate([Gt, [Gl]]))
        w1, w2 = w[:m], float(w[m])
    coef = cF - w2
    if idx:
        def S(*qq):
            val = coef * ls.value(theta, *qq)
            if w1 is not None:
                val = val + lam * (w1 @ ls.gradient(theta, *qq))
            return val
        Sq = ad.gradient(S, *q, argnums=tuple(idx))
        for k, i in enumerate(idx):
            qbar[i] = Sq[k] if qbar[i] is None else Sq[k] + qbar[i]
    return -coef, qbar


def _cotangents(ls: LimitState, q: tuple, result: ReliabilityResult):
    """``(d ln pf/dz, [d ln pf/dq_i])``: the weighted sum over the MPPs."""
    idx = [i for i, x in enumerate(q) if _float_like(x)]
    zbar = 0.0
    qbar: list = [None] * len(q)
    for i in idx:
        qbar[i] = np.zeros(np.shape(q[i])) if np.ndim(q[i]) else 0.0
    for pt in result.info["points"]:
        zj, qj = _point_cotangents(ls, q, idx, pt)
        zbar = zbar + pt["weight"] * zj
        for i in idx:
            qbar[i] = qbar[i] + pt["weight"] * qj[i]
    return zbar, qbar
