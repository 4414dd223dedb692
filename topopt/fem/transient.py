"""Transient heat conduction by theta time stepping: one differentiable primitive.

``M(c) dT/dt + K(k) T = q(t)`` with ``K(k) = sum_e k_e K_e`` (conduction),
``M(c) = sum_e c_e M_e`` (heat capacity, consistent ``M_e``), homogeneous
Dirichlet supports, ``T_0 = 0``, constant step ``dt``; the theta method
(``theta = 1``: implicit Euler, ``1/2``: Crank-Nicolson) gives, for
``n = 0 .. N-1``::

    A T_{n+1} = B T_n + r_{n+1},   A = M/dt + theta K,   B = M/dt - (1 - theta) K,
    r_{n+1} = theta q_{n+1} + (1 - theta) q_n,           q_n = Q s_n

(sources ``Q`` of shape ``(ndof, n_src)`` with time signals ``s`` of shape
``(N + 1, n_src)``, so that no ``(ndof, N)`` array is ever formed). The
primitive `transient` returns the observations ``Y_n = L^T T_n``, ``(N + 1,
m)``; any objective over time is then a function of ``Y`` on the tape
(pyMOTO's example: ``100 sum_n 1_h^T T_n``). ``A`` is factorized once per
design; every step is a pair of triangular solves.

Reverse rule (the adjoint runs backward through the steps): with
``Ybar = dJ/dY``, ``A lambda_n = L Ybar_n + B lambda_{n+1}`` (``lambda_{N+1}
= 0``) and, per element, ``dJ/da_e = sum_n lambda_{n+1}^T (B_e T_n - A_e
T_{n+1})`` for ``a = (k, c)``: ``dJ/dk_e = -sum lambda^T K_e (theta T_{n+1}
+ (1 - theta) T_n)``, ``dJ/dc_e = -sum lambda^T M_e (T_{n+1} - T_n)/dt``.
Memory is bounded by **uniform checkpointing** (Griewank & Walther 2008,
ch. 12): the forward sweep keeps every ``k``-th state (``k = ceil(sqrt N)``
by default, and the final one); the backward sweep recomputes one segment of
``k`` states from its checkpoint at a time. It holds ``N/k + k + O(1) ~ 2
sqrt(N)`` states instead of ``N + 1``, at the cost of ``N - ceil(N/k)``
extra forward solves (about ``N``: ``3N`` solves per gradient instead of
``2N``, still one factorization).

Forward rule: the tangent ``A Tdot_{n+1} = B Tdot_n + Bdot T_n - Adot
T_{n+1}`` rides along the primal sweep (``2N`` solves, O(1) states).
Second order (``ad.hvp``, nested gradients): the pullback is itself a
primitive (`transient_vjp`) whose forward and reverse rules are one
second-order adjoint sweep (tangent states checkpointed beside the states,
``A lambdadot_n = L Ybardot_n + B lambdadot_{n+1} + Bdot lambda_{n+1} - Adot
lambda_n``); third derivatives raise `topopt.ad.NoRuleError`.
"""

from __future__ import annotations

import math

import numpy as np

from .. import ad
from .._validate import (check_array_range, check_finite_array, check_finite_values, check_sequence,
                         check_int, check_positive, check_range, check_type)
from .modal import element_mass
from .models import Model
from .system import LinearSystem

__all__ = ["TransientSystem", "transient", "transient_vjp", "temperatures"]

DIRECT = ("auto", "cholmod", "umfpack", "superlu")
_PARAMS = {3: "the sources Q of transient", 4: "the signals s of transient",
           5: "the observation matrix L of transient"}


