"""The differentiable solve of ``K(a) u = f``: four primitives and their rules.

Differentiation goes through four primitives that are closed under
differentiation, so gradients, Hessian-vector products and mixed second
derivatives all work (element matrices are real symmetric; `S` is a
`topopt.fem.LinearSystem`):

* ``_solve(S, a, f, F)`` -- ``u = K(a)^{-1} f`` with factorization ``F``;
  pullback ``lambda = K^{-H} ubar``, ``abar_e = -conj(lambda_e^H K_e u_e)``,
  ``fbar = lambda``: one adjoint solve reusing ``F``;
* ``_solve_adjoint(S, a, g, F)`` -- ``K(a)^{-H} g``;
* ``matvec(S, a, w)`` -- ``sum_e a_e K_e w_e``;
* ``products(S, v, w)`` -- per element ``conj(v_e)^T K_e w_e`` (summed over
  load cases), the vectorised sensitivity ``-lambda_e^T K_e u_e``.

`solve` is the public entry: it factorizes ``K(a)`` (`LinearSystem.factorize`)
and calls ``_solve``. A system provides ``restrict`` / ``expand`` (free dofs of a
full vector and back), ``free_solve``, ``factorize``, ``element_matvec`` and
``element_products`` (`LinearSystem`, `topopt.grid.GridSystem`).
"""

from __future__ import annotations

import time

import numpy as np

from .. import ad
from .._validate import check_load

__all__ = ["solve", "matvec", "products"]


def _conj(z):
    return np.conj(z) if np.iscomplexobj(ad.value(z)) else z


def _check_rhs(S: "LinearSystem", f):
    """The load `f`: shape ``(ndof,)`` or ``(ndof, n_loads)``, finite at every dof (one pass)."""
    check_load("f", f, S.ndof)


# ---------------------------------------------------------------- primitives

@ad.primitive
def _solve(S: "LinearSystem", a, f, F):
    """``u = K(a)^{-1} f`` on the free dofs, zeros on the fixed ones."""
    f = np.asarray(f)
    return S.expand(S.free_solve(F, S.restrict(f)), f)


@ad.primitive
def _solve_adjoint(S: "LinearSystem", a, g, F):
    """``K(a)^{-H} g`` on the free dofs, zeros on the fixed ones."""
    g = np.asarray(g)
    return S.expand(S.free_solve(F, S.restrict(g), adjoint=True), g)


def _self_adjoint(S: "LinearSystem", f, u, ubar):
    """``lambda = K^{-H} ubar`` without a solve when ``ubar = alpha f`` and ``K = K^H``.

    Compliance ``c = f^T u`` gives ``ubar = f`` (times a scale): then
    ``lambda = alpha u`` exactly. Checked per call, per load case; None when
    it does not apply (or for traced values, whose derivatives need the solve).
    """
    if not (S.real and S.symmetric) or any(map(ad.is_traced, (f, u, ubar))):
        return None
    fb, ub = S.restrict(np.asarray(f)), S.restrict(np.asarray(ubar))
    if fb.shape != ub.shape or np.iscomplexobj(ub):
        return None
    # a system split across ranks (`topopt.grid.slab_system`) decides on every rank alike
    total = getattr(S, "global_sum", np.asarray)
    largest = getattr(S, "global_max", np.asarray)
    ff = total(np.sum(fb * fb, axis=0))
    if np.any(ff == 0):
        return None
    alpha = total(np.sum(fb * ub, axis=0)) / ff
    alpha = alpha if np.ndim(fb) > 1 else alpha.reshape(())[()]
    gap = largest(np.array([np.max(np.abs(ub - alpha * fb), initial=0.0),
                            np.max(np.abs(ub), initial=0.0)]))
    if gap[0] > 1e-13 * gap[1]:
        return None
    S.counts["self_adjoint"] += 1
    return np.asarray(u) * alpha


@ad.rrule(_solve)
def _solve_rrule(S, a, f, F):
    u = _solve(S, a, f, F)

    def solve_pullback(ubar):
        lam = _self_adjoint(S, f, u, ubar)
        if lam is None:
            lam = _solve_adjoint(S, a, ubar, F)
        return None, ad.thunk(lambda: -_conj(products(S, lam, u))), lam, None
    return u, solve_pullback


