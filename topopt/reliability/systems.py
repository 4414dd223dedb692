r"""Series and parallel systems of several limit states ``F_k(theta, design) >= z_k``.

A *series* system fails when any component fails, ``pf = P(U_k {F_k >= z_k})``;
a *parallel* system when all do, ``pf = P(n_k {F_k >= z_k})``.

First order (``"form"``; Hohenbichler & Rackwitz 1983)
    Each component is replaced by the half space beyond the tangent plane at
    its MPP: ``{alpha_k . u >= beta_k}`` with ``alpha_k = theta*_k/beta_k``.
    The ``Y_k = alpha_k . u`` are standard normals with correlations
    ``rho_kl = alpha_k . alpha_l``, so ``pf_series = 1 - Phi_K(beta; R)`` and
    ``pf_parallel = Phi_K(-beta; R)`` -- exact for linear limit states. Both
    come from orthant probabilities (`topopt.reliability.orthant`: nested
    Gauss-Legendre, relative error ``<= 1e-8`` estimated from two orders,
    ``K <= 5``), never as ``1 - Phi_K`` (which cancels a small pf away): the
    series pf is the sum of the positive terms ``P(Y_k >= beta_k, Y_l <
    beta_l for l < k)`` over the components ordered by decreasing ``P_k``.
    The estimate is kept inside its bounds (below). Time per call (both
    orders, one core; ``scripts/benchmarks/benchmark_orthant.py``): under 1 ms for ``K =
    2``, about 4 ms for ``K = 3``, 10-80 ms for ``K = 4`` and 70-300 ms for a
    correlated ``K = 5`` (independent groups: a product, about 1 ms); scipy's
    quasi-Monte-Carlo cdf took 100-400 ms for ``K = 3..5`` with relative errors
    up to 8 % (``1 - Phi_K`` at pf 4e-6).
Ditlevsen (1979) bounds (series, ``info["bounds"]``)
    ``P_1 + sum_{k>=2} max(0, P_k - sum_{l<k} P_kl) <= pf <= sum_k P_k -
    sum_{k>=2} max_{l<k} P_kl``, the components ordered by decreasing
    ``P_k = Phi(-beta_k)``. Parallel: ``prod_k P_k <= pf`` where every
    correlation is ``>= 0`` (Slepian; else ``0``) and ``pf <= min_{k<l} P_kl``.
Sampling (``"mc"``, ``"is"``)
    The system indicator counted over samples of ``N(0, I)``, or for ``"is"``
    of the equal-weight mixture of ``N(theta*_k, I)`` centred at every
    component MPP (series), or of ``N(theta*_J, I)`` at the joint design point
    ``argmin |theta|`` s.t. all ``F_k >= z_k`` (parallel), with
    `sampling_estimate`'s weights. The joint design point is accepted when it
    passes a KKT check (`_kkt_point`), whatever the optimizer's flag.
"""

from __future__ import annotations

import numpy as np
import scipy.special as sp

from .. import ad
from .._validate import check_choice, check_int, check_seed, real
from .asymptotic import ReliabilityResult
from .base import ReliabilityError
from .checks import _check_betas, check_correlation
from .limit_state import as_limit_state
from .mpp import _mpp_options, _solve_mpp
from .orthant import ln_orthant_error
from .sampling import _draw, _summarize

__all__ = ["system_failure_probability", "ditlevsen_bounds", "ln_bivariate_upper"]

SYSTEM_METHODS = ("form", "mc", "is")
#: The most components of a first-order system (orthant probabilities up to K = 5).
MAX_FORM_COMPONENTS = 5
#: Relative accuracy asked of each orthant probability.
ORTHANT_RTOL = 1e-8


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
        For ``"mc"``/``"is"`` (``"form"`` is deterministic).
    **mpp_options
        Of `find_mpp` (``"form"``, ``"is"``).

    Returns
    -------
    ReliabilityResult
        ``ln_pf``; ``info["betas"]``, ``info["alphas"]``, ``info["rho"]``
        (``"form"``, ``"is"``); ``"form"`` adds ``info["bounds"]`` (Ditlevsen's
        for a series system, the simple ones for a parallel one) and
        ``info["rel_error"]`` (the estimated relative error of pf); sampling
        adds ``ln_pf_std``.

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
    ln, rel_err = _ln_first_order(kind, betas, rho)
    bounds = ditlevsen_bounds(betas, rho) if kind == "series" else _parallel_bounds(betas, rho)
    ln = _inside(ln, bounds)
    pf = float(min(max(np.exp(ln), bounds[0]), bounds[1]))     # exp(ln(hi)) may round over
    info.update(bounds=bounds, rel_error=rel_err)
    return ReliabilityResult("form", ln, pf, beta=float(-sp.ndtri_exp(ln)),
                             n_mpp=len(comps), info=info)


