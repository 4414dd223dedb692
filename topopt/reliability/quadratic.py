"""The quadratic limit state ``c0 + 2 b.theta + theta.A.theta`` and its exact MPPs.

Compliance under Gaussian loads has this form. Its MPPs are roots of the
secular equation ``phi`` of the KKT path (see `QuadraticLimitState`), found by
bracketed 1-D root finds: the global MPP, the local non-global one, the "hard
case" ``b~_top = 0`` and the concave case ``max(a) <= 0``.
"""

from __future__ import annotations

import numpy as np

from .. import ad
from .._validate import check_finite_values
from .base import MPPError
from .limit_state import LimitState, _tangent_basis

__all__ = ["QuadraticLimitState"]


class QuadraticLimitState(LimitState):
    r"""``F(theta) = c0 + 2 b^T theta + theta^T A theta`` with exact MPP.

    The compliance ``f^T K^{-1} f`` under loads ``f = f0 + G theta`` has this
    form with ``c0 = f0^T K^{-1} f0``, ``b = G^T K^{-1} f0``, ``A = G^T K^{-1}
    G``. Each coefficient may be a constant or a function of the design
    written with `topopt.ad`-traceable numpy; or pass one function ``design
    -> (c0, b, A)`` as `c0` (then `b` and `A` are left out), which lets the
    coefficients share the factorization of ``K``.

    The MPP is exact: with ``A = Q diag(a) Q^T`` and ``b~ = Q^T b``, the KKT
    condition ``theta = lam grad F = 2 lam (b + A theta)`` gives
    ``theta~_i(s) = s b~_i / (1 - s a_i)`` with ``s = 2 lam``, and
    ``phi(s) = F(theta(s)) - z = c0 - z + sum_i b~_i^2 s (2 - s a_i) /
    (1 - s a_i)^2`` has ``phi'(s) = 2 sum_i b~_i^2 / (1 - s a_i)^3 > 0`` on
    ``0 <= s < 1/max(a)``, where ``I - lam H = I - s A`` is positive definite
    (global optimality, as for a trust-region subproblem). So the MPP is the
    unique root of ``phi`` there, found by a bracketed 1-D root find in
    ``sigma = 1 - s a_1`` (``a_1 = max(a)``), which keeps the pole at
    ``s = 1/a_1`` resolved. With a simple top eigenvalue there may be one more
    local minimiser (the "local non-global" one of the trust-region
    subproblem, Martinez 1994) with ``1/a_1 < s < 1/a_2``; it is found by a
    scan of ``phi`` there and kept when ``I - s A`` is positive definite on
    its tangent plane. In the "hard case" ``b~_top = 0`` (e.g. ``b = 0``:
    zero-mean loads) ``s = 1/a_1`` and the two MPPs are mirror images ``+-t``
    along the top eigenvector. FORM, SORM and the LDT prefactor add the
    contributions of all local MPPs (``ln pf = logsumexp``), which keeps the
    estimate continuous as ``b~_top -> 0``; LDT uses the global one. ``F(0)
    >= z`` is solved as the mirrored problem ``(-F, -z)`` (nearest point of
    ``F = z``, ``beta < 0``).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import reliability as rel
    >>> ls = rel.QuadraticLimitState(0.0, np.array([0.5, 0.0]), np.diag([0.0, -0.05]))
    >>> r = rel.failure_probability(ls, None, 3.0, method="sorm")
    >>> round(r.beta, 6), np.round(r.curvatures, 6)
    (3.0, array([0.1]))
    """

    def __init__(self, c0, b=None, A=None):
        if b is None and A is None:
            if not callable(c0):
                raise TypeError("QuadraticLimitState(fun) needs a function design -> (c0, b, A)")
            self._coefficients = c0
        elif b is None or A is None:
            raise TypeError("QuadraticLimitState needs both b and A (or one function "
                            "design -> (c0, b, A) as c0)")
        else:
            parts = (c0, b, A)
            self._coefficients = lambda design: tuple(
                p(design) if callable(p) else p for p in parts)
        super().__init__(self._quadratic, m=None, batch=True)
        if b is not None and not any(callable(p) for p in (c0, b, A)):
            self.params(None)                        # constant coefficients: checked now

    @staticmethod
    def _quadratic(theta, c0, b, A):
        return c0 + 2 * (theta @ b) + np.sum((theta @ A) * theta, axis=-1)

    def params(self, design) -> tuple:
        c0, b, A = self._coefficients(design)
        shapes = [np.shape(ad.value(x)) for x in (c0, b, A)]
        if shapes[0] != () or len(shapes[1]) != 1 or shapes[2] != shapes[1] * 2 \
                or shapes[1] == (0,):
            raise ValueError(f"QuadraticLimitState needs a scalar c0, b of shape (m,) and A "
                             f"of shape (m, m), m >= 1; got shapes {shapes}")
        for name, x in (("c0", c0), ("b", b), ("A", A)):
            if np.asarray(ad.value(x)).dtype.kind not in "iuf":
                raise TypeError(f"QuadraticLimitState's {name} must be real, got dtype "
                                f"{np.asarray(ad.value(x)).dtype}")
            check_finite_values(name, x, f"the coefficient {name} must be finite")
        if self.m is not None and self.m != shapes[1][0]:
            raise ValueError(f"m={self.m} contradicts the coefficients: b has "
                             f"{shapes[1][0]} entries")
        return (c0, b, A)

    def value(self, theta, c0, b, A):
        return self._quadratic(theta, c0, b, A)

    def gradient(self, theta, c0, b, A):
        return 2 * b + (A + A.T) @ theta

    def hessian(self, theta, c0, b, A):
        return A + A.T

    def dimension(self, q) -> int:
        return int(np.shape(ad.value(q[1]))[0])

    def exact_mpp(self, q, z):
        c0, b, A = (np.asarray(x, float) for x in q)
        return _quadratic_mpp(float(c0), b, 0.5 * (A + A.T), float(z))


