"""The dual of MMA's subproblem: one pass over the variables, and Newton on the multipliers.

Internal to `topopt.optimize.mma`. NLopt's ``LD_MMA`` (mma.c) approximates
each response ``f_i`` (``i = 0`` the objective) at the center ``x`` by the
separable, convex ::

    g_i(x + dx) = f_i + sum_j (sigma_j^2 p_ij dx_j + (|p_ij| sigma_j + rho_i / 2) dx_j^2)
                                   / (sigma_j^2 - dx_j^2),        p_ij = df_i / dx_j,

and solves ``min g_0`` subject to ``g_i <= 0`` within the bounds and
``|dx_j| <= 0.9 sigma_j`` through its dual: for multipliers ``y >= 0`` each
``dx_j`` minimizes the Lagrangian in closed form (the root of ``u dx^2 + 2 v
sigma^2 dx + u sigma^2 = 0`` inside ``|dx| < sigma``, clipped), and the dual
``W(y) = f_0 + sum_i y_i f_i + sum_j L_j(dx_j(y), y)`` is concave, with
gradient ``dW/dy_i = g_i(x + dx(y))`` and, where no ``dx_j`` is clipped, Hessian
``d2W/dy_i dy_k = -sum_j sigma_j^4 c_ij c_kj / (2 (sigma_j^2 - dx_j^2)^2 (u_j dx_j +
v_j sigma_j^2))``, ``c_ij = p_ij (sigma_j^2 + dx_j^2) + 2 (|p_ij| sigma_j + rho_i/2) dx_j``
(the implicit derivative of the stationarity condition; a clipped ``dx_j`` is
locally constant and adds nothing).

`_Approximation.evaluate` is one pass over the variables in blocks: it writes
``x + dx(y)`` and accumulates the local sums ``(sum_j L_j, g_0 - f_0, w, g_i -
f_i, sum_j |p_ij| sigma_j, H)`` into one small vector, which goes through ``reduce.sum`` once: the
only communication a distributed run needs per dual evaluation. Everything
after it (`_Approximation.solve`: Newton in the ``m`` multipliers) is dense,
tiny and done identically wherever the reduction's result is identical.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_ARMIJO = 1e-4        # sufficient increase of the line search
_EPS = np.finfo(float).eps
GTOL = 1e-12
"""A constraint's approximation within ``GTOL (|f_i| + sum_j |df_i/dx_j| sigma_j)`` of 0
counts as 0 (active) in the dual's KKT test: ~1000 times the rounding of its sum."""


@dataclass
class _Point:
    """The dual at one ``y``: value, the approximations there, and the Hessian."""

    y: np.ndarray
    W: float               # the dual value
    gval: float            # g_0(x + dx(y)), the objective's approximation
    wval: float            # sum_j dx_j^2 / (2 (sigma_j^2 - dx_j^2)) (NLopt's ``wval``)
    gcval: np.ndarray      # g_i(x + dx(y)): the dual's gradient
    H: np.ndarray          # the dual's (generalized) Hessian, m x m
    gtol: np.ndarray       # |g_i| below this counts as 0 (`GTOL`)


