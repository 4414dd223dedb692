r"""Series and parallel systems of several limit states ``F_k(theta, design) >= z_k``.

A *series* system fails when any component fails, ``pf = P(U_k {F_k >= z_k})``;
a *parallel* system when all do, ``pf = P(n_k {F_k >= z_k})``.

First order (``"form"``; Hohenbichler & Rackwitz 1983)
    Each component is replaced by the half space beyond the tangent plane at
    its MPP: ``{alpha_k . u >= beta_k}`` with ``alpha_k = theta*_k/beta_k``.
    The ``Y_k = alpha_k . u`` are standard normals with correlations
    ``rho_kl = alpha_k . alpha_l``, so ``pf_series = 1 - Phi_K(beta; R)`` and
    ``pf_parallel = Phi_K(-beta; R)`` -- exact for linear limit states. Two
    components: ``pf_series = P_1 + P_2 - P_12`` with the bivariate
    ``P_12 = P(Y_1 >= beta_1, Y_2 >= beta_2) = int_{beta_1}^inf phi(y)
    Phi((rho y - beta_2)/sqrt(1 - rho^2)) dy`` by adaptive quadrature; more
    components: scipy's multinormal cdf (Genz's algorithm, absolute error
    ``~1e-10``; use sampling below ``pf ~ 1e-8``).
Ditlevsen (1979) bounds (series, ``info["bounds"]``)
    ``P_1 + sum_{k>=2} max(0, P_k - sum_{l<k} P_kl) <= pf <= sum_k P_k -
    sum_{k>=2} max_{l<k} P_kl``, the components ordered by decreasing
    ``P_k = Phi(-beta_k)``.
Sampling (``"mc"``, ``"is"``)
    The system indicator counted over samples of ``N(0, I)``, or for ``"is"``
    of the equal-weight mixture of ``N(theta*_k, I)`` centred at every
    component MPP (series), or of ``N(theta*_J, I)`` at the joint design point
    ``argmin |theta|`` s.t. all ``F_k >= z_k`` (parallel), with
    `sampling_estimate`'s weights.
"""

from __future__ import annotations

import numpy as np
import scipy.integrate
import scipy.optimize
import scipy.special as sp
import scipy.stats

from .. import ad
from .._validate import check_choice, check_int, check_seed, real
from .asymptotic import ReliabilityResult
from .base import ReliabilityError
from .limit_state import as_limit_state
from .mpp import _mpp_options, _solve_mpp
from .sampling import _draw, _summarize

__all__ = ["system_failure_probability", "ditlevsen_bounds", "ln_bivariate_upper"]

SYSTEM_METHODS = ("form", "mc", "is")


def system_failure_probability(limit_states, design, z, kind: str = "series",
                               method: str = "form", *, m: int | None = None,
                               n_samples: int = 100_000, seed: int | None = 0,
                               **mpp_options) -> ReliabilityResult:
    """Failure probability of a series or parallel system of limit states.

    Parameters
    ----------
    limit_states : sequence of callable or LimitState
        ``F_k(theta, design)``, two or more, on the same ``m`` variables
        (a `TransformedLimitState` for physical inputs).
    design : array_like or None
        Plain design (not differentiated).
    z : float or sequence of float
        Thresholds ``z_k`` (one for all, or one per component).
    kind : {"series", "parallel"}
    method : {"form", "mc", "is"}
        First-order multinormal, Monte Carlo, or importance sampling with the
        mixture of the component MPPs.
    m : int, optional
        Number of random variables (plain functions).
    n_samples, seed
        For ``"mc"``/``"is"``; `seed` also seeds the quasi-random points of the
        multinormal cdf (``"form"`` with more than two components).
    **mpp_options
        Of `find_mpp` (``"form"``, ``"is"``).

    Returns
    -------
    ReliabilityResult
        ``ln_pf``; ``info["betas"]``, ``info["alphas"]``, ``info["rho"]``
        (``"form"``, ``"is"``) and for a series system ``info["bounds"]``
        (Ditlevsen's, ``"form"``); sampling adds ``ln_pf_std``.

    Examples
    --------
    Two half planes at 45 degrees, ``beta_1 = beta_2 = 3``:

    >>> import numpy as np
    >>> from topopt import reliability as rel
    >>> F1 = lambda t, d: t[0]
    >>> F2 = lambda t, d: (t[0] + t[1]) / np.sqrt(2.0)
    >>> r = rel.system_failure_probability([F1, F2], None, 3.0, "series", m=2)
    >>> round(float(r.info["rho"][0, 1]), 6), round(r.pf, 7)    # 2 Phi(-3) - P_12
    (0.707107, 0.0024617)
    """
    comps, zs, opts, n_samples = _system_args(limit_states, design, z, kind, method, m,
                                              n_samples, seed, mpp_options)
    qs = [tuple(ls.params(design)) for ls in comps]
    if method == "mc":
        return _sampled(comps, qs, zs, kind, "mc", None, n_samples, seed)
    mpps = [_solve_mpp(ls, q, zk, opts) for ls, q, zk in zip(comps, qs, zs)]
    betas = np.array([r.beta for r in mpps])
    if np.any(betas <= 0):
        raise ReliabilityError(f"a component fails at the origin (betas {betas}); the "
                               "first-order system estimate needs beta_k > 0")
    alphas = np.array([r.theta / r.beta for r in mpps])
    rho = np.clip(alphas @ alphas.T, -1.0, 1.0)
    np.fill_diagonal(rho, 1.0)
    info = dict(betas=betas, alphas=alphas, rho=rho, mpps=mpps)
    if method == "is":
        centers = np.array([r.theta for r in mpps])
        if kind == "parallel":
            info["joint_mpp"] = centers = _joint_mpp(comps, qs, zs, centers)[None, :]
        res = _sampled(comps, qs, zs, kind, "is", centers, n_samples, seed)
        res.info.update(info)
        return res
    ln = _ln_first_order(kind, betas, rho, seed)
    res = ReliabilityResult("form", ln, float(np.exp(ln)), beta=float(-sp.ndtri(np.exp(ln))),
                            n_mpp=len(comps), info=info)
    if kind == "series":
        res.info["bounds"] = ditlevsen_bounds(betas, rho)
    return res


