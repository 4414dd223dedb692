"""The nonlinear solve ``R(u, p) = 0`` as one differentiable primitive.

Newton's method with a backtracking line search finds the state; its
derivatives come from the implicit function theorem at the converged state
(dolfin-adjoint's and JAX ``custom_root``'s approach), never from the
iterations. Two primitives, closed under differentiation:

* ``_nonlinear(model, p, u0, opts)`` -- the converged state ``u(p)``;
  pullback ``lam = J^{-T} ubar``, ``pbar = -(dR/dp)^T lam`` (the vjp of the
  traced residual in `p`); tangent ``udot = -J^{-1} (dR/dp) pdot``.
* ``_jacobian_solve(model, u, p, b, opts, transpose)`` -- ``J(u, p)^{-1} b``
  (or ``J^{-T} b``) with the factorization of the converged Jacobian; its
  rules differentiate ``J`` through the traced residual
  (``d(J x) = d/d(u, p) <jvp of R in u along x>``), so Hessian-vector
  products and nested derivatives follow.

A *model* has ``residual(u, p)`` (numpy code that `topopt.ad` traces in `u`
and `p`), ``jacobian(u, p)`` (a scipy.sparse ``dR/du`` at plain arrays) and
optionally ``fixed`` (prescribed dofs, whose values `u0` gives).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sps

from .. import ad
from .._validate import check_int
from .errors import ConvergenceError
from .solvers.direct import factorize_lu

__all__ = ["solve_nonlinear", "NewtonError"]


class NewtonError(ConvergenceError):
    """Newton's method did not reach the tolerance; no state is returned.

    Attributes ``residual`` (the norm reached), ``iterations`` and ``t`` (the
    continuation step that failed).
    """

    def __init__(self, message: str, residual: float, iterations: int, t):
        super().__init__(message)
        self.residual, self.iterations, self.t = residual, iterations, t


@dataclass(frozen=True)
class _Options:
    rtol: float
    atol: float
    maxiter: int
    steps: tuple | None
    line_search: bool
    monitor: object


# ------------------------------------------------------------------ the model calls

def _kw(opts: _Options, t=None) -> dict:
    """The continuation keyword for the model: none without `steps`, else ``t=`` (last step)."""
    if opts.steps is None:
        return {}
    return {"t": opts.steps[-1] if t is None else t}


def _fixed(model, n: int) -> np.ndarray:
    fixed = np.asarray(getattr(model, "fixed", ()), dtype=np.int64).ravel()
    if fixed.size and (fixed.min() < 0 or fixed.max() >= n):
        raise IndexError(f"model.fixed holds dofs outside 0..{n - 1}")
    return fixed


def _free_mask(model, n: int) -> np.ndarray:
    free = np.ones(n, dtype=bool)
    free[_fixed(model, n)] = False
    return free


def _residual(model, u, p, opts, t=None):
    return model.residual(u, p, **_kw(opts, t))


def _free_residual(model, u, p, free, opts, t=None) -> np.ndarray:
    R = np.asarray(ad.value(_residual(model, u, p, opts, t)))
    if R.shape != u.shape:
        raise ValueError(f"model.residual returned shape {R.shape}; the state has {u.shape}")
    return R[free]


def _free_jacobian(model, u, p, free, opts, t=None):
    J = model.jacobian(u, p, **_kw(opts, t))
    if not (sps.issparse(J) or isinstance(J, np.ndarray)) or J.shape != (u.size, u.size):
        raise ValueError(f"model.jacobian must return a ({u.size}, {u.size}) scipy.sparse "
                         f"matrix, got {type(J).__name__} of shape {getattr(J, 'shape', None)}")
    J = sps.csr_matrix(J)
    return J[free][:, free]


# ------------------------------------------------------------------ Newton

def _newton_step(model, u, p, free, opts, t):
    """Newton iterations at one continuation step; returns the converged `u` and the
    factor of the last Newton matrix (None if no step was taken)."""
    u = u.copy()
    R = _free_residual(model, u, p, free, opts, t)
    u_data = u.copy()
    u_data[free] = 0.0
    scale = np.linalg.norm(_free_residual(model, u_data, p, free, opts, t))
    goal = opts.atol + opts.rtol * scale
    norm = np.linalg.norm(R)
    F = None
    for it in range(opts.maxiter + 1):
        if opts.monitor is not None:
            opts.monitor(t, it, norm)
        if not np.isfinite(norm):
            raise NewtonError(f"Newton's method (step t={t}): the residual is not finite at "
                              f"iteration {it}; start closer (u0) or take smaller "
                              "continuation steps (steps=)", norm, it, t)
        if norm <= goal:
            return u, F
        if it == opts.maxiter:
            break
        F = factorize_lu(_free_jacobian(model, u, p, free, opts, t))
        du = -F.solve(R)
        lam, trial = 1.0, None
        while True:
            trial = u.copy()
            trial[free] += lam * du
            R_new = _free_residual(model, trial, p, free, opts, t)
            new = np.linalg.norm(R_new)
            # Armijo on 1/2 |R|^2 along the Newton direction (slope -|R|^2)
            if not opts.line_search or new <= (1.0 - 1e-4 * lam) * norm or lam < 1e-4:
                break
            lam *= 0.5
        if np.max(np.abs(lam * du), initial=0.0) <= 1e-14 * max(np.max(np.abs(u)), 1e-300) \
                and new <= 1e3 * goal:
            return trial, F                    # the step is round-off: converged in u
        u, R, norm = trial, R_new, new
    raise NewtonError(
        f"Newton's method did not converge at continuation step t={t}: residual norm "
        f"{norm:.3e} after {opts.maxiter} iterations (goal {goal:.3e} = atol + rtol * "
        f"{scale:.3e}); try more continuation steps (steps=), a smaller load or Reynolds "
        "number step, a better start u0, or maxiter=", norm, opts.maxiter, t)


class _Converged:
    """A converged state and the lazily factorized free Jacobian there."""

    def __init__(self, model, u, p, opts, factor=None):
        self.model, self.u, self.p, self.opts = model, u, p, opts
        self._factor = factor

    def factor(self):
        if self._factor is None:
            free = _free_mask(self.model, self.u.size)
            self._factor = factorize_lu(_free_jacobian(self.model, self.u, self.p, free,
                                                       self.opts))
        return self._factor


_CACHE: list = []          # the few last solves: (model, opts, p, u0, _Converged)
_CACHE_SIZE = 4


def _same(a, b) -> bool:
    return a.shape == b.shape and np.array_equal(a, b)


def _converge(model, p, u0, opts) -> _Converged:
    """Newton over the continuation steps at plain `p` (the last few solves cached)."""
    p, u0 = np.asarray(ad.value(p)), np.asarray(ad.value(u0))
    for entry in _CACHE:
        if entry[0] is model and entry[1] == opts and _same(entry[2], p) and _same(entry[3], u0):
            return entry[4]
    free = _free_mask(model, u0.size)
    u = np.array(u0, dtype=float)
    for t in (opts.steps or (None,)):
        u, F = _newton_step(model, u, p, free, opts, t)
    # a model linear in u (``model.linear``): the last Newton matrix is the converged one
    state = _Converged(model, u, p.copy(), opts, F if getattr(model, "linear", False) else None)
    _CACHE.insert(0, (model, opts, p.copy(), u0.copy(), state))
    del _CACHE[_CACHE_SIZE:]
    return state


def _factor_at(model, u, p, opts):
    """The factor of the free Jacobian at plain ``(u, p)``: the cached solve's when it is there."""
    u, p = np.asarray(ad.value(u)), np.asarray(ad.value(p))
    for entry in _CACHE:
        state = entry[4]
        if entry[0] is model and entry[1] == opts and _same(state.u, u) and _same(state.p, p):
            return state.factor()
    return _Converged(model, u, p, opts).factor()


