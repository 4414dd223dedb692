r"""Subset simulation (Au & Beck 2001): rare events without an MPP.

``pf = P(F >= z)`` is written as a product of conditional probabilities of
nested events ``F >= b_1``, ``F >= b_2 | F >= b_1``, ... with intermediate
thresholds ``b_i`` chosen so that each level's conditional probability is
``p0`` (Au & Beck 2001, eq. 1). Level 0 is plain Monte Carlo with ``N``
samples; the ``N p0`` samples with the largest ``F`` seed ``N p0`` Markov
chains of length ``1/p0`` that sample ``N(0, I)`` conditioned on ``F >= b_i``
by the *modified Metropolis* algorithm (component-wise Gaussian proposals
``xi_j = theta_j + w eps``, each accepted with probability ``min(1,
phi(xi_j)/phi(theta_j))``, the whole candidate accepted only when ``F >=
b_i``; Au & Beck 2001, section 4). It stops at the first level whose
``(1 - p0)`` quantile reaches ``z``, where ``P(F >= z | F >= b_last)`` is
counted.

Coefficient of variation (Au & Beck 2001, eqs. 27-29): level ``i`` with
conditional probability ``p_i`` has ``delta_i^2 = (1 - p_i)/(N p_i) (1 +
gamma_i)``, ``gamma_0 = 0`` and, for the chain levels, ``gamma_i = 2 sum_{k=1}^{
N_s - 1} (1 - k/N_s) rho_i(k)`` with ``N_s = 1/p0`` the chain length and
``rho_i(k)`` the lag-``k`` correlation of the level's indicator along the
chains, estimated from the samples. ``delta^2 = sum_i delta_i^2`` (levels
taken uncorrelated, as in the paper); reported as ``ln_pf_std`` (the delta
method: std of ``ln pf`` = CoV of ``pf``). The levels share their seeds, so
this under-reports somewhat (20 runs at ``beta = 5``, ``N = 1000`` in 10-D:
spread of ``ln pf`` 0.62 against a mean reported 0.43); ``info["cov_upper"] =
sum_i delta_i`` is the fully-correlated upper bound (Au & Beck 2001, eq. 30).
"""

from __future__ import annotations

import numpy as np

from .. import ad
from .._validate import check_int, check_positive, check_range, check_seed
from ..fem.budget import check_samples
from .asymptotic import ReliabilityResult
from .base import ReliabilityError
from .limit_state import _check_z, as_limit_state

__all__ = ["subset_simulation"]


def subset_simulation(limit_state, design, z: float, *, n_per_level: int = 2000,
                      p0: float = 0.1, seed: int | None = 0, max_levels: int = 30,
                      proposal_width: float = 1.0, m: int | None = None,
                      batch: bool = False, chunk: int = 16384) -> ReliabilityResult:
    """Subset-simulation estimate of ``pf = P(F(theta, design) >= z)``.

    Parameters
    ----------
    limit_state : callable or LimitState
        ``F(theta, design)``; a `TransformedLimitState` for physical inputs.
    design : array_like or None
        Plain design.
    z : float
        Threshold.
    n_per_level : int
        Samples per level ``N`` (``N p0`` and ``1/p0`` must be integers).
    p0 : float
        Conditional probability per level, in (0, 0.5].
    seed : int or None
        Seed of ``numpy.random.default_rng``.
    max_levels : int
        Levels before giving up (a `ReliabilityError`).
    proposal_width : float
        Standard deviation ``w`` of the component-wise Gaussian proposal.
    m, batch, chunk
        As for `sampling_estimate`.

    Returns
    -------
    ReliabilityResult
        ``method="subset"``, ``ln_pf``, ``ln_pf_std`` (= CoV ``delta``),
        ``n_samples`` (limit-state evaluations); ``info["levels"]`` lists
        ``(threshold, p_i, delta_i, gamma_i, acceptance)`` per level and
        ``info["cov_upper"]`` the upper bound ``sum_i delta_i`` of the CoV.

    Examples
    --------
    >>> import numpy as np, scipy.special as sp
    >>> from topopt import reliability as rel
    >>> F = lambda t, d: t @ np.array([0.6, 0.8])       # beta = 4
    >>> r = rel.subset_simulation(F, None, 4.0, m=2, batch=True, seed=2)
    >>> bool(abs(r.ln_pf - sp.log_ndtr(-4.0)) < 3 * r.ln_pf_std)
    True
    """
    if ad.is_traced(design) or ad.is_traced(z):
        raise ad.NoRuleError("subset_simulation is a counting estimator; it is not "
                             "differentiated")
    z = _check_z(z)
    N = check_int("n_per_level", n_per_level, 10, what="samples per level")
    p0 = check_range("p0", p0, 0.0, 0.5, lo_open=True, what="conditional probability "
                     "per level")
    n_chains = int(round(N * p0))
    n_steps = int(round(1.0 / p0))
    if abs(n_chains - N * p0) > 1e-9 or abs(n_steps - 1.0 / p0) > 1e-9 \
            or n_chains * n_steps != N:
        raise ValueError(f"n_per_level * p0 and 1/p0 must be integers (N = N p0 chains of "
                         f"length 1/p0); got n_per_level={N}, p0={p0:g}")
    check_seed("seed", seed)
    max_levels = check_int("max_levels", max_levels, 1)
    width = check_positive("proposal_width", proposal_width, "proposal standard deviation")
    chunk = check_int("chunk", chunk, 1, what="samples per batch call")
    ls = as_limit_state(limit_state, m=m, batch=batch)
    q = tuple(ls.params(design))
    dim = ls.dimension(q)
    if dim is None:
        raise ValueError("the number m of random variables is unknown: pass m=")
    check_samples(N, dim, f"n_per_level = {N}")        # one level's samples at once
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((N, dim))
    F = ls.values(theta, *q, chunk=chunk)
    return _levels(ls, q, z, rng, theta, F, n_chains, n_steps, width, max_levels, chunk)


