r"""Marginal distributions of the physical random inputs and their map from ``u ~ N(0, 1)``.

Each marginal ``X`` is reached from a standard normal ``u`` by the
isoprobabilistic map ``x = F_X^{-1}(Phi(u))`` (Rosenblatt 1952; the marginal
step of the Nataf transform, see `Nataf`). `Marginal.x_from_u` writes this map
in closed form with `topopt.ad`-traceable numpy, without passing through
``Phi(u)`` where the tail would round to 0 or 1:

=============  =====================================  =================================
marginal       cdf ``F(x)``                           ``x(u)``
=============  =====================================  =================================
Normal         ``Phi((x - mu)/sigma)``                ``mu + sigma u``
Lognormal      ``Phi((ln x - lam)/zeta)``             ``exp(lam + zeta u)``
Gumbel (max)   ``exp(-exp(-(x - mu)/scale))``         ``mu - scale ln(-ln Phi(u))``
Weibull (min)  ``1 - exp(-(x/scale)^k)``              ``scale (-ln Phi(-u))^(1/k)``
Uniform        ``(x - a)/(b - a)``                    ``a + (b - a) Phi(u)``
=============  =====================================  =================================

Each class takes its own parameters or ``from_moments(mean, std)``; the
parameters are checked (name and accepted range) when the marginal is built.
"""

from __future__ import annotations

import numpy as np
import scipy.special as sp

from .._validate import check_positive, real

__all__ = ["Marginal", "Normal", "Lognormal", "Gumbel", "Weibull", "Uniform"]

_EULER = 0.5772156649015329          # Euler-Mascheroni constant (Gumbel mean)


