"""Our MMA: CCSA-MMA as NLopt's ``LD_MMA`` runs it, written for vectors split across processes.

`MMA` is Svanberg's conservative convex separable approximations with MMA's
approximations (Svanberg 2002, SIAM J. Optim. 12:555; the method of moving
asymptotes of Svanberg 1987, Int. J. Numer. Meth. Eng. 24:359), step for step
as NLopt's mma.c (2.11) runs ``LD_MMA``:

* move limits ``sigma_j``: half the bounds' width (1 for an infinite bound,
  or NLopt's ``initial_step``), from the third outer iteration multiplied by
  0.7 where ``x_j`` oscillated, by 1.2 where it moved the same way twice,
  kept within ``[0.01, 10] (ub_j - lb_j)`` and above ``sigma_min``;
* penalties ``rho`` (objective) and ``rho_i`` (constraints): ``rho_init``; an
  inner iteration whose trial is not conservative (``f_i(x_trial) >
  g_i(x_trial)``) raises them to ``min(10 rho, 1.1 (rho + (f - g) / w))``;
  each outer iteration ends by ``rho = max(rho / 10, 1e-5)``;
* a trial is accepted, with ``always_improve`` (NLopt's default), when it
  lowers the objective and is conservative or feasible (or the center is
  infeasible), or lowers the infeasibility of an infeasible center; with
  ``always_improve=0`` only when conservative;
* an infeasible start bounds the multipliers by 1e40 (mma.c) until a
  feasible design is accepted;
* stops: ``maxeval`` evaluations (``"maxeval_reached"``); after an outer
  iteration, the relative change of the last trial's objective below
  ``ftol_rel`` (``"ftol_reached"``) or every ``|x_j - x_j,prev|`` below
  ``xtol_abs`` (``"xtol_reached"``), NLopt's tests.

The dual in the ``m`` multipliers is solved by projected Newton
(`topopt.optimize.mma_dual`): the dual is concave and smooth where no
variable sits at a move limit or bound, its gradient and Hessian are sums
over the variables that one pass collects, and Newton from the last
iteration's multipliers takes 2 to 5 passes; NLopt's SLSQP dual takes more
evaluations, each a pass. A projected gradient method would need no Hessian
but many more passes; with ``m`` tiny the ``m x m`` Hessian costs nothing.

**Reductions.** Every operation over the ``n`` variables is local (per
entry, in blocks of `BLOCK`) except three, all in `Reduce`: ``sum`` of one
small vector per dual evaluation (the dual's value, gradient, Hessian and
NLopt's ``w``) and ``max`` of one number per outer iteration (the ``xtol``
test). The responses' values come from the caller, global already. `MMA`
works on a process's part of the design with a `Reduce` whose ``sum`` and
``max`` are global reductions (e.g. ``comm.allreduce``, or a reduce then
broadcast, so that every rank has the same bits and takes the same Newton
steps); `SerialReduce` is the one-process form.

**Memory.** Per variable `MMA` holds the center, the trial, the previous trial
and ``sigma`` (4 doubles) and the sign of the previous step (1 byte: mma.c's
second previous trial is only read through ``sign(x_prev - x_prevprev)``;
the two differ only if that product underflows), 33 bytes; the gradients of
the center and of the trial are the arrays `fun` returned, kept by reference
(NLopt copies both into buffers of its own, ``2 (1 + m)`` doubles, beside its
``6`` others, 97 bytes per variable with one constraint as `minimize`
measures it). Temporaries are one block's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .mma_dual import _Approximation
from .reduce import SerialReduce

__all__ = ["MMA", "MMAResult", "RHO_MIN", "BLOCK"]

RHO_MIN = 1e-5
"""mma.c's lower limit of the penalties ``rho`` (``MMA_RHOMIN``)."""

