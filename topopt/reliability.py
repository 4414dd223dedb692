r"""Failure probabilities of a design under Gaussian uncertainty, with gradients.

The random inputs are standard normal, ``theta ~ N(0, I_m)``; a scalar *limit
state* ``F(theta, design)`` fails when ``F >= z``; ``pf = P(F(theta) >= z)``.

Most probable failure point (MPP)
    ``theta* = argmin 1/2 |theta|^2  s.t.  F(theta) >= z``;  ``beta = |theta*|``
    (signed: negative when ``F(0) >= z``, the origin itself fails). At the MPP
    ``theta* = lam grad_theta F(theta*)`` with the multiplier
    ``lam = |theta*| / |grad_theta F| >= 0``.
LDT (leading order)
    ``ln pf ~ -I = -beta^2/2`` (large-deviation rate of the failure set).
FORM
    ``pf ~ Phi(-beta)``: the failure set replaced by the half space beyond the
    tangent plane at the MPP (exact for a linear limit state).
SORM (Breitung 1984)
    ``pf ~ Phi(-beta) prod_i (1 + beta kappa_i)^(-1/2)`` with the ``m-1``
    principal curvatures ``kappa_i`` of the surface ``F = z`` at the MPP,
    positive when the surface bends away from the origin:
    ``kappa_i = eig(-T^T H T) / |grad F|`` (``H`` the Hessian of ``F`` in
    ``theta``, ``T`` an orthonormal basis of the tangent plane). Equivalently
    ``prod_i (1 + beta kappa_i) = det(I - lam P H P)``, ``P = I - n n^T``.
LDT prefactor (Tong, Vanden-Eijnden & Stadler 2021, eq. for the sharp
    estimate; also Schorlepp, Tong, Grafke & Stadler 2023)
    ``pf ~ (2 pi)^(-1/2) beta^(-1) exp(-beta^2/2) det(I - lam P H P)^(-1/2)``:
    Breitung with ``Phi(-beta)`` replaced by its leading Mills-ratio term.

Gradients (envelope theorem). The value ``V(p) = min {1/2|theta|^2 : F(theta, p)
>= z}`` has ``dV/dp = -lam dF/dp(theta*; p)`` -- the MPP itself is not
differentiated, so ``d ln pf/dp = lam dF/dp`` for LDT costs one reverse pass of
``F`` at ``theta*`` (one adjoint solve for a FE model). FORM chains through
``beta``: ``d beta/dp = -(dF/dp)/|grad F|``. The curvature factor of SORM and
of the LDT prefactor depends on ``theta*`` and ``lam``, so its derivative uses
the KKT system ``R = [theta - lam grad F; F - z] = 0`` once more: with
``G = -1/2 ln det(I - lam P H P)``, solve ``(dR/d(theta, lam))^T w = dG/d(theta,
lam)`` and ``dG/dp = dG/dp|_explicit - w^T dR/dp``; the third derivatives of
``F`` come from nested `topopt.ad` (or in closed form for a quadratic ``F``).

Counting Monte Carlo ``mean(F(theta_k) >= z)`` is piecewise constant in the
design, so its finite differences read 0 (see `crn_directional_derivative`);
``"mc"`` and ``"is"`` here are validation estimators with standard errors.

Failures of the MPP search raise `MPPError` (``reason`` says which), or with
``on_failure="bound"`` return a documented bound (`ReliabilityResult.bound`);
never NaN. A limit state is any ``F(theta, design)`` that `topopt.ad` can
differentiate, or a `LimitState` subclass; `QuadraticLimitState` (compliance
under Gaussian loads) has an exact MPP and counts every local MPP.

Examples
--------
>>> import numpy as np
>>> from topopt import ad, reliability as rel
>>> F = lambda theta, p: p @ theta          # linear: FORM is exact
>>> p = np.array([3.0, 4.0])                # beta = z / |p| = 3
>>> round(float(rel.ln_pf(F, p, 15.0, method="form", m=2)), 4)
-6.6077
>>> g = ad.gradient(lambda p: rel.ln_pf(F, p, 15.0, method="ldt", m=2), p)
>>> np.allclose(g, [1.08, 1.44])            # lam dF/dp = (3/5) theta*
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import numpy as np
import scipy.optimize
import scipy.special as sp

from . import ad
from ._validate import (check_array_range, check_bool, check_callable, check_choice,
                        check_finite_array, check_int, check_range, check_seed, real)

__all__ = [
    "LN_PF_FLOOR", "METHODS", "ASYMPTOTIC", "SAMPLING", "ReliabilityError", "MPPError",
    "LimitState", "QuadraticLimitState", "as_limit_state", "MPPResult", "ReliabilityResult",
    "find_mpp", "failure_probability", "ln_pf", "FailureProbability",
    "sampling_estimate", "crn_directional_derivative", "CRNDerivative",
    "failure_penalty",
]

#: ``ln pf`` returned with ``on_failure="bound"`` when no failure point can be
#: reached: ``exp(-745)`` is below the smallest positive double, pf is 0.
LN_PF_FLOOR = -745.0
#: Asymptotic (differentiable) and sampling methods.
ASYMPTOTIC = ("ldt", "form", "sorm", "ldt-prefactor")
SAMPLING = ("mc", "is")
METHODS = ASYMPTOTIC + SAMPLING
_HALF_LN_2PI = 0.5 * np.log(2 * np.pi)


# ------------------------------------------------------------------- errors

class ReliabilityError(RuntimeError):
    """A failure-probability estimate cannot be formed."""


class MPPError(ReliabilityError):
    """The most-probable-point search failed.

    Attributes
    ----------
    reason : str
        ``"unreachable"`` (no point with ``F >= z`` can be reached: ``F`` is
        bounded below ``z`` or the search left ``|theta| <= max_radius``),
        ``"not_converged"``, ``"not_minimum"`` (a KKT point that is not a
        local minimum), ``"sorm_singular"`` (``1 + beta kappa_i <= 0``) or
        ``"origin_fails"`` (``beta <= 0`` where the method needs ``beta > 0``).
    details : dict
        Iterations, last iterate, ``F``, ``|grad F|``, ... for the message.
    best_feasible : ndarray or None
        The feasible point (``F >= z``) of smallest norm seen, if any.
    """

    def __init__(self, reason: str, message: str, details: dict | None = None,
                 best_feasible: np.ndarray | None = None):
        self.reason = reason
        self.details = dict(details or {})
        self.best_feasible = best_feasible
        text = ", ".join(f"{k}={_short(v)}" for k, v in self.details.items())
        super().__init__(f"[{reason}] {message}" + (f" ({text})" if text else ""))


def _short(v):
    if isinstance(v, np.ndarray):
        return np.array2string(v, precision=4, threshold=8)
    if isinstance(v, float):
        return f"{v:.6g}"
    return repr(v)


# -------------------------------------------------------------- limit states

def _float_like(x) -> bool:
    if ad.is_traced(x):
        return True
    if isinstance(x, (bool, int, np.integer, np.bool_)):
        return False
    if isinstance(x, (float, np.floating)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind == "f"


class LimitState:
    """A limit-state function ``F(theta, design)`` in a form the solvers use.

    Parameters
    ----------
    fun : callable
        ``fun(theta, design) -> scalar``, written with numpy so that
        `topopt.ad` can differentiate it in both arguments (``design`` may be
        ``None``).
    m : int, optional
        Number of standard-normal variables (required unless every call gives
        ``theta0``).
    batch : bool
        ``fun`` accepts ``theta`` of shape ``(N, m)`` and returns ``(N,)``;
        used by the sampling estimators (otherwise they loop).

    Notes
    -----
    The solvers see a limit state through ``params(design) -> q`` (a tuple,
    differentiable in ``design``) and ``value(theta, *q)``, ``gradient``,
    ``hessian``; subclasses (`QuadraticLimitState`) override these and may
    provide an exact MPP by ``exact_mpp(q, z)``. A FE limit state plugs in by
    subclassing, or as a plain function of ``(theta, design)``.
    """

    def __init__(self, fun: Callable, m: int | None = None, batch: bool = False):
        self.fun = check_callable("fun", fun)
        self.m = _check_m(m)
        self.batch = check_bool("batch", batch)

    def __call__(self, theta, design=None):
        return self.value(theta, *self.params(design))

    def params(self, design) -> tuple:
        """The parameters ``q`` the other methods take (here ``(design,)``)."""
        return (design,)

    def value(self, theta, *q):
        """``F(theta; q)``; traced arguments are fine."""
        return self.fun(theta, *q)

    def gradient(self, theta, *q):
        """``grad_theta F`` (traced in ``theta`` and ``q`` if they are)."""
        return ad.gradient(self.fun, theta, *q)

    def hessian(self, theta, *q):
        """``grad_theta^2 F`` by ``m`` forward-over-reverse products."""
        m = np.shape(theta)[0]
        rows = [ad.hvp(self.fun, theta, e, *q) for e in np.eye(m)]
        H = np.stack(rows)
        return 0.5 * (H + H.T)

    def values(self, thetas: np.ndarray, *q, chunk: int = 16384) -> np.ndarray:
        """``F`` at each row of ``thetas`` (shape ``(N, m)``) -> ``(N,)``."""
        thetas = np.asarray(thetas, float)
        if self.batch:
            out = [np.asarray(self.value(thetas[i:i + chunk], *q), float).reshape(-1)
                   for i in range(0, len(thetas), chunk)]
            out = np.concatenate(out) if out else np.zeros(0)
            if out.shape != (len(thetas),):
                raise ValueError(f"a batched limit state returned shape {out.shape} "
                                 f"for {len(thetas)} samples")
            return out
        return np.array([float(self.value(t, *q)) for t in thetas])

    def value_and_gradient(self, theta, *q) -> tuple[float, np.ndarray]:
        """Plain ``(F, grad_theta F)`` at ``theta``."""
        v, g = ad.value_and_gradient(lambda t: self.value(t, *q), np.asarray(theta, float))
        if np.shape(v) != ():
            raise TypeError(f"the limit state must return a scalar, got shape {np.shape(v)}")
        return float(v), np.asarray(g, float)

    def exact_mpp(self, q, z):
        """Exact local MPPs ``([theta_global, *others], info)``, or ``None``.

        ``None`` (the default) selects the iterative search of `find_mpp`.
        """
        return None

    def dimension(self, q) -> int | None:
        return self.m


class QuadraticLimitState(LimitState):
    r"""``F(theta) = c0 + 2 b^T theta + theta^T A theta`` with exact MPP.

    The compliance ``f^T K^{-1} f`` under loads ``f = f0 + G theta`` has this
    form with ``c0 = f0^T K^{-1} f0``, ``b = G^T K^{-1} f0``, ``A = G^T K^{-1}
    G``. Each coefficient may be a constant or a function of the design
    written with `topopt.ad`-traceable numpy; or pass one function ``design
    -> (c0, b, A)`` as `c0` (then `b` and `A` are left out), which lets the
    coefficients share the factorization of ``K``.

    The MPP is exact: with ``A = Q diag(a) Q^T`` and ``b~ = Q^T b``, the KKT
    condition ``theta = lam grad F = 2 lam (b + A theta)`` gives
    ``theta~_i(s) = s b~_i / (1 - s a_i)`` with ``s = 2 lam``, and
    ``phi(s) = F(theta(s)) - z = c0 - z + sum_i b~_i^2 s (2 - s a_i) /
    (1 - s a_i)^2`` has ``phi'(s) = 2 sum_i b~_i^2 / (1 - s a_i)^3 > 0`` on
    ``0 <= s < 1/max(a)``, where ``I - lam H = I - s A`` is positive definite
    (global optimality, as for a trust-region subproblem). So the MPP is the
    unique root of ``phi`` there, found by a bracketed 1-D root find in
    ``sigma = 1 - s a_1`` (``a_1 = max(a)``), which keeps the pole at
    ``s = 1/a_1`` resolved. With a simple top eigenvalue there may be one more
    local minimiser (the "local non-global" one of the trust-region
    subproblem, Martinez 1994) with ``1/a_1 < s < 1/a_2``; it is found by a
    scan of ``phi`` there and kept when ``I - s A`` is positive definite on
    its tangent plane. In the "hard case" ``b~_top = 0`` (e.g. ``b = 0``:
    zero-mean loads) ``s = 1/a_1`` and the two MPPs are mirror images ``+-t``
    along the top eigenvector. FORM, SORM and the LDT prefactor add the
    contributions of all local MPPs (``ln pf = logsumexp``), which keeps the
    estimate continuous as ``b~_top -> 0``; LDT uses the global one. ``F(0)
    >= z`` is solved as the mirrored problem ``(-F, -z)`` (nearest point of
    ``F = z``, ``beta < 0``).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import reliability as rel
    >>> ls = rel.QuadraticLimitState(0.0, np.array([0.5, 0.0]), np.diag([0.0, -0.05]))
    >>> r = rel.failure_probability(ls, None, 3.0, method="sorm")
    >>> round(r.beta, 6), np.round(r.curvatures, 6)
    (3.0, array([0.1]))
    """

    def __init__(self, c0, b=None, A=None):
        if b is None and A is None:
            if not callable(c0):
                raise TypeError("QuadraticLimitState(fun) needs a function design -> (c0, b, A)")
            self._coefficients = c0
        elif b is None or A is None:
            raise TypeError("QuadraticLimitState needs both b and A (or one function "
                            "design -> (c0, b, A) as c0)")
        else:
            parts = (c0, b, A)
            self._coefficients = lambda design: tuple(
                p(design) if callable(p) else p for p in parts)
        super().__init__(self._quadratic, m=None, batch=True)

    @staticmethod
    def _quadratic(theta, c0, b, A):
        return c0 + 2 * (theta @ b) + np.sum((theta @ A) * theta, axis=-1)

    def params(self, design) -> tuple:
        c0, b, A = self._coefficients(design)
        shapes = [np.shape(ad.value(x)) for x in (c0, b, A)]
        if shapes[0] != () or len(shapes[1]) != 1 or shapes[2] != shapes[1] * 2 \
                or shapes[1] == (0,):
            raise ValueError(f"QuadraticLimitState needs a scalar c0, b of shape (m,) and A "
                             f"of shape (m, m), m >= 1; got shapes {shapes}")
        if self.m is not None and self.m != shapes[1][0]:
            raise ValueError(f"m={self.m} contradicts the coefficients: b has "
                             f"{shapes[1][0]} entries")
        return (c0, b, A)

    def value(self, theta, c0, b, A):
        return self._quadratic(theta, c0, b, A)

    def gradient(self, theta, c0, b, A):
        return 2 * b + (A + A.T) @ theta

    def hessian(self, theta, c0, b, A):
        return A + A.T

    def dimension(self, q) -> int:
        return int(np.shape(ad.value(q[1]))[0])

    def exact_mpp(self, q, z):
        c0, b, A = (np.asarray(x, float) for x in q)
        return _quadratic_mpp(float(c0), b, 0.5 * (A + A.T), float(z))


def as_limit_state(limit_state, m: int | None = None, batch: bool = False) -> LimitState:
    """`limit_state` as a `LimitState` (a plain function is wrapped)."""
    m = _check_m(m)
    if isinstance(limit_state, LimitState):
        if m is not None and limit_state.m is None:
            limit_state.m = m
        elif m is not None and limit_state.m != m:
            raise ValueError(f"m={m} contradicts the limit state's m={limit_state.m}")
        if check_bool("batch", batch) and not limit_state.batch:
            raise ValueError(f"batch=True contradicts the limit state's batch=False "
                             f"(set it on {type(limit_state).__name__})")
        return limit_state
    if not callable(limit_state):
        raise TypeError(f"a limit state is a function F(theta, design), got "
                        f"{type(limit_state).__name__}")
    return LimitState(limit_state, m=m, batch=batch)


# ----------------------------------------------------------------- MPP search

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
                     polish=True, max_radius=40.0)


def _check_m(m) -> int | None:
    return None if m is None else check_int("m", m, 1, what="number of random variables")


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
    opts["tol"] = check_range("tol", opts["tol"], 0.0, None, lo_open=True,
                              what="KKT tolerance")
    opts["max_iter"] = check_int("max_iter", opts["max_iter"], 1)
    check_choice("solver", opts["solver"], ("auto", "hlrf", "slsqp", "exact"))
    opts["polish"] = check_bool("polish", opts["polish"])
    opts["max_radius"] = check_range("max_radius", opts["max_radius"], 0.0, None,
                                     lo_open=True, what="search radius in theta")
    return opts


def _check_z(z) -> float:
    """The threshold: a finite real number (traced values are looked at, not converted)."""
    return real("z", ad.value(z))


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
        alpha = 1.0
        for _ in range(50):
            trial = theta + alpha * d
            Ft, gt = fg(trial)
            merit = 0.5 * trial @ trial + c * abs(Ft - z)
            if np.isfinite(merit) and merit <= merit0 + 1e-4 * alpha * slope:
                break
            alpha *= 0.5
        theta, F, g = trial, Ft, gt
        if np.linalg.norm(theta) > max_radius and F < z:
            raise MPPError("unreachable", f"the search left the ball |theta| <= "
                           f"{max_radius:g} without reaching F >= z (pf < "
                           "exp(-max_radius^2/2) if a failure region exists at all)",
                           dict(iteration=it, theta_norm=float(np.linalg.norm(theta)),
                                F=F, z=z), best)
    return theta, F, g, max_iter, False, best


def _slsqp(fg, z, theta0, tol, max_iter):
    cache = {}

    def both(x):
        key = x.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = fg(x)
        return cache[key]

    res = scipy.optimize.minimize(
        lambda x: 0.5 * x @ x, np.array(theta0, float), jac=lambda x: x, method="SLSQP",
        constraints=[{"type": "eq", "fun": lambda x: both(x)[0] - z,
                      "jac": lambda x: both(x)[1]}],
        options={"ftol": 1e-15, "maxiter": max_iter})
    theta = np.asarray(res.x, float)
    F, g = fg(theta)
    return theta, F, g, int(res.nit), bool(res.success)


def _newton_kkt(ls, q, z, theta, F, g, max_iter=30):
    """Polish a KKT point ``theta = lam grad F, F = z`` by damped Newton.

    Returns theta, lam, F, g, H, residual, iterations.
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