class Marginal:
    """A continuous marginal distribution and its map from a standard normal.

    Subclasses define ``x_from_u`` (traceable), ``u_from_x``, ``cdf``, ``pdf``,
    ``ppf`` and the moments ``mean``, ``std``.
    """

    def x_from_u(self, u):
        """``F^{-1}(Phi(u))``, elementwise; `topopt.ad` can trace it."""
        raise NotImplementedError

    def u_from_x(self, x) -> np.ndarray:
        """``Phi^{-1}(F(x))`` (plain values); ``x`` outside the support raises."""
        raise NotImplementedError

    def ppf(self, p) -> np.ndarray:
        """Quantile ``F^{-1}(p)`` for ``p`` in (0, 1)."""
        p = np.asarray(p, float)
        if np.any(~((p > 0) & (p < 1))):
            raise ValueError("ppf: p must lie in (0, 1)")
        return np.asarray(self.x_from_u(sp.ndtri(p)), float)

    def cdf(self, x) -> np.ndarray:
        raise NotImplementedError

    def pdf(self, x) -> np.ndarray:
        raise NotImplementedError

    def _support(self, x, lo=-np.inf, hi=np.inf, what="x") -> np.ndarray:
        x = np.asarray(x, float)
        if np.any(np.isnan(x)) or np.any(x <= lo) or np.any(x >= hi):
            raise ValueError(f"{what} must lie in the open support ({lo:g}, {hi:g}) of "
                             f"{self!r}")
        return x

    def __repr__(self):
        args = ", ".join(f"{k}={v:g}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class Normal(Marginal):
    """``N(mu, sigma^2)``.

    Examples
    --------
    >>> from topopt.reliability import Normal
    >>> Normal(10.0, 2.0).x_from_u(1.5)
    13.0
    """

    def __init__(self, mu: float, sigma: float):
        self.mu = real("mu", mu)
        self.sigma = check_positive("sigma", sigma, "standard deviation")

    @classmethod
    def from_moments(cls, mean: float, std: float) -> "Normal":
        return cls(mean, std)

    mean = property(lambda self: self.mu)
    std = property(lambda self: self.sigma)

    def x_from_u(self, u):
        return self.mu + self.sigma * u

    def u_from_x(self, x):
        return (self._support(x) - self.mu) / self.sigma

    def cdf(self, x):
        return sp.ndtr(self.u_from_x(x))

    def pdf(self, x):
        t = self.u_from_x(x)
        return np.exp(-0.5 * t * t) / (self.sigma * np.sqrt(2 * np.pi))


class Lognormal(Marginal):
    """``ln X ~ N(lam, zeta^2)``.

    Examples
    --------
    >>> from topopt.reliability import Lognormal
    >>> d = Lognormal.from_moments(100.0, 10.0)
    >>> round(d.mean, 10), round(d.std, 10), round(d.zeta, 6)
    (100.0, 10.0, 0.099751)
    """

    def __init__(self, lam: float, zeta: float):
        self.lam = real("lam", lam)
        self.zeta = check_positive("zeta", zeta, "standard deviation of ln X")

    @classmethod
    def from_moments(cls, mean: float, std: float) -> "Lognormal":
        mean = check_positive("mean", mean, "a lognormal variable is positive")
        std = check_positive("std", std, "standard deviation")
        zeta2 = np.log1p((std / mean) ** 2)
        return cls(np.log(mean) - 0.5 * zeta2, np.sqrt(zeta2))

    mean = property(lambda self: float(np.exp(self.lam + 0.5 * self.zeta ** 2)))
    std = property(lambda self: self.mean * float(np.sqrt(np.expm1(self.zeta ** 2))))

    def x_from_u(self, u):
        return np.exp(self.lam + self.zeta * u)

    def u_from_x(self, x):
        return (np.log(self._support(x, 0.0)) - self.lam) / self.zeta

    def cdf(self, x):
        return sp.ndtr(self.u_from_x(x))

    def pdf(self, x):
        t = self.u_from_x(x)
        return np.exp(-0.5 * t * t) / (np.asarray(x, float) * self.zeta * np.sqrt(2 * np.pi))


class Gumbel(Marginal):
    """Largest-value Gumbel: ``F(x) = exp(-exp(-(x - mu)/scale))``.

    Examples
    --------
    >>> from topopt.reliability import Gumbel
    >>> d = Gumbel.from_moments(50.0, 10.0)
    >>> round(d.mean, 10), round(d.std, 10)
    (50.0, 10.0)
    """

    def __init__(self, mu: float, scale: float):
        self.mu = real("mu", mu)
        self.scale = check_positive("scale", scale, "Gumbel scale")

    @classmethod
    def from_moments(cls, mean: float, std: float) -> "Gumbel":
        scale = check_positive("std", std, "standard deviation") * np.sqrt(6.0) / np.pi
        return cls(real("mean", mean) - _EULER * scale, scale)

    mean = property(lambda self: self.mu + _EULER * self.scale)
    std = property(lambda self: float(self.scale * np.pi / np.sqrt(6.0)))

    def x_from_u(self, u):
        # -ln Phi(u) = -log_ndtr(u) stays accurate in both tails
        return self.mu - self.scale * np.log(-sp.log_ndtr(u))

    def u_from_x(self, x):
        t = (self._support(x) - self.mu) / self.scale
        # Phi(u) = exp(-e^{-t}); for large t use the upper tail 1 - F = -expm1(-e^{-t})
        return np.where(t > 0, -sp.ndtri(-np.expm1(-np.exp(-t))),
                        sp.ndtri(np.exp(-np.exp(-t))))

    def cdf(self, x):
        return np.exp(-np.exp(-(self._support(x) - self.mu) / self.scale))

    def pdf(self, x):
        t = (self._support(x) - self.mu) / self.scale
        return np.exp(-t - np.exp(-t)) / self.scale


class Weibull(Marginal):
    """Two-parameter Weibull: ``F(x) = 1 - exp(-(x/scale)^k)``, ``x > 0``.

    Examples
    --------
    >>> from topopt.reliability import Weibull
    >>> d = Weibull.from_moments(30.0, 3.0)
    >>> round(d.mean, 8), round(d.std, 8), round(d.k, 4)
    (30.0, 3.0, 12.1534)
    """

    def __init__(self, scale: float, k: float):
        self.scale = check_positive("scale", scale, "Weibull scale")
        self.k = check_positive("k", k, "Weibull shape")

    @classmethod
    def from_moments(cls, mean: float, std: float) -> "Weibull":
        mean = check_positive("mean", mean, "a Weibull variable is positive")
        cov = check_positive("std", std, "standard deviation") / mean
        if not 1e-3 <= cov <= 10.0:
            raise ValueError(f"std/mean must lie in [0.001, 10] for Weibull.from_moments, "
                             f"got {cov:g}")

        def excess(ln_k):        # CoV^2 = Gamma(1 + 2/k)/Gamma(1 + 1/k)^2 - 1
            k = np.exp(ln_k)
            return np.expm1(sp.gammaln(1 + 2 / k) - 2 * sp.gammaln(1 + 1 / k)) - cov ** 2
        import scipy.optimize  # on first use: keeps the import light
        k = float(np.exp(scipy.optimize.brentq(excess, np.log(0.1), np.log(2000.0),
                                               xtol=1e-14, rtol=1e-14)))
        return cls(mean / sp.gamma(1 + 1 / k), k)

    mean = property(lambda self: self.scale * float(sp.gamma(1 + 1 / self.k)))
    std = property(lambda self: self.scale * float(np.sqrt(
        sp.gamma(1 + 2 / self.k) - sp.gamma(1 + 1 / self.k) ** 2)))

    def x_from_u(self, u):
        # -ln(1 - Phi(u)) = -log_ndtr(-u), accurate in both tails
        return self.scale * (-sp.log_ndtr(-u)) ** (1.0 / self.k)

    def u_from_x(self, x):
        s = (self._support(x, 0.0) / self.scale) ** self.k
        # 1 - F = exp(-s): u = -ndtri(exp(-s)); for small s use F = -expm1(-s)
        return np.where(s < 1, sp.ndtri(-np.expm1(-s)), -sp.ndtri(np.exp(-s)))

    def cdf(self, x):
        return -np.expm1(-(self._support(x, 0.0) / self.scale) ** self.k)

    def pdf(self, x):
        t = self._support(x, 0.0) / self.scale
        return self.k / self.scale * t ** (self.k - 1) * np.exp(-t ** self.k)


class Uniform(Marginal):
    """Uniform on ``(a, b)``.

    Examples
    --------
    >>> from topopt.reliability import Uniform
    >>> float(Uniform(1.0, 3.0).x_from_u(0.0))
    2.0
    """

    def __init__(self, a: float, b: float):
        self.a = real("a", a)
        self.b = real("b", b)
        if not self.b > self.a:
            raise ValueError(f"b must be > a (uniform on (a, b)), got a={self.a:g}, "
                             f"b={self.b:g}")

    @classmethod
    def from_moments(cls, mean: float, std: float) -> "Uniform":
        half = np.sqrt(3.0) * check_positive("std", std, "standard deviation")
        return cls(real("mean", mean) - half, mean + half)

    mean = property(lambda self: 0.5 * (self.a + self.b))
    std = property(lambda self: (self.b - self.a) / np.sqrt(12.0))

    def x_from_u(self, u):
        return self.a + (self.b - self.a) * sp.ndtr(u)

    def u_from_x(self, x):
        return sp.ndtri((self._support(x, self.a, self.b) - self.a) / (self.b - self.a))

    def cdf(self, x):
        return (self._support(x, self.a, self.b) - self.a) / (self.b - self.a)

    def pdf(self, x):
        return np.ones_like(self._support(x, self.a, self.b)) / (self.b - self.a)