class TransientSystem:
    """Theta time stepping of ``M(c) dT/dt + K(k) T = Q s(t)`` on a heat model.

    Parameters
    ----------
    model : topopt.fem.Model
        A scalar (heat) model with its supports (``fem.heat``).
    dt : float > 0
        Time step.
    theta : float in [0, 1]
        1 is implicit Euler, 0.5 Crank-Nicolson (0, explicit Euler, is
        stable only for small `dt`).
    capacity : float > 0
        Volumetric heat capacity ``rho c`` at unit coefficient (``M_e``).
    every : int >= 1, optional
        Checkpoint interval ``k`` of the reverse rule; default ``ceil(sqrt N)``
        (1 keeps every state).
    solver : {"auto", "cholmod", "umfpack", "superlu"}
        Direct backend of ``A = M/dt + theta K``.

    Attributes
    ----------
    counts : dict
        ``"solves"`` (forward and adjoint, recomputations included),
        ``"recomputed"`` (forward solves of the backward sweeps),
        ``"states"`` (the most state vectors the last sweep held at once).

    Examples
    --------
    One element, all four nodes free: the uniform temperature rises by
    ``q dt / (rho c)`` per step under a uniform source.

    >>> import numpy as np
    >>> from topopt import fem
    >>> model = fem.heat(fem.rectangle(1, 1))
    >>> S = fem.TransientSystem(model, dt=0.5)
    >>> q = model.body_load((1.0,))
    >>> Y = fem.transient(S, np.ones(1), np.ones(1), q, np.ones(4), np.full(4, 0.25))
    >>> Y.round(12).tolist()
    [0.0, 0.5, 1.0, 1.5]
    """

    def __init__(self, model: Model, dt: float, theta: float = 1.0, capacity: float = 1.0,
                 every: int | None = None, solver: str = "auto"):
        check_type("model", model, Model, "a topopt.fem.Model (fem.heat(mesh))")
        if model.components != 1:
            raise ValueError(f"model must be a scalar (heat) model, got {model.components} "
                             "components per node")
        self.dt = check_positive("dt", dt, "time step")
        self.theta = check_range("theta", theta, 0.0, 1.0, what="time-stepping parameter")
        self.capacity = check_positive("capacity", capacity, "volumetric heat capacity")
        self.every = None if every is None else check_int("every", every, 1, None,
                                                          what="checkpoint interval")
        if solver not in DIRECT:
            raise ValueError(f"solver must be a direct backend {DIRECT}, got {solver!r}")
        self.model, self.n_el, self.ndof = model, model.n_el, model.ndof
        Ke = np.broadcast_to(model.Ke, (self.n_el,) + model.Ke.shape[-2:])
        Me = np.broadcast_to(element_mass(model, self.capacity), Ke.shape)
        edofs = model.basis.element_dofs.T
        dofs = np.vstack([edofs] * 2)
        # a = (k, c): A(a) = M(c)/dt + theta K(k), B(a) = M(c)/dt - (1 - theta) K(k), both
        # stacked over the element matrices (A factorized, B assembled once per design)
        self.A = LinearSystem(dofs, np.concatenate([self.theta * Ke, Me / self.dt]),
                              self.ndof, model.fixed, solver=solver)
        self.B = LinearSystem(dofs, np.concatenate([(self.theta - 1.0) * Ke, Me / self.dt]),
                              self.ndof, model.fixed, solver="superlu")
        # the element kernels of K_e and M_e (one matrix each) for the sensitivities
        self.K = LinearSystem(edofs, Ke, self.ndof, model.fixed, solver="superlu")
        self.M = LinearSystem(edofs, Me, self.ndof, model.fixed, solver="superlu")
        self.free = self.A.free
        self.counts = {"solves": 0, "recomputed": 0, "states": 0}

    def __repr__(self):
        return (f"TransientSystem({self.n_el} elements, {self.A.free.size} free dofs, "
                f"dt={self.dt:g}, theta={self.theta:g})")

    def interval(self, n_steps: int) -> int:
        """The checkpoint interval ``k`` for `n_steps` steps (`every` or ``ceil(sqrt N)``)."""
        return min(self.every or math.ceil(math.sqrt(n_steps)), n_steps)

    def coefficients(self, k, c) -> np.ndarray:
        """``a = (k, c)`` checked (plain, ``(n_el,)`` each, finite, ``>= 0``, ``c > 0``)."""
        out = []
        for name, v in (("k", k), ("c", c)):
            v = np.asarray(ad.value(v), dtype=float)
            if v.shape != (self.n_el,):
                raise ValueError(f"{name} has shape {v.shape}; expected ({self.n_el},), one "
                                 "coefficient per element")
            check_finite_values(name, v, "element coefficients must be finite", ("element",))
            check_array_range(name, v, 0.0, None, what="element coefficients")
            out.append(v)
        if not np.all(out[1] > 0):
            raise ValueError(f"c must be > 0 in every element (M(c)/dt keeps A positive "
                             f"definite); element {int(np.argmin(out[1]))} has "
                             f"{float(np.min(out[1])):g}")
        return np.concatenate(out)

    def data(self, Q, s, L):
        """``(Q, s, L)`` checked, as 2-D arrays ``(ndof, n_src)``, ``(N + 1, n_src)``,
        ``(ndof, m)``."""
        Q = _columns("Q", Q, self.ndof)
        s = check_finite_array("s", s)
        s = s[:, None] if s.ndim == 1 else s
        if s.ndim != 2 or s.shape[0] < 2 or s.shape[1] != Q.shape[1]:
            raise ValueError(f"s has shape {s.shape}; expected (N + 1, {Q.shape[1]}) with N "
                             ">= 1 steps, one column per source column of Q")
        return Q, s, _columns("L", L, self.ndof)

    def rows(self, Q, s, L):
        """`data` with the free rows of `Q` and `L` (what the sweeps use)."""
        Q, s, L = self.data(Q, s, L)
        return Q[self.free], s, L[self.free]

    # ------------------------------------------------------------- the step
    def operators(self, a, adot=None):
        """``(F, B, Adot, Bdot)`` on the free dofs: the one factorization of ``A`` and
        the sparse ``B`` of the design `a`, and the matrices of the direction `adot`."""
        F, B = self.A.factorize(a, exact=True), self.B.matrix(a)
        if adot is None:
            return F, B, None, None
        return F, B, self.A.matrix(adot), self.B.matrix(adot)

    def solve(self, F, rhs) -> np.ndarray:
        """``A^{-1} rhs`` on the free dofs."""
        self.counts["solves"] += 1
        return self.A.free_solve(F, rhs)

    def step(self, ops, T, r, Tdot=None):
        """``(T_{n+1}, Tdot_{n+1})`` from ``(T_n, Tdot_n)`` and the load ``r_{n+1}``
        (free dofs): ``A Tdot_{n+1} = B Tdot_n + Bdot T_n - Adot T_{n+1}``."""
        F, B, Adot, Bdot = ops
        T1 = self.solve(F, B @ T + r)
        if Adot is None:
            return T1, None
        rhs = Bdot @ T - Adot @ T1
        return T1, self.solve(F, rhs if Tdot is None else rhs + B @ Tdot)

    def sensitivity(self, lam, T0, T1) -> np.ndarray:
        """``(B_e T0 - A_e T1)^T lambda`` per stacked element: ``(-lam^T K_e (theta T1 +
        (1 - theta) T0), -lam^T M_e (T1 - T0) / dt)``."""
        lam, T0, T1 = (self.A.expand(v, np.empty(self.ndof)) for v in (lam, T0, T1))
        dk = self.K.element_products(lam, self.theta * T1 + (1.0 - self.theta) * T0)
        dc = self.M.element_products(lam, T1 - T0)
        return -np.concatenate([dk, dc / self.dt])