def _tangent_basis(n: np.ndarray) -> np.ndarray:
    """Orthonormal basis (columns) of the plane orthogonal to unit `n`."""
    _, _, vt = np.linalg.svd(n[None, :])
    return vt[1:].T


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


def _finish(ls, q, z, theta, F, g, opts, name, its, best, info) -> MPPResult:
    H = None
    if opts["polish"]:
        theta, lam, F, g, H, res, nits = _newton_kkt(ls, q, z, theta, F, g)
        its += nits
        name += "+newton"
    else:
        lam = float(theta @ g / (g @ g)) if np.any(g) else 0.0
        res = _kkt_residual(theta, lam, F, g, z)
    _check_kkt(ls, q, z, theta, lam, F, g, H, res, opts["tol"], best)
    beta = float(np.sign(lam) * np.linalg.norm(theta))
    return MPPResult(theta, lam, beta, float(F), g, True, name, its, res, H, [], info)


def _solve_mpp(ls: LimitState, q: tuple, z: float, opts: dict) -> MPPResult:
    z = float(z)
    solver = opts["solver"]
    if solver not in ("auto", "hlrf", "slsqp", "exact"):
        raise ValueError(f"unknown MPP solver {solver!r}")
    exact = ls.exact_mpp(q, z) if solver in ("auto", "exact") else None
    if exact is None and solver == "exact":
        raise ValueError(f"{type(ls).__name__} has no exact MPP solver")
    if exact is not None:
        points, info = exact
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
        theta, F, g, its2, converged = _slsqp(fg, z, start, opts["tol"], opts["max_iter"])
        its, name = its + its2, ("hlrf+slsqp" if solver == "auto" else "slsqp")
        if converged and F >= z and (best is None
                                     or np.linalg.norm(theta) < np.linalg.norm(best)):
            best = theta.copy()
    if not converged:
        raise MPPError("not_converged", f"MPP search ({name}) did not converge in "
                       f"{opts['max_iter']} iterations",
                       dict(theta=theta, F=F, z=z, grad_norm=float(np.linalg.norm(g))), best)
    return _finish(ls, q, z, theta, F, g, opts, name, its, best, {})