def _levels(ls, q, z, rng, theta, F, n_chains, n_steps, width, max_levels, chunk):
    """The level loop: thresholds, chains, conditional probabilities and CoVs."""
    N = len(F)
    levels, ln_pf, delta2, evals = [], 0.0, 0.0, N
    chain_F = None                 # (n_steps, n_chains) values of the chain level
    accept = np.nan
    for _ in range(max_levels):
        order = np.argsort(-F, kind="stable")
        b = F[order[n_chains - 1]]                  # the (1 - p0) sample quantile
        final = b >= z
        thr = z if final else b
        p = float(np.mean(F >= thr))
        if p == 0.0:
            raise ReliabilityError("subset simulation: no sample reached the final "
                                   "threshold (raise n_per_level)")
        gamma = 0.0 if chain_F is None else _gamma(chain_F >= thr, p)
        d2 = (1 - p) / (N * p) * (1 + gamma)
        levels.append((float(thr), p, float(np.sqrt(d2)), float(gamma), float(accept)))
        ln_pf += np.log(p)
        delta2 += d2
        if final:
            res = ReliabilityResult("subset", float(ln_pf), float(np.exp(ln_pf)),
                                    ln_pf_std=float(np.sqrt(delta2)), n_samples=evals)
            res.pf_std = res.pf * res.ln_pf_std
            res.info["levels"] = levels
            res.info["cov_upper"] = float(sum(lv[2] for lv in levels))
            return res
        seeds = order[:n_chains]
        theta, chain_F, accept, n_eval = _chains(ls, q, b, rng, theta[seeds], F[seeds],
                                                 n_steps, width, chunk)
        F = chain_F.reshape(-1)
        evals += n_eval
    raise ReliabilityError(f"subset simulation did not reach z = {z:g} in {max_levels} "
                           f"levels (last threshold {levels[-1][0]:.6g}); pf < "
                           f"p0^{max_levels}, or F is bounded below z")


def _chains(ls, q, b, rng, start, F_start, n_steps, width, chunk):
    """Modified Metropolis chains conditioned on ``F >= b``, all advanced together.

    Returns ``(samples (n_steps * n_chains, m), F (n_steps, n_chains),
    acceptance rate, evaluations)``, step-major.
    """
    state, Fs = start.copy(), F_start.copy()
    thetas, Fvals, accepted, evals = [state], [Fs], 0, 0
    for _ in range(n_steps - 1):
        xi = state + width * rng.standard_normal(state.shape)
        # component-wise acceptance: min(1, phi(xi)/phi(theta))
        ratio = np.exp(-0.5 * (xi * xi - state * state))
        cand = np.where(rng.random(state.shape) < ratio, xi, state)
        moved = np.any(cand != state, axis=1)
        Fc = Fs.copy()
        if np.any(moved):
            Fc[moved] = ls.values(cand[moved], *q, chunk=chunk)
            evals += int(np.sum(moved))
        ok = moved & (Fc >= b)
        state = np.where(ok[:, None], cand, state)
        Fs = np.where(ok, Fc, Fs)
        accepted += int(np.sum(ok))
        thetas.append(state)
        Fvals.append(Fs)
    rate = accepted / max(1, (n_steps - 1) * len(start))
    return np.concatenate(thetas), np.stack(Fvals), rate, evals


def _gamma(ind: np.ndarray, p: float) -> float:
    """``gamma = 2 sum_k (1 - k/N_s) rho(k)`` from indicators ``(N_s, N_c)`` (eq. 29)."""
    n_steps, n_chains = ind.shape
    x = ind.astype(float)
    R0 = p * (1 - p)
    if R0 <= 0 or n_steps < 2:
        return 0.0
    gamma = 0.0
    for k in range(1, n_steps):
        Rk = np.sum(x[:-k] * x[k:]) / (n_chains * (n_steps - k)) - p * p
        gamma += 2.0 * (1.0 - k / n_steps) * Rk / R0
    return float(gamma)
