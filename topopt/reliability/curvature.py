r"""SORM curvature corrections: Breitung, Hohenbichler and Tvedt.

At an MPP with ``beta > 0`` and principal curvatures ``kappa_i`` (``i < m``,
positive when the surface bends away from the origin) the second-order
estimates are ``pf = Phi(-beta) exp(L)`` with

Breitung (1984)
    ``L = -1/2 sum ln(1 + beta kappa_i)``.
Hohenbichler & Rackwitz (1988); Hohenbichler et al. (1987)
    ``L = -1/2 sum ln(1 + psi kappa_i)``, ``psi = phi(beta)/Phi(-beta)`` (the
    inverse Mills ratio, ``> beta``).
Tvedt (1988, 1990), the three-term formula
    ``pf = A1 + A2 + A3`` with ``A1 = Phi(-beta) P(beta)``,
    ``A2 = [beta Phi(-beta) - phi(beta)] [P(beta) - P(beta + 1)]``,
    ``A3 = (beta + 1) [beta Phi(-beta) - phi(beta)] [P(beta) - Re P(beta + i)]``,
    ``P(c) = prod (1 + c kappa_i)^(-1/2)`` (principal roots). Written as
    ``exp(L) = P(beta) + (beta - psi)(P(beta) - P(beta + 1)) + (1 + beta)(beta -
    psi)(P(beta) - Re P(beta + i))`` so that ``Phi(-beta)`` is factored out,
    with ``Re P(beta + i) = prod ((1 + beta kappa)^2 + kappa^2)^(-1/4) cos(1/2
    sum atan(kappa/(1 + beta kappa)))``.

`_log_factor` evaluates ``L`` on plain or traced values (the same numpy code);
`_curvature_term` is ``L`` as a function of ``(theta, lam, q)`` at the MPP, with
the curvatures from ``ad.eigh`` of ``P H P`` (one zero eigenvalue along the
normal, which adds nothing), for the KKT adjoint of the pullback.
"""

from __future__ import annotations

import numpy as np
import scipy.special as sp

from .. import ad
from .base import ReliabilityError

__all__ = ["SORM_VARIANTS"]

#: method name -> formula
SORM_VARIANTS = {"sorm": "breitung", "sorm-hohenbichler": "hohenbichler",
                 "sorm-tvedt": "tvedt"}
_HALF_LN_2PI = 0.5 * np.log(2 * np.pi)


def _psi(beta):
    """Inverse Mills ratio ``phi(beta)/Phi(-beta)`` in log space."""
    return np.exp(-0.5 * beta * beta - _HALF_LN_2PI - sp.log_ndtr(-beta))


def _log_factor(variant: str, beta, kappa):
    """``L = ln(pf / Phi(-beta))`` of `variant` for curvatures `kappa` (plain or traced).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.reliability.curvature import _log_factor
    >>> k = np.full(9, 0.1)
    >>> round(float(_log_factor("breitung", 3.0, k)), 6)     # -9/2 ln 1.3
    -1.180639
    >>> [abs(float(_log_factor(v, 3.0, 0 * k))) < 1e-15 for v in ("hohenbichler", "tvedt")]
    [True, True]
    """
    if variant == "breitung":
        return -0.5 * np.sum(np.log1p(beta * kappa))
    psi = _psi(beta)
    if variant == "hohenbichler":
        return -0.5 * np.sum(np.log1p(psi * kappa))
    if variant != "tvedt":
        raise ValueError(f"unknown SORM variant {variant!r}; choose one of "
                         f"{sorted(set(SORM_VARIANTS.values()))}")
    a = 1.0 + beta * kappa
    p_b = np.exp(-0.5 * np.sum(np.log(a)))
    p_b1 = np.exp(-0.5 * np.sum(np.log(a + kappa)))
    re_pc = np.exp(-0.25 * np.sum(np.log(a * a + kappa * kappa))) \
        * np.cos(0.5 * np.sum(np.arctan(kappa / a)))
    bracket = p_b + (beta - psi) * (p_b - p_b1) + (1.0 + beta) * (beta - psi) * (p_b - re_pc)
    return np.log(bracket)


def _defined(variant: str, beta: float, kappa: np.ndarray) -> bool:
    """Whether `variant`'s formula is defined (every root argument > 0, pf > 0)."""
    kappa = np.asarray(kappa, float)
    if variant == "breitung":
        return bool(np.all(1 + beta * kappa > 1e-12))
    if variant == "hohenbichler":
        return bool(np.all(1 + float(_psi(beta)) * kappa > 1e-12))
    ok = np.all(1 + beta * kappa > 1e-12) and np.all(1 + (beta + 1) * kappa > 1e-12)
    if not ok:
        return False
    with np.errstate(invalid="ignore", divide="ignore"):
        return bool(np.isfinite(_log_factor("tvedt", beta, kappa)))


def _curvature_term(ls, variant: str, theta, lam, *q):
    """``L`` at ``(theta, lam)``, traceable in theta, lam and q.

    Breitung (and the LDT prefactor) use ``-1/2 ln det(I - lam P H P)``,
    which equals ``-1/2 sum ln(1 + beta kappa_i)`` at an MPP; Hohenbichler
    and Tvedt take ``kappa = -eig(P H P)/|grad F|`` and ``beta = |theta|``.
    """
    g = ls.gradient(theta, *q)
    H = ls.hessian(theta, *q)
    m = np.shape(g)[0]
    gn = np.linalg.norm(g)
    n = g / gn
    P = np.eye(m) - np.outer(n, n)
    if variant == "breitung":
        M = np.eye(m) - lam * (P @ (H @ P))
        sign, logabsdet = np.linalg.slogdet(M)
        if not ad.value(sign) > 0:
            raise ReliabilityError("det(I - lam P H P) <= 0 at the MPP")
        return -0.5 * logabsdet
    mu, _ = ad.eigh(P @ (H @ P))
    kappa = -mu / gn
    beta = np.sqrt(theta @ theta)
    if not _defined(variant, float(ad.value(beta)), np.asarray(ad.value(kappa), float)):
        raise ReliabilityError(f"the {variant} factor is undefined at the MPP")
    return _log_factor(variant, beta, kappa)