def _quadratic_mpp(c0: float, b: np.ndarray, A: np.ndarray, z: float):
    """Exact local MPPs of ``c0 + 2 b.theta + theta.A.theta >= z``.

    Returns ``(points, info)``: the global MPP first, then the local
    non-global one if there is one (see `QuadraticLimitState`).
    """
    a, Q = np.linalg.eigh(A)
    bt = Q.T @ b
    g0 = c0 - z
    m = b.size
    if g0 == 0.0:
        return [np.zeros(m)], {"case": "origin on the surface"}
    sgn = 1.0
    if g0 > 0:                    # origin fails: nearest point of F = z, via (-F, -z)
        sgn, g0, bt, a = -1.0, -g0, -bt, -a
    order = np.argsort(a)[::-1]   # a descending
    a, bt, Q = a[order], bt[order], Q[:, order]
    scale = max(float(np.max(np.abs(a))), 1e-300)
    info: dict[str, Any] = {"eigenvalues": sgn * a}
    a1 = float(a[0])
    if a1 > 1e-14 * scale:
        top = a >= a1 * (1.0 - 1e-12)
        rest = ~top
        # s = 2 lam = (1 - sigma)/a1; 1 - s a_i = sigma (top), (a1 - a_i + sigma a_i)/a1
        def dens(sigma):
            return np.where(top, sigma, (a1 - a + sigma * a) / a1)

        def phi(sigma, keep=None):
            d = dens(sigma)
            s = (1.0 - sigma) / a1
            # s (2 - s a_i) = (1 - sigma^2)/a1 (top) or s (1 + d_i) (rest)
            num = np.where(top, (1.0 - sigma * sigma) / a1, s * (1.0 + d))
            bk = bt
            if keep is not None:
                num, d, bk = num[keep], d[keep], bt[keep]
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                terms = bk ** 2 * num / d ** 2
            terms = np.where(bk == 0, 0.0, terms)
            return g0 + float(np.sum(terms))

        def theta_of(sigma, keep=None):
            s = (1.0 - sigma) / a1
            tt = s * bt / dens(sigma)
            if keep is not None:
                tt = np.where(keep, tt, 0.0)
            return Q @ tt

        def root(f, lo, hi):
            return scipy.optimize.brentq(f, lo, hi, xtol=1e-300,
                                         rtol=4 * np.finfo(float).eps, maxiter=500)

        # global MPP: phi(1) = g0 < 0 (s = 0), phi -> +inf as sigma -> 0+ unless b~_top = 0
        hi = 1.0
        for k in range(1, 151):
            if phi(10.0 ** -k) > 0:
                sigma = root(phi, 10.0 ** -k, hi)
                points = [theta_of(sigma)]
                info["case"] = "regular"
                break
            hi = 10.0 ** -k
        else:
            # hard case: b~ = 0 along the top eigenvectors; phi bounded at sigma = 0
            phimax = phi(0.0, rest) if np.any(rest) else g0
            if phimax >= 0:
                f = lambda s_: phi(s_, rest)  # noqa: E731
                sigma = root(f, 0.0, 1.0) if phimax > 0 else 0.0
                return [theta_of(sigma, rest)], {**info, "case": "hard, interior"}
            tt = np.where(rest, (1.0 / a1) * bt / np.where(rest, dens(0.0), 1.0), 0.0)
            t = np.sqrt(-phimax / a1)
            plus, minus = tt.copy(), tt.copy()
            plus[0], minus[0] = t, -t
            info["case"] = "hard"
            info["top_multiplicity"] = int(np.sum(top))
            if np.sum(top) > 1:       # a sphere of MPPs: not isolated
                return [Q @ plus], info
            return [Q @ plus, Q @ minus], info
        # local non-global MPP: sigma in (sigma_lo, 0), one negative eigenvalue of I - s A
        if np.sum(top) == 1 and m > 1:
            a2 = float(a[1])
            lo = 1.0 - a1 / a2 if a2 > 1e-14 * scale else -1e8
            grid = -np.logspace(-150, np.log10(-lo), 300)[:-1]
            grid = np.concatenate([grid, lo - (lo * np.logspace(-150, -1e-3, 300))
                                   if a2 > 1e-14 * scale else []])
            grid = np.unique(grid[(grid < 0) & (grid > lo)])[::-1]      # from 0- down to lo
            vals = np.array([phi(x) for x in grid])
            for i in np.nonzero(np.sign(vals[:-1]) * np.sign(vals[1:]) < 0)[0]:
                sigma = root(phi, grid[i + 1], grid[i])
                th = theta_of(sigma)
                s = (1.0 - sigma) / a1
                tt = Q.T @ th
                T = _tangent_basis(tt / np.linalg.norm(tt))
                red = T.T @ ((1.0 - s * a)[:, None] * T)
                if np.min(np.linalg.eigvalsh(0.5 * (red + red.T))) > 1e-12:
                    points.append(th)
                    info["case"] = "regular + local non-global MPP"
        return points, info
    # a1 <= 0: phi increases to its limit as s -> infinity
    zero = np.abs(a) <= 1e-14 * scale
    bscale = max(float(np.linalg.norm(bt)), 1e-300)
    if np.any(zero & (np.abs(bt) > 1e-13 * bscale)):
        limit = np.inf
    else:
        neg = a < 0
        limit = g0 + float(np.sum(bt[neg] ** 2 / -a[neg]))
    if not limit > 0:
        side = "above" if sgn > 0 else "below"
        raise MPPError("unreachable", f"the quadratic limit state never gets {side} z: "
                       f"sup (F - z) = {sgn * limit:.6g} on that side",
                       dict(c0=c0, z=z, max_eigenvalue=float(sgn * a1)))

    def phi_s(s):
        den = 1.0 - s * a
        return g0 + float(np.sum(bt ** 2 * s * (2.0 - s * a) / den ** 2))

    hi = 1.0 / scale if scale > 1e-300 else 1.0
    for _ in range(3000):
        if phi_s(hi) > 0:
            break
        hi *= 2.0
    s = scipy.optimize.brentq(phi_s, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps,
                              maxiter=500)
    return [Q @ (s * bt / (1.0 - s * a))], {**info, "case": "concave"}


