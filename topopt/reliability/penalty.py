"""The penalty ``K max(ln pf - ln pa, 0)^2`` on a too large failure probability."""

from __future__ import annotations

import numpy as np

from .. import ad
from .._validate import check_array_range
from ..ad.rulekit import _unbroadcast

__all__ = ["failure_penalty"]


@ad.primitive
def failure_penalty(ln_pf, ln_pa, K=1.0):
    """``K * max(ln_pf - ln_pa, 0)**2``: the penalty on a too large ``pf``.

    Elementwise over broadcast arrays; ``ln_pf = -inf`` gives 0 (no NaN).
    Differentiable in all three arguments (`ad.primitive` with reverse and
    forward rules; the pullback is ``failure_penalty_pullback``).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad, reliability as rel
    >>> round(float(rel.failure_penalty(np.log(1e-3), np.log(1e-4), 2.0)), 4)  # 2 ln(10)^2
    10.6038
    >>> float(ad.gradient(lambda l: rel.failure_penalty(l, -5.0, 2.0), -4.0))
    4.0
    >>> float(rel.failure_penalty(-np.inf, -5.0, 2.0))
    0.0

    Raises
    ------
    ValueError
        If `ln_pf` has NaN or ``+inf``, `ln_pa` is not finite and ``<= 0``
        (a probability ``pa`` in (0, 1]) or `K` is not finite and ``>= 0``.
    """
    _penalty_args(ln_pf, ln_pa, K)
    d = np.maximum(np.asarray(ln_pf, float) - ln_pa, 0.0)
    return K * d * d


def _penalty_args(ln_pf, ln_pa, K) -> None:
    """Ranges of `failure_penalty`'s arguments (traced values are looked at, not converted)."""
    _, hi = check_array_range("ln_pf", ln_pf)
    if hi == np.inf:
        raise ValueError("ln_pf must be < inf (the log of a probability estimate), got inf")
    lo, hi = check_array_range("ln_pa", ln_pa, None, 0.0,
                               what="the log of the allowed failure probability pa in (0, 1]")
    if lo == -np.inf:
        raise ValueError("ln_pa must be finite (pa > 0), got -inf")
    lo, hi = check_array_range("K", K, 0.0, None, what="penalty weight")
    if hi == np.inf:
        raise ValueError("K must be finite, got inf")


@ad.rrule(failure_penalty)
def _failure_penalty_rrule(ln_pf, ln_pa, K=1.0):
    _penalty_args(ln_pf, ln_pa, K)
    d = np.maximum(ln_pf - ln_pa, 0.0)
    y = K * d * d

    def failure_penalty_pullback(ybar):
        t = 2 * K * d * ybar
        return (_unbroadcast(t, np.shape(ln_pf)), _unbroadcast(-t, np.shape(ln_pa)),
                _unbroadcast(d * d * ybar, np.shape(K)))
    return y, failure_penalty_pullback


@ad.frule(failure_penalty)
def _failure_penalty_frule(primals, tangents):
    ln_pf, ln_pa, K = (tuple(primals) + (1.0,))[:3]
    tangents = (tuple(tangents) + (None,))[:3]
    _penalty_args(ln_pf, ln_pa, K)
    d = np.maximum(ln_pf - ln_pa, 0.0)
    ydot = None
    for t, coef in ((tangents[0], 2 * K * d), (tangents[1], -2 * K * d), (tangents[2], d * d)):
        if t is not None:
            term = coef * t
            ydot = term if ydot is None else ydot + term
    return K * d * d, ydot