BLOCK = 1 << 13
"""Variables per block of the loops over ``n``: temporaries of 64 kB, below glibc's
128 kB threshold for ``mmap``. On this machine under load a dual pass over 1e6
variables took 0.032 s in blocks of 8192 against 0.06 to 2.8 s in blocks of 12288
to 65536 (each temporary mapped and faulted in afresh) and 0.06 s in blocks of 4096."""

_DUAL_UB_INFEASIBLE = 1e40      # mma.c: the multipliers' bound while no design is feasible


@dataclass
class MMAResult:
    """The outcome of `MMA.minimize`.

    Attributes
    ----------
    x : ndarray
        The last accepted design (NLopt's returned optimum).
    values : ndarray
        Its responses ``[f, g_1, ..., g_m]``.
    status : str
        ``"maxeval_reached"``, ``"ftol_reached"`` or ``"xtol_reached"``.
    evaluations : int
        Calls of `fun` (NLopt's count: a re-call for gradients is not counted).
    iterations : int
        Outer iterations begun.
    dual_passes : int
        Passes over the variables of the dual solves.
    """

    x: np.ndarray
    values: np.ndarray
    status: str
    evaluations: int
    iterations: int
    dual_passes: int = 0

    @property
    def fun(self) -> float:
        return float(self.values[0])


@dataclass
class _State:
    """The iteration's state (mma.c's locals)."""

    x: np.ndarray                  # the center
    xcur: np.ndarray               # the trial
    xprev: np.ndarray              # the trial at the start of the outer iteration
    sigma: np.ndarray
    sign: np.ndarray               # sign(xprev - xprevprev), int8
    values: np.ndarray = None      # responses at the center
    grads: np.ndarray = None       # their gradients (fun's array, by reference)
    feasible: bool = True
    infeasibility: float = 0.0
    rho: float = 1.0
    rhoc: np.ndarray = None
    y: np.ndarray = None
    dual_ub: float = np.inf
    k: int = 0
    fcur: float = np.inf           # the last trial's objective
    extra: dict = field(default_factory=dict)