def find_mpp(limit_state, design, z: float, *, m: int | None = None,
             batch: bool = False, **options) -> MPPResult:
    """Most probable failure point of ``F(theta, design) >= z``.

    Solver: the exact one of a `QuadraticLimitState`; otherwise improved HL-RF
    with an Armijo line search on the merit ``1/2|theta|^2 + c|F - z|`` (Zhang
    & Der Kiureghian 1995), then scipy's SLSQP if HL-RF does not converge, then
    (``polish=True``) damped Newton on the KKT system ``theta = lam grad F, F =
    z`` with the Hessian from `topopt.ad` (so the envelope-theorem gradient is
    accurate to round-off). A KKT point that is not a local minimum (checked
    with the Hessian; skipped when ``polish=False``), or on the wrong side of
    the origin, is rejected. The iterative search finds one MPP; the exact
    quadratic solver returns every local one (``MPPResult.others``).

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
        <= max_radius`` below ``z`` counts as unreachable).

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


# --------------------------------------------------------- asymptotic methods

@dataclass
class ReliabilityResult:
    """A failure-probability estimate.

    Attributes
    ----------
    method : str
    ln_pf, pf : float
        The estimate (``pf = exp(ln_pf)``; ``ln_pf`` may be ``-inf`` for a
        sampling estimate without failures, never NaN).
    beta, mpp, multiplier, curvatures
        MPP data (asymptotic methods, and the IS centre).
    ln_pf_std, pf_std : float or None
        Standard errors (sampling methods; ``ln_pf_std`` by the delta method).
    n_samples, n_failures : int or None
    converged : bool
        False when `bound` was returned instead of an estimate.
    bound : str or None
        ``None``, or which documented bound ``on_failure="bound"`` returned:
        ``"unreachable"`` (``LN_PF_FLOOR``), ``"best_feasible"`` (the
        method's formula at the feasible point of smallest norm found:
        ``beta`` there is an upper bound on the true ``beta``),
        ``"trivial"`` (``ln pf <= 0``) or ``"form"`` (FORM where the
        curvature factor is undefined).
    n_mpp : int
        Number of local MPPs whose contributions were added (see
        `QuadraticLimitState`).
    """

    method: str
    ln_pf: float
    pf: float
    beta: float | None = None
    mpp: np.ndarray | None = None
    multiplier: float | None = None
    curvatures: np.ndarray | None = None
    ln_pf_std: float | None = None
    pf_std: float | None = None
    n_samples: int | None = None
    n_failures: int | None = None
    converged: bool = True
    bound: str | None = None
    n_mpp: int = 1
    mpp_result: MPPResult | None = field(default=None, repr=False)
    info: dict = field(default_factory=dict, repr=False)
    log_terms: np.ndarray | None = field(default=None, repr=False)


def _dlnpf_dbeta(method: str, beta: float) -> float:
    if method == "ldt":
        return -max(beta, 0.0)
    if method in ("form", "sorm"):
        return -float(np.exp(-0.5 * beta * beta - _HALF_LN_2PI - sp.log_ndtr(-beta)))
    if method == "ldt-prefactor":
        return -1.0 / beta - beta
    raise ValueError(method)


def _base_ln_pf(method: str, beta: float) -> float:
    if method == "ldt":
        return -0.5 * max(beta, 0.0) ** 2
    if method in ("form", "sorm"):
        return float(sp.log_ndtr(-beta))
    return float(-_HALF_LN_2PI - np.log(beta) - 0.5 * beta * beta)


def _point_estimate(ls, q, z, mpp: MPPResult, method: str, on_failure: str) -> dict:
    """One MPP's contribution: ``ln pf`` and what its pullback needs."""
    theta, lam, beta, g = mpp.theta, mpp.multiplier, mpp.beta, mpp.grad
    gn = float(np.linalg.norm(g))
    pt = dict(grad_method=method, theta=theta, multiplier=lam, beta=beta, grad=g,
              grad_norm=gn, hessian=mpp.hessian, curvatures=None, bound=None)
    if method == "ldt-prefactor" and not beta > 0:
        err = MPPError("origin_fails", "the LDT prefactor needs beta > 0; here F(0) >= z",
                       dict(beta=beta, z=z))
        if on_failure == "raise":
            raise err
        pt.update(grad_method="form", bound="form")
    if method == "sorm" and not beta > 0:
        # The origin fails: Breitung's factor with beta < 0 would describe the
        # safe set, not the failure set, and can give a tiny pf for a design
        # that fails almost surely. FORM's Phi(-beta) >= 1/2 is used instead.
        pt.update(grad_method="form", bound="form")
    ln = _base_ln_pf(pt["grad_method"], beta)
    if pt["grad_method"] in ("sorm", "ldt-prefactor"):
        H = mpp.hessian if mpp.hessian is not None else np.asarray(ls.hessian(theta, *q), float)
        mpp.hessian = pt["hessian"] = H
        if theta.size > 1 and gn > 0:
            T = _tangent_basis(g / gn)
            red = T.T @ H @ T
            mu = np.linalg.eigvalsh(0.5 * (red + red.T))
        else:
            mu = np.zeros(0)
        factors = 1.0 - lam * mu
        pt["curvatures"] = -mu / gn if gn > 0 else mu
        if np.any(factors <= 1e-12):
            err = MPPError("sorm_singular", "1 + beta kappa_i <= 0: the curvature factor "
                           "is undefined (the MPP is not an isolated minimum)",
                           dict(beta=beta, curvatures=pt["curvatures"]))
            if on_failure == "raise":
                raise err
            pt.update(grad_method="form", bound="form")
            ln = _base_ln_pf("form", beta)
        else:
            ln += -0.5 * float(np.sum(np.log(factors)))
    pt["ln_pf"] = float(ln)
    return pt


