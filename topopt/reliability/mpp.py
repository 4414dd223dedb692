"""The most probable failure point (MPP): ``argmin 1/2|theta|^2 s.t. F(theta) >= z``.

Improved HL-RF with an Armijo search (Zhang & Der Kiureghian 1995), scipy's
SLSQP as the fallback, damped Newton on the KKT system ``theta = lam grad F,
F = z`` as the polish, and the checks that reject a KKT point that is not a
local minimum. A limit state with an exact solver (`QuadraticLimitState`)
skips the search.

What the multi-start search can miss: it finds the failure regions whose
MPP the search reaches from one of its starts -- the origin, the mirror
image ``-theta1`` of the first MPP and, with ``n_starts="auto"`` in up to
``AUTO_STARTS_MAX_M = 3`` variables (or ``n_starts = k`` in any), the
points ``+-|theta1| e_i`` on the coordinate axes. A second region that is
not the mirror image of the first, in more than 3 variables, is found only
if the search from ``-theta1`` happens to lead to it: pass ``n_starts =
2 m + 1`` (every axis) or starts of your own (``theta0``) when such regions
may exist. Regions in oblique directions that no start leads to are not
found by any setting; use sampling (``"is"`` with the MPPs found, or
`subset_simulation`) to check.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validate import check_bool, check_choice, check_finite_array, check_int, check_positive
from .base import MPPError
from .limit_state import LimitState, _check_z, _tangent_basis, as_limit_state

__all__ = ["MPPResult", "find_mpp"]


@dataclass
class MPPResult:
    """A most probable failure point and its KKT data.

    Attributes
    ----------
    theta : ndarray
        ``theta*``.
    multiplier : float
        ``lam`` with ``theta* = lam grad F(theta*)``.
    beta : float
        Signed reliability index ``sign(lam) |theta*|``.
    value, grad : float, ndarray
        ``F`` and ``grad_theta F`` at ``theta*``.
    converged : bool
    solver : str
        ``"hlrf"``, ``"slsqp"``, ``"exact"`` (quadratic), plus ``"+newton"``
        when the KKT system was polished by Newton's method.
    iterations : int
    kkt_residual : float
        ``max(|theta - lam grad F|, |F - z|/|grad F|) / max(1, |theta|)``.
    hessian : ndarray or None
        ``grad_theta^2 F(theta*)`` when computed.
    others : list of MPPResult
        Further local MPPs (exact quadratic solver only), added by the
        FORM/SORM/LDT-prefactor estimates.
    """

    theta: np.ndarray
    multiplier: float
    beta: float
    value: float
    grad: np.ndarray
    converged: bool
    solver: str
    iterations: int
    kkt_residual: float
    hessian: np.ndarray | None = None
    others: list = field(default_factory=list)
    info: dict = field(default_factory=dict)


_MPP_DEFAULTS = dict(theta0=None, tol=1e-10, max_iter=200, solver="auto",
                     polish=True, max_radius=40.0, n_starts="auto")
#: ``n_starts="auto"``: every coordinate start up to this many random variables,
#: the mirror start only above (``scripts/benchmarks/benchmark_multistart.py``).
AUTO_STARTS_MAX_M = 3


def _mpp_options(options: dict) -> dict:
    """The MPP options with defaults, each checked (name and accepted range)."""
    unknown = set(options) - set(_MPP_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown MPP options {sorted(unknown)}; "
                        f"known: {sorted(_MPP_DEFAULTS)}")
    opts = {**_MPP_DEFAULTS, **options}
    if opts["theta0"] is not None:
        opts["theta0"] = check_finite_array("theta0", opts["theta0"])
        if opts["theta0"].ndim != 1 or opts["theta0"].size == 0:
            raise ValueError(f"theta0 must be a 1-D array of m values, got shape "
                             f"{opts['theta0'].shape}")
    opts["tol"] = check_positive("tol", opts["tol"], "KKT tolerance")
    opts["max_iter"] = check_int("max_iter", opts["max_iter"], 1)
    check_choice("solver", opts["solver"], ("auto", "hlrf", "slsqp", "exact"))
    opts["polish"] = check_bool("polish", opts["polish"])
    opts["max_radius"] = check_positive("max_radius", opts["max_radius"],
                                        "search radius in theta")
    if not (isinstance(opts["n_starts"], str) and opts["n_starts"] == "auto"):
        opts["n_starts"] = check_int("n_starts", opts["n_starts"], 1,
                                     what="starts of the multi-start MPP search, or 'auto'")
    return opts


def _check_theta0_dim(opts: dict, m: int | None) -> None:
    theta0 = opts["theta0"]
    if theta0 is not None and m is not None and theta0.shape != (m,):
        raise ValueError(f"theta0 has shape {theta0.shape}; expected ({m},), one value per "
                         "random variable")


def _kkt_residual(theta, lam, F, g, z) -> float:
    gn = np.linalg.norm(g)
    r1 = np.linalg.norm(theta - lam * g)
    r2 = abs(F - z) / gn if gn > 0 else np.inf
    return float(max(r1, r2) / max(1.0, np.linalg.norm(theta)))


def _hlrf(fg, z, theta0, tol, max_iter, max_radius):
    """Improved HL-RF (Zhang & Der Kiureghian 1995) with an Armijo search.

    Step to the nearest point of the linearised surface, ``v = t grad F``,
    ``t = (grad F . theta - (F - z)) / |grad F|^2``, along ``d = v - theta``;
    merit ``m = 1/2 |theta|^2 + c |F - z|`` with ``c = 2 max(|theta|, |v|) /
    |grad F|``, for which ``d`` is a descent direction.
    """
    theta = np.array(theta0, float)
    F, g = fg(theta)
    best = None
    m = theta.size
    for it in range(max_iter + 1):
        G = F - z
        if G >= 0 and (best is None or np.linalg.norm(theta) < np.linalg.norm(best)):
            best = theta.copy()
        gn = np.linalg.norm(g)
        if not np.isfinite(F) or not np.all(np.isfinite(g)):
            raise MPPError("not_converged", "the limit state returned a non-finite value",
                           dict(iteration=it, theta=theta, F=F), best)
        # a stationary point of F below z (relative to the gap): unreachable
        if gn <= 1e-300 or (G < 0 and gn * max(1.0, np.linalg.norm(theta)) <= 1e-8 * -G):
            if it == 0 and np.linalg.norm(theta) == 0.0:
                theta = np.full(m, 1e-2 / np.sqrt(m))     # stationary origin: nudge
                F, g = fg(theta)
                continue
            if G < 0:
                raise MPPError("unreachable", "the search reached a stationary point of F "
                               "below z; no failure region is reachable",
                               dict(iteration=it, theta=theta, F=F, z=z, grad_norm=gn), best)
            raise MPPError("not_converged", "grad F vanishes on the failure set",
                           dict(iteration=it, theta=theta, F=F, z=z), best)
        n = g / gn
        scale = tol * max(1.0, np.linalg.norm(theta))
        if abs(G) / gn <= scale and np.linalg.norm(theta - (theta @ n) * n) <= scale:
            return theta, F, g, it, True, best
        if it == max_iter:
            break
        t = (g @ theta - G) / gn ** 2
        v = t * g
        d = v - theta
        c = 2.0 * max(np.linalg.norm(theta), np.linalg.norm(v)) / gn + 1e-12
        merit0 = 0.5 * theta @ theta + c * abs(G)
        slope = -(d @ d) - t * G - c * abs(G)
        alpha = _inside(theta, d, max_radius)     # F is never asked outside the ball
        for _ in range(50):
            trial = theta + alpha * d
            Ft, gt = fg(trial)
            merit = 0.5 * trial @ trial + c * abs(Ft - z)
            if np.isfinite(merit) and merit <= merit0 + 1e-4 * alpha * slope:
                break
            alpha *= 0.5
        theta, F, g = trial, Ft, gt
        if np.linalg.norm(theta) >= max_radius * (1 - 1e-9) and F < z:
            raise MPPError("unreachable", f"the search left the ball |theta| <= "
                           f"{max_radius:g} without reaching F >= z (pf < "
                           "exp(-max_radius^2/2) if a failure region exists at all)",
                           dict(iteration=it, theta_norm=float(np.linalg.norm(theta)),
                                F=F, z=z), best)
    return theta, F, g, max_iter, False, best


def _inside(theta, d, radius) -> float:
    """The largest step ``alpha <= 1`` with ``|theta + alpha d| <= radius`` (``|theta| <= radius``)."""
    if np.linalg.norm(theta + d) <= radius:
        return 1.0
    a, b, c = d @ d, 2 * theta @ d, theta @ theta - radius ** 2
    return max(float((-b + np.sqrt(max(b * b - 4 * a * c, 0.0))) / (2 * a)), 0.0)


def _slsqp(fg, z, theta0, tol, max_iter, max_radius=np.inf):
    cache, m = {}, len(theta0)

    def both(x):
        key = x.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = fg(x)
        return cache[key]

    import scipy.optimize  # on first use: keeps the import light
    res = scipy.optimize.minimize(
        lambda x: 0.5 * x @ x, np.array(theta0, float), jac=lambda x: x, method="SLSQP",
        constraints=[{"type": "eq", "fun": lambda x: both(x)[0] - z,
                      "jac": lambda x: both(x)[1]}],
        bounds=None if not np.isfinite(max_radius) else [(-max_radius, max_radius)] * m,
        options={"ftol": 1e-15, "maxiter": max_iter})
    theta = np.asarray(res.x, float)
    F, g = fg(theta)
    return theta, F, g, int(res.nit), bool(res.success)


def _newton_kkt(ls, q, z, theta, F, g, max_iter=30, box=np.inf):
    """Polish a KKT point ``theta = lam grad F, F = z`` by damped Newton (``F`` never
    asked outside ``|theta_i| <= box``). Returns theta, lam, F, g, H, residual, iterations.
    """
    m = theta.size
    lam = float(theta @ g / (g @ g)) if np.any(g) else 0.0
    H = np.asarray(ls.hessian(theta, *q), float)

    def residual_vec(th, la, Fv, gv):
        return np.concatenate([th - la * gv, [Fv - z]])

    res = _kkt_residual(theta, lam, F, g, z)
    its = 0
    for its in range(1, max_iter + 1):
        if res <= 1e-15:
            break
        J = np.block([[np.eye(m) - lam * H, -g[:, None]], [g[None, :], np.zeros((1, 1))]])
        R = residual_vec(theta, lam, F, g)
        try:
            step = np.linalg.solve(J, -R)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)):
            break
        alpha, improved = 1.0, False
        for _ in range(12):
            th = theta + alpha * step[:m]
            la = lam + alpha * step[m]
            if not np.max(np.abs(th)) <= box:
                alpha *= 0.5
                continue
            Fn, gn = ls.value_and_gradient(th, *q)
            rn = _kkt_residual(th, la, Fn, gn, z)
            if np.isfinite(rn) and rn < res:
                improved = True
                break
            alpha *= 0.5
        if not improved:
            break
        theta, lam, F, g, res = th, float(la), Fn, gn, rn
        H = np.asarray(ls.hessian(theta, *q), float)
    return theta, lam, F, g, H, res, its


def _check_kkt(ls, q, z, theta, lam, F, g, H, res, tol, best):
    """Reject a KKT point that is inaccurate, on the wrong side or not a minimum."""
    gn = float(np.linalg.norm(g))
    if not res <= max(tol, 1e-12) * 1e2:
        raise MPPError("not_converged", f"KKT residual {res:.3g}",
                       dict(theta=theta, F=F, z=z, grad_norm=gn), best)
    F0 = float(ls.value(np.zeros_like(theta), *q))
    if (F0 < z and lam < 0) or (F0 > z and lam > 0):
        raise MPPError("not_minimum", "the KKT point found lies on the wrong side (the "
                       "segment from the origin crosses F = z earlier)",
                       dict(theta=theta, multiplier=lam, F0=F0, z=z), best)
    if H is not None and theta.size > 1 and gn > 0:
        T = _tangent_basis(g / gn)
        red = np.eye(theta.size - 1) - lam * (T.T @ H @ T)
        if np.min(np.linalg.eigvalsh(0.5 * (red + red.T))) < -1e-10:
            raise MPPError("not_minimum", "the KKT point is not a local minimum of |theta| "
                           "on F = z (I - lam H is indefinite on the tangent plane)",
                           dict(theta=theta, multiplier=lam), best)


def _finish(ls, q, z, theta, F, g, opts, name, its, best, info, box=np.inf) -> MPPResult:
    H = None
    if opts["polish"]:
        theta, lam, F, g, H, res, nits = _newton_kkt(ls, q, z, theta, F, g, box=box)
        its += nits
        name += "+newton"
    else:
        lam = float(theta @ g / (g @ g)) if np.any(g) else 0.0
        res = _kkt_residual(theta, lam, F, g, z)
    _check_kkt(ls, q, z, theta, lam, F, g, H, res, opts["tol"], best)
    beta = float(np.sign(lam) * np.linalg.norm(theta))
    return MPPResult(theta, lam, beta, float(F), g, True, name, its, res, H, [], info)


def _solve_mpp(ls: LimitState, q: tuple, z: float, opts: dict) -> MPPResult:
    """The MPP of `ls` at parameters `q`: the exact solver if any, else the search."""
    z = float(z)
    solver = opts["solver"]
    if solver not in ("auto", "hlrf", "slsqp", "exact"):
        raise ValueError(f"unknown MPP solver {solver!r}")
    exact = ls.exact_mpp(q, z) if solver in ("auto", "exact") else None
    if exact is None and solver == "exact":
        raise ValueError(f"{type(ls).__name__} has no exact MPP solver")
    if exact is not None:
        return _exact_result(ls, q, z, opts, *exact)
    if opts["n_starts"] == 1:
        return _search(ls, q, z, opts)
    return _multistart(ls, q, z, opts)


def _starts(first: np.ndarray, count) -> list:
    """Deterministic further starts: the mirror ``-theta1``, then ``+-|theta1| e_i``
    (those not at ``theta1``); ``count="auto"``: all of them for ``m <=
    AUTO_STARTS_MAX_M``, the mirror only above."""
    r = max(float(np.linalg.norm(first)), 1.0)
    cands = [-first] + [s * r * e for e in np.eye(first.size) for s in (1.0, -1.0)]
    keep = [c for c in cands if np.linalg.norm(c - first) > 1e-3 * r]
    if count == "auto":
        count = len(keep) if first.size <= AUTO_STARTS_MAX_M else 1
    return keep[:count]


def _multistart(ls, q, z, opts) -> MPPResult:
    """Local MPPs from several starts (`_starts`), the global one first.

    Each start runs the full search (HL-RF, SLSQP, Newton polish, the KKT
    checks); a start whose search fails or lands on a known MPP adds nothing.
    The others go to ``MPPResult.others``, where FORM/SORM add their
    contributions and importance sampling uses them as mixture centres. What
    was searched is recorded in ``info``: ``starts`` (every start, the first
    one included), ``start_mpps`` (the MPP each start reached, None where its
    search failed), ``failed_starts`` (the reasons) and ``n_starts``.
    """
    theta0 = opts["theta0"]
    first = _search(ls, q, z, {**opts, "n_starts": 1})
    starts = _starts(first.theta, opts["n_starts"] if opts["n_starts"] == "auto"
                     else opts["n_starts"] - 1)
    found, failed, reached = [first], [], [first.theta]
    for start in starts:
        try:
            r = _search(ls, q, z, {**opts, "theta0": start, "n_starts": 1})
        except MPPError as err:
            failed.append(err.reason)
            reached.append(None)
            continue
        reached.append(r.theta)
        scale = max(1.0, float(np.linalg.norm(r.theta)))
        if all(np.linalg.norm(r.theta - f.theta) > 1e-6 * scale for f in found):
            found.append(r)
    found.sort(key=lambda r: abs(r.beta))
    main = found[0]
    main.others = found[1:]
    zero = np.zeros(first.theta.size) if theta0 is None else np.asarray(theta0, float)
    main.info.update(n_starts=1 + len(starts), starts=[zero] + starts, start_mpps=reached,
                     failed_starts=failed)
    return main


def _exact_result(ls, q, z, opts, points, info) -> MPPResult:
    """The global exact MPP, with the other local ones in ``others``."""
    theta = np.asarray(points[0], float)
    F, g = ls.value_and_gradient(theta, *q)
    if np.linalg.norm(theta) == 0.0:
        return MPPResult(theta, 0.0, 0.0, F, g, True, "exact", 0, 0.0,
                         np.asarray(ls.hessian(theta, *q), float), [], info)
    main = _finish(ls, q, z, theta, F, g, opts, "exact", 0, None, info)
    for other in points[1:]:
        other = np.asarray(other, float)
        Fo, go = ls.value_and_gradient(other, *q)
        try:
            main.others.append(_finish(ls, q, z, other, Fo, go, opts, "exact", 0, None, {}))
        except MPPError as err:      # keep the global MPP; note the dropped one
            main.info.setdefault("dropped", []).append(str(err))
    return main


def _search(ls, q, z, opts) -> MPPResult:
    """HL-RF, then SLSQP where HL-RF did not converge (``solver="auto"``)."""
    solver = opts["solver"]
    m = ls.dimension(q)
    _check_theta0_dim(opts, m)
    theta0 = opts["theta0"]
    if theta0 is None:
        if m is None:
            raise ValueError("the number m of random variables is unknown: pass m= "
                             "(or theta0=)")
        theta0 = np.zeros(m)
    theta0 = np.asarray(theta0, float)
    fg = lambda t: ls.value_and_gradient(t, *q)  # noqa: E731
    hl_tol = max(opts["tol"], 1e-7) if opts["polish"] else opts["tol"]
    name, converged, best, its = "hlrf", False, None, 0
    theta, (F, g) = theta0, fg(theta0)
    if solver in ("auto", "hlrf"):
        try:
            theta, F, g, its, converged, best = _hlrf(
                fg, z, theta0, hl_tol, opts["max_iter"], opts["max_radius"])
        except MPPError as err:
            if err.reason == "unreachable" or solver == "hlrf":
                raise
            best = err.best_feasible
    if not converged and solver in ("auto", "slsqp"):
        start = best if best is not None else theta
        theta, F, g, its2, converged = _slsqp(fg, z, start, opts["tol"], opts["max_iter"],
                                              opts["max_radius"])
        its, name = its + its2, ("hlrf+slsqp" if solver == "auto" else "slsqp")
        if converged and F >= z and (best is None
                                     or np.linalg.norm(theta) < np.linalg.norm(best)):
            best = theta.copy()
    why = f"MPP search ({name}) did not converge in {opts['max_iter']} iterations"
    if not converged and not opts["polish"]:
        raise MPPError("not_converged", why, dict(theta=theta, F=F, z=z,
                                                   grad_norm=float(np.linalg.norm(g))), best)
    # unconverged (SLSQP may stop so on the MPP by rounding): the polish and KKT check decide
    try:
        return _finish(ls, q, z, theta, F, g, opts, name, its, best, {},
                       box=np.inf if converged else opts["max_radius"])
    except MPPError as err:
        if converged:
            raise
        raise MPPError(err.reason, f"{why}; the Newton polish from its last point: {err}",
                       dict(theta=theta, F=F, z=z), best) from None


def find_mpp(limit_state, design, z: float, *, m: int | None = None,
             batch: bool = False, **options) -> MPPResult:
    """Most probable failure point of ``F(theta, design) >= z``.

    Solver: the exact one of a `QuadraticLimitState`; otherwise improved HL-RF
    with an Armijo line search on the merit ``1/2|theta|^2 + c|F - z|`` (Zhang
    & Der Kiureghian 1995), then scipy's SLSQP if HL-RF does not converge, then
    (``polish=True``) damped Newton on the KKT system ``theta = lam grad F, F =
    z`` with the Hessian from `topopt.ad` (so the envelope-theorem gradient is
    accurate to round-off); where SLSQP stops unconverged, the polish from its
    last point (in its box) and the KKT check decide. A KKT point
    that is not a local minimum (checked
    with the Hessian; skipped when ``polish=False``), or on the wrong side of
    the origin, is rejected. The iterative search restarts from further points
    (``n_starts``, below; every distinct local MPP is kept, and
    ``MPPResult.info`` records the starts and the MPP each reached); the exact
    quadratic solver returns every local one (``MPPResult.others``).

    What the multi-start search can miss: see the module docstring.

    Parameters
    ----------
    limit_state : callable or LimitState
        ``F(theta, design)``.
    design : array_like or None
        Plain (not traced) design.
    z : float
        Threshold; failure when ``F >= z``.
    m : int, optional
        Number of random variables (plain functions only).
    batch : bool
        See `LimitState`.
    **options
        ``theta0`` (start, default 0), ``tol`` (KKT tolerance, 1e-10),
        ``max_iter`` (200), ``solver`` (``"auto"``, ``"hlrf"``, ``"slsqp"``,
        ``"exact"``), ``polish`` (True), ``max_radius`` (40: leaving ``|theta|
        <= max_radius`` below ``z`` counts as unreachable; HL-RF never asks
        for ``F`` outside that ball, SLSQP stays in the box ``|theta_i| <=
        max_radius``: a limit state defined on a bounded set of physical
        inputs takes the radius that keeps them inside), ``n_starts``
        (``"auto"``: after the first search, one from the mirror image
        ``-theta1`` (``F = theta_1^2``: ``ln(2 Phi(-3))``, not ``ln Phi(-3)``)
        and, for ``m <= 3``, one from each ``+-|theta1| e_i`` (two orthogonal
        regions ``theta_1 >= 3``, ``theta_2 >= 3.5 + theta_1^2/2`` are both
        found; the mirror alone misses the second, pf 7 % low); the cost is
        one search per start, ``2 m + 1`` searches in all for ``m <= 3``
        (``scripts/benchmarks/benchmark_multistart.py``: 30 calls of ``F`` against 12
        for ``n_starts=2`` at ``m = 2``, 49 against 14 at ``m = 3`` for a
        linear ``F``, 1.3-1.5x where the mirror finds a second MPP; ``m >= 4``
        the same as ``n_starts=2``, and the orthogonal pair above is then
        missed unless ``n_starts = 2 m + 1``); ``k``: ``k - 1``
        restarts, the mirror then the axes; ``1``: one search). Every
        distinct local MPP is returned: the global one, the rest in
        ``others``; ``info`` holds ``starts``, ``start_mpps`` (what each start
        reached, None where it failed), ``failed_starts`` and ``n_starts``).

    Returns
    -------
    MPPResult

    Raises
    ------
    MPPError
        With ``reason`` ``"unreachable"``, ``"not_converged"`` or
        ``"not_minimum"``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import reliability as rel
    >>> F = lambda t, k: t[0] - 0.5 * k * np.sum(t[1:] ** 2)
    >>> r = rel.find_mpp(F, 0.1, 3.0, m=4)
    >>> np.round(r.theta, 8) + 0.0, round(r.multiplier, 8)
    (array([3., 0., 0., 0.]), 3.0)
    """
    _check_z(z)
    opts = _mpp_options(options)
    ls = as_limit_state(limit_state, m=m, batch=batch)
    q = tuple(ls.params(design))
    return _solve_mpp(ls, q, z, opts)
