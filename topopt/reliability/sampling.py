"""Sampling estimates of pf (validation, with standard errors) and CRN differences.

Monte Carlo and importance sampling centred at the MPP(s), optionally with a
smoothed indicator; `crn_directional_derivative` differences such an estimator
with common random numbers (a counting estimate is piecewise constant in the
design: its difference reads 0).

Workers. With ``executor=`` (any ``concurrent.futures.Executor``: a
``ProcessPoolExecutor``, ``distributed.Client(cluster).get_executor()``) the
samples are drawn here from `seed`, sent in tasks of ``chunk`` samples, and the
values put back in the order of the samples: the result is the serial one to
the last bit on any number of workers (a batched limit state: for the same
``chunk``, one batch call per task). The limit state must pickle, or be given
as a `topopt.parallel.Builder` (a module-level function and its arguments,
built once per worker process: a FE model with a factorization does not
pickle). The MPP search of ``"is"`` runs here. See `topopt.parallel`.

Examples
--------
>>> import numpy as np
>>> from concurrent.futures import ThreadPoolExecutor
>>> from topopt import reliability as rel
>>> def run(executor=None):                  # F = theta . p: exact ln Phi(-3) = -6.6077
...     return rel.sampling_estimate(np.dot, np.array([3.0, 4.0]), 15.0, "is",
...                                  n_samples=20000, seed=1, batch=True, m=2,
...                                  chunk=5000, executor=executor)
>>> with ThreadPoolExecutor(2) as ex:      # or ProcessPoolExecutor(2), a Dask executor
...     on_workers = run(ex)
>>> bool(on_workers.ln_pf == run().ln_pf), round(on_workers.ln_pf, 2)
(True, -6.61)
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import scipy.special as sp

from .. import ad
from ..fem.budget import check_samples
from ..parallel import Builder, _check_executor, _chunk_bounds, _pickled, _run_chunks, _ship
from .._validate import (check_callable, check_choice, check_finite_array, check_int,
                         check_positive, check_range, check_seed)
from .asymptotic import ReliabilityResult, _bound_result
from .base import SAMPLING, MPPError
from .limit_state import LimitState, _check_z, as_limit_state
from .mpp import _check_theta0_dim, _mpp_options, _solve_mpp

__all__ = ["sampling_estimate", "crn_directional_derivative", "CRNDerivative"]


def sampling_estimate(limit_state, design, z: float, method: str = "is", *,
                      n_samples: int = 100_000, seed: int | None = 0,
                      center: np.ndarray | None = None, smoothing: float = 0.0,
                      m: int | None = None, batch: bool = False, chunk: int | None = None,
                      executor=None, on_failure: str = "raise", **mpp_options) -> ReliabilityResult:
    r"""Monte Carlo (``"mc"``) or importance-sampling (``"is"``) estimate of pf.

    ``"mc"``: ``pf = mean 1{F(theta_k) >= z}``, ``theta_k ~ N(0, I)``.
    ``"is"``: samples ``theta_k = c + eps_k`` from ``N(c, I)`` centred at the
    MPP ``c = theta*`` (or `center`), weights ``w = exp(-c.theta + |c|^2/2)``,
    ``pf = mean w_k 1{F(theta_k) >= z}`` (sums in log space). With several
    centres ``c_j`` (all local MPPs of a `QuadraticLimitState` or of a multi-start
    search, or a 2-D `center`) the proposal is the equal-weight mixture of the
    ``N(c_j, I)`` and ``w = phi(theta) / mean_j phi(theta - c_j)``.

    With ``smoothing = s > 0`` the indicator is replaced by ``Phi((F - z)/s)``
    (the probability of ``F + s xi >= z`` with an independent ``xi ~ N(0,
    1)``), which makes the estimate a smooth function of the design for
    fixed samples -- see `crn_directional_derivative`.

    Parameters
    ----------
    limit_state, design, z
        As for `failure_probability` (plain values), or a `parallel.Builder`.
    method : {"mc", "is"}
    n_samples : int
        Number of samples, >= 1.
    seed : int or None
        Seed of ``numpy.random.default_rng`` (an integer >= 0); equal seeds
        give equal samples (common random numbers).
    center : ndarray, optional
        IS centre ``(m,)`` or centres ``(k, m)`` (default: the local MPPs at
        this design), finite, with ``m`` the number of random variables.
        Fix it for common random numbers. ``"is"`` only.
    smoothing : float
        Width ``s >= 0`` of the smoothed indicator; 0 counts failures.
    m, batch, chunk, executor
        Number of variables; vectorised limit state; samples per batch call
        and per task (default 16384 batched, else ``ceil(N/64)``); None or a
        ``concurrent.futures.Executor`` for the values (module docstring).
    on_failure, **mpp_options
        For the MPP search of ``"is"`` (``"mc"`` takes only ``theta0``, for
        the dimension); with ``"bound"`` an unreachable failure region gives
        ``LN_PF_FLOOR``.

    Raises
    ------
    ValueError, TypeError
        Before any sample is drawn, naming the argument and its range.

    Returns
    -------
    ReliabilityResult
        ``ln_pf`` with ``ln_pf_std`` = std(``w 1``)/(``pf sqrt(N)``) (delta
        method), ``pf``, ``pf_std``, ``n_failures``; no failures: ``ln_pf =
        -inf``, ``ln_pf_std = inf`` and ``info["pf_upper_95"] = 3/N`` (MC).
        ``log_terms`` holds the per-sample ``ln(w_k 1_k)``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import reliability as rel
    >>> F = lambda t, p: t @ p                 # exact: ln Phi(-3) = -6.6077
    >>> r = rel.sampling_estimate(F, np.array([3.0, 4.0]), 15.0, "is",
    ...                           n_samples=20000, seed=1, batch=True, m=2)
    >>> abs(r.ln_pf - (-6.6077)) < 3 * r.ln_pf_std
    True
    """
    z, n_samples, smoothing, chunk, executor = _sampling_args(
        method, design, z, n_samples, seed, smoothing, chunk, executor, on_failure)
    ls, q, opts, center, remote, chunk = _sampling_setup(
        limit_state, design, method, center, m, batch, chunk, executor, mpp_options)
    result = ReliabilityResult(method, 0.0, 0.0, n_samples=n_samples)
    if method == "is" and center is None:
        center, bound = _mpp_centers(ls, q, z, opts, on_failure, result)
        if bound is not None:
            return bound
    thetas, logw = _draw(ls, q, method, center, opts["theta0"], n_samples, seed, result)
    Fv = _values_on(executor, remote, ls, q, thetas, chunk)
    return _summarize(result, Fv, logw, z, smoothing)


def _sampling_setup(limit_state, design, method, center, m, batch, chunk, executor,
                    mpp_options):
    """`_sampling_problem` of a limit state or its `Builder` (built here, cached), with
    the default `chunk`, and what a worker gets: the builder or the pickled limit state
    (``None`` without executor); everything a worker needs pickles, checked before work."""
    remote = limit_state if isinstance(limit_state, Builder) else None
    if remote is not None:
        limit_state = remote.build()
    ls, q, opts, center = _sampling_problem(limit_state, design, method, center, m, batch,
                                            mpp_options)
    if chunk is None and (ls.batch or executor is None):
        chunk = 16384
    if executor is None:
        return ls, q, opts, center, None, chunk
    remote = _ship(ls if remote is None else remote, "limit_state")
    _pickled("design", q)
    return ls, q, opts, center, remote, chunk


def _values_on(executor, remote, ls, q, thetas: np.ndarray, chunk: int | None) -> np.ndarray:
    """``F`` at the rows of `thetas`: here, or by tasks of `chunk` rows on `executor`
    (in order). A batched limit state gets one batch call per task, the pieces of
    the serial ``values(..., chunk=chunk)``: the same values to the last bit.
    """
    if executor is None:
        return ls.values(thetas, *q, chunk=chunk)
    batch = ls.batch
    bounds = _chunk_bounds(len(thetas), chunk, "chunk")
    payloads = [(q, thetas[a:b], chunk if batch else b - a, batch) for a, b in bounds]
    parts = _run_chunks(remote, _values_task, payloads, executor)
    return np.concatenate(parts) if parts else np.zeros(0)


def _values_task(ls, payload) -> np.ndarray:
    """One task on a worker: the limit state's values at a block of samples."""
    q, thetas, chunk, batch = payload
    if not isinstance(ls, LimitState):            # a Builder of a plain F(theta, design)
        ls = LimitState(ls, batch=batch)
    return ls.values(thetas, *q, chunk=chunk)