def _columns(name: str, X, ndof: int) -> np.ndarray:
    X = check_finite_array(name, X)
    X = X[:, None] if X.ndim == 1 else X
    if X.ndim != 2 or X.shape[0] != ndof:
        raise ValueError(f"{name} has shape {X.shape}; expected ({ndof},) or ({ndof}, n)")
    return X


def _load(S: TransientSystem, Q, s, n: int) -> np.ndarray:
    """``r_{n+1} = Q (theta s_{n+1} + (1 - theta) s_n)`` (`Q` on the free dofs)."""
    return Q @ (S.theta * s[n + 1] + (1.0 - S.theta) * s[n])


class _Sweep:
    """The forward sweep of one design: ``Y`` (and ``Ydot``) and its checkpoints.

    States live on the free dofs; `Q` and `L` are their free rows.
    """

    def __init__(self, S, a, Q, s, L, adot=None, keep=True):
        self.a, self.adot, N = a, adot, s.shape[0] - 1
        self.k = S.interval(N)
        ops = S.operators(a, adot)
        T = np.zeros(S.free.size)
        Tdot = None if adot is None else np.zeros(S.free.size)
        self.Y = np.zeros((N + 1, L.shape[1]))
        self.Ydot = None if adot is None else np.zeros_like(self.Y)
        self.points = {0: (T, Tdot)} if keep else {}
        for n in range(N):
            T, Tdot = S.step(ops, T, _load(S, Q, s, n), Tdot)
            self.Y[n + 1] = L.T @ T
            if adot is not None:
                self.Ydot[n + 1] = L.T @ Tdot
            if keep and ((n + 1) % self.k == 0 or n + 1 == N):
                self.points[n + 1] = (T, Tdot)

    def segment(self, S, ops, Q, s, start: int, stop: int) -> dict:
        """``{n: (T_n, Tdot_n)}`` for ``start <= n <= stop``, recomputed from the checkpoint."""
        seg = {start: self.points[start]}
        T, Tdot = self.points[start]
        for n in range(start, stop - 1):
            T, Tdot = S.step(ops, T, _load(S, Q, s, n), Tdot)
            seg[n + 1] = (T, Tdot)
            S.counts["recomputed"] += 1
        seg[stop] = self.points[stop]
        S.counts["states"] = max(S.counts["states"], len(self.points) + len(seg) - 2)
        return seg


