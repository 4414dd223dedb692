r"""Gaussian orthant probabilities ``P(Y_i >= c_i, i = 1..K)``, ``K <= 5``, relative accuracy.

``Y ~ N(0, R)`` with a correlation matrix ``R`` (positive semi-definite; the
bounds ``c`` any reals, ``+-inf`` included). Conditioning on the first
variable, ``P = int_{c_1}^inf phi(y) P(Y' >= (c' - r y)/s | R') dy`` with the
partial correlations ``R'`` of the others and ``s = sqrt(1 - r^2)``; the
``K - 1`` nested one-dimensional integrals are Gauss-Legendre rules in a
variable ``p`` of a Gaussian (or exponential-edge) map ``y(p)`` around the
outer variable's peak: its place, slope and curvature come from the mode of
the whole orthant problem (a small QP solved over every active set), its
window is widened until the integrand at the window's edges is below
``exp(-EDGE)`` of the sum, and panel boundaries sit where a nearly degenerate
conditional variable makes the integrand steep (a cliff) or kinked. Every sum
is formed in logarithms, so ``1e-300`` keeps its relative accuracy as well as
``0.3``. The innermost level is the exact ``log_ndtr``; independent groups of
variables are a product. Correlations within ``DEGENERATE`` of ``+-1`` (after
conditioning too: singular matrices) merge two variables: ``Y_j = Y_i`` takes
the larger bound, ``Y_j = -Y_i`` bounds ``Y_i`` from above (a difference of
two orthants).

Accuracy: `ln_orthant_error` compares two orders (12, 18, 27, 40, 60 nodes
per level in turn, up to 40 for ``K = 5``) until they agree to ``rtol``
(1e-8) and returns the higher one. Why by hand: scipy's quasi-Monte-Carlo
``multivariate_normal.cdf`` is up to 7.6e-2 relative off on the system table
(3 components at beta 4.5-5.0) where this is 3e-14, and slower for ``K >= 3``
(130-265 ms per call against 4-300 ms); the figures, the worst cases found and
the cost per ``K`` are in ``scripts/benchmarks/benchmark_orthant.py`` and
``scripts/crosscheck/crosscheck_systems.py``.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.special as sp

from .. import ad
from .._validate import check_int, check_positive
from .checks import check_correlation

__all__ = ["ln_orthant", "ln_orthant_error"]

#: Correlations this close to +-1 merge two variables.
DEGENERATE = 1e-12
#: The model integrand is followed down to ``exp(-DROP)`` of its peak.
DROP = 40.0
#: ... and a window whose edge is above ``exp(-EDGE)`` of the integral is widened.
EDGE = 27.0
#: A conditional variable with ``s_j < CLIFF |r_j|`` is a cliff of the integrand
#: (the two-variable model is then ``phi`` alone, `_cliff_mode`); with ``s_j <
#: SMEAR |r_j|`` the transition (width ``9 s_j/|r_j|`` either side) gets panels.
CLIFF = 0.05
SMEAR = 0.5
_LN_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


@functools.lru_cache(maxsize=None)
def _gauss(n: int):
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * (x + 1.0), 0.5 * w


#: Gauss-Legendre orders tried in turn; the largest used for ``K`` dimensions.
ORDERS = (12, 18, 27, 40, 60)
_MAX_ORDER = {2: 60, 3: 60, 4: 60, 5: 40}
#: The most variables (the cost grows as ``n^(K-1)``).
MAX_K = 5


def ln_orthant_error(c, R, rtol: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    """``ln P(Y >= c)`` for rows of bounds `c` (shape ``(N, K)``) with an error estimate.

    Two successive orders of `ORDERS` are compared; rows whose difference in
    ``ln P`` (the relative error of ``P``) exceeds `rtol` go on to the next
    order, up to 60 nodes per level (40 for ``K = 5``). Returns the value of
    the higher order and ``|ln P_n - ln P_n'|`` of the last pair, an estimate
    of the relative error of ``P`` (a bound in practice: the order converges
    geometrically). `R` is a checked ``K x K`` correlation matrix.
    """
    c, R = _args(c, R)
    rtol = check_positive("rtol", rtol, "relative accuracy")
    top = _MAX_ORDER.get(c.shape[1], 60)
    value = _ln_upper(c, R, ORDERS[0])
    err = np.full(len(c), np.inf)
    todo = np.arange(len(c))
    for n in ORDERS[1:]:
        if n > top or todo.size == 0:
            break
        new = _ln_upper(c[todo], R, n)
        with np.errstate(invalid="ignore"):
            diff = np.where(np.isneginf(new) & np.isneginf(value[todo]), 0.0,
                            np.abs(new - value[todo]))
        value[todo], err[todo] = new, diff
        todo = todo[~(diff <= rtol)]
    return value, err


def ln_orthant(c, R, n: int = 27) -> np.ndarray:
    """``ln P(Y_i >= c_i for all i)``, ``Y ~ N(0, R)``, for each row of `c`.

    Parameters
    ----------
    c : array_like, shape (K,) or (N, K)
        Lower bounds, ``K <= 5`` (``-inf`` drops a variable, ``+inf`` gives
        ``-inf``; NaN is refused).
    R : array_like, shape (K, K)
        Correlation matrix (checked by `check_correlation`: symmetric, unit
        diagonal, entries in ``[-1, 1]``, positive semi-definite).
    n : int
        Gauss-Legendre nodes per level.

    Returns
    -------
    ndarray, shape (N,)

    Examples
    --------
    >>> import numpy as np, scipy.special as sp
    >>> from topopt.reliability.orthant import ln_orthant
    >>> R = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> round(float(np.exp(ln_orthant([0.0, 0.0], R)[0])), 12)  # 1/4 + asin(1/2)/(2 pi)
    0.333333333333
    """
    c, R = _args(c, R)
    return _ln_upper(c, R, check_int("n", n, 2, what="Gauss-Legendre nodes per level"))


def _args(c, R):
    """Bounds ``(N, K)`` (NaN refused, ``+-inf`` kept) and the checked correlation matrix."""
    if ad.is_traced(c) or ad.is_traced(R):
        raise TypeError("c and R are not differentiated here: pass plain values")
    arr = np.asarray(c)
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise TypeError(f"c must be a real array of bounds, got dtype {arr.dtype}")
    if arr.ndim not in (1, 2) or arr.shape[-1] == 0:
        raise ValueError(f"c must have shape (K,) or (N, K) with K >= 1, got {arr.shape}")
    cc = np.atleast_2d(arr.astype(float))
    if np.any(np.isnan(cc)):
        raise ValueError(f"c must not contain NaN (bounds may be +-inf); NaN at flat index "
                         f"{int(np.flatnonzero(np.isnan(cc.ravel()))[0])}")
    k = cc.shape[1]
    if k > MAX_K:
        raise ValueError(f"c has {k} variables; orthant probabilities are computed for up to "
                         f"{MAX_K} (use sampling beyond)")
    return cc, check_correlation("R", R, k, what="variable")


def _ln_upper(c: np.ndarray, R: np.ndarray, n: int) -> np.ndarray:
    """The recursion on rows ``c`` (N, k) sharing ``R`` (k, k)."""
    c = np.array(c, float)
    k = c.shape[1]
    if k == 0:
        return np.zeros(len(c))
    blocked = np.any(np.isposinf(c), axis=1)         # a bound +inf: probability 0
    if np.any(blocked):
        out = np.full(len(c), -np.inf)
        if not np.all(blocked):
            out[~blocked] = _ln_upper(c[~blocked], R, n)
        return out
    keep = ~np.all(np.isneginf(c), axis=0)          # -inf bounds: no constraint
    if not np.all(keep):
        return _ln_upper(c[:, keep], R[np.ix_(keep, keep)], n)
    if k == 1:
        return sp.log_ndtr(-c[:, 0])
    merged = _merge_degenerate(c, R, n)
    if merged is not None:
        return merged
    groups = _groups(R)
    if len(groups) > 1:                              # independent groups: a product
        return sum(_ln_upper(c[:, g], R[np.ix_(g, g)], n) for g in groups)
    i = _outer_index(c, R)
    order = np.r_[i, np.delete(np.arange(k), i)]
    c, R = c[:, order], R[np.ix_(order, order)]
    r = R[0, 1:]
    s = np.sqrt(np.maximum(1.0 - r * r, 0.0))
    Rc = (R[1:, 1:] - np.outer(r, r)) / np.outer(s, s)
    np.fill_diagonal(Rc, 1.0)
    Rc = np.clip(Rc, -1.0, 1.0)
    out = np.empty(len(c))
    rows, drop = np.arange(len(c)), DROP
    while rows.size:
        y, lw, edge, lq = _nodes(c[rows], R, r, s, Rc, n, drop)
        cc = (c[rows, None, 1:] - y[..., None] * r) / s
        if k == 2:                                   # the innermost level
            a = lw + sp.log_ndtr(-cc[..., 0])
        else:
            a = lw + _ln_upper(cc.reshape(-1, k - 1), Rc, n).reshape(y.shape)
        out[rows] = _logsumexp(a)
        if drop >= 4 * DROP:
            break
        # the integrand (without the Gauss weight) still above exp(-EDGE) of the
        # sum at a window edge: the window was too short, widen it
        with np.errstate(invalid="ignore"):
            ends = np.where(edge, a - lq, -np.inf)
        rows = rows[np.max(ends, axis=1) > out[rows] - EDGE]
        drop *= 2.0
    return out


def _groups(R: np.ndarray) -> list:
    """The connected groups of variables (``R_ij != 0`` links ``i`` and ``j``)."""
    k = len(R)
    link = R != 0.0
    seen, groups = np.zeros(k, bool), []
    for i in range(k):
        if seen[i]:
            continue
        group, front = {i}, [i]
        while front:
            j = front.pop()
            for l in np.flatnonzero(link[j]):
                if l not in group:
                    group.add(int(l))
                    front.append(int(l))
        seen[list(group)] = True
        groups.append(sorted(group))
    return groups


def _logsumexp(a: np.ndarray) -> np.ndarray:
    top = np.max(a, axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.sum(np.exp(a - safe[:, None]), axis=1))


def _outer_index(c: np.ndarray, R: np.ndarray) -> int:
    """The variable integrated first: the largest median bound (most restrictive)."""
    return int(np.argmax(np.median(np.maximum(c, -50.0), axis=0)))


def _merge_degenerate(c, R, n):
    """Two variables with correlation +-1: one of them, or a difference of two orthants."""
    k = c.shape[1]
    for i in range(k):
        for j in range(i + 1, k):
            if abs(R[i, j]) < 1.0 - DEGENERATE:
                continue
            rest = np.delete(np.arange(k), j)
            cr, Rr = c[:, rest], R[np.ix_(rest, rest)]
            if R[i, j] > 0:                          # Y_j = Y_i
                cr[:, 0 if i == 0 else list(rest).index(i)] = np.maximum(c[:, i], c[:, j])
                return _ln_upper(cr, Rr, n)
            col = list(rest).index(i)                # Y_j = -Y_i: c_i <= Y_i <= -c_j
            upper = cr.copy()
            upper[:, col] = np.maximum(c[:, i], -c[:, j])
            a, b = _ln_upper(cr, Rr, n), _ln_upper(upper, Rr, n)
            with np.errstate(divide="ignore", invalid="ignore"):
                d = np.where(np.isneginf(b), a, a + np.log1p(-np.exp(np.minimum(b - a, 0.0))))
            return np.where(np.isneginf(a), -np.inf, d)
    return None


def _model(y, c1r, r, s):
    """``ln f``, its first and second derivative for the model integrand
    ``phi(y) prod_j Phi((r_j y - c_j)/s_j)`` (the conditional marginals)."""
    x = (r * y[..., None] - c1r) / s                 # Phi(x_j)
    lp = sp.log_ndtr(x)
    mills = np.exp(-0.5 * x * x - _LN_SQRT_2PI - lp)  # phi(x)/Phi(x)
    a = r / s
    L = -0.5 * y * y - _LN_SQRT_2PI + np.sum(lp, axis=-1)
    d1 = -y + np.sum(a * mills, axis=-1)
    d2 = -1.0 - np.sum(a * a * mills * (x + mills), axis=-1)
    return L, d1, d2


def _marginal_mode(c1f, crest, r, s):
    """Mode, slope and curvature of the model ``phi(y) prod_j Phi((r_j y - c_j)/s_j)``."""
    crest = np.maximum(crest, -1e10)                 # -inf: no constraint
    y = np.maximum(c1f, 0.0)
    for _ in range(20):                # Newton on the concave model: the mode to 1e-3 sd
        _, d1, d2 = _model(y, crest, r, s)
        y_new = np.maximum(y + np.clip(-d1 / d2, -4.0, 4.0), c1f)
        moved, y = np.abs(y_new - y), y_new
        if np.all(moved * np.sqrt(-d2) < 1e-3):
            break
    _, d1, d2 = _model(y, crest, r, s)
    return y, np.maximum(-d1, 0.0) * (y <= c1f), np.maximum(-d2, 1.0)


@functools.lru_cache(maxsize=256)
def _subsets(key: bytes, k: int):
    """Per active set ``S`` (bit mask, the empty one included): ``R_SS^-1``, the
    regression ``R_rS R_SS^-1`` of the others and ``1/Var(Y_0 | Y_{S - 0})``."""
    R = np.frombuffer(key).reshape(k, k)
    out = []
    for mask in range(1 << k):
        S = [i for i in range(k) if mask >> i & 1]
        rest = [i for i in range(k) if not mask >> i & 1]
        if S:
            RSS = R[np.ix_(S, S)]
            if np.linalg.cond(RSS) > 1e10:
                continue
            inv = np.linalg.inv(RSS)
            reg = R[np.ix_(rest, S)] @ inv
        else:
            inv, reg = np.zeros((0, 0)), np.zeros((k, 0))
        other = [i for i in S if i != 0]
        var = 1.0 - (R[0, other] @ np.linalg.solve(R[np.ix_(other, other)], R[other, 0])
                     if other else 0.0)
        out.append((S, rest, inv, reg, 1.0 / max(var, 1e-300)))
    return out


def _orthant_mode(c: np.ndarray, R: np.ndarray):
    """The mode ``y*`` of ``N(0, R)`` on ``{y >= c}`` (all active sets tried; the
    KKT point of the convex QP is unique): ``y*_0``, the multiplier of
    ``y_0 >= c_0`` and the curvature ``1/Var(Y_0 | Y_active)``; NaN where no
    active set passes (singular ``R``)."""
    N, k = c.shape
    c = np.maximum(c, -1e10)
    y0, lam, q, V = np.full(N, np.nan), np.zeros(N), np.ones(N), np.full(N, np.nan)
    todo = np.ones(N, bool)
    tol = 1e-9 * (1.0 + np.max(np.abs(c), axis=1))
    for S, rest, inv, reg, curv in _subsets(np.ascontiguousarray(R).tobytes(), k):
        mu = c[:, S] @ inv
        yr = c[:, S] @ reg.T
        ok = todo & np.all(mu >= -tol[:, None], axis=1) & np.all(yr >= c[:, rest] - tol[:, None],
                                                                axis=1)
        if not np.any(ok):
            continue
        if 0 in S:
            y0[ok], lam[ok] = c[ok, 0], np.maximum(mu[ok, S.index(0)], 0.0)
        else:
            y0[ok] = yr[ok, rest.index(0)]
        q[ok] = curv
        V[ok] = 0.5 * np.sum(mu[ok] * c[ok][:, S], axis=1)
        todo &= ~ok
        if not np.any(todo):
            break
    return y0, lam, q, V


def _calibrated(c, r, s, Rc, y, lam, q, c1f, drop, exact: bool = False):
    """The curvature ``q`` lowered (secant steps on ``V``: the mode value, the
    exponent of the integrand's Laplace model, or with `exact` ``-ln`` of the
    two-variable integrand itself) until the window reaches ``V(y* + t) -
    V(y*) = DROP`` on both sides: past a change of the active set, or past a
    moderately steep conditional variable, ``V`` grows more slowly than its
    curvature at the mode says."""
    def V(y1):
        if exact:
            return -_model(y1, np.maximum(c[:, 1:], -1e10), r, s)[0]
        _, _, _, vc = _orthant_mode((c[:, 1:] - y1[:, None] * r) / s, Rc)
        return 0.5 * y1 * y1 + vc

    V0 = V(y)
    q_out = q.copy()
    for sign in (1.0, -1.0):
        qe = q.copy()
        for _ in range(4):
            if sign > 0:
                t = (np.sqrt(lam * lam + 2.0 * qe * drop) - lam) / qe
            else:
                t = np.minimum(np.sqrt(2.0 * drop / qe), np.where(lam > 0, 0.0, y - c1f))
            D = V(y + sign * t) - V0
            with np.errstate(invalid="ignore", divide="ignore"):
                qn = 2.0 * (D - sign * lam * t) / (t * t)
            short = np.isfinite(qn) & (t > 0) & (D < 0.9 * drop) & (qn < qe)
            if not np.any(short):
                break
            qe = np.where(short, np.maximum(qn, 1.0), qe)
        q_out = np.minimum(q_out, qe)
    return q_out


def _cliff_mode(c1f, c2, r, s):
    """Mode, slope and curvature of ``phi`` alone on the side of the cliff
    ``y = c2/r`` that the steep second variable allows (its edge is a panel
    boundary of `_nodes`): the curvature of ``phi(y) Phi((r y - c2)/s)`` at a
    mode on the cliff (``~ 1/s^2``) would shrink the window to the cliff."""
    yc = np.maximum(c2, -1e10) / r
    lo = c1f if r < 0 else np.maximum(c1f, yc)
    hi = np.where(r < 0, np.maximum(yc, c1f), np.inf)
    y = np.clip(0.0, lo, hi)
    lam = np.where((y == lo) & (lo > 0), lo, 0.0) * (y == c1f)
    return y, lam, np.ones_like(y)


def _kinks(c, r, s, Rc) -> list:
    """Where two conditional variables of correlation near ``+-1`` (merged or steep at
    the next level) swap which bound binds: ``c_i(y) = +-c_j(y)`` with ``c_i(y) =
    (c_i - r_i y)/s_i``; the integrand has a kink (or a rapid turn) there."""
    out = []
    k = len(Rc)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(k):
            for j in range(i + 1, k):
                if 1.0 - abs(Rc[i, j]) >= 0.0144:       # partial sd >= 0.12
                    continue
                sg = np.sign(Rc[i, j])
                den = r[i] / s[i] - sg * r[j] / s[j]
                if abs(den) < 1e-12:
                    continue
                ci, cj = np.maximum(c[:, 1 + i], -1e10), np.maximum(c[:, 1 + j], -1e10)
                out.append(((ci / s[i] - sg * cj / s[j]) / den)[:, None])
    return out


def _nodes(c: np.ndarray, R: np.ndarray, r, s, Rc, n: int, drop: float = DROP):
    """Nodes ``y`` (N, n) and log weights for ``int_{c_0}^inf phi(y) g(y) dy``.

    The mode ``y*`` of the whole orthant problem (`_orthant_mode`) gives the
    outer variable's peak, the slope ``lam >= 0`` of ``-ln f`` there (the
    multiplier of ``y_0 >= c_0``) and its curvature ``q >= 1``, so the drop
    ``d(t) = lam t + q t^2/2`` (``t = y - y*_0``). Gauss-Legendre nodes in ``u``
    with ``d = u^2 - u0^2`` (``u0 = lam/sqrt(2q)``, a Gaussian centred at the
    vertex of the model, linear in ``u``) while ``u0 < 1``, else in ``v`` with
    ``d = v^2`` (an exponential edge); both cover ``d <= DROP``, an interior
    mode also its left side down to ``c_0``. Rows without a mode (singular
    ``R``) use the product of the conditional marginals as the model.
    """
    c1f = np.maximum(c[:, 0], -40.0)
    if c.shape[1] == 2 and s[0] < CLIFF * abs(r[0]):
        y, lam, q = _cliff_mode(c1f, c[:, 1], r[0], s[0])
    elif c.shape[1] == 2:                            # the model is the integrand
        y, lam, q = _marginal_mode(c1f, c[:, 1:], r, s)
        q = _calibrated(c, r, s, Rc, y, lam, q, c1f, drop, exact=True)
    else:
        y, lam, q, _ = _orthant_mode(c, R)
        bad = np.isnan(y)
        if np.any(bad):
            y[bad], lam[bad], q[bad] = _marginal_mode(c1f[bad], c[bad, 1:], r, s)
        q = _calibrated(c, r, s, Rc, y, lam, q, c1f, drop)
    lam, q = lam[:, None], q[:, None]
    g = np.sqrt(2.0 / q)
    u0 = lam / np.sqrt(2.0 * q)
    gauss = u0 < 1.0
    # the window in the map's parameter p: Gaussian t = g p - lam/q, or the
    # exponential edge lam t + q t^2/2 = p^2 (p >= 0)
    interior = (lam == 0) & gauss
    p_lo = np.where(gauss, np.where(lam > 0, u0, -np.minimum(np.sqrt(drop),
                                                            (y - c1f)[:, None] / g)), 0.0)
    p_hi = np.where(gauss, np.sqrt(u0 * u0 + drop), np.sqrt(drop))
    y = y[:, None]

    def param(t):
        with np.errstate(invalid="ignore"):
            return np.where(gauss, (t + lam / q) / g,
                            np.sqrt(np.maximum(lam * t + 0.5 * q * t * t, 0.0)) * (t > 0))
    # a conditional variable with |r| close to 1 is a cliff of width s/|r| at
    # y = c_j/r_j: the window stops past it, and panels resolve its smear
    cliffs = []
    steep = np.flatnonzero(s < SMEAR * np.abs(r))
    for j in steep:
        yc = (np.maximum(c[:, 1 + j], -1e10) / r[j])[:, None]
        width = 9.0 * s[j] / abs(r[j])
        if r[j] < 0:                 # (not where the peak itself lies past the cliff)
            p_hi = np.where(yc + width > y, np.minimum(p_hi, param(yc + width - y)), p_hi)
        else:
            p_lo = np.where(yc - width < y, np.maximum(p_lo, param(yc - width - y)), p_lo)
        cliffs += [param(yc - width - y), param(yc - y), param(yc + width - y)]
    cliffs += [param(yk - y) for yk in _kinks(c, r, s, Rc)]
    p_hi = np.maximum(p_hi, p_lo)
    cuts = np.sort(np.clip(np.hstack([p_lo, *cliffs, p_hi]), p_lo, p_hi), axis=1)
    x, w = _gauss(n)
    a, b = cuts[:, :-1, None], cuts[:, 1:, None]          # panels (N, P, 1)
    pn = (a + (b - a) * x).reshape(len(y), -1)
    wn = ((b - a) * w).reshape(len(y), -1)
    t = g * pn - lam / q
    dt = np.broadcast_to(g, t.shape)
    if not np.all(gauss):
        root = np.sqrt(lam * lam + 2.0 * q * pn * pn)
        t_e = 2.0 * pn * pn / (root + lam)
        t = np.where(gauss, t, t_e)
        dt = np.where(gauss, dt, 2.0 * pn / np.where(gauss, 1.0, root))
    nodes = y + t
    with np.errstate(divide="ignore"):
        lw = np.log(wn * dt) - 0.5 * nodes * nodes - _LN_SQRT_2PI
    # window edges that are not the bound c_0: the right end, an interior left end
    edge = np.zeros(nodes.shape, bool)
    edge[:, -1] = True
    edge[:, 0] = interior[:, 0] & (cuts[:, 0] > -(y[:, 0] - c1f) / g[:, 0] + 1e-9)
    with np.errstate(divide="ignore"):
        return nodes, lw, edge, np.log(wn)