# ------------------------------------------------------------------ primitives

@ad.primitive
def _nonlinear(model, p, u0, opts):
    """The converged state of ``R(u, p) = 0`` from `u0`."""
    return _converge(model, p, u0, opts).u.copy()


@ad.primitive
def _jacobian_solve(model, u, p, b, opts, transpose):
    """``J(u, p)^{-1} b`` on the free dofs (``J^{-T}`` with `transpose`), zeros at fixed."""
    b = np.asarray(b)
    free = _free_mask(model, b.shape[0])
    F = _factor_at(model, u, p, opts)
    x = np.zeros(b.shape, dtype=np.result_type(b, float))
    x[free] = F.solve_adjoint(b[free]) if transpose else F.solve(b[free])
    return x


def _residual_jvp(model, u, p, udot, pdot, opts):
    """``dR/du udot + dR/dp pdot`` (either direction may be None), traced."""
    return ad.jvp(lambda uu, pp: _residual(model, uu, pp, opts), (u, p), (udot, pdot))[1]


def _residual_vjp(model, u, p, lam, opts):
    """``(dR/du)^T lam, (dR/dp)^T lam``, traced."""
    return ad.pullback(lambda uu, pp: _residual(model, uu, pp, opts), u, p)[1](lam)


@ad.rrule(_nonlinear)
def _nonlinear_rrule(model, p, u0, opts):
    u = _nonlinear(model, p, u0, opts)

    def nonlinear_pullback(ubar):
        lam = _jacobian_solve(model, u, p, ubar, opts, True)
        return None, ad.thunk(lambda: -_residual_vjp(model, u, p, lam, opts)[1]), None, None
    return u, nonlinear_pullback