def _asymptotic(ls: LimitState, q: tuple, z: float, method: str, on_failure: str,
                opts: dict) -> ReliabilityResult:
    """The estimate, with what its pullback needs in ``info["points"]``."""
    if method not in ASYMPTOTIC:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if on_failure not in ("raise", "bound"):
        raise ValueError(f"on_failure must be 'raise' or 'bound', not {on_failure!r}")
    try:
        mpp = _solve_mpp(ls, q, z, opts)
    except MPPError as err:
        if on_failure == "raise":
            raise
        return _bound_result(ls, q, z, method, err)
    points = [_point_estimate(ls, q, z, mpp, method, on_failure)]
    dropped = []
    for other in (mpp.others if method != "ldt" else []):
        try:
            points.append(_point_estimate(ls, q, z, other, method, "raise"))
        except MPPError as err:
            dropped.append(str(err))
    lns = np.array([pt["ln_pf"] for pt in points])
    top = np.max(lns)
    ln = float(top + np.log(np.sum(np.exp(lns - top))))
    for pt in points:
        pt["weight"] = float(np.exp(pt["ln_pf"] - ln))
    main = points[0]
    result = ReliabilityResult(method, ln, float(np.exp(ln)), beta=mpp.beta, mpp=mpp.theta,
                               multiplier=mpp.multiplier, curvatures=main["curvatures"],
                               converged=main["bound"] is None, bound=main["bound"],
                               n_mpp=len(points), mpp_result=mpp)
    result.info["points"] = points
    if dropped:
        result.info["dropped"] = dropped
    return result


def _bound_result(ls, q, z, method, err: MPPError) -> ReliabilityResult:
    if err.reason == "unreachable":
        return ReliabilityResult(method, LN_PF_FLOOR, float(np.exp(LN_PF_FLOOR)),
                                 converged=False, bound="unreachable",
                                 info=dict(points=[], error=str(err)))
    best = err.best_feasible
    if best is None:
        return ReliabilityResult(method, 0.0, 1.0, converged=False, bound="trivial",
                                 info=dict(points=[], error=str(err)))
    F, g = ls.value_and_gradient(best, *q)
    gn = float(np.linalg.norm(g))
    beta = float(np.linalg.norm(best))
    gm = "ldt" if method == "ldt" else "form"
    ln = _base_ln_pf(gm, beta)
    lam = beta / gn if gn > 0 else 0.0
    points = [dict(grad_method=gm, theta=best, multiplier=lam, beta=beta, grad=g,
                   grad_norm=gn, hessian=None, ln_pf=ln, weight=1.0)] if gn > 0 else []
    return ReliabilityResult(method, ln, float(np.exp(ln)), beta=beta, mpp=best,
                             multiplier=lam, converged=False, bound="best_feasible",
                             info=dict(points=points, error=str(err)))


@ad.primitive
def _logdet(M):
    sign, ld = np.linalg.slogdet(M)
    if not sign > 0:
        raise ReliabilityError("det(I - lam P H P) <= 0 at the MPP")
    return ld