def _system_args(limit_states, design, z, kind, method, m, n_samples, seed, mpp_options):
    """The arguments of `system_failure_probability`, checked before any solve."""
    check_choice("kind", kind, ("series", "parallel"))
    check_choice("method", method, SYSTEM_METHODS)
    if ad.is_traced(design):
        raise TypeError("system_failure_probability takes a plain design (not differentiated)")
    comps = _components(limit_states, m)
    zs = _thresholds(z, len(comps))
    if method == "form" and len(comps) > MAX_FORM_COMPONENTS:
        raise ValueError(f"method='form' takes systems of up to {MAX_FORM_COMPONENTS} "
                         f"components (orthant probabilities of known accuracy), got "
                         f"{len(comps)}: use method='is' or 'mc'")
    if method == "mc" and mpp_options:
        raise TypeError(f"MPP options {sorted(mpp_options)} do not apply to method='mc'")
    opts = _mpp_options(mpp_options)
    n_samples = check_int("n_samples", n_samples, 1)
    check_seed("seed", seed)
    return comps, zs, opts, n_samples


def _joint_mpp(comps, qs, zs, starts) -> np.ndarray:
    """``argmin 1/2|theta|^2`` s.t. every ``F_k >= z_k`` (SLSQP): a parallel system's
    design point, the centre of its importance sampling; accepted when it passes
    `_kkt_point` (SLSQP's own flag can be ``False`` at a verified point, e.g. for
    constraints scaled by large factors)."""
    import scipy.optimize

    def con(ls, q, zk):
        return {"type": "ineq", "fun": lambda t: ls.value_and_gradient(t, *q)[0] - zk,
                "jac": lambda t: ls.value_and_gradient(t, *q)[1]}
    cons = [con(ls, q, zk) for ls, q, zk in zip(comps, qs, zs)]
    start = starts[np.argmax(np.linalg.norm(starts, axis=1))]
    res = scipy.optimize.minimize(lambda t: 0.5 * t @ t, start, jac=lambda t: t,
                                  method="SLSQP", constraints=cons,
                                  options=dict(ftol=1e-14, maxiter=500))
    x = np.asarray(res.x, float)
    vg = [ls.value_and_gradient(x, *q) for ls, q in zip(comps, qs)]
    ok, report = _kkt_point(x, np.array([v for v, _ in vg]) - np.asarray(zs, float),
                            np.array([g for _, g in vg]))
    if not ok:
        raise ReliabilityError(f"the joint design point of the parallel system was not "
                               f"found: {report} (SLSQP: {res.message})")
    return x


#: Tolerances of the KKT check of a joint design point, relative to ``max(1, |theta|)``.
KKT_TOL = dict(feasibility=1e-8, stationarity=1e-7, complementarity=1e-7)


def _kkt_point(x, G, J) -> tuple[bool, str]:
    """KKT check of ``min 1/2|x|^2 s.t. G_k(x) >= 0`` at `x` (``J`` the gradients).

    Scale-free: each constraint as the signed distance ``G_k/|grad G_k|`` to its
    surface. Feasibility ``G_k/|grad G_k| >= -tol``; multipliers ``mu >= 0`` of
    the nearly active constraints by non-negative least squares on ``x = sum
    mu_k grad G_k / |grad G_k|``, stationarity residual ``<= tol``;
    complementarity ``mu_k |G_k|/|grad G_k| <= tol`` (all relative to
    ``max(1, |x|)``, tolerances `KKT_TOL`). Returns ``(passed, report)``.
    """
    import scipy.optimize

    scale = max(1.0, float(np.linalg.norm(x)))
    norms = np.linalg.norm(J, axis=1)
    if not (np.all(np.isfinite(G)) and np.all(np.isfinite(J))) or np.any(norms == 0):
        return False, "non-finite or zero constraint gradient at the point"
    dist = G / norms / scale
    feas = float(max(0.0, -np.min(dist)))
    active = np.abs(dist) <= 1e-6
    if not np.any(active):
        stat, comp = float(np.linalg.norm(x)) / scale, 0.0
    else:
        N = (J[active] / norms[active, None]).T
        mu, _ = scipy.optimize.nnls(N, x)
        stat = float(np.linalg.norm(x - N @ mu)) / scale
        comp = float(np.max(mu * np.abs(dist[active])))
    report = (f"KKT: feasibility {feas:.2g}, stationarity {stat:.2g}, complementarity "
              f"{comp:.2g} (tolerances {KKT_TOL['feasibility']:g}, "
              f"{KKT_TOL['stationarity']:g}, {KKT_TOL['complementarity']:g})")
    ok = (feas <= KKT_TOL["feasibility"] and stat <= KKT_TOL["stationarity"]
          and comp <= KKT_TOL["complementarity"])
    return ok, report


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

    `b1`, `b2` real (``+-inf`` allowed), ``rho`` in ``[-1, 1]`` (``+-1``:
    ``Y_2 = +-Y_1`` exactly). From `topopt.reliability.orthant` (relative
    error ``<= 1e-8`` estimated, in practice ``~1e-12``), so a tiny probability
    keeps its relative accuracy.

    Examples
    --------
    >>> import numpy as np, scipy.special as sp
    >>> from topopt.reliability.systems import ln_bivariate_upper
    >>> bool(abs(ln_bivariate_upper(3.0, 2.0, 0.0) - sp.log_ndtr(-3.0) - sp.log_ndtr(-2.0))
    ...      < 1e-12)
    True
    >>> ln_bivariate_upper(3.0, 2.0, 1.5)
    Traceback (most recent call last):
    ...
    ValueError: rho must be in [-1, 1], got 1.5
    """
    b = np.array([real("b1", b1, finite=False), real("b2", b2, finite=False)])
    r = real("rho", rho)
    if not -1.0 <= r <= 1.0:
        raise ValueError(f"rho must be in [-1, 1], got {r:g}")
    ln, _ = ln_orthant_error(b, np.array([[1.0, r], [r, 1.0]]), ORTHANT_RTOL)
    return float(ln[0])


def _pairs(b: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``P(Y_k >= b_k, Y_l >= b_l)`` for every pair (the diagonal ``P_k``)."""
    k = len(b)
    P = np.diag(sp.ndtr(-b))
    for i in range(k):
        for j in range(i + 1, k):
            ln, _ = ln_orthant_error([b[i], b[j]], R[np.ix_([i, j], [i, j])], ORTHANT_RTOL)
            P[i, j] = P[j, i] = np.exp(ln[0])
    return P