@ad.frule(_nonlinear)
def _nonlinear_frule(primals, tangents):
    model, p, u0, opts = primals
    pdot = tangents[1]
    u = _nonlinear(model, p, u0, opts)
    if pdot is None:
        return u, None
    rhs = -_residual_jvp(model, u, p, None, pdot, opts)
    return u, _jacobian_solve(model, u, p, rhs, opts, False)


def _jacobian_product_form(model, opts, transpose):
    """``(u, p, x) -> J(u, p) x`` (``J^T x`` with `transpose`), traced in all three."""
    if transpose:
        return lambda u, p, x: _residual_vjp(model, u, p, x, opts)[0]
    return lambda u, p, x: _residual_jvp(model, u, p, x, None, opts)


@ad.rrule(_jacobian_solve)
def _jacobian_solve_rrule(model, u, p, b, opts, transpose):
    x = _jacobian_solve(model, u, p, b, opts, transpose)

    def jacobian_solve_pullback(xbar):
        # x = J^{-1} b: bbar = J^{-T} xbar = mu; (u, p)bar = -d/d(u, p) <mu, J x>
        mu = _jacobian_solve(model, u, p, xbar, opts, not transpose)
        a, c = (x, mu) if transpose else (mu, x)      # <x, J mu> for J^T x = b

        def ct(k):
            form = _jacobian_product_form(model, opts, False)
            return ad.thunk(lambda: -ad.pullback(
                lambda uu, pp: np.sum(a * form(uu, pp, c)), u, p)[1](1.0)[k])
        return None, ct(0), ct(1), mu, None, None
    return x, jacobian_solve_pullback


@ad.frule(_jacobian_solve)
def _jacobian_solve_frule(primals, tangents):
    model, u, p, b, opts, transpose = primals
    _, udot, pdot, bdot, _, _ = tangents
    x = _jacobian_solve(model, u, p, b, opts, transpose)
    rhs = bdot
    if udot is not None or pdot is not None:
        form = _jacobian_product_form(model, opts, transpose)
        dJx = ad.jvp(lambda uu, pp: form(uu, pp, x), (u, p), (udot, pdot))[1]
        rhs = -dJx if rhs is None else rhs - dJx
    return x, None if rhs is None else _jacobian_solve(model, u, p, rhs, opts, transpose)


# ------------------------------------------------------------------ public entry

def _check_options(u0, rtol, atol, maxiter, steps):
    if not (np.ndim(u0) == 1 and np.size(u0) > 0):
        raise ValueError(f"u0 must be a non-empty 1-D state vector, got shape {np.shape(u0)}")
    if not np.all(np.isfinite(ad.value(u0))):
        raise ValueError("u0 holds non-finite values; give a finite initial state")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not (np.isscalar(v) and np.isfinite(v) and v >= 0):
            raise ValueError(f"{name}={v!r}: give a finite number >= 0")
    if rtol == 0 and atol == 0:
        raise ValueError("rtol=0 and atol=0 can never be met; give rtol > 0 or atol > 0")
    check_int("maxiter", maxiter, 1)
    if steps is None:
        return None
    steps = tuple(float(s) for s in np.atleast_1d(steps))
    if not steps or not all(np.isfinite(steps)):
        raise ValueError(f"steps={steps!r}: give a non-empty sequence of finite continuation "
                         "values; the state at the last one is returned")
    return steps