class MMA:
    """CCSA-MMA as NLopt's ``LD_MMA``, over a design that may be one process's part.

    Parameters
    ----------
    lb, ub : float or ndarray
        Bounds, scalars or arrays of the (local) design's shape; infinite
        entries allowed (their move limit starts at 1).
    maxeval : int
        Evaluations of `fun` (>= 1; the first, at ``x0``, counts).
    ftol_rel, ftol_abs : float
        NLopt's relative and absolute tests on the objective between outer
        iterations (0 disables).
    xtol_abs : float or ndarray
        Stop when every ``|x_j - x_j,prev| < xtol_abs(_j)`` (0 disables).
    constraint_tol : float
        A trial is feasible when every constraint is ``<=`` this.
    rho_init, inner_maxeval, inner_gradients, always_improve, sigma_min : optional
        NLopt's ``LD_MMA`` parameters of the same names and defaults.
    initial_step : float or ndarray, optional
        Initial move limits ``sigma`` (NLopt's ``initial_step``).
    dual_ftol_rel, dual_ftol_abs, dual_xtol_rel, dual_xtol_abs, dual_maxeval : optional
        The Newton dual's stopping tests (`topopt.optimize.mma_dual`); the
        names and defaults of NLopt's dual, ``dual_maxeval`` counting passes.
    verbosity : int
        > 0: one line per dual solve and per raised ``rho`` on stdout, as mma.c.
    reduce : object, optional
        The global ``sum``/``max`` (`SerialReduce` by default).
    block : int
        Variables per block (`BLOCK`).

    Examples
    --------
    ``sum(c / x)`` subject to ``sum(x) <= 1.2``: the optimum is ``x ~ sqrt(c)``.

    >>> c = np.array([1.0, 4.0])
    >>> def fun(x, need_grad):
    ...     values = np.array([np.sum(c / x), np.sum(x) - 1.2])
    ...     return values, (np.stack([-c / x**2, np.ones(2)]) if need_grad else None)
    >>> res = MMA(0.01, 1.0, maxeval=60, ftol_rel=1e-12).minimize(fun, np.full(2, 0.5))
    >>> np.round(res.x, 4), round(res.fun, 4), res.status
    (array([0.4, 0.8]), 7.5, 'ftol_reached')
    """

    def __init__(self, lb, ub, *, maxeval: int, ftol_rel: float = 0.0, ftol_abs: float = 0.0,
                 xtol_abs=0.0, constraint_tol: float = 0.0, rho_init: float = 1.0,
                 inner_maxeval: int = 0, inner_gradients: int = 1, always_improve: int = 1,
                 sigma_min: float = 0.0, initial_step=None, dual_ftol_rel: float = 1e-14,
                 dual_ftol_abs: float = 0.0, dual_xtol_rel: float = 0.0,
                 dual_xtol_abs: float = 0.0, dual_maxeval: int = 100000, verbosity: int = 0,
                 reduce=None, block: int = BLOCK):
        if not (maxeval >= 1 and rho_init > 0 and np.isfinite(rho_init) and sigma_min >= 0
                and block >= 1):
            raise ValueError("MMA needs maxeval >= 1, a finite rho_init > 0, sigma_min >= 0 "
                             f"and block >= 1; got maxeval={maxeval}, rho_init={rho_init}, "
                             f"sigma_min={sigma_min}, block={block}")
        self.lb, self.ub, self.maxeval = lb, ub, int(maxeval)
        self.ftol_rel, self.ftol_abs, self.xtol_abs = ftol_rel, ftol_abs, xtol_abs
        self.constraint_tol, self.rho_init = constraint_tol, float(rho_init)
        self.inner_maxeval, self.inner_gradients = int(inner_maxeval), bool(inner_gradients)
        self.always_improve, self.sigma_min = bool(always_improve), float(sigma_min)
        self.initial_step, self.verbosity = initial_step, int(verbosity)
        self.dual_tol = {"ftol_rel": dual_ftol_rel, "ftol_abs": dual_ftol_abs,
                         "xtol_rel": dual_xtol_rel, "xtol_abs": dual_xtol_abs,
                         "maxeval": dual_maxeval}
        self.reduce = SerialReduce() if reduce is None else reduce
        self.block = int(block)
        self.evaluations = 0          # live: read by a caller whose `fun` raised
        self.iterations = 0
        self.dual_passes = 0

    # -- the run ---------------------------------------------------------------
    def minimize(self, fun: Callable, x0) -> MMAResult:
        """Minimize from `x0`; ``fun(x, need_grad) -> (values, grads)``.

        ``values`` is ``[f, g_1, ..., g_m]`` (global: the same on every
        process), ``grads`` the ``(1 + m, n)`` gradients of this process's part
        or None when not asked. Whatever `fun` raises propagates (NLopt's
        forced stop); `evaluations` then holds the count so far.
        """
        self.evaluations = self.iterations = 0
        s = self._start(x0)
        s.values, s.grads = self._call(fun, s.x, True)
        s.fcur, m = float(s.values[0]), s.values.size - 1
        fc = s.values[1:]
        s.feasible = bool(np.all(fc <= 0))
        s.infeasibility = max(0.0, float(np.max(fc))) if m else 0.0
        s.dual_ub = np.inf if s.feasible else _DUAL_UB_INFEASIBLE
        s.rho, s.rhoc, s.y = self.rho_init, np.full(m, self.rho_init), np.zeros(m)
        dual = _Approximation(s.x, s.sigma, self.lb_, self.ub_, s.xcur, self.reduce, self.block)
        try:
            while True:
                if self.evaluations >= self.maxeval:
                    return self._result(s, "maxeval_reached")
                s.k += 1
                self.iterations = s.k
                fprev = s.fcur
                if not self._inner_loop(fun, s, dual):
                    return self._result(s, "maxeval_reached")
                status = self._outer_end(s, fprev)
                if status is not None:
                    return self._result(s, status)
        finally:
            self.dual_passes = dual.passes

    def _start(self, x0) -> _State:
        x = np.array(x0, dtype=float)
        if x.ndim != 1:
            raise ValueError(f"x0 must be 1-D, got shape {x.shape}")
        self.lb_ = np.broadcast_to(np.asarray(self.lb, dtype=float), x.shape)
        self.ub_ = np.broadcast_to(np.asarray(self.ub, dtype=float), x.shape)
        sigma = np.empty_like(x)
        step = None if self.initial_step is None else \
            np.broadcast_to(np.asarray(self.initial_step, dtype=float), x.shape)
        for a in range(0, x.size, self.block):            # mma.c's initial sigma
            sl = slice(a, a + self.block)
            outside = ~((self.lb_[sl] <= x[sl]) & (x[sl] <= self.ub_[sl]))
            if outside.any():
                i = a + int(np.flatnonzero(outside)[0])
                raise ValueError(f"x0 must lie within the bounds; x0[{i}] = {x[i]} is outside "
                                 f"[{self.lb_[i]}, {self.ub_[i]}]")
            width = self.ub_[sl] - self.lb_[sl]
            sig = np.where(np.isfinite(width), 0.5 * width, 1.0)
            if step is not None:
                sig = np.where(step[sl] > 0, step[sl], sig)
            sigma[sl] = np.maximum(sig, self.sigma_min)
        return _State(x=x, xcur=x.copy(), xprev=x.copy(), sigma=sigma,
                      sign=np.zeros(x.size, dtype=np.int8))

    def _call(self, fun, x, need_grad: bool, counted: bool = True):
        values, grads = fun(x, need_grad)
        if counted:
            self.evaluations += 1
        values = np.asarray(values, dtype=float)
        if need_grad:
            grads = np.asarray(grads, dtype=float)
            if grads.shape != (values.size, x.size):
                raise ValueError(f"fun's gradients must have shape ({values.size}, {x.size}), "
                                 f"got {grads.shape}")
        return values, grads

    def _result(self, s: _State, status: str) -> MMAResult:
        return MMAResult(s.x, np.array(s.values), status, self.evaluations, s.k,
                         self.dual_passes)

    # -- one outer iteration ------------------------------------------------------
    def _inner_loop(self, fun, s: _State, dual: _Approximation) -> bool:
        """Trials until a conservative one; False when the budget ran out."""
        inner = 0
        while True:
            dual.fval, dual.fcval = float(s.values[0]), s.values[1:]
            dual.dfdx, dual.dfcdx = s.grads[0], s.grads[1:]
            dual.rho, dual.rhoc = s.rho, s.rhoc
            passes = dual.passes
            point = dual.solve(s.y, s.dual_ub, self.dual_tol)
            s.y = point.y
            self.dual_passes = dual.passes
            if self.verbosity:
                print(f"MMA dual converged in {dual.passes - passes} passes to g={point.gval:g}")
            values = grads = None      # drop the last trial's gradients before the next call
            values, grads = self._call(fun, s.xcur, self.inner_gradients)
            inner += 1
            s.fcur, fc = float(values[0]), values[1:]
            conservative = point.gval >= s.fcur and bool(np.all(point.gcval >= fc))
            done = conservative or (self.inner_maxeval > 0 and inner == self.inner_maxeval)
            feasible_cur = bool(np.all(fc <= self.constraint_tol))
            infeasibility = max(0.0, float(np.max(fc))) if fc.size else 0.0
            if self.always_improve:
                accept = (s.fcur < s.values[0] and (done or feasible_cur or not s.feasible)) \
                    or (not s.feasible and infeasibility < s.infeasibility)
            else:
                accept = done
            if accept:
                if not self.inner_gradients:           # again, with gradients (not counted)
                    values, grads = self._call(fun, s.xcur, True, counted=False)
                    s.fcur = float(values[0])
                    infeasibility = max(0.0, float(np.max(values[1:]))) if fc.size else 0.0
                np.copyto(s.x, s.xcur)
                s.values, s.grads, s.infeasibility = values, grads, infeasibility
                if infeasibility == 0.0:
                    s.dual_ub, s.feasible = np.inf, True
            if self.evaluations >= self.maxeval:
                return False
            if done:
                return True
            self._raise_rho(s, point, fc)

    def _raise_rho(self, s: _State, point, fc: np.ndarray) -> None:
        """mma.c's penalties after a trial that was not conservative."""
        w = point.wval

        def raised(rho, excess):
            return min(10.0 * rho, 1.1 * (rho + excess / w)) if w > 0 else 10.0 * rho
        if s.fcur > point.gval:
            s.rho = raised(s.rho, s.fcur - point.gval)
        for i in np.flatnonzero(fc > point.gcval):
            s.rhoc[i] = raised(s.rhoc[i], fc[i] - point.gcval[i])
        if self.verbosity:
            print(f"MMA inner iteration: rho -> {s.rho:g}")

    def _outer_end(self, s: _State, fprev: float) -> str | None:
        """NLopt's ftol and xtol tests, then the next iteration's rho and sigma."""
        status = "ftol_reached" if _relstop(fprev, s.fcur, self.ftol_rel, self.ftol_abs) \
            else None
        over = self._sweep(s)                   # max_j (|xcur_j - xprev_j| - xtol_j)
        if over is not None and over < 0.0:
            status = "xtol_reached"
        if status is not None:
            return status
        s.rho = max(0.1 * s.rho, RHO_MIN)
        np.maximum(0.1 * s.rhoc, RHO_MIN, out=s.rhoc)
        return None

    def _sweep(self, s: _State) -> float | None:
        """One pass: the xtol test's local max (reduced), the move limits for the next
        iteration (from its second on), the step's sign and ``xprev = xcur``."""
        xtol = self.xtol_abs
        test = np.ndim(xtol) > 0 or xtol > 0
        xtol = np.broadcast_to(np.asarray(xtol, dtype=float), s.x.shape)
        local = -np.inf
        update = s.k > 1
        for a in range(0, s.x.size, self.block):
            sl = slice(a, a + self.block)
            d = s.xcur[sl] - s.xprev[sl]
            if test:
                local = max(local, float(np.max(np.abs(d) - xtol[sl]))) if d.size else local
            step = np.sign(d).astype(np.int8)
            if update:
                _update_sigma(s.sigma[sl], step * s.sign[sl], self.lb_[sl], self.ub_[sl],
                              self.sigma_min)
            s.sign[sl] = step
            s.xprev[sl] = s.xcur[sl]
        if not test:
            return None
        return float(np.asarray(self.reduce.max(np.array([local])))[0])


def _update_sigma(sigma, product, lb, ub, sigma_min: float) -> None:
    """mma.c's move limits in place: x 0.7 after an oscillation, x 1.2 after two steps alike."""
    sigma *= np.where(product < 0, 0.7, np.where(product > 0, 1.2, 1.0))
    width = ub - lb
    finite = np.isfinite(width)
    if finite.all():
        np.minimum(sigma, 10.0 * width, out=sigma)
        np.maximum(sigma, 0.01 * width, out=sigma)
    elif finite.any():
        sigma[finite] = np.clip(sigma[finite], 0.01 * width[finite], 10.0 * width[finite])
    np.maximum(sigma, sigma_min, out=sigma)


def _relstop(old: float, new: float, reltol: float, abstol: float) -> bool:
    """NLopt's ``relstop``: ``|new - old|`` below ``abstol`` or ``reltol`` of their mean size."""
    if np.isinf(old):
        return False
    diff = abs(new - old)
    return diff < abstol or diff < reltol * (abs(new) + abs(old)) * 0.5 or \
        (reltol > 0 and new == old)