def _brentq(f, lo, hi, *args):
    """The root of `f` in ``[lo, hi]`` to round-off (``rtol = 4 eps``)."""
    import scipy.optimize  # on first use: keeps the import light
    return scipy.optimize.brentq(f, lo, hi, args=args, xtol=1e-300,
                                 rtol=4 * np.finfo(float).eps, maxiter=500)


class _Secular:
    """The KKT path of a quadratic limit state in the eigenbasis of ``A``.

    ``theta~_i(s) = s b~_i / (1 - s a_i)``, ``s = 2 lam``, in the variable
    ``sigma = 1 - s a_1`` (``a`` sorted descending, ``a_1 > 0``), with
    ``phi(sigma) = F(theta(sigma)) - z``. ``keep`` (a mask) restricts both to
    some eigen-directions (the hard case drops the top ones).
    """

    def __init__(self, g0: float, a: np.ndarray, bt: np.ndarray, Q: np.ndarray):
        self.g0, self.a, self.bt, self.Q = g0, a, bt, Q
        self.a1 = float(a[0])
        self.top = a >= self.a1 * (1.0 - 1e-12)
        self.rest = ~self.top

    def dens(self, sigma):
        """``1 - s a_i``: ``sigma`` (top) or ``(a1 - a_i + sigma a_i)/a1`` (rest)."""
        a, a1 = self.a, self.a1
        return np.where(self.top, sigma, (a1 - a + sigma * a) / a1)

    def phi(self, sigma, keep=None) -> float:
        """``phi(sigma) = g0 + sum_i b~_i^2 s (2 - s a_i) / (1 - s a_i)^2``."""
        d = self.dens(sigma)
        s = (1.0 - sigma) / self.a1
        # s (2 - s a_i) = (1 - sigma^2)/a1 (top) or s (1 + d_i) (rest)
        num = np.where(self.top, (1.0 - sigma * sigma) / self.a1, s * (1.0 + d))
        bk = self.bt
        if keep is not None:
            num, d, bk = num[keep], d[keep], self.bt[keep]
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            terms = bk ** 2 * num / d ** 2
        terms = np.where(bk == 0, 0.0, terms)
        return self.g0 + float(np.sum(terms))

    def theta(self, sigma, keep=None) -> np.ndarray:
        """``theta(sigma) = Q theta~`` (zero off `keep`)."""
        s = (1.0 - sigma) / self.a1
        tt = s * self.bt / self.dens(sigma)
        if keep is not None:
            tt = np.where(keep, tt, 0.0)
        return self.Q @ tt

    def root(self, lo, hi, keep=None) -> float:
        """The root of ``phi`` in ``[lo, hi]``."""
        if keep is None:
            return _brentq(self.phi, lo, hi)
        return _brentq(self.phi, lo, hi, keep)


def _quadratic_mpp(c0: float, b: np.ndarray, A: np.ndarray, z: float):
    """Exact local MPPs of ``c0 + 2 b.theta + theta.A.theta >= z``.

    Returns ``(points, info)``: the global MPP first, then the local
    non-global one if there is one (see `QuadraticLimitState`).
    """
    a, Q = np.linalg.eigh(A)
    bt = Q.T @ b
    g0 = c0 - z
    if g0 == 0.0:
        return [np.zeros(b.size)], {"case": "origin on the surface"}
    sgn = 1.0
    if g0 > 0:                    # origin fails: nearest point of F = z, via (-F, -z)
        sgn, g0, bt, a = -1.0, -g0, -bt, -a
    order = np.argsort(a)[::-1]   # a descending
    a, bt, Q = a[order], bt[order], Q[:, order]
    scale = max(float(np.max(np.abs(a))), 1e-300)
    info = {"eigenvalues": sgn * a}
    if float(a[0]) > 1e-14 * scale:
        return _convex_mpp(_Secular(g0, a, bt, Q), scale, info)
    return _concave_mpp(g0, a, bt, Q, scale, info, sgn, c0, z)