def _sampling_args(method, design, z, n_samples, seed, smoothing, chunk, executor,
                   on_failure):
    """The scalar arguments of `sampling_estimate`, checked in order."""
    check_choice("method", method, SAMPLING)
    if any(ad.is_traced(x) for x in (design, z)):
        raise ad.NoRuleError(f"method {method!r} is not differentiable; see "
                             "crn_directional_derivative")
    z = _check_z(z)
    n_samples = check_int("n_samples", n_samples, 1)
    check_seed("seed", seed)
    smoothing = check_range("smoothing", smoothing, 0.0, None,
                            what="width of the smoothed indicator; 0 counts")
    if chunk is not None:
        chunk = check_int("chunk", chunk, 1, what="samples per batch call and per task")
    check_choice("on_failure", on_failure, ("raise", "bound"))
    return z, n_samples, smoothing, chunk, _check_executor(executor)


def _sampling_problem(limit_state, design, method, center, m, batch, mpp_options):
    """``(ls, q, opts, center)``: the limit state, its parameters, the MPP options and
    the IS centre(s), each checked against the others."""
    opts = _mpp_options(mpp_options)
    ls = as_limit_state(limit_state, m=m, batch=batch)
    if center is not None:
        center = _check_center(center, method, ls.m, opts["theta0"])
    if method == "mc" and set(mpp_options) - {"theta0"}:
        raise TypeError(f"MPP options {sorted(set(mpp_options) - {'theta0'})} do not apply "
                        "to method='mc' (no MPP search)")
    q = tuple(ls.params(design))
    _check_theta0_dim(opts, ls.dimension(q))
    if center is not None and ls.dimension(q) not in (None, center.shape[1]):
        raise ValueError(f"center has {center.shape[1]} columns but the limit state has "
                         f"m = {ls.dimension(q)} random variables")
    return ls, q, opts, center