def _solve_tangent(fun, conj: bool):
    """Forward rule of ``fun(S, a, f, F) = K^{-1} f`` (or ``K^{-H} f`` with `conj`).

    ``udot = K^{-1} (fdot - adot K_e u)``: differentiating ``K(a) u = f``
    (``K^H`` has the coefficients ``conj(a)``).
    """
    def frule(primals, tangents):
        S, a, f, F = primals
        _, adot, fdot, _ = tangents
        u = fun(S, a, f, F)
        rhs = fdot
        if adot is not None:
            adot = _conj(adot) if conj else adot
            rhs = -matvec(S, adot, u) if rhs is None else rhs - matvec(S, adot, u)
        return u, None if rhs is None else fun(S, a, rhs, F)
    frule.__name__ = frule.__qualname__ = f"{fun.__name__}_frule"
    return frule


_solve_frule = ad.frule(_solve)(_solve_tangent(_solve, conj=False))


@ad.rrule(_solve_adjoint)
def _solve_adjoint_rrule(S, a, g, F):
    y = _solve_adjoint(S, a, g, F)

    def solve_adjoint_pullback(ybar):
        mu = _solve(S, a, ybar, F)
        return None, ad.thunk(lambda: -products(S, mu, y)), mu, None
    return y, solve_adjoint_pullback


ad.frule(_solve_adjoint)(_solve_tangent(_solve_adjoint, conj=True))


@ad.primitive
def matvec(S: "LinearSystem", a, w):
    """``sum_e a_e K_e w_e``: the design part of ``K(a) w`` on all dofs."""
    t0 = time.perf_counter()
    y = S.element_matvec(np.asarray(a), np.asarray(w))
    S.timers["sensitivity"] += time.perf_counter() - t0
    return y


@ad.rrule(matvec)
def matvec_rrule(S, a, w):
    def matvec_pullback(ybar):
        return (None, ad.thunk(lambda: _conj(products(S, ybar, w))),
                ad.thunk(lambda: matvec(S, _conj(a), ybar)))
    return matvec(S, a, w), matvec_pullback


def _bilinear_frule(fun):
    """Forward rule of a primitive ``fun(S, v, w)`` linear in `v` and in `w`."""
    def frule(primals, tangents):
        S, v, w = primals
        _, vdot, wdot = tangents
        ydot = None if vdot is None else fun(S, vdot, w)
        if wdot is not None:
            ydot = fun(S, v, wdot) if ydot is None else ydot + fun(S, v, wdot)
        return fun(S, v, w), ydot
    frule.__name__ = frule.__qualname__ = f"{fun.__name__}_frule"
    return frule


ad.frule(matvec)(_bilinear_frule(matvec))


@ad.primitive
def products(S: "LinearSystem", v, w):
    """Per element ``conj(v_e)^T K_e w_e``, summed over load cases."""
    t0 = time.perf_counter()
    y = S.element_products(v, w)
    S.timers["sensitivity"] += time.perf_counter() - t0
    return y


@ad.rrule(products)
def products_rrule(S, v, w):
    def products_pullback(ybar):
        return (None, ad.thunk(lambda: matvec(S, _conj(ybar), w)),
                ad.thunk(lambda: matvec(S, ybar, v)))
    return products(S, v, w), products_pullback


ad.frule(products)(_bilinear_frule(products))


@ad.primitive
def solve(S: "LinearSystem", a, f):
    """Solve ``K(a) u = f``; differentiable in `a` and `f`.

    Factorizes ``K(a)`` once (reused for an equal `a`); the pullback makes
    one adjoint solve with the same factorization and returns the element
    sensitivities ``-conj(lambda_e^H K_e u_e)`` computed vectorised.
    `f` is a full-dof vector or an ``(ndof, n_loads)`` array; `u` has zeros
    at the fixed dofs.
    """
    _check_rhs(S, f)
    return _solve(S, a, f, S.factorize(a))


@ad.rrule(solve)
def solve_rrule(S, a, f):
    _check_rhs(S, f)
    u, pullback = _solve_rrule(S, a, f, S.factorize(a))
    return u, lambda ubar: pullback(ubar)[:3]


@ad.frule(solve)
def solve_frule(primals, tangents):
    S, a, f = primals
    _check_rhs(S, f)
    return _solve_frule((S, a, f, S.factorize(a)), tuple(tangents) + (None,))