def _ln_first_order(kind: str, betas: np.ndarray, rho: np.ndarray) -> tuple[float, float]:
    """``ln pf`` and its estimated relative error from orthant probabilities.

    Parallel: ``P(Y >= beta)``. Series: ``sum_k P(Y_k >= beta_k, Y_l < beta_l,
    l < k)`` over the components by increasing beta (each term an upper orthant
    of ``(Y_k, -Y_l)``), positive terms without cancellation.
    """
    if kind == "parallel":
        ln, err = ln_orthant_error(betas, rho, ORTHANT_RTOL)
        return float(ln[0]), float(err[0])
    order = np.argsort(betas, kind="stable")
    b, R = betas[order], rho[np.ix_(order, order)]
    terms, errs = [], []
    for k in range(len(b)):
        idx = [k] + list(range(k))
        sign = np.r_[1.0, -np.ones(k)]
        ln, err = ln_orthant_error(sign * b[idx], R[np.ix_(idx, idx)] * np.outer(sign, sign),
                                   ORTHANT_RTOL)
        terms.append(ln[0])
        errs.append(err[0])
    terms = np.array(terms)
    top = np.max(terms)
    if not np.isfinite(top):
        return float(top), 0.0
    w = np.exp(terms - top)
    return float(top + np.log(np.sum(w))), float(np.sum(w * np.array(errs)) / np.sum(w))


def _inside(ln: float, bounds: tuple[float, float]) -> float:
    """`ln` clipped into ``[ln lower, ln upper]`` (the exact value lies there)."""
    lo, hi = bounds
    if lo > 0:
        ln = max(ln, float(np.log(lo)))
    if hi > 0:
        ln = min(ln, float(np.log(hi)))
    return ln


def _parallel_bounds(betas: np.ndarray, rho: np.ndarray) -> tuple[float, float]:
    """``(lower, upper)``: ``prod P_k`` (all correlations ``>= 0``, Slepian) or 0,
    and ``min_{k<l} P_kl``."""
    P = _pairs(betas, rho)
    upper = float(np.min(P[np.triu_indices(len(betas), 1)]))
    lower = float(np.exp(np.sum(sp.log_ndtr(-betas)))) if np.all(rho >= 0) else 0.0
    return min(lower, upper), upper


def ditlevsen_bounds(betas, rho) -> tuple[float, float]:
    """Ditlevsen's (1979) bounds ``(lower, upper)`` on a series system's pf.

    Parameters
    ----------
    betas : array_like, shape (K,)
        Reliability indices of the components (``+-inf`` allowed, no NaN).
    rho : array_like, shape (K, K)
        Their correlation matrix (symmetric, unit diagonal, entries in
        ``[-1, 1]``, positive semi-definite).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.reliability.systems import ditlevsen_bounds
    >>> lo, hi = ditlevsen_bounds(np.array([3.0, 3.0]), np.eye(2))   # independent
    >>> bool(abs(lo - hi) < 1e-15)                 # two components: exact
    True
    >>> ditlevsen_bounds([3.0, 3.0, 3.0], np.eye(2))
    Traceback (most recent call last):
    ...
    ValueError: rho has shape (2, 2); expected (3, 3), one row and column per component (3 components)
    """
    b, r = _bounds_args(betas, rho)
    order = np.argsort(b, kind="stable")            # decreasing P_k
    b, r = b[order], r[np.ix_(order, order)]
    P = _pairs(b, r)
    lower, upper = P[0, 0], P[0, 0]
    for k in range(1, len(b)):
        pkl = P[k, :k]
        lower += max(0.0, P[k, k] - np.sum(pkl))
        upper += P[k, k] - np.max(pkl)
    return float(lower), float(min(upper, 1.0))


def _bounds_args(betas, rho):
    b = _check_betas("betas", betas)
    R = check_correlation("rho", rho, len(b), what="component")
    return b, R