def _mpp_centers(ls, q, z, opts, on_failure: str, result: ReliabilityResult):
    """``(centres, None)``: the local MPPs as IS centres ``(k, m)``, their data put in
    `result`; or ``(None, bound)`` for an unreachable failure region (``"bound"``)."""
    try:
        mpp = _solve_mpp(ls, q, z, opts)
    except MPPError as err:
        if on_failure == "raise" or err.reason != "unreachable":
            raise
        return None, _bound_result(ls, q, z, "is", err)
    result.beta, result.multiplier, result.mpp_result = mpp.beta, mpp.multiplier, mpp
    return np.array([mpp.theta] + [o.theta for o in mpp.others]), None


def _draw(ls, q, method, center, theta0, n_samples, seed, result: ReliabilityResult):
    """``(thetas, ln w)``: the samples and their log weights (0 for ``"mc"``)."""
    dim = ls.dimension(q) if center is None else np.shape(np.atleast_2d(center))[1]
    if dim is None:
        dim = None if theta0 is None else np.size(theta0)
    if dim is None:
        raise ValueError("the number m of random variables is unknown: pass m=")
    check_samples(n_samples, dim, f"n_samples = {n_samples}")      # drawn at once
    rng = np.random.default_rng(seed)
    eps = rng.standard_normal((int(n_samples), int(dim)))
    if method != "is":
        return eps, np.zeros(len(eps))
    c = np.atleast_2d(np.asarray(center, float))
    result.mpp = c[0]
    result.info["centers"] = c
    if len(c) == 1:
        thetas = eps + c[0]
        return thetas, -(thetas @ c[0]) + 0.5 * (c[0] @ c[0])
    thetas = eps + c[rng.integers(len(c), size=len(eps))]
    # log phi(theta) - log mean_j phi(theta - c_j)
    expo = thetas @ c.T - 0.5 * np.sum(c * c, axis=1)
    top_ = np.max(expo, axis=1)
    return thetas, -(top_ + np.log(np.mean(np.exp(expo - top_[:, None]), axis=1)))


def _summarize(result: ReliabilityResult, Fv, logw, z: float, smoothing: float):
    """`result` with ``ln pf = ln mean(w 1)`` (log space) and its standard errors."""
    if smoothing > 0:
        logind = sp.log_ndtr((Fv - z) / smoothing)
    else:
        logind = np.where(Fv >= z, 0.0, -np.inf)
    logc = logw + logind
    n = len(logc)
    result.n_failures = int(np.sum(Fv >= z))
    result.log_terms = logc
    top = np.max(logc) if n else -np.inf
    if not np.isfinite(top):
        result.ln_pf, result.pf = -np.inf, 0.0
        result.ln_pf_std, result.pf_std = np.inf, 0.0
        result.info["pf_upper_95"] = 3.0 / max(n, 1)
        return result
    ratio = np.exp(logc - top)
    mean_ratio = np.mean(ratio)
    result.ln_pf = float(top + np.log(mean_ratio))
    result.pf = float(np.exp(result.ln_pf))
    rel_terms = ratio / mean_ratio                # c_k / pf, mean 1
    result.ln_pf_std = float(np.std(rel_terms, ddof=1) / np.sqrt(n)) if n > 1 else np.inf
    result.pf_std = result.pf * result.ln_pf_std
    return result


def _check_center(center, method: str, m: int | None, theta0) -> np.ndarray:
    """The IS centre(s) as a ``(k, m)`` array; its length must match `m`."""
    if method != "is":
        raise TypeError(f"center is only used by method='is', not {method!r}")
    c = check_finite_array("center", center)
    if c.ndim not in (1, 2) or c.size == 0:
        raise ValueError(f"center must have shape (m,) or (k, m), got {c.shape}")
    c = np.atleast_2d(c)
    for name, dim in (("m", m), ("theta0", None if theta0 is None else theta0.size)):
        if dim is not None and c.shape[1] != dim:
            raise ValueError(f"center has {c.shape[1]} coordinates per centre but {name} "
                             f"gives m = {dim} random variables")
    return c