class _Approximation:
    """MMA's approximations at a center and their dual (see the module docstring).

    Holds references to the caller's arrays: the center ``x``, ``sigma``, the
    gradients ``dfdx`` (n,) and ``dfcdx`` (m, n), the bounds, and ``xcur``, the
    output (n,) written by each `evaluate`. ``fval``, ``fcval``, ``rho`` and
    ``rhoc`` are set by the caller before each solve.
    """

    def __init__(self, x, sigma, lb, ub, xcur, reduce, block: int):
        self.x, self.sigma, self.lb, self.ub, self.xcur = x, sigma, lb, ub, xcur
        self.reduce, self.block = reduce, block
        self.dfdx = self.dfcdx = None
        self.fval, self.fcval, self.rho, self.rhoc = 0.0, np.zeros(0), 1.0, np.zeros(0)
        self.passes = 0          # passes over the variables, all solves together
        self.at: np.ndarray | None = None    # the y that xcur was last written for

    # -- one pass -----------------------------------------------------------
    def evaluate(self, y: np.ndarray, hessian: bool = True) -> _Point:
        """The dual at `y`, writing ``xcur = x + dx(y)``: one pass, one ``reduce.sum``."""
        m = y.size
        acc = np.zeros(3 + 2 * m + m * m)
        for s in range(0, self.x.size, self.block):
            self._block(slice(s, s + self.block), y, acc, hessian)
        tot = np.asarray(self.reduce.sum(acc), dtype=float)
        self.passes += 1
        self.at = y.copy()
        gcval = self.fcval + tot[3:3 + m]
        W = self.fval + float(np.dot(y, self.fcval)) + tot[0]
        gtol = GTOL * (np.abs(self.fcval) + tot[3 + m:3 + 2 * m])
        return _Point(y.copy(), float(W), self.fval + tot[1], float(tot[2]), gcval,
                      tot[3 + 2 * m:].reshape(m, m), gtol)

    def _block(self, sl: slice, y: np.ndarray, acc: np.ndarray, hessian: bool) -> None:
        """One block's ``dx(y)`` (into ``xcur``) and its sums (added to `acc`), as mma.c's
        ``dual_func`` computes them per variable."""
        m = y.size
        x, s, g0 = self.x[sl], self.sigma[sl], self.dfdx[sl]
        G = self.dfcdx[:, sl]
        absg0 = np.abs(g0)
        if m:
            absG = np.abs(G)
            a = g0 + y @ G
            v = absg0 * s + 0.5 * self.rho + (y @ absG) * s + 0.5 * float(y @ self.rhoc)
        else:
            a, v = g0, absg0 * s + 0.5 * self.rho
        s2 = s * s
        u = a * s2
        zero = s == 0                                 # lb == ub: dx = 0 (mma.c's special case)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = u / (v * s)
            dx = (u / v) / (-1.0 - np.sqrt(np.abs(1.0 - r * r)))
        t = x + dx
        xn = np.clip(t, self.lb[sl], self.ub[sl])
        np.clip(xn, x - 0.9 * s, x + 0.9 * s, out=xn)
        anyzero = bool(zero.any())
        if anyzero:
            xn[zero] = x[zero]
        self.xcur[sl] = xn
        dx = np.subtract(xn, x, out=xn)
        dx2 = dx * dx
        with np.errstate(divide="ignore"):
            den = 1.0 / (s2 - dx2)
        if anyzero:
            den[zero] = 0.0
        acc[0] += np.dot(u * dx + v * dx2, den)
        c = s2 * dx
        dx2den = dx2 * den
        acc[1] += np.dot(g0 * c, den) + np.dot(absg0 * s + 0.5 * self.rho, dx2den)
        acc[2] += 0.5 * np.sum(dx2den)
        if not m:
            return
        cden = c * den
        absGs = absG * s
        acc[3:3 + m] += G @ cden + absGs @ dx2den + 0.5 * self.rhoc * np.sum(dx2den)
        acc[3 + m:3 + 2 * m] += absGs.sum(axis=1)
        if hessian:
            free = t == self.xcur[sl]                 # not clipped
            if anyzero:
                free &= ~zero
            with np.errstate(divide="ignore", invalid="ignore"):
                w = np.where(free, 0.5 * s2 * s2 * den * den / (u * dx + v * s2), 0.0)
            C = G * (s2 + dx2) + 2.0 * (absGs + 0.5 * self.rhoc[:, None]) * dx
            acc[3 + 2 * m:] -= ((C * w) @ C.T).ravel()

    # -- Newton on the multipliers --------------------------------------------
    def solve(self, y: np.ndarray, upper: float, tol: dict) -> _Point:
        """The dual's maximizer over ``0 <= y <= upper`` from `y` (warm start).

        Projected Newton with a backtracking line search (Bertsekas 1982, SIAM
        J. Control Optim. 20:221): the multipliers at a bound with the gradient
        pointing out stay there (a gradient within `GTOL` of the constraint's
        size counts as 0), the others take the Newton step of the dual's
        (generalized) Hessian, regularized by ``1e-12`` of its largest diagonal
        entry; when the step's predicted increase is within the tolerance the
        full step is taken and the solve ends. It ends also when an accepted
        step raised ``W`` by at most ``ftol_rel |W| + ftol_abs`` or moved ``y`` by
        at most ``xtol_rel |y| + xtol_abs``, or after ``maxeval`` passes.
        Returns the point whose ``xcur`` is written.
        """
        cur = self.evaluate(y)
        if y.size == 0:
            return cur
        maxeval = max(int(tol["maxeval"]), 2)
        for _ in range(maxeval):
            d = self._direction(cur, upper)
            if d is None:
                break                                  # the KKT conditions hold
            pred = 0.5 * float(np.dot(cur.gcval, d))
            if pred <= tol["ftol_rel"] * abs(cur.W) + tol["ftol_abs"] + 4 * _EPS * abs(cur.W):
                new = self.evaluate(np.clip(cur.y + d, 0.0, upper))   # the last, full step
                cur = new if new.W >= cur.W - 8 * _EPS * abs(cur.W) else self.evaluate(cur.y)
                break
            new = self._line_search(cur, d, upper, maxeval)
            if new is None:
                break
            done = (new.W - cur.W <= tol["ftol_rel"] * abs(new.W) + tol["ftol_abs"] or
                    np.max(np.abs(new.y - cur.y)) <= tol["xtol_rel"] * np.max(np.abs(new.y))
                    + tol["xtol_abs"])
            cur = new
            if done or self.passes >= maxeval:
                break
        if self.at is None or not np.array_equal(self.at, cur.y):
            cur = self.evaluate(cur.y)                 # xcur for the returned y
        return cur

    @staticmethod
    def _direction(cur: _Point, upper: float) -> np.ndarray | None:
        """Projected Newton direction at `cur`, None at a KKT point."""
        y = cur.y
        g = np.where(np.abs(cur.gcval) <= cur.gtol, 0.0, cur.gcval)
        fixed = ((y <= 0.0) & (g <= 0.0)) | ((y >= upper) & (g >= 0.0))
        free = ~fixed
        if not free.any() or not np.any(g[free]):
            return None
        A = -cur.H[np.ix_(free, free)]
        diag = np.diag(A)
        scale = float(np.max(diag)) if diag.size else 0.0
        d = np.zeros(y.size)
        if scale > 0.0 and np.isfinite(scale):
            A = A + 1e-12 * scale * np.eye(A.shape[0])
            try:
                d[free] = np.linalg.solve(A, g[free])
            except np.linalg.LinAlgError:
                d[free] = g[free] / scale
        else:                                          # a linear dual: steepest ascent
            d[free] = g[free] * (1.0 + np.max(np.abs(y))) / np.max(np.abs(g[free]))
        if not np.all(np.isfinite(d)) or np.dot(d, g) <= 0.0:
            d = np.where(free, g, 0.0) / max(scale, np.max(np.abs(g)))
        return d

    def _line_search(self, cur: _Point, d: np.ndarray, upper: float,
                     maxeval: int) -> _Point | None:
        """Backtracking along the projection arc ``P(y + t d)``; None if no increase."""
        t = 1.0
        while self.passes < maxeval:
            y = np.clip(cur.y + t * d, 0.0, upper)
            step = y - cur.y
            slope = float(np.dot(cur.gcval, step))
            if slope <= 0.0 or not np.any(step):
                return None
            new = self.evaluate(y)
            if new.W - cur.W >= _ARMIJO * slope - 4 * _EPS * abs(cur.W):
                return new
            # the quadratic through W(0), W'(0) and W(t), kept within [t / 100, t / 2]
            drop = slope - (new.W - cur.W)
            t_q = 0.5 * slope * t / drop if drop > 0 else 0.5 * t
            t = min(max(t_q, 0.01 * t), 0.5 * t)
            if t < 1e-14:
                return None
        return None