def _backward(S, sweep: _Sweep, Q, s, L, Ybar, Ybardot=None):
    """``(abar, abardot)``: the adjoint sweep, segment by segment (second order with tangents)."""
    adot = sweep.adot
    second = adot is not None or Ybardot is not None
    ops = S.operators(sweep.a, adot)
    F, B, Adot, Bdot = ops
    abar = np.zeros(2 * S.n_el)
    abardot = np.zeros(2 * S.n_el) if second else None
    lam = lamdot = np.zeros(S.free.size)
    starts = sorted(sweep.points)
    for start, stop in reversed(list(zip(starts[:-1], starts[1:]))):
        seg = sweep.segment(S, ops, Q, s, start, stop)
        for n in range(stop, start, -1):
            (T0, T0dot), (T1, T1dot) = seg[n - 1], seg[n]
            lam_next, lam = lam, S.solve(F, L @ Ybar[n] + B @ lam)
            abar += S.sensitivity(lam, T0, T1)
            if second:
                rhs = B @ lamdot
                if Ybardot is not None:
                    rhs = rhs + L @ Ybardot[n]
                if adot is not None:
                    rhs = rhs + Bdot @ lam_next - Adot @ lam
                lamdot = S.solve(F, rhs)
                abardot += S.sensitivity(lamdot, T0, T1)
                if adot is not None:
                    abardot += S.sensitivity(lam, T0dot, T1dot)
            seg.pop(n)
    return abar, abardot


def temperatures(S: TransientSystem, k, c, Q, s, steps) -> np.ndarray:
    """The temperature fields ``T_n`` at `steps` (plain values, not differentiable).

    Returns ``(ndof, len(steps))``; one sweep, holding only the fields asked for.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> model = fem.heat(fem.rectangle(1, 1))
    >>> S = fem.TransientSystem(model, dt=0.5)
    >>> T = fem.temperatures(S, np.ones(1), np.ones(1), model.body_load((1.0,)), np.ones(4), [3])
    >>> T[:, 0].round(12).tolist()
    [1.5, 1.5, 1.5, 1.5]
    """
    a = S.coefficients(k, c)
    Q, s, _ = S.data(Q, s, np.zeros(S.ndof))
    N = s.shape[0] - 1
    steps = [check_int("steps", n, 0, N, what="time step index")
             for n in check_sequence("steps", steps)]
    ops, T, out = S.operators(a), np.zeros(S.free.size), {0: np.zeros(S.free.size)}
    for n in range(max(steps, default=0)):
        T = S.step(ops, T, _load(S, Q[S.free], s, n))[0]
        if n + 1 in steps:
            out[n + 1] = T
    full = [S.A.expand(out[n], np.empty(S.ndof)) for n in steps]
    return np.stack(full, axis=1) if steps else np.zeros((S.ndof, 0))