def solve_nonlinear(model, p, u0, *, rtol: float = 1e-10, atol: float = 0.0,
                    maxiter: int = 50, steps=None, line_search: bool = True,
                    monitor=None):
    """Solve ``R(u, p) = 0`` by Newton's method; differentiable in `p` in every mode.

    Parameters
    ----------
    model
        An object with ``residual(u, p)`` -- the residual ``R``, shape
        ``(n,)``, written in numpy so that `topopt.ad` traces it in `u` and `p`
        (twice, for the second-order modes) -- and ``jacobian(u, p)``, the
        scipy.sparse ``dR/du`` at plain arrays. Optional attributes: ``fixed``,
        the prescribed dofs, whose values `u0` gives (rows of ``R`` there are
        ignored); ``linear``, True when ``R`` is affine in `u` (``J`` does not
        depend on `u`: the adjoint reuses the Newton step's factorization).
    p : array_like
        The parameters (e.g. the design), traced or plain.
    u0 : ndarray, shape (n,)
        Start of Newton's method and the values at the fixed dofs; not
        differentiated.
    rtol, atol : float
        Converged when ``|R| <= atol + rtol |R(u_D)|`` on the free dofs, with
        ``u_D`` the state that is zero except at the fixed dofs (so the test
        does not depend on the start), or when a full step changes `u` by
        round-off only.
    maxiter : int
        Newton iterations per continuation step, >= 1.
    steps : sequence of float, optional
        Continuation: ``residual`` and ``jacobian`` are called with ``t=`` for
        each value in turn, each solve starting from the last; the state at
        the last value is returned and differentiated.
    line_search : bool
        Backtracking (halving, Armijo on ``|R|^2 / 2``) on each Newton step.
    monitor : callable, optional
        Called ``monitor(t, iteration, residual_norm)`` at every iterate.

    Returns
    -------
    u : ndarray, shape (n,)
        The state; its derivatives come from the implicit function theorem:
        one transposed solve with the converged Jacobian's factorization per
        reverse pass (``lam = J^{-T} ubar``, ``pbar = -(dR/dp)^T lam``).

    Raises
    ------
    NewtonError
        When a continuation step does not converge within `maxiter` (or the
        residual is not finite), naming the residual norm and what to try.

    Examples
    --------
    ``R(u, p) = u^3 + u - p`` per component, ``du/dp = 1 / (3u^2 + 1)``:

    >>> import numpy as np, scipy.sparse as sps
    >>> from topopt import ad, fem
    >>> class Cubic:
    ...     def residual(self, u, p):
    ...         return u ** 3 + u - p
    ...     def jacobian(self, u, p):
    ...         return sps.diags(3 * u ** 2 + 1)
    >>> u = fem.solve_nonlinear(Cubic(), np.array([2.0, 10.0]), np.zeros(2))
    >>> u.round(12)
    array([1., 2.])
    >>> ad.gradient(lambda p: np.sum(fem.solve_nonlinear(Cubic(), p, np.zeros(2))),
    ...             np.array([2.0, 10.0])).round(12)
    array([0.25      , 0.07692308])
    """
    steps = _check_options(u0, rtol, atol, maxiter, steps)
    if monitor is not None and not callable(monitor):
        raise TypeError(f"monitor must be callable(t, iteration, residual_norm), got "
                        f"{type(monitor).__name__}")
    for name in ("residual", "jacobian"):
        if not callable(getattr(model, name, None)):
            raise TypeError(f"model must have a method {name}(u, p); got "
                            f"{type(model).__name__}")
    opts = _Options(float(rtol), float(atol), int(maxiter), steps, bool(line_search), monitor)
    return _nonlinear(model, p, np.asarray(ad.value(u0), dtype=float), opts)
