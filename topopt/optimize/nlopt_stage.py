"""The NLopt side of one stage of `topopt.optimize.minimize`: ``LD_MMA`` and its start.

With ``optimizer="mma"`` `run_stage` runs our `topopt.optimize.mma.MMA` instead
(built by `topopt.optimize.mma_stage`), on the same start, elastic variables,
evaluations and statuses.

`_NloptStage` is the part of `topopt.optimize.run._Run` that drives NLopt:
one stage from the run's design (`run_stage`), Svanberg's initial penalty
(`_rho_init`) and, for a start that violates constraints, his elastic
variables (`_nlopt`). It asks the run for values through ``evaluate`` and
reads ``cache``, ``center``, ``k``, ``n``, ``o`` and ``x_stage``.
"""

from __future__ import annotations

import nlopt
import numpy as np

from .mma_stage import _MmaStage
from .options import Stage

#: NLopt's result codes as `Result.status` strings.
_STATUS = {
    nlopt.SUCCESS: "success", nlopt.STOPVAL_REACHED: "stopval_reached",
    nlopt.FTOL_REACHED: "ftol_reached", nlopt.XTOL_REACHED: "xtol_reached",
    nlopt.MAXEVAL_REACHED: "maxeval_reached", nlopt.MAXTIME_REACHED: "maxtime_reached",
    nlopt.FAILURE: "failure", nlopt.INVALID_ARGS: "invalid_args",
    nlopt.OUT_OF_MEMORY: "out_of_memory", nlopt.ROUNDOFF_LIMITED: "roundoff_limited",
    nlopt.FORCED_STOP: "forced_stop",
}

RHO_MIN = 1e-5
"""NLopt's lower limit of MMA's penalty ``rho`` (``CCSA_RHOMIN`` in its mma.c)."""

ELASTIC_COST = 1e3
"""Cost ``c`` of the elastic variables of an infeasible start (Svanberg's ``c_i = 1000``,
for objectives of order 1)."""

ELASTIC_FROM = 1e-3
"""A start gets elastic variables for the constraints above this (constraints of order 1).

Stages of a continuation and resumed runs start from MMA's last design, which
may violate a constraint by ~1e-6; MMA recovers from that by itself, and
elastic variables there would change the iterates of every such run."""


_BLOCK = 1 << 16      # entries per block of the loops over n


def _bounds(bound: np.ndarray, elastic: np.ndarray):
    """NLopt's bounds of ``(x, y)``: a float for one value everywhere (no n-array to copy)."""
    if elastic.size == 0 and bound.size and bound.strides == (0,):
        return float(bound[0])                  # a broadcast scalar (`Options`)
    return np.concatenate([bound, elastic])