def _system_args(limit_states, design, z, kind, method, m, n_samples, seed, mpp_options):
    """The arguments of `system_failure_probability`, checked before any solve."""
    check_choice("kind", kind, ("series", "parallel"))
    check_choice("method", method, SYSTEM_METHODS)
    if ad.is_traced(design):
        raise TypeError("system_failure_probability takes a plain design (not differentiated)")
    comps = _components(limit_states, m)
    zs = _thresholds(z, len(comps))
    if method == "mc" and mpp_options:
        raise TypeError(f"MPP options {sorted(mpp_options)} do not apply to method='mc'")
    opts = _mpp_options(mpp_options)
    n_samples = check_int("n_samples", n_samples, 1)
    check_seed("seed", seed)
    return comps, zs, opts, n_samples


def _joint_mpp(comps, qs, zs, starts) -> np.ndarray:
    """``argmin 1/2|theta|^2`` s.t. every ``F_k >= z_k`` (SLSQP): a parallel system's
    design point, the centre of its importance sampling."""
    def con(ls, q, zk):
        return {"type": "ineq", "fun": lambda t: ls.value_and_gradient(t, *q)[0] - zk,
                "jac": lambda t: ls.value_and_gradient(t, *q)[1]}
    cons = [con(ls, q, zk) for ls, q, zk in zip(comps, qs, zs)]
    start = starts[np.argmax(np.linalg.norm(starts, axis=1))]
    res = scipy.optimize.minimize(lambda t: 0.5 * t @ t, start, jac=lambda t: t,
                                  method="SLSQP", constraints=cons,
                                  options=dict(ftol=1e-14, maxiter=500))
    if not res.success:
        raise ReliabilityError(f"the joint design point of the parallel system was not "
                               f"found ({res.message})")
    return np.asarray(res.x, float)


def _components(limit_states, m):
    if callable(limit_states) or not hasattr(limit_states, "__len__"):
        raise TypeError("limit_states must be a sequence of limit states F_k(theta, design)")
    comps = [as_limit_state(f, m=m) for f in limit_states]
    if len(comps) < 2:
        raise ValueError(f"a system needs at least 2 limit states, got {len(comps)}")
    dims = {ls.m for ls in comps}
    if len(dims) != 1 or None in dims:
        raise ValueError(f"the limit states must share one known m (pass m=), got {dims}")
    return comps


def _thresholds(z, k: int) -> list:
    if np.ndim(z) == 0:
        return [real("z", z)] * k
    zs = [real(f"z[{i}]", v) for i, v in enumerate(z)]
    if len(zs) != k:
        raise ValueError(f"z has {len(zs)} thresholds for {k} limit states")
    return zs


def _sampled(comps, qs, zs, kind, method, centers, n_samples, seed) -> ReliabilityResult:
    """Counting estimate of the system indicator (log weights of `_draw`)."""
    result = ReliabilityResult(method, 0.0, 0.0, n_samples=n_samples)
    thetas, logw = _draw(comps[0], qs[0], method, centers, None, n_samples, seed, result)
    fails = np.stack([ls.values(thetas, *q) >= zk for ls, q, zk in zip(comps, qs, zs)])
    ind = np.any(fails, axis=0) if kind == "series" else np.all(fails, axis=0)
    return _summarize(result, ind.astype(float), logw, 0.5, 0.0)