def _convex_mpp(eq: _Secular, scale: float, info: dict):
    """``max(a) > 0``: the root of ``phi`` on ``0 < sigma <= 1``, then the others."""
    # global MPP: phi(1) = g0 < 0 (s = 0), phi -> +inf as sigma -> 0+ unless b~_top = 0
    hi = 1.0
    for k in range(1, 151):
        if eq.phi(10.0 ** -k) > 0:
            points = [eq.theta(eq.root(10.0 ** -k, hi))]
            info["case"] = "regular"
            break
        hi = 10.0 ** -k
    else:
        return _hard_case(eq, info)
    if np.sum(eq.top) == 1 and eq.a.size > 1:
        others = _local_nonglobal(eq, scale)
        if others:
            points += others
            info["case"] = "regular + local non-global MPP"
    return points, info


def _hard_case(eq: _Secular, info: dict):
    """``b~ = 0`` along the top eigenvectors: ``phi`` is bounded at ``sigma = 0``."""
    rest, a1 = eq.rest, eq.a1
    phimax = eq.phi(0.0, rest) if np.any(rest) else eq.g0
    if phimax >= 0:
        sigma = eq.root(0.0, 1.0, rest) if phimax > 0 else 0.0
        return [eq.theta(sigma, rest)], {**info, "case": "hard, interior"}
    tt = np.where(rest, (1.0 / a1) * eq.bt / np.where(rest, eq.dens(0.0), 1.0), 0.0)
    t = np.sqrt(-phimax / a1)
    plus, minus = tt.copy(), tt.copy()
    plus[0], minus[0] = t, -t
    info["case"] = "hard"
    info["top_multiplicity"] = int(np.sum(eq.top))
    if np.sum(eq.top) > 1:       # a sphere of MPPs: not isolated
        return [eq.Q @ plus], info
    return [eq.Q @ plus, eq.Q @ minus], info


def _local_nonglobal(eq: _Secular, scale: float) -> list:
    """The local non-global MPP: ``sigma`` in ``(sigma_lo, 0)``, found by a scan.

    Kept where ``I - s A`` (one negative eigenvalue) is positive definite on
    the tangent plane (Martinez 1994).
    """
    a, a1 = eq.a, eq.a1
    a2 = float(a[1])
    lo = 1.0 - a1 / a2 if a2 > 1e-14 * scale else -1e8
    grid = -np.logspace(-150, np.log10(-lo), 300)[:-1]
    grid = np.concatenate([grid, lo - (lo * np.logspace(-150, -1e-3, 300))
                           if a2 > 1e-14 * scale else []])
    grid = np.unique(grid[(grid < 0) & (grid > lo)])[::-1]      # from 0- down to lo
    vals = np.array([eq.phi(x) for x in grid])
    points = []
    for i in np.nonzero(np.sign(vals[:-1]) * np.sign(vals[1:]) < 0)[0]:
        sigma = eq.root(grid[i + 1], grid[i])
        th = eq.theta(sigma)
        s = (1.0 - sigma) / a1
        tt = eq.Q.T @ th
        T = _tangent_basis(tt / np.linalg.norm(tt))
        red = T.T @ ((1.0 - s * a)[:, None] * T)
        if np.min(np.linalg.eigvalsh(0.5 * (red + red.T))) > 1e-12:
            points.append(th)
    return points


def _concave_mpp(g0, a, bt, Q, scale, info, sgn, c0, z):
    """``max(a) <= 0``: ``phi`` increases to its limit as ``s -> infinity``."""
    zero = np.abs(a) <= 1e-14 * scale
    bscale = max(float(np.linalg.norm(bt)), 1e-300)
    if np.any(zero & (np.abs(bt) > 1e-13 * bscale)):
        limit = np.inf
    else:
        neg = a < 0
        limit = g0 + float(np.sum(bt[neg] ** 2 / -a[neg]))
    if not limit > 0:
        side = "above" if sgn > 0 else "below"
        raise MPPError("unreachable", f"the quadratic limit state never gets {side} z: "
                       f"sup (F - z) = {sgn * limit:.6g} on that side",
                       dict(c0=c0, z=z, max_eigenvalue=float(sgn * a[0])))

    def phi_s(s):
        den = 1.0 - s * a
        return g0 + float(np.sum(bt ** 2 * s * (2.0 - s * a) / den ** 2))

    hi = 1.0 / scale if scale > 1e-300 else 1.0
    for _ in range(3000):
        if phi_s(hi) > 0:
            break
        hi *= 2.0
    s = _brentq(phi_s, 0.0, hi)
    return [Q @ (s * bt / (1.0 - s * a))], {**info, "case": "concave"}