@ad.rrule(_logdet)
def _logdet_rrule(M):
    y = _logdet(M)

    def logdet_pullback(ybar):
        return (ybar * np.linalg.solve(M.T, np.eye(M.shape[0])),)
    return y, logdet_pullback


@ad.frule(_logdet)
def _logdet_frule(primals, tangents):
    (M,), (Mdot,) = primals, tangents
    return _logdet(M), np.sum(np.linalg.solve(M, Mdot) * np.eye(M.shape[0]))


def _curvature_term(ls: LimitState, theta, lam, *q):
    """``G = -1/2 ln det(I - lam P H P)``, traceable in theta, lam and q."""
    g = ls.gradient(theta, *q)
    H = ls.hessian(theta, *q)
    m = np.shape(g)[0]
    n = g / np.linalg.norm(g)
    P = np.eye(m) - np.outer(n, n)
    M = np.eye(m) - lam * (P @ (H @ P))
    return -0.5 * _logdet(M)


def _point_cotangents(ls: LimitState, q: tuple, idx: list, pt: dict):
    """``(d ln pf_j/dz, [d ln pf_j/dq_i])`` of one MPP's contribution."""
    gm = pt["grad_method"]
    theta, lam, beta, gn = pt["theta"], pt["multiplier"], pt["beta"], pt["grad_norm"]
    if not gn > 0:
        raise ReliabilityError("ln pf is not differentiable here: grad_theta F = 0 at the "
                               "MPP (the origin lies on a critical point of F = z)")
    cF = -_dlnpf_dbeta(gm, beta) / gn          # d/dq = cF dF/dq, d/dz = -cF
    w1, w2 = None, 0.0
    qbar: list = [None] * len(q)
    if gm in ("sorm", "ldt-prefactor"):
        argnums = (0, 1) + tuple(2 + i for i in idx)
        grads = ad.gradient(lambda t, la, *qq: _curvature_term(ls, t, la, *qq),
                            theta, float(lam), *q, argnums=argnums)
        Gt, Gl = np.asarray(grads[0], float), float(grads[1])
        for k, i in enumerate(idx):
            qbar[i] = grads[2 + k]
        H, g = pt["hessian"], pt["grad"]
        m = theta.size
        J = np.block([[np.eye(m) - lam * H, -g[:, None]], [g[None, :], np.zeros((1, 1))]])
        w = np.linalg.solve(J.T, np.concatenate([Gt, [Gl]]))
        w1, w2 = w[:m], float(w[m])
    coef = cF - w2
    if idx:
        def S(*qq):
            val = coef * ls.value(theta, *qq)
            if w1 is not None:
                val = val + lam * (w1 @ ls.gradient(theta, *qq))
            return val
        Sq = ad.gradient(S, *q, argnums=tuple(idx))
        for k, i in enumerate(idx):
            qbar[i] = Sq[k] if qbar[i] is None else Sq[k] + qbar[i]
    return -coef, qbar


def _cotangents(ls: LimitState, q: tuple, result: ReliabilityResult):
    """``(d ln pf/dz, [d ln pf/dq_i])``: the weighted sum over the MPPs."""
    idx = [i for i, x in enumerate(q) if _float_like(x)]
    zbar = 0.0
    qbar: list = [None] * len(q)
    for i in idx:
        qbar[i] = np.zeros(np.shape(q[i])) if np.ndim(q[i]) else 0.0
    for pt in result.info["points"]:
        zj, qj = _point_cotangents(ls, q, idx, pt)
        zbar = zbar + pt["weight"] * zj
        for i in idx:
            qbar[i] = qbar[i] + pt["weight"] * qj[i]
    return zbar, qbar


def _split_options(options: dict):
    options = dict(options)
    common = dict(m=options.pop("m", None), batch=options.pop("batch", False),
                  on_failure=options.pop("on_failure", "raise"),
                  callback=options.pop("callback", None))
    sampling = {k: options.pop(k) for k in ("n_samples", "seed", "center", "smoothing", "chunk")
                if k in options}
    _check_m(common["m"])
    check_bool("batch", common["batch"])
    check_choice("on_failure", common["on_failure"], ("raise", "bound"))
    check_callable("callback", common["callback"], allow_none=True)
    return common, sampling, _mpp_options(options)


def _no_sampling_options(method: str, sampling: dict) -> None:
    """A sampling option given to an asymptotic method is an error, not dropped."""
    if method not in SAMPLING and sampling:
        raise TypeError(f"{sorted(sampling)} only apply to the sampling methods {SAMPLING}, "
                        f"not to method={method!r}")


def failure_probability(limit_state, design, z: float, method: str = "sorm",
                        **options) -> ReliabilityResult:
    """Estimate ``pf = P(F(theta, design) >= z)``, ``theta ~ N(0, I)``.

    Parameters
    ----------
    limit_state : callable or LimitState
        ``F(theta, design)``.
    design : array_like or None
        Plain design (use `ln_pf` to differentiate).
    z : float
        Threshold.
    method : {"ldt", "form", "sorm", "ldt-prefactor", "mc", "is"}
        See the module docstring; ``"mc"``/``"is"`` go to `sampling_estimate`.
    **options
        ``m``, ``batch``, ``on_failure`` (``"raise"``, the default, or
        ``"bound"``: return the documented bound described in
        `ReliabilityResult.bound`, never NaN), the MPP options of `find_mpp`,
        and for sampling ``n_samples``, ``seed``, ``center``, ``smoothing``.

    Returns
    -------
    ReliabilityResult

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import reliability as rel
    >>> F = lambda t, k: t[..., 0] - 0.5 * k * np.sum(t[..., 1:] ** 2, axis=-1)
    >>> r = rel.failure_probability(F, 0.1, 3.0, method="sorm", m=10)
    >>> round(r.ln_pf, 4), round(r.beta, 6)
    (-7.7884, 3.0)
    """
    check_choice("method", method, METHODS)
    _check_z(z)
    common, sampling, mpp_opts = _split_options(options)
    _no_sampling_options(method, sampling)
    if method in SAMPLING:
        given = {k: v for k, v in options.items() if k in _MPP_DEFAULTS}
        result = sampling_estimate(limit_state, design, z, method, m=common["m"],
                                   batch=common["batch"], on_failure=common["on_failure"],
                                   **sampling, **given)
        if common["callback"] is not None:
            common["callback"](result)
        return result
    if method not in ASYMPTOTIC:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if any(ad.is_traced(x) for x in (design, z)):
        raise TypeError("failure_probability takes plain values; use ln_pf to differentiate")
    ls = as_limit_state(limit_state, m=common["m"], batch=common["batch"])
    q = tuple(ls.params(design))
    result = _asymptotic(ls, q, z, method, common["on_failure"], mpp_opts)
    if common["callback"] is not None:
        common["callback"](result)
    return result


def _ln_pf_impl(limit_state, design, z, method: str = "sorm", **options):
    return np.float64(failure_probability(limit_state, design, z, method, **options).ln_pf)