def ln_bivariate_upper(b1: float, b2: float, rho: float) -> float:
    """``ln P(Y_1 >= b1, Y_2 >= b2)`` for standard normals of correlation `rho`.

    ``int_lo^inf exp(L(y)) dy`` with the concave ``L(y) = ln phi(y) + ln Phi((rho y -
    hi)/sqrt(1 - rho^2))`` (``lo = max(b1, b2)``, ``hi`` the other): its maximum
    ``L*`` is factored out before adaptive quadrature, so tiny probabilities keep
    their relative accuracy.

    Examples
    --------
    >>> import numpy as np, scipy.special as sp
    >>> from topopt.reliability.systems import ln_bivariate_upper
    >>> bool(abs(ln_bivariate_upper(3.0, 2.0, 0.0) - sp.log_ndtr(-3.0) - sp.log_ndtr(-2.0))
    ...      < 1e-12)
    True
    """
    lo, hi = (b1, b2) if b1 >= b2 else (b2, b1)
    if abs(rho) >= 1 - 1e-14:
        if rho > 0:
            return float(sp.log_ndtr(-lo))
        p = sp.ndtr(-b1) - sp.ndtr(b2)
        return float(np.log(p)) if p > 0 else -np.inf
    s = np.sqrt(1 - rho * rho)

    def L(y):
        return -0.5 * y * y - 0.5 * np.log(2 * np.pi) + sp.log_ndtr((rho * y - hi) / s)
    opt = scipy.optimize.minimize_scalar(lambda y: -L(y), bounds=(lo, lo + 50.0),
                                         method="bounded", options=dict(xatol=1e-10))
    y_star = float(opt.x)
    top = float(L(y_star))
    f = lambda y: np.exp(L(y) - top)            # noqa: E731
    mid = y_star + 12.0
    v1, _ = scipy.integrate.quad(f, lo, mid, points=[y_star], epsabs=0.0, epsrel=1e-12,
                                 limit=200)
    v2, _ = scipy.integrate.quad(f, mid, np.inf, epsabs=0.0, epsrel=1e-12, limit=200)
    return top + float(np.log(v1 + v2))


def _bivariate_upper(b1: float, b2: float, rho: float) -> float:
    """``P(Y_1 >= b1, Y_2 >= b2)`` (see `ln_bivariate_upper`)."""
    return float(np.exp(ln_bivariate_upper(b1, b2, rho)))


def _ln_first_order(kind: str, betas: np.ndarray, rho: np.ndarray, seed) -> float:
    k = len(betas)
    if k == 2:
        ln12 = ln_bivariate_upper(betas[0], betas[1], rho[0, 1])
        if kind == "parallel":
            return ln12
        return float(np.log(sp.ndtr(-betas[0]) + sp.ndtr(-betas[1]) - np.exp(ln12)))
    x = -betas if kind == "parallel" else betas
    kw = dict(mean=np.zeros(k), cov=rho, allow_singular=True, maxpts=200_000 * k,
              abseps=1e-12, releps=1e-8)
    try:                        # scipy >= 1.15 seeds Genz's quasi-random points by rng=
        cdf = scipy.stats.multivariate_normal.cdf(x, **kw, rng=np.random.default_rng(seed))
    except TypeError:
        cdf = scipy.stats.multivariate_normal.cdf(x, **kw)
    return float(np.log(cdf)) if kind == "parallel" else float(np.log1p(-cdf))


def ditlevsen_bounds(betas, rho) -> tuple[float, float]:
    """Ditlevsen's (1979) bounds ``(lower, upper)`` on a series system's pf.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.reliability.systems import ditlevsen_bounds
    >>> lo, hi = ditlevsen_bounds(np.array([3.0, 3.0]), np.eye(2))   # independent
    >>> bool(abs(lo - hi) < 1e-15)                 # two components: exact
    True
    """
    betas = np.asarray(betas, float)
    order = np.argsort(betas)                       # decreasing P_k
    b, r = betas[order], np.asarray(rho, float)[np.ix_(order, order)]
    P = sp.ndtr(-b)
    lower, upper = P[0], P[0]
    for k in range(1, len(b)):
        pkl = np.array([_bivariate_upper(b[k], b[j], r[k, j]) for j in range(k)])
        lower += max(0.0, P[k] - np.sum(pkl))
        upper += P[k] - np.max(pkl)
    return float(lower), float(upper)
