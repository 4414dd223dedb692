"""Robust responses: mean and standard deviation of ``R(x, theta)`` for Gaussian ``theta``.

A response ``R(x, theta)`` of a design ``x`` and random inputs ``theta ~
N(mu, Sigma)`` (load components, moduli, ...) has its moments approximated
by the Taylor expansion about ``mu`` (the perturbation / moment methods;
Doltsinis & Kang 2004, Guest & Igusa 2008 for random loads), with ``g =
grad_theta R(x, mu)`` and ``H = hess_theta R(x, mu)``:

* FOSM (first order):  ``E[R] = R(mu)``, ``Var[R] = g^T Sigma g``;        (1)
* SOSM (second order): ``E[R] = R(mu) + tr(H Sigma) / 2``,
  ``Var[R] = g^T Sigma g + tr((H Sigma)^2) / 2``.                            (2)

Both are exact for a response quadratic in ``theta`` (a compliance under
Gaussian loads, ``c = c0 + 2 b^T theta + theta^T A theta``: mean ``c0 +
tr(A Sigma)``, variance ``4 b^T Sigma b + 2 tr((A Sigma)^2)``).

**Computation.** ``Sigma = L L^T`` with ``L`` of shape ``(n_theta, m)``, ``m``
the rank (`covariance_factor`). Then ``G = L^T g`` (one gradient in
``theta``) and ``M = L^T H L`` (``m`` Hessian-vector products ``H l_j``,
`topopt.ad.hvp`; the dense Hessian is never formed), and (2) reads

    E = R(mu) + tr(M) / 2,   Var = |G|^2 + |M|_F^2 / 2.                    (3)

**Design derivatives** come from nested AD, not from a hand-written second
derivative. For cotangents ``(a, b)`` of ``(E, Var)``, with ``w = 2 b L G``
and ``C = a I / 2 + b M``,

    xbar = a grad_x R(x, mu) + d/de grad_x R(x, mu + e w)                  (4)
           + sum_i d2/(dp dq) grad_x R(x, mu + p l_i + q (L C)_i)           (5)

(the sum (5) for SOSM only). (4) is one forward-over-reverse product (the
mixed derivative ``d2R / dx dtheta`` applied to ``w``: `topopt.ad.jvp` in
``theta`` over `topopt.ad.gradient` in ``x``); (5) is ``m``
forward-over-forward-over-reverse products, the third mixed derivatives
``d3R / dx dtheta dtheta``. The forward rule is forward mode in ``x`` over
(3), so `topopt.ad.hvp` and nested gradients in the design work too.

`mean_std` and `mean_var` are the entry points; `monte_carlo_moments`
samples the same moments for checking.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from .. import ad
from .._validate import check_callable, check_finite_array, check_finite_values, check_int

__all__ = ["mean_std", "mean_var", "covariance_factor", "monte_carlo_moments",
           "SampleMoments"]


# ------------------------------------------------------------------ inputs

def covariance_factor(Sigma) -> np.ndarray:
    """``L`` of shape ``(n, m)`` with ``L L^T = Sigma``, ``m`` the rank of `Sigma`.

    From the eigen-decomposition ``Sigma = Q diag(lam) Q^T``: ``L = Q_+
    diag(sqrt(lam_+))`` over the eigenvalues above ``100 n eps max(lam)``
    (the rounding of the decomposition; smaller ones are zero variance
    directions). A symmetric `Sigma` with an eigenvalue below ``-100 n eps
    max(lam)`` is not a covariance: ValueError.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.robust.moments import covariance_factor
    >>> L = covariance_factor(np.array([[4.0, 2.0], [2.0, 1.0]]))    # rank 1
    >>> L.shape, np.allclose(L @ L.T, [[4.0, 2.0], [2.0, 1.0]])
    ((2, 1), True)
    """
    Sigma = check_finite_array("Sigma", Sigma)
    if Sigma.ndim != 2 or Sigma.shape[0] != Sigma.shape[1] or Sigma.shape[0] == 0:
        raise ValueError(f"Sigma must be a square (n, n) covariance matrix, n >= 1; got "
                         f"shape {Sigma.shape}")
    scale = float(np.max(np.abs(Sigma)))
    asym = float(np.max(np.abs(Sigma - Sigma.T)))
    if asym > 1e-12 * scale:
        raise ValueError(f"Sigma must be symmetric; max |Sigma - Sigma^T| = {asym:.3e} "
                         f"(max |Sigma| = {scale:.3e})")
    lam, Q = np.linalg.eigh(0.5 * (Sigma + Sigma.T))
    tol = 100 * Sigma.shape[0] * np.finfo(float).eps * max(float(lam[-1]), 0.0)
    if lam[0] < -tol or lam[-1] < 0:
        raise ValueError(f"Sigma must be positive semidefinite; its smallest eigenvalue "
                         f"is {lam[0]:.6g} (largest {lam[-1]:.6g})")
    keep = lam > tol
    return Q[:, keep] * np.sqrt(lam[keep])


def _inputs(R, x, mu, Sigma, factor, order):
    """Checked ``(mu, L, order)``; errors name the argument."""
    check_callable("R", R)
    order = check_int("order", order, 1, 2, what="1: FOSM, 2: SOSM")
    if not ad.differentiable(x):
        raise TypeError(f"x must be a float array (the design) or a traced value, got "
                        f"{type(x).__name__}")
    if np.iscomplexobj(ad.value(x)):
        raise TypeError("x must be real: the moments are differentiated in a real design")
    if not np.all(np.isfinite(ad.value(x))):
        raise ValueError("x contains NaN or inf")
    mu = check_finite_array("mu", mu)
    if mu.ndim != 1 or mu.size == 0:
        raise ValueError(f"mu must be a 1-D array of the mean of theta, size >= 1; got shape "
                         f"{mu.shape}")
    if (Sigma is None) == (factor is None):
        raise TypeError("give exactly one of Sigma (the covariance) and factor (L with "
                        "Sigma = L L^T)")
    if factor is None:
        L = covariance_factor(Sigma)
        if L.shape[0] != mu.size:
            raise ValueError(f"Sigma has shape {(L.shape[0],) * 2}; mu has size {mu.size}")
    else:
        L = check_finite_array("factor", factor)
        if L.ndim != 2 or L.shape[0] != mu.size:
            raise ValueError(f"factor must have shape ({mu.size}, m), got {L.shape}")
    return mu, L, order


# ----------------------------------------------------------------- moments

def _theta_terms(R, x, L, mu, order):
    """``(R(x, mu), G = L^T g, M = L^T H L)`` of eq. (3); ``M`` is None for FOSM."""
    def at(theta):
        return R(x, theta)

    r0, g = ad.value_and_gradient(at, mu)
    G = L.T @ g
    if order == 1:
        return r0, G, None
    m = L.shape[1]
    if m == 0:
        return r0, G, np.zeros((0, 0))
    HL = np.stack([ad.hvp(at, mu, L[:, j]) for j in range(m)], axis=1)  # forward-over-reverse
    M = L.T @ HL
    return r0, G, 0.5 * (M + M.T)


def _mean_var(R, x, L, mu, order):
    """``(E, Var, G, M)`` of eq. (1) (order 1) or (3) (order 2)."""
    r0, G, M = _theta_terms(R, x, L, mu, order)
    var = np.sum(G * G)
    if M is None:
        return r0, var, G, M
    return r0 + 0.5 * np.trace(M), var + 0.5 * np.sum(M * M), G, M


def _trace_ids(v) -> set:
    ids = set()
    while isinstance(v, ad.Box):
        ids.add(ad.trace_of(v).id)
        v = v.value
    return ids


def _check_closure(x, *outputs) -> None:
    """TypeError if an output is traced by a differentiation `x` is not part of."""
    extra = set().union(*map(_trace_ids, outputs)) - _trace_ids(x)
    if extra:
        raise TypeError("R depends on a traced value other than x (a closure over a "
                        "variable being differentiated); pass that value inside x")


@ad.primitive
def _moments(R, x, L, mu, order):
    """``(E, Var)`` of ``R(x, theta)``, ``theta ~ N(mu, L L^T)``: eq. (1) or (3)."""
    return _mean_var(R, x, L, mu, order)[:2]


def _grad_x(R, x):
    """``theta -> grad_x R(x, theta)``, the reverse sweep the mixed derivatives go over."""
    return lambda theta: ad.gradient(lambda xx: R(xx, theta), x)


def _third(grad_x, mu, p, q):
    """``d2/(dp dq) grad_x R(x, mu + p_ + q_)``: forward over forward over reverse, eq. (5)."""
    def along_p(theta):
        return ad.jvp(grad_x, (theta,), (p,))[1]
    return ad.jvp(along_p, (mu,), (q,))[1]


def _design_cotangent(R, x, L, mu, order, G, M, a, b):
    """``xbar`` of eqs. (4)-(5) for the cotangents `a` of E and `b` of Var (None: zero)."""
    grad_x = _grad_x(R, x)
    if b is not None:
        w = L @ (2 * b * G)
        gx, dgx = ad.jvp(grad_x, (mu,), (w,))               # eq. (4): forward over reverse
        xbar = dgx if a is None else a * gx + dgx
    elif a is not None:
        xbar = a * grad_x(mu)
    else:
        return None
    if order == 2 and L.shape[1]:
        C = 0.0
        if a is not None:
            C = 0.5 * a * np.eye(L.shape[1])
        if b is not None:
            C = C + b * M
        U = L @ C
        for i in range(L.shape[1]):
            xbar = xbar + _third(grad_x, mu, L[:, i], U[:, i])
    return xbar


@ad.rrule(_moments)
def _moments_rrule(R, x, L, mu, order):
    mean, var, G, M = _mean_var(R, x, L, mu, order)
    _check_closure(x, mean, var)

    def moments_pullback(ybar):
        a, b = ybar
        return (None, ad.thunk(lambda: _design_cotangent(R, x, L, mu, order, G, M, a, b)),
                ad.not_differentiable("Sigma (factor) of mean_std"),
                ad.not_differentiable("mu of mean_std"), None)
    return (mean, var), moments_pullback


@ad.frule(_moments)
def _moments_frule(primals, tangents):
    R, x, L, mu, order = primals
    ad.check_tangents(tangents, {2: "Sigma (factor) of mean_std", 3: "mu of mean_std"})
    y, ydot = ad.jvp(lambda x: _mean_var(R, x, L, mu, order)[:2], (x,), (tangents[1],))
    _check_closure(x, *y)
    return y, ydot


def mean_var(R: Callable, x, mu, Sigma=None, *, order: int = 2, factor=None):
    """Mean and variance of ``R(x, theta)`` for ``theta ~ N(mu, Sigma)``, FOSM or SOSM.

    See `mean_std`, which returns the standard deviation instead of the
    variance (the variance is smooth where the standard deviation is not:
    at zero).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.robust.moments import mean_var
    >>> R = lambda x, t: x[0] * t[0] ** 2            # E = x0 Var(t0), Var = 2 x0^2 Var(t0)^2
    >>> mean, var = mean_var(R, np.array([3.0]), np.zeros(1), np.eye(1))
    >>> float(mean), float(var)
    (3.0, 18.0)
    """
    mu, L, order = _inputs(R, x, mu, Sigma, factor, order)
    mean, var = _moments(R, x, L, mu, order)
    rule = "R(x, theta) and its theta-derivatives at mu must be finite"
    check_finite_values("the mean of R", mean, rule)
    check_finite_values("the variance of R", var, rule)
    return mean, var


def mean_std(R: Callable, x, mu, Sigma=None, *, order: int = 2, factor=None):
    """Mean and standard deviation of ``R(x, theta)`` for ``theta ~ N(mu, Sigma)``.

    FOSM (``order=1``) or SOSM (``order=2``), eqs. (1)-(3) of the module;
    differentiable in `x` by nested AD (eqs. (4)-(5)), in every mode of
    `topopt.ad`.

    Parameters
    ----------
    R : callable
        ``R(x, theta) -> real scalar``, written with numpy on traced values
        (e.g. a compliance through `topopt.fem.solve` with a load that
        depends on ``theta``). It may depend on traced values only through
        `x` (TypeError otherwise).
    x : float array or traced value
        The design (or any quantity the moments are differentiated in: the
        element moduli, for instance).
    mu : (n,) array
        Mean of ``theta``; not differentiated.
    Sigma : (n, n) array, optional
        Covariance of ``theta``: symmetric positive semidefinite.
    order : {1, 2}
        1: first-order second-moment (FOSM); 2: second-order (SOSM), exact
        for a response quadratic in ``theta``.
    factor : (n, m) array, optional
        Instead of `Sigma`: ``L`` with ``Sigma = L L^T`` (cheaper for a large
        ``n`` and a low-rank covariance; SOSM costs ``m`` Hessian-vector
        products). Exactly one of `Sigma` and `factor`.

    Returns
    -------
    mean, std : scalars (traced if `x` is)
        The derivative of `std` is infinite where the variance is zero.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.robust.moments import mean_std
    >>> R = lambda x, t: np.sum(x * t) ** 2 + x[0] * t[1]   # quadratic in t
    >>> x, mu, Sigma = np.array([1.0, 2.0]), np.array([1.0, 0.0]), 0.01 * np.eye(2)
    >>> mean, std = mean_std(R, x, mu, Sigma)
    >>> round(float(mean), 6), round(float(std) ** 2, 6)   # 1 + tr(H S)/2, g'Sg + tr(HSHS)/2
    (1.05, 0.295)
    >>> ad.taylor_test(lambda x: sum(mean_std(R, x, mu, Sigma)), x, np.ones(2)) > 1.9
    True
    """
    mean, var = mean_var(R, x, mu, Sigma, order=order, factor=factor)
    return mean, np.sqrt(var)


# ---------------------------------------------------------------- sampling

class SampleMoments(NamedTuple):
    """Sample mean and standard deviation with their standard errors."""

    mean: float
    std: float
    var: float
    mean_error: float
    std_error: float
    var_error: float
    n_samples: int


def monte_carlo_moments(R: Callable, x, mu, Sigma=None, *, n_samples: int, seed: int,
                        factor=None) -> SampleMoments:
    """Monte Carlo mean and standard deviation of ``R(x, theta)``, ``theta ~ N(mu, Sigma)``.

    ``theta_i = mu + L z_i`` with ``z_i ~ N(0, I_m)`` drawn by
    ``numpy.random.default_rng(seed)``; ``R`` is called once per draw.
    Standard errors: ``s / sqrt(n)`` for the mean, ``sqrt((m4 - s^4 (n - 3) /
    (n - 1)) / n)`` for the variance (``m4``: the fourth central sample
    moment) and the variance's divided by ``2 s`` for the standard deviation.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.robust.moments import monte_carlo_moments
    >>> s = monte_carlo_moments(lambda x, t: x * t[0], 2.0, np.zeros(1), np.eye(1),
    ...                         n_samples=20000, seed=0)
    >>> abs(s.std - 2.0) < 4 * s.std_error
    True
    """
    mu, L, _ = _inputs(R, x, mu, Sigma, factor, 1)
    if ad.is_traced(x):
        raise TypeError("x of monte_carlo_moments is not differentiated: pass plain values")
    n = check_int("n_samples", n_samples, 4, what="Monte Carlo draws")
    from ..fem.budget import check_samples
    check_samples(n, L.shape[1], f"n_samples = {n}")
    rng = np.random.default_rng(check_int("seed", seed, 0, what="numpy default_rng seed"))
    z = rng.standard_normal((n, L.shape[1]))
    values = np.array([float(R(x, mu + L @ zi)) for zi in z])
    mean, var = float(np.mean(values)), float(np.var(values, ddof=1))
    m4 = float(np.mean((values - mean) ** 4))
    var_error = float(np.sqrt(max(m4 - var ** 2 * (n - 3) / (n - 1), 0.0) / n))
    std = float(np.sqrt(var))
    return SampleMoments(mean, std, var, float(std / np.sqrt(n)),
                         var_error / (2 * std) if std > 0 else 0.0, var_error, n)