def _ln_pf_setup(limit_state, design, z, method, options):
    for x in (design, z):
        if ad.is_traced(x):
            raise ad.NoRuleError(
                "ln_pf has first derivatives only: it cannot be differentiated twice "
                "(nested ad.gradient / ad.hvp through ln_pf)")
    if method in SAMPLING:
        raise ad.NoRuleError(
            f"method {method!r} is a counting estimator: piecewise constant in the design, "
            "its derivative is 0 almost everywhere. Differentiate an asymptotic method "
            f"{ASYMPTOTIC}, or use crn_directional_derivative on a smoothed estimator")
    check_choice("method", method, METHODS)
    _check_z(z)
    common, sampling, mpp_opts = _split_options(options)
    _no_sampling_options(method, sampling)
    ls = as_limit_state(limit_state, m=common["m"], batch=common["batch"])
    if _float_like(design):
        q, q_back = ad.pullback(lambda d: tuple(ls.params(d)), design)
    else:
        q, q_back = tuple(ls.params(design)), None
    result = _asymptotic(ls, tuple(q), z, method, common["on_failure"], mpp_opts)
    if common["callback"] is not None:
        common["callback"](result)
    cache: dict = {}

    def derivatives():
        if not cache:
            zbar, qbar = _cotangents(ls, tuple(q), result)
            dbar = None
            if q_back is not None:
                dbar = q_back(tuple(qbar))[0]
            cache.update(z=zbar, design=dbar)
        return cache
    return result, derivatives


ln_pf = ad.primitive(_ln_pf_impl)
ln_pf.__name__ = ln_pf.__qualname__ = "ln_pf"
ln_pf.__doc__ = r"""Differentiable ``ln pf`` of ``F(theta, design) >= z`` (an `ad.primitive`).

Parameters
----------
limit_state : callable or LimitState
    ``F(theta, design)``, numpy code differentiable by `topopt.ad` in both
    arguments.
design : float array, float or None
    Differentiable (any float array; the pullback returns a cotangent of
    its shape).
z : float
    Threshold, also differentiable (``d ln pf / dz``).
method : {"ldt", "form", "sorm", "ldt-prefactor"}
    ``"mc"``/``"is"`` evaluate but refuse to be differentiated.
**options
    As for `failure_probability` (``on_failure="bound"``: the documented
    bounds, with the gradient of the bound formula, zero for
    ``"unreachable"``); ``callback(result)`` receives the full
    `ReliabilityResult` of each evaluation.

Returns
-------
float
    ``ln pf`` (``numpy.float64``); traced when `design` or `z` is.

Notes
-----
Pullback: envelope theorem ``d ln pf/dp = c dF/dp(theta*; p)`` with ``c =
lam`` (LDT), ``c = phi(beta)/(Phi(-beta)|grad F|)`` (FORM), plus the
derivative of the curvature factor through the KKT adjoint (SORM,
LDT-prefactor; see the module docstring). With several local MPPs
(`QuadraticLimitState`) ``ln pf`` is the logsumexp of their contributions
and the gradient their weighted sum. First derivatives only.

Examples
--------
>>> import numpy as np
>>> from topopt import ad, reliability as rel
>>> F = lambda t, k: t[0] - 0.5 * k * np.sum(t[1:] ** 2)
>>> v, g = ad.value_and_gradient(
...     lambda k: rel.ln_pf(F, k, 3.0, method="sorm", m=10), 0.1)
>>> round(float(v), 4), round(float(g), 4)     # d/dk [-9/2 ln(1 + 3k)]
(-7.7884, -10.3846)
"""


@ad.rrule(ln_pf)
def _ln_pf_rrule(limit_state, design, z, method="sorm", **options):
    result, derivatives = _ln_pf_setup(limit_state, design, z, method, options)

    def ln_pf_pullback(ybar):
        return (None, ad.thunk(lambda: _scale(ybar, derivatives()["design"])),
                ad.thunk(lambda: _scale(ybar, derivatives()["z"])))
    return np.float64(result.ln_pf), ln_pf_pullback


@ad.frule(ln_pf)
def _ln_pf_frule(primals, tangents, method="sorm", **options):
    limit_state, design, z = primals[:3]
    if len(primals) > 3:
        method = primals[3]
    _, ddot, zdot = tangents[:3]
    result, derivatives = _ln_pf_setup(limit_state, design, z, method, options)
    ydot = None
    if ddot is not None and derivatives()["design"] is not None:
        ydot = np.sum(derivatives()["design"] * ddot)
    if zdot is not None:
        term = derivatives()["z"] * zdot
        ydot = term if ydot is None else ydot + term
    return np.float64(result.ln_pf), ydot


def _scale(ybar, ct):
    return None if ct is None else ybar * ct


class FailureProbability:
    """``ln pf`` of a limit state as a function of the design.

    Calling it returns ``ln pf`` (differentiable with `topopt.ad` for the
    asymptotic methods); `result` gives the whole `ReliabilityResult`. The
    MPP of the previous call starts the next search (``warm_start``).

    Parameters
    ----------
    limit_state : callable or LimitState
    z : float
    method : str
        One of `METHODS`.
    warm_start : bool
    **options
        As for `failure_probability`.

    Attributes
    ----------
    last : ReliabilityResult or None
        The result of the latest evaluation.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad, reliability as rel
    >>> fp = rel.FailureProbability(lambda t, p: p @ t, 15.0, method="form", m=2)
    >>> g = ad.gradient(fp, np.array([3.0, 4.0]))
    >>> round(fp.last.beta, 12), bool(np.all(g > 0))
    (3.0, True)
    """

    def __init__(self, limit_state, z: float, method: str = "sorm", *,
                 warm_start: bool = True, **options):
        check_choice("method", method, METHODS)
        common, sampling, _ = _split_options(options)     # unknown options raise here
        _no_sampling_options(method, sampling)
        if common["callback"] is not None and method not in SAMPLING:
            raise TypeError("FailureProbability records each result itself (attribute "
                            "`last`); callback= is not accepted")
        if not callable(limit_state):
            raise TypeError(f"limit_state must be callable (F(theta, design) or a "
                            f"LimitState), got {type(limit_state).__name__}")
        self.limit_state = limit_state
        _check_z(z)
        self.z = z
        self.method = method
        self.warm_start = check_bool("warm_start", warm_start)
        self.options = options
        self.last: ReliabilityResult | None = None

    def _record(self, result: ReliabilityResult) -> None:
        self.last = result

    def _options(self) -> dict:
        opts = dict(self.options)
        if self.warm_start and self.last is not None and self.last.mpp is not None \
                and self.last.converged and "theta0" not in self.options:
            opts["theta0"] = self.last.mpp
        return opts

    def __call__(self, design):
        opts = self._options()
        if self.method in SAMPLING:
            res = self.result(design)
            return np.float64(res.ln_pf)
        return ln_pf(self.limit_state, design, self.z, self.method,
                     callback=self._record, **opts)

    def result(self, design) -> ReliabilityResult:
        """The full estimate at a plain design."""
        res = failure_probability(self.limit_state, design, self.z, self.method,
                                  **self._options())
        self.last = res
        return res