def _split(S, v):
    return v[:S.n_el], v[S.n_el:]


def _shape(Y, L):
    return Y[:, 0] if np.ndim(L) == 1 else Y


# ---------------------------------------------------------------- primitives

@ad.primitive
def transient(S: TransientSystem, k, c, Q, s, L):
    """Observations ``Y_n = L^T T_n`` (``n = 0, ..., N``) of the theta time stepping of `S`.

    `k`, `c`: conduction and capacity coefficients per element (``c > 0``),
    differentiable (reverse with checkpointing, forward, second order); `Q`
    ``(ndof,)`` or ``(ndof, n_src)`` sources, `s` ``(N + 1,)`` or ``(N + 1,
    n_src)`` their signals (``q_n = Q s_n``), `L` ``(ndof,)`` or ``(ndof, m)``
    observed combinations: parameters. Returns ``(N + 1,)`` or ``(N + 1, m)``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad, fem
    >>> model = fem.heat(fem.rectangle(4, 2)).fix(nodes=lambda x: x[0] == 0)
    >>> S = fem.TransientSystem(model, dt=1.0)
    >>> q, s = model.body_load((1.0,)), np.ones(11)
    >>> J = lambda k: np.sum(fem.transient(S, k, np.ones(8), q, s, q))
    >>> g = ad.gradient(J, np.ones(8))
    >>> bool(np.all(g < 0))                 # conducting more cools
    True
    """
    a = S.coefficients(k, c)
    Q, s, L2 = S.rows(Q, s, L)
    return _shape(_Sweep(S, a, Q, s, L2, keep=False).Y, L)


@ad.primitive
def _observed(S, k, c, Q, s, L, sweep):
    """`transient` of the recorded `sweep` (its ``Y``)."""
    return _shape(sweep.Y, L)


def _pullback(S, k, c, Q, s, L, sweep):
    """The pullback of `transient` at the recorded `sweep`: `transient_vjp` (thunks)."""
    cache = {}

    def bar(i, ybar):
        def get():
            if "v" not in cache:
                cache["v"] = transient_vjp(S, k, c, Q, s, L, ybar, sweep)
            return cache["v"][i]
        return ad.thunk(get)

    def transient_pullback(ybar):
        cache.clear()
        return ((None, bar(0, ybar), bar(1, ybar))
                + tuple(ad.not_differentiable(_PARAMS[i]) for i in (3, 4, 5)) + (None,))
    return transient_pullback


@ad.rrule(transient)
def transient_rrule(S, k, c, Q, s, L):
    a = S.coefficients(k, c)
    Q2, s2, L2 = S.rows(Q, s, L)
    sweep = _Sweep(S, a, Q2, s2, L2)          # the checkpoints
    back = _pullback(S, k, c, Q, s, L, sweep)
    return _observed(S, k, c, Q, s, L, sweep), lambda ybar: back(ybar)[:6]


@ad.rrule(_observed)
def _observed_rrule(S, k, c, Q, s, L, sweep):
    return _observed(S, k, c, Q, s, L, sweep), _pullback(S, k, c, Q, s, L, sweep)


def _tangent_frule(primals, tangents):
    """``Ydot = J (kdot, cdot)``: the tangent rides along the primal sweep (O(1) states)."""
    S, k, c, Q, s, L = primals[:6]
    ad.check_tangents(tangents, _PARAMS)
    kdot, cdot = tangents[1], tangents[2]
    a = S.coefficients(k, c)
    adot = np.concatenate([_zero_or(kdot, S.n_el), _zero_or(cdot, S.n_el)])
    sweep = _Sweep(S, a, *S.rows(Q, s, L), adot=adot, keep=False)
    return _shape(sweep.Y, L), _shape(sweep.Ydot, L)