class CRNDerivative(NamedTuple):
    """A common-random-numbers central difference and its standard error."""

    value: float
    std_error: float
    plus: float
    minus: float


def crn_directional_derivative(estimator: Callable, design, direction, h: float = 1e-3,
                               seed: int = 0) -> CRNDerivative:
    r"""Central difference of a stochastic estimator with common random numbers.

    Evaluates ``estimator(design +- h*direction, seed)`` with the *same*
    `seed`, so both use the same samples and the noise cancels in the
    difference: ``(E(p + h d) - E(p - h d)) / (2h)``. The estimator returns
    ``ln pf`` as a float or a `ReliabilityResult`; for results with equal
    ``log_terms`` lengths the standard error of the difference is estimated
    per sample, ``u_k = (c+_k/pf+ - c-_k/pf-)/(2h)`` (delta method for the
    difference of logs).

    *Why a counting estimate cannot be differentiated.*
    With fixed samples, ``mean 1{F(theta_k; p) >= z}`` changes only when a
    sample crosses ``F = z``: it is piecewise constant in ``p``. Its central
    difference is exactly 0 for small ``h`` (and O(1/(N h)) noise for larger
    ``h``), whatever the true derivative. A useful derivative needs a smooth
    estimator: the asymptotic methods (`ln_pf`), or a smoothed indicator
    ``Phi((F - z)/s)`` (``smoothing=s`` in `sampling_estimate`) with a fixed
    IS centre, differenced here with common random numbers.

    Parameters
    ----------
    estimator : callable
        ``estimator(design, seed) -> float or ReliabilityResult``.
    design, direction : ndarray
    h : float
    seed : int

    Returns
    -------
    CRNDerivative
        ``(value, std_error, plus, minus)``; ``std_error`` is NaN-free (``inf``
        when it cannot be estimated); with no failures on either side the
        value is 0.

    Examples
    --------
    Counting MC reads 0, while ``d ln pf/dp_0 = 2.85`` here (FORM is exact):

    >>> import numpy as np
    >>> from topopt import reliability as rel
    >>> F = lambda t, p: t @ p
    >>> p, d = np.array([0.6, 0.8]), np.array([1.0, 0.0])
    >>> mc = lambda p, seed: rel.sampling_estimate(F, p, 2.0, "mc", n_samples=20000,
    ...                                            seed=seed, batch=True, m=2)
    >>> float(rel.crn_directional_derivative(mc, p, d, h=1e-6).value)
    0.0
    >>> c = rel.find_mpp(F, p, 2.0, m=2).theta          # IS centre, fixed
    >>> smooth = lambda p, seed: rel.sampling_estimate(
    ...     F, p, 2.0, "is", n_samples=20000, seed=seed, center=c, smoothing=0.02,
    ...     batch=True)
    >>> r = rel.crn_directional_derivative(smooth, p, d, h=1e-4)
    >>> from scipy.special import log_ndtr
    >>> exact = 2.0 * 0.6 * np.exp(-2.0 - 0.5 * np.log(2 * np.pi) - log_ndtr(-2.0))
    >>> bool(abs(r.value - exact) < 4 * r.std_error + 0.02)
    True
    """
    check_callable("estimator", estimator)
    design = check_finite_array("design", design)
    direction = check_finite_array("direction", direction, shape=design.shape)
    h = check_positive("h", h, "step of the central difference")
    check_seed("seed", seed)
    plus = estimator(design + h * direction, seed)
    minus = estimator(design - h * direction, seed)
    lp = plus.ln_pf if isinstance(plus, ReliabilityResult) else float(plus)
    lm = minus.ln_pf if isinstance(minus, ReliabilityResult) else float(minus)
    if lp == lm:                                  # includes both -inf (no failures)
        value = 0.0
    else:
        value = (lp - lm) / (2 * h)
    return CRNDerivative(float(value), _crn_std_error(plus, minus, lp, lm, h), float(lp),
                         float(lm))


def _crn_std_error(plus, minus, lp: float, lm: float, h: float) -> float:
    """Per-sample standard error of the difference of logs (``inf`` if unknown)."""
    if (isinstance(plus, ReliabilityResult) and isinstance(minus, ReliabilityResult)
            and plus.log_terms is not None and minus.log_terms is not None
            and len(plus.log_terms) == len(minus.log_terms) > 1
            and np.isfinite(lp) and np.isfinite(lm)):
        n = len(plus.log_terms)
        u = (np.exp(plus.log_terms - lp - np.log(n)) * n
             - np.exp(minus.log_terms - lm - np.log(n)) * n) / (2 * h)
        return float(np.std(u, ddof=1) / np.sqrt(n))
    return np.inf