# ---------------------------------------------------------------- sampling

def sampling_estimate(limit_state, design, z: float, method: str = "is", *,
                      n_samples: int = 100_000, seed: int | None = 0,
                      center: np.ndarray | None = None, smoothing: float = 0.0,
                      m: int | None = None, batch: bool = False, chunk: int = 16384,
                      on_failure: str = "raise", **mpp_options) -> ReliabilityResult:
    r"""Monte Carlo (``"mc"``) or importance-sampling (``"is"``) estimate of pf.

    ``"mc"``: ``pf = mean 1{F(theta_k) >= z}``, ``theta_k ~ N(0, I)``.
    ``"is"``: samples ``theta_k = c + eps_k`` from ``N(c, I)`` centred at the
    MPP ``c = theta*`` (or `center`), weights ``w = exp(-c.theta + |c|^2/2)``,
    ``pf = mean w_k 1{F(theta_k) >= z}`` (sums in log space). With several
    centres ``c_j`` (all local MPPs of a `QuadraticLimitState`, or a 2-D
    `center`) the proposal is the equal-weight mixture of the ``N(c_j, I)``
    and ``w = phi(theta) / mean_j phi(theta - c_j)``.

    With ``smoothing = s > 0`` the indicator is replaced by ``Phi((F - z)/s)``
    (the probability of ``F + s xi >= z`` with an independent ``xi ~ N(0,
    1)``), which makes the estimate a smooth function of the design for
    fixed samples -- see `crn_directional_derivative`.

    Parameters
    ----------
    limit_state, design, z
        As for `failure_probability` (plain values).
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
    m, batch, chunk
        Number of variables, vectorised limit state, samples per batch call
        (``chunk >= 1``).
    on_failure, **mpp_options
        For the MPP search of ``"is"`` (``"mc"`` takes only ``theta0``, for
        the dimension); with ``"bound"`` an unreachable failure region gives
        ``LN_PF_FLOOR``.

    Raises
    ------
    ValueError, TypeError
        Before any sample is drawn, naming the argument and its accepted
        range (``n_samples=0``, a `center` of the wrong length, ``smoothing
        < 0``, an unknown option...).

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
    check_choice("method", method, SAMPLING)
    if any(ad.is_traced(x) for x in (design, z)):
        raise ad.NoRuleError(f"method {method!r} is not differentiable; see "
                             "crn_directional_derivative")
    z = _check_z(z)
    n_samples = check_int("n_samples", n_samples, 1)
    check_seed("seed", seed)
    smoothing = check_range("smoothing", smoothing, 0.0, None,
                            what="width of the smoothed indicator; 0 counts")
    chunk = check_int("chunk", chunk, 1, what="samples per batch call")
    check_choice("on_failure", on_failure, ("raise", "bound"))
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
    result = ReliabilityResult(method, 0.0, 0.0, n_samples=n_samples)
    if method == "is" and center is None:
        try:
            mpp = _solve_mpp(ls, q, z, opts)
        except MPPError as err:
            if on_failure == "raise" or err.reason != "unreachable":
                raise
            return _bound_result(ls, q, z, method, err)
        center = np.array([mpp.theta] + [o.theta for o in mpp.others])
        result.beta, result.multiplier, result.mpp_result = mpp.beta, mpp.multiplier, mpp
    dim = ls.dimension(q) if center is None else np.shape(np.atleast_2d(center))[1]
    if dim is None:
        dim = None if opts["theta0"] is None else np.size(opts["theta0"])
    if dim is None:
        raise ValueError("the number m of random variables is unknown: pass m=")
    rng = np.random.default_rng(seed)
    eps = rng.standard_normal((int(n_samples), int(dim)))
    if method == "is":
        c = np.atleast_2d(np.asarray(center, float))
        if len(c) == 1:
            thetas = eps + c[0]
            logw = -(thetas @ c[0]) + 0.5 * (c[0] @ c[0])
        else:
            thetas = eps + c[rng.integers(len(c), size=len(eps))]
            # log phi(theta) - log mean_j phi(theta - c_j)
            expo = thetas @ c.T - 0.5 * np.sum(c * c, axis=1)
            top_ = np.max(expo, axis=1)
            logw = -(top_ + np.log(np.mean(np.exp(expo - top_[:, None]), axis=1)))
        result.mpp = c[0]
        result.info["centers"] = c
    else:
        thetas, logw = eps, np.zeros(len(eps))
    Fv = ls.values(thetas, *q, chunk=chunk)
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

    Why a counting estimate cannot be differentiated
    ------------------------------------------------
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
    >>> exact = 2.0 * 0.6 * np.exp(-2.0 - 0.5 * np.log(2 * np.pi)
    ...                            - rel.sp.log_ndtr(-2.0))
    >>> bool(abs(r.value - exact) < 4 * r.std_error + 0.02)
    True
    """
    check_callable("estimator", estimator)
    design = check_finite_array("design", design)
    direction = check_finite_array("direction", direction, shape=design.shape)
    h = check_range("h", h, 0.0, None, lo_open=True, what="step of the central difference")
    check_seed("seed", seed)
    plus = estimator(design + h * direction, seed)
    minus = estimator(design - h * direction, seed)
    lp = plus.ln_pf if isinstance(plus, ReliabilityResult) else float(plus)
    lm = minus.ln_pf if isinstance(minus, ReliabilityResult) else float(minus)
    if lp == lm:                                  # includes both -inf (no failures)
        value = 0.0
    else:
        value = (lp - lm) / (2 * h)
    se = np.inf
    if (isinstance(plus, ReliabilityResult) and isinstance(minus, ReliabilityResult)
            and plus.log_terms is not None and minus.log_terms is not None
            and len(plus.log_terms) == len(minus.log_terms) > 1
            and np.isfinite(lp) and np.isfinite(lm)):
        n = len(plus.log_terms)
        u = (np.exp(plus.log_terms - lp - np.log(n)) * n
             - np.exp(minus.log_terms - lm - np.log(n)) * n) / (2 * h)
        se = float(np.std(u, ddof=1) / np.sqrt(n))
    return CRNDerivative(float(value), se, float(lp), float(lm))


# ------------------------------------------------------------------ penalty

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


def _sum_to(g, shape):
    """Sum a broadcast cotangent back to `shape`."""
    shape = tuple(shape)
    if np.shape(g) == shape:
        return g
    while len(np.shape(g)) > len(shape):
        g = np.sum(g, axis=0)
    for ax, n in enumerate(shape):
        if n == 1 and np.shape(g)[ax] != 1:
            g = np.sum(g, axis=ax, keepdims=True)
    return g


@ad.rrule(failure_penalty)
def _failure_penalty_rrule(ln_pf, ln_pa, K=1.0):
    _penalty_args(ln_pf, ln_pa, K)
    d = np.maximum(ln_pf - ln_pa, 0.0)
    y = K * d * d

    def failure_penalty_pullback(ybar):
        t = 2 * K * d * ybar
        return (_sum_to(t, np.shape(ln_pf)), _sum_to(-t, np.shape(ln_pa)),
                _sum_to(d * d * ybar, np.shape(K)))
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