class _NloptStage(_MmaStage):
    """MMA for one stage, its callbacks served by the run's ``evaluate`` (a mixin of `_Run`);
    `_MmaStage` builds ours."""

    def run_stage(self, stage: Stage, budget: int) -> tuple[np.ndarray, str]:
        """MMA from ``self.x_stage`` for at most `budget` (>= 1) forward evaluations:
        NLopt's, or ours with ``optimizer="mma"``.

        A start that violates constraints runs with Svanberg's elastic
        variables (`ELASTIC_COST`, `_nlopt`).
        """
        x0, opt = self.x_stage, None
        try:
            if self.k is None or self.cache.values_at(x0) is None:
                # learn k and whether x0 is feasible; NLopt's first call is a cache hit
                self.evaluate(x0, False)
                budget -= 1
            violated, y0 = self._violations(x0)
            maxeval = budget + (1 if self.cache.hit(x0) else 0)
            z0 = np.concatenate([x0, y0]) if y0.size else x0
            if self.o.optimizer == "mma":               # ours (`topopt.optimize.mma_stage`)
                opt = self._own_mma(stage, maxeval, violated, y0, ELASTIC_COST)
                x = opt.optimize(z0)[:self.n]
                status = opt.status
            else:
                opt = self._nlopt(stage, maxeval, violated, y0)
                x = opt.optimize(z0)[:self.n]
                status = _STATUS.get(opt.last_optimize_result(), "unknown")
        except nlopt.ForcedStop:
            status = self.stop_reason or "forced_stop"
            x = x0 if self.center.best is None else self.center.best[0]
        except nlopt.RoundoffLimited:
            status = "roundoff_limited"
            x = x0 if self.center.best is None else self.center.best[0]
        finally:
            if opt is not None:
                self.nlopt_evals += opt.get_numevals()
        return np.array(x, dtype=float), status

    def _rho_init(self, x0: np.ndarray) -> float:
        """Svanberg's initial penalty ``0.1 mean_j |df/dx_j| (ub_j - lb_j)`` at `x0`, >= 1e-5.

        Svanberg (2002, SIAM J. Optim. 12:555, section 5: ``rho_i^(1)``) for
        the objective; NLopt takes one ``rho_init`` for all responses and never
        goes below 1e-5. An infinite bound range counts as 1.
        """
        grad = self.evaluate(x0, True)[1][0]            # NLopt asks for it next: a cache hit
        scaled, lb, ub = np.abs(grad), self.o.lb, self.o.ub
        for s in range(0, scaled.size, _BLOCK):         # |df/dx_j| (ub_j - lb_j), in blocks
            width = ub[s:s + _BLOCK] - lb[s:s + _BLOCK]
            scaled[s:s + _BLOCK] *= np.where(np.isfinite(width), width, 1.0)
        return max(0.1 * float(np.mean(scaled)), RHO_MIN)

    def _violations(self, x0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The constraints above `ELASTIC_FROM` at an evaluated `x0`: indices and values."""
        values = self.cache.values_at(x0)
        if values is None or not self.k:
            return np.zeros(0, dtype=int), np.zeros(0)
        violated = np.flatnonzero(values[1:] > max(self.o.constraint_tol, ELASTIC_FROM))
        return violated, values[1:][violated]

    def _nlopt(self, stage: Stage, maxeval: int, violated: np.ndarray,
               y0: np.ndarray) -> nlopt.opt:
        """NLopt's ``LD_MMA`` for one stage, its callbacks served by `evaluate`.

        With `violated` constraints at the start (values `y0`), MMA runs on
        ``(x, y)``, one elastic variable per violated constraint: minimize ``f
        + c sum(y)`` subject to ``g_i - y_i <= 0`` and ``0 <= y_i <= g_i(x0)``
        (Svanberg 1987, Int. J. Numer. Meth. Eng. 24:359, eq. (4.1); ``c =
        ELASTIC_COST``), whose start ``(x0, y0)`` is feasible; otherwise on
        ``x`` alone.
        """
        E = np.zeros((self.k or 0, violated.size))
        E[violated, np.arange(violated.size)] = 1.0        # y_j relaxes constraint violated[j]
        n, m = self.n, y0.size
        opt = nlopt.opt(nlopt.LD_MMA, n + m)
        opt.set_lower_bounds(_bounds(self.o.lb, np.zeros(m)))
        opt.set_upper_bounds(_bounds(self.o.ub, y0))
        opt.set_maxeval(maxeval)
        ftol, xtol = self.o.tolerances(stage)
        opt.set_ftol_rel(ftol)
        if xtol > 0:
            opt.set_xtol_abs(np.concatenate([np.full(n, xtol), np.zeros(m)]))
        for name, v in self.o.mma_params.items():
            opt.set_param(name, self._rho_init(self.x_stage) if v == "auto" else v)
        if self.o.initial_step is not None:
            opt.set_initial_step(np.concatenate([self.o.initial_step, y0 / 2]))

        def objective(z, grad):
            values, grads = self.evaluate(z[:n], grad.size > 0)
            if grad.size:
                grad[:n] = grads[0]
                grad[n:] = ELASTIC_COST
            return float(values[0]) + ELASTIC_COST * float(np.sum(z[n:]))

        def constraints(result, z, grad):
            values, grads = self.evaluate(z[:n], grad.size > 0)
            result[:] = values[1:] - E @ z[n:]
            if grad.size:
                grad[:, :n] = grads[1:]
                grad[:, n:] = -E

        opt.set_min_objective(objective)
        if self.k:
            opt.add_inequality_mconstraint(constraints, [self.o.constraint_tol] * self.k)
        return opt
