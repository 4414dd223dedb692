"""Our MMA (`topopt.optimize.mma`) for one stage of `minimize` (``optimizer="mma"``).

`_MmaStage` is the part of `topopt.optimize.run._Run` that builds `MMA` the
way `topopt.optimize.nlopt_stage` builds NLopt's ``LD_MMA``: the same bounds,
tolerances, parameters (``mma_params``; ``dual_algorithm`` names NLopt's dual
and is not read: ours is Newton's) and, for a start that violates
constraints, the same elastic variables. Its `_OwnOpt` answers as much of
``nlopt.opt``'s interface as `run_stage` uses.

An elastic run appends the ``k`` elastic variables to the design, here (one
process) by concatenation; split across processes they would be a few more
entries of one process's part, which `MMA`'s reductions already count once.
"""

from __future__ import annotations

import numpy as np

from .mma import MMA
from .options import Stage

#: `mma_params` names that `MMA` takes as keywords (the rest: NLopt's dual choice).
_OWN_PARAMS = ("inner_maxeval", "dual_ftol_rel", "dual_ftol_abs", "dual_xtol_rel",
               "dual_xtol_abs", "dual_maxeval", "rho_init", "inner_gradients",
               "always_improve", "sigma_min", "verbosity")


class _OwnOpt:
    """`MMA` behind ``optimize(z0)``, ``status`` and ``get_numevals()``."""

    def __init__(self, mma: MMA, fun):
        self.mma, self.fun, self.status = mma, fun, "unknown"

    def optimize(self, z0: np.ndarray) -> np.ndarray:
        res = self.mma.minimize(self.fun, z0)
        self.status = res.status
        return res.x

    def get_numevals(self) -> int:
        return self.mma.evaluations


class _MmaStage:
    """`MMA` for one stage, its calls served by the run's ``evaluate`` (a mixin of `_Run`)."""

    def _own_mma(self, stage: Stage, maxeval: int, violated: np.ndarray,
                 y0: np.ndarray, elastic_cost: float) -> _OwnOpt:
        """`MMA` for one stage; with `violated` constraints (values `y0`) on ``(x, y)``
        as `topopt.optimize.nlopt_stage._NloptStage._nlopt` poses it."""
        n, m = self.n, y0.size
        ftol, xtol = self.o.tolerances(stage)
        params = {k: v for k, v in self.o.mma_params.items() if k in _OWN_PARAMS}
        if params.get("rho_init") == "auto":
            params["rho_init"] = self._rho_init(self.x_stage)
        lb, ub, step = self.o.lb, self.o.ub, self.o.initial_step
        if m:
            lb, ub = np.concatenate([lb, np.zeros(m)]), np.concatenate([ub, y0])
            xtol = np.concatenate([np.full(n, xtol), np.zeros(m)]) if xtol > 0 else 0.0
            if step is not None:
                step = np.concatenate([step, y0 / 2])
        mma = MMA(lb, ub, maxeval=maxeval, ftol_rel=ftol, xtol_abs=xtol,
                  constraint_tol=self.o.constraint_tol, initial_step=step, **params)
        return _OwnOpt(mma, self._responses_of(n, violated, elastic_cost))

    def _responses_of(self, n: int, violated: np.ndarray, cost: float):
        """``fun(z, need_grad)`` for `MMA`: `evaluate` itself, or with elastic variables
        ``f + cost sum(y)`` and ``g_i - y_i`` for the `violated` ``i``."""
        if violated.size == 0:
            return self.evaluate
        E = np.zeros((self.k, violated.size))
        E[violated, np.arange(violated.size)] = 1.0

        def fun(z, need_grad):
            values, grads = self.evaluate(z[:n], need_grad)
            y = z[n:]
            out = np.concatenate([[values[0] + cost * float(np.sum(y))], values[1:] - E @ y])
            if not need_grad:
                return out, None
            full = np.empty((grads.shape[0], z.size))
            full[:, :n] = grads
            full[0, n:] = cost
            full[1:, n:] = -E
            return out, full
        return fun