ad.frule(transient)(_tangent_frule)
ad.frule(_observed)(_tangent_frule)


def _zero_or(v, n):
    return np.zeros(n) if v is None else np.asarray(ad.value(v), dtype=float)


def _ybar(Ybar, L, N):
    Y = np.asarray(ad.value(Ybar), dtype=float)
    Y = Y[:, None] if np.ndim(L) == 1 else Y
    if Y.shape != (N + 1, np.shape(L)[1] if np.ndim(L) == 2 else 1):
        raise ValueError(f"Ybar has shape {Y.shape}; expected the observations' shape")
    return Y


@ad.primitive
def transient_vjp(S: TransientSystem, k, c, Q, s, L, Ybar, sweep=None):
    """``(kbar, cbar) = J^T Ybar``: the pullback of `transient` as a primitive.

    `sweep` is the forward sweep of the design (its checkpoints; recomputed
    when None). Its rules are the second-order adjoint sweep, so `ad.hvp`
    and nested gradients of `transient` work.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> model = fem.heat(fem.rectangle(2, 1)).fix(nodes=lambda x: x[0] == 0)
    >>> S = fem.TransientSystem(model, dt=1.0)
    >>> q = model.body_load((1.0,))
    >>> kbar, cbar = fem.transient_vjp(S, np.ones(2), np.ones(2), q, np.ones(4), q, np.ones(4))
    >>> kbar.shape, bool(np.all(kbar < 0))
    ((2,), True)
    """
    a = S.coefficients(k, c)
    Q, s, L2 = S.rows(Q, s, L)
    sweep = sweep if sweep is not None and np.array_equal(sweep.a, a) else _Sweep(S, a, Q, s, L2)
    abar, _ = _backward(S, sweep, Q, s, L2, _ybar(Ybar, L, s.shape[0] - 1))
    return _split(S, abar)


@ad.primitive
def _second(S, k, c, Q, s, L, Ybar, Ybardot, kdot, cdot):
    """``(Ydot, abardot)`` of the second-order sweep (no rules: third order raises)."""
    a = S.coefficients(k, c)
    Q, s, L2 = S.rows(Q, s, L)
    N = s.shape[0] - 1
    adot = None
    if kdot is not None or cdot is not None:
        adot = np.concatenate([_zero_or(kdot, S.n_el), _zero_or(cdot, S.n_el)])
    sweep = _Sweep(S, a, Q, s, L2, adot=adot)
    Ybd = None if Ybardot is None else _ybar(Ybardot, L, N)
    _, abardot = _backward(S, sweep, Q, s, L2, _ybar(Ybar, L, N), Ybd)
    return (None if sweep.Ydot is None else _shape(sweep.Ydot, L)), _split(S, abardot)


@ad.frule(transient_vjp)
def transient_vjp_frule(primals, tangents):
    S, k, c, Q, s, L, Ybar = primals[:7]
    ad.check_tangents(tangents, _PARAMS)
    _, kdot, cdot, _, _, _, Ybardot = tuple(tangents[:7]) + (None,) * (7 - len(tangents[:7]))
    y = transient_vjp(*primals)
    if kdot is None and cdot is None and Ybardot is None:
        return y, None
    return y, _second(S, k, c, Q, s, L, Ybar, Ybardot, kdot, cdot)[1]


@ad.rrule(transient_vjp)
def transient_vjp_rrule(S, k, c, Q, s, L, Ybar, sweep=None):
    y = transient_vjp(S, k, c, Q, s, L, Ybar, sweep)

    def transient_vjp_pullback(ybar):
        wk, wc = ybar if ybar is not None else (None, None)
        if wk is None and wc is None:
            return (None,) * 8
        Ydot, (kb, cb) = _second(S, k, c, Q, s, L, Ybar, None, wk, wc)
        return ((None, kb, cb) + tuple(ad.not_differentiable(_PARAMS[i]) for i in (3, 4, 5))
                + (Ydot, None))
    return y, transient_vjp_pullback
