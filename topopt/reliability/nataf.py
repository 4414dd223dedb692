r"""The Nataf transform: correlated physical inputs from independent standard normals.

Nataf's model (Nataf 1962; Liu & Der Kiureghian 1986) gives ``X`` with
marginals ``F_i`` and Pearson correlation matrix ``R`` as
``x_i = F_i^{-1}(Phi(y_i))`` of correlated standard normals ``y ~ N(0, R0)``,
``y = L0 u`` with ``R0 = L0 L0^T`` (Cholesky) and ``u ~ N(0, I)``. The
correlation ``rho0_ij`` of the normals is not ``rho_ij``; it solves the
integral equation (Liu & Der Kiureghian 1986, eq. 11)

    ``rho_ij = E[z_i(y_i) z_j(y_j)]``,  ``z_i = (x_i(y_i) - mu_i) / sigma_i``,

an expectation over the bivariate normal of correlation ``rho0_ij``. Here it
is evaluated exactly up to quadrature error by a tensor Gauss-Hermite rule
(``y_i = t_a``, ``y_j = rho0 t_a + sqrt(1 - rho0^2) t_b``) with the moments
``mu``, ``sigma`` from the same rule, and solved for ``rho0`` by Brent's
method; the map ``rho0 -> rho`` is increasing, and a ``rho`` outside its range
``[r(-1), r(1)]`` cannot be reached by a Nataf model (an error, never clipped).

A limit state written in the physical variables, ``F(x, design)``, becomes a
limit state in ``u`` by `TransformedLimitState`: everything downstream (MPP,
FORM/SORM, sampling, `ln_pf` and its gradients) works in ``u`` and sees
``F(x(u), design)``, traced through `topopt.ad`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .. import ad
from .._validate import check_callable, check_finite_array, check_int
from .checks import check_correlation
from .distributions import Marginal
from .limit_state import LimitState

__all__ = ["Nataf", "TransformedLimitState", "as_distribution"]


class Nataf:
    """Joint distribution of physical inputs: marginals and a correlation matrix.

    Parameters
    ----------
    marginals : sequence of Marginal
        The ``m`` marginal distributions (`Normal`, `Lognormal`, `Gumbel`,
        `Weibull`, `Uniform`).
    corr : (m, m) array_like, optional
        Pearson correlation matrix of ``X`` (symmetric, unit diagonal,
        positive definite); default the identity (independent inputs).
    quad_points : int
        Gauss-Hermite points per axis for the correlation correction (>= 8).

    Attributes
    ----------
    corr0 : ndarray
        The corrected correlation ``R0`` of the underlying normals.
    chol0 : ndarray
        Its lower Cholesky factor ``L0``.

    Examples
    --------
    Two lognormals with correlation 0.5; the closed form of the correction is
    ``rho = (exp(zeta_1 zeta_2 rho0) - 1) / sqrt((e^{zeta_1^2}-1)(e^{zeta_2^2}-1))``:

    >>> import numpy as np
    >>> from topopt.reliability import Lognormal, Nataf
    >>> R, S = Lognormal.from_moments(1.0, 0.5), Lognormal.from_moments(1.0, 0.3)
    >>> nat = Nataf([R, S], [[1.0, 0.5], [0.5, 1.0]])
    >>> z1, z2 = R.zeta, S.zeta
    >>> exact = np.log1p(0.5 * np.sqrt(np.expm1(z1**2) * np.expm1(z2**2))) / (z1 * z2)
    >>> bool(abs(nat.corr0[0, 1] - exact) < 1e-10)
    True
    """

    def __init__(self, marginals, corr=None, *, quad_points: int = 64):
        marginals = list(marginals) if not isinstance(marginals, Marginal) else [marginals]
        if not marginals:
            raise ValueError("marginals must hold at least one Marginal")
        for i, d in enumerate(marginals):
            if not isinstance(d, Marginal):
                raise TypeError(f"marginals[{i}] must be a Marginal (Normal, Lognormal, "
                                f"Gumbel, Weibull, Uniform), got {type(d).__name__}")
        self.marginals = marginals
        self.m = len(marginals)
        self.quad_points = check_int("quad_points", quad_points, 8, 400,
                                     what="Gauss-Hermite points per axis")
        self.corr = _check_corr(corr, self.m)
        self.corr0 = self._corrected()
        try:
            self.chol0 = np.linalg.cholesky(self.corr0)
        except np.linalg.LinAlgError:
            raise ValueError("corr: the corrected correlation matrix R0 of the Nataf model "
                             "is not positive definite; these marginals cannot have this "
                             "correlation") from None

    # ------------------------------------------------------------- correction
    def _corrected(self) -> np.ndarray:
        R0 = np.eye(self.m)
        t, w = np.polynomial.hermite_e.hermegauss(self.quad_points)
        w = w / np.sqrt(2 * np.pi)
        z = [self._standardized(d, t, w) for d in self.marginals]
        for i in range(self.m):
            for j in range(i + 1, self.m):
                if self.corr[i, j] != 0.0:
                    R0[i, j] = R0[j, i] = self._solve_pair(i, j, t, w, z)
        return R0

    @staticmethod
    def _standardized(d: Marginal, t, w):
        """``u -> (x(u) - mean) / std`` with the moments of the same quadrature rule."""
        x = np.asarray(d.x_from_u(t), float)
        mean = w @ x
        std = np.sqrt(w @ (x - mean) ** 2)
        return lambda u: (np.asarray(d.x_from_u(u), float) - mean) / std

    def pair_correlation(self, i: int, j: int, rho0: float) -> float:
        """``rho_ij`` of ``X`` when the normals ``y_i, y_j`` have correlation `rho0`."""
        t, w = np.polynomial.hermite_e.hermegauss(self.quad_points)
        w = w / np.sqrt(2 * np.pi)
        z = [self._standardized(d, t, w) for d in self.marginals]
        return _pair(z[i], z[j], t, w, rho0)

    def _solve_pair(self, i, j, t, w, z) -> float:
        target = self.corr[i, j]
        lo, hi = _pair(z[i], z[j], t, w, -1.0), _pair(z[i], z[j], t, w, 1.0)
        if not lo < target < hi:
            raise ValueError(f"corr[{i}, {j}] = {target:g} cannot be reached with marginals "
                             f"{self.marginals[i]!r} and {self.marginals[j]!r}: the Nataf "
                             f"model gives correlations in ({lo:.6g}, {hi:.6g})")
        import scipy.optimize  # on first use: keeps the import light
        return scipy.optimize.brentq(lambda r: _pair(z[i], z[j], t, w, r) - target,
                                     -1.0, 1.0, xtol=1e-15, rtol=1e-15)

    # ---------------------------------------------------------------- the map
    def x_from_u(self, u):
        """``x = T(u)``: ``y = L0 u``, ``x_i = F_i^{-1}(Phi(y_i))`` (traceable).

        `u` has shape ``(m,)`` or ``(N, m)``.
        """
        y = u @ self.chol0.T if self.m > 1 and np.any(self.chol0 != np.eye(self.m)) else u
        cols = [d.x_from_u(y[..., i]) for i, d in enumerate(self.marginals)]
        return np.stack(cols, axis=-1)

    def u_from_x(self, x) -> np.ndarray:
        """``u = T^{-1}(x)`` (plain values; `x` inside each marginal's support)."""
        x = check_finite_array("x", x)
        if x.shape[-1:] != (self.m,):
            raise ValueError(f"x has shape {x.shape}; the last axis must have m = {self.m}")
        y = np.stack([d.u_from_x(x[..., i]) for i, d in enumerate(self.marginals)], axis=-1)
        return np.linalg.solve(self.chol0, y.T).T if y.ndim > 1 else \
            np.linalg.solve(self.chol0, y)

    def jacobian(self, u) -> np.ndarray:
        """``dx/du`` at `u` (shape ``(m, m)``), from `topopt.ad`."""
        u = check_finite_array("u", u, shape=(self.m,))
        rows = [ad.gradient(lambda v, k=k: self.x_from_u(v)[k], u) for k in range(self.m)]
        return np.stack(rows)

    def sample(self, n: int, seed: int | None = 0) -> np.ndarray:
        """``n`` samples of ``X`` (shape ``(n, m)``), ``numpy.random.default_rng(seed)``."""
        n = check_int("n", n, 1)
        u = np.random.default_rng(seed).standard_normal((n, self.m))
        return np.asarray(self.x_from_u(u), float)

    def __repr__(self):
        return f"Nataf({self.marginals!r}, corr={self.corr.tolist()!r})"


def _pair(zi, zj, t, w, rho0) -> float:
    """``E[z_i(y_i) z_j(y_j)]`` for ``corr(y_i, y_j) = rho0`` (tensor Gauss-Hermite)."""
    yj = rho0 * t[:, None] + np.sqrt(max(0.0, 1.0 - rho0 * rho0)) * t[None, :]
    return float(w @ (zi(t)[:, None] * zj(yj)) @ w)


def _check_corr(corr, m: int) -> np.ndarray:
    if corr is None:
        return np.eye(m)
    return check_correlation("corr", corr, m, definite=True, what="marginal")


def as_distribution(distribution) -> Nataf:
    """A `Nataf` from a `Nataf`, a `Marginal` or a sequence of marginals (independent)."""
    if isinstance(distribution, Nataf):
        return distribution
    if isinstance(distribution, Marginal):
        return Nataf([distribution])
    if isinstance(distribution, (list, tuple)):
        return Nataf(distribution)
    raise TypeError(f"distribution must be a Nataf, a Marginal or a list of marginals, got "
                    f"{type(distribution).__name__}")


class TransformedLimitState(LimitState):
    """A limit state in physical variables ``F(x, design)``, seen in standard normals.

    ``F_u(u, design) = F(T(u), design)`` with ``T`` the Nataf map of
    `distribution`; the MPP, FORM/SORM, sampling estimates and the gradients
    of `ln_pf` are all computed in ``u``. Failure when ``F >= z``.

    Parameters
    ----------
    fun : callable
        ``fun(x, design) -> scalar`` in physical variables, traceable by
        `topopt.ad` (``x`` of shape ``(m,)``, or ``(N, m)`` with ``batch``).
    distribution : Nataf, Marginal or sequence of Marginal
        The joint distribution of ``x`` (a list means independent).
    batch : bool
        See `LimitState`.

    Examples
    --------
    ``ln S - ln R`` with lognormal resistance and load is linear in ``u``:
    FORM is exact, ``beta = (lam_R - lam_S)/sqrt(zeta_R^2 + zeta_S^2)``.

    >>> import numpy as np
    >>> from topopt import reliability as rel
    >>> R, S = rel.Lognormal(np.log(5.0), 0.2), rel.Lognormal(np.log(2.0), 0.3)
    >>> ls = rel.TransformedLimitState(lambda x, d: np.log(x[1]) - np.log(x[0]), [R, S])
    >>> r = rel.failure_probability(ls, None, 0.0, method="form")
    >>> bool(abs(r.beta - np.log(2.5) / np.hypot(0.2, 0.3)) < 1e-10)
    True
    >>> np.round(r.design_point, 4)               # x* = T(u*), R* = S*
    array([3.7716, 3.7716])
    """

    def __init__(self, fun: Callable, distribution, batch: bool = False):
        self.physical_fun = check_callable("fun", fun)
        self.distribution = as_distribution(distribution)
        super().__init__(self._in_u, m=self.distribution.m, batch=batch)

    def _in_u(self, u, *q):
        return self.physical_fun(self.distribution.x_from_u(u), *q)

    def physical(self, theta) -> np.ndarray:
        """``x = T(theta)``, the physical point of a standard-normal point."""
        return np.asarray(self.distribution.x_from_u(np.asarray(theta, float)), float)


def _with_distribution(limit_state, distribution, batch: bool = False):
    """`limit_state` in standard normals: wrapped when a `distribution` is given."""
    if distribution is None:
        return limit_state
    if isinstance(limit_state, LimitState):
        raise TypeError("distribution= takes a plain function F(x, design) of the physical "
                        f"variables, not a {type(limit_state).__name__} (build a "
                        "TransformedLimitState instead)")
    return TransformedLimitState(limit_state, distribution, batch=batch)
