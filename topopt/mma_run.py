"""One MMA run of `topopt.optimize.minimize`: designs, cache, history, checkpoints.

`_Responses` evaluates all responses of a design in one forward pass and
keeps the reverse pass for when NLopt asks for gradients (`_Gradients`);
`_Run` holds a run's state (the cache of the last design, MMA's center,
the history, the stage) and drives NLopt's ``LD_MMA`` one stage at a time;
`_Signals` turns SIGINT/SIGTERM into a clean stop. The measurements behind
the settings are in `topopt.optimize`'s docstring.
"""

from __future__ import annotations

import hashlib
import json
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Callable, Mapping

import nlopt
import numpy as np

from . import ad
from ._files import atomic_write_text, jsonable
from .checkpoint import save_checkpoint

if TYPE_CHECKING:
    from .optimize import Stage

#: NLopt's result codes as `Result.status` strings.
_STATUS = {
    nlopt.SUCCESS: "success", nlopt.STOPVAL_REACHED: "stopval_reached",
    nlopt.FTOL_REACHED: "ftol_reached", nlopt.XTOL_REACHED: "xtol_reached",
    nlopt.MAXEVAL_REACHED: "maxeval_reached", nlopt.MAXTIME_REACHED: "maxtime_reached",
    nlopt.FAILURE: "failure", nlopt.INVALID_ARGS: "invalid_args",
    nlopt.OUT_OF_MEMORY: "out_of_memory", nlopt.ROUNDOFF_LIMITED: "roundoff_limited",
    nlopt.FORCED_STOP: "forced_stop",
}


# --------------------------------------------------------------------------
# responses: one forward pass per design, k + 1 gradients from one pullback


def _leaves(y) -> list:
    if type(y) in (tuple, list):
        return [leaf for v in y for leaf in _leaves(v)]
    if isinstance(y, dict):
        raise TypeError("the response function returned a dict; return a 1-D array "
                        "[f, g1, ..., gk] or a tuple (f, g1, ..., gk) / (f, [g1, ...])")
    return [y]


def _unit(y, i: int, pos: list):
    """Cotangent with the structure of `y`: 1 at flat index `i`, None elsewhere."""
    if type(y) in (tuple, list):
        return type(y)(_unit(v, i, pos) for v in y)
    size = int(np.size(y))
    start = pos[0]
    pos[0] += size
    if not start <= i < start + size:
        return None
    if np.ndim(y) == 0:
        return 1.0
    e = np.zeros(np.shape(y))
    e.flat[i - start] = 1.0
    return e


class _Gradients:
    """Gradients ``(k+1, n)`` of one design: its reverse pass runs on first use."""

    def __init__(self, compute: Callable[[], np.ndarray] | None = None,
                 value: np.ndarray | None = None):
        self.compute, self.value = compute, value

    @property
    def ready(self) -> bool:
        return self.value is not None

    def __call__(self) -> np.ndarray:
        if self.value is None:
            if self.compute is None:
                raise RuntimeError("the gradients of this design were released unevaluated")
            self.value, self.compute = self.compute(), None
        return self.value

    def release(self) -> None:
        """Drop the tape if the gradients were never asked for."""
        self.compute = None


class _Responses:
    """``fun(x, **params)`` -> values ``(k+1,)`` and their lazy `_Gradients`."""

    def __init__(self, fun: Callable, n_out: int | None):
        self.fun = fun
        self.n_out = n_out
        self.params: dict = {}
        self.calls = 0

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, _Gradients]:
        params = self.params
        self.calls += 1
        y, back = ad.pullback(lambda z: self.fun(z, **params), x)
        leaves = _leaves(y)
        for leaf in leaves:
            if np.iscomplexobj(leaf) or not np.issubdtype(np.asarray(leaf).dtype, np.number):
                raise TypeError(f"the responses must be real numbers, got {leaf!r}")
        values = np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in leaves]) \
            if leaves else np.zeros(0)
        if self.n_out is not None and values.size != self.n_out:
            raise ValueError(
                f"the response function returned {values.size} values; expected "
                f"{self.n_out} (the objective and n_constraints={self.n_out - 1} constraints)")
        if values.size == 0:
            raise ValueError("the response function returned no values")
        if not np.all(np.isfinite(values)):
            raise FloatingPointError(f"non-finite response values {values.tolist()}")

        def reverse_pass() -> np.ndarray:
            grads = np.empty((values.size, x.size))
            for i in range(values.size):
                grads[i] = np.real(back(_unit(y, i, [0]))[0])
            if not np.all(np.isfinite(grads)):
                bad = [i for i in range(values.size) if not np.all(np.isfinite(grads[i]))]
                raise FloatingPointError(f"non-finite gradient of response(s) {bad}")
            return grads
        return values, _Gradients(reverse_pass)


# --------------------------------------------------------------------------
# small utilities


def _params_json(params: Mapping) -> dict:
    return json.loads(json.dumps(dict(params), default=jsonable))


def _key(x: np.ndarray) -> bytes:
    return hashlib.blake2b(x.tobytes(), digest_size=16).digest()


# --------------------------------------------------------------------------
# the run


class _Run:
    """State of one `minimize` call: cache, history, MMA center, checkpoints."""

    def __init__(self, responses: _Responses, n: int, lb, ub, opts: dict):
        self.responses = responses
        self.n = n
        self.lb, self.ub = lb, ub
        self.o = opts
        self.history: list[dict] = []
        self.stage_results: list[dict] = []
        self.k: int | None = None if responses.n_out is None else responses.n_out - 1
        self.cache: tuple | None = None          # (x, values, grads)
        self.values: dict[bytes, np.ndarray] = {}
        self.best: tuple | None = None           # MMA's center (x, values, grads)
        self.best_feasible = False
        self.best_infeasibility = 0.0
        self.x_prev: np.ndarray | None = None
        self.stage = 0
        self.stage_evals = 0
        self.stage_done = False
        self.stage_status: str | None = None
        self.x_stage = None                      # design the current stage started from
        self.stop_reason: str | None = None
        self.signal: str | None = None           # the signal that interrupted the run
        self.seconds0 = 0.0
        self.fe0 = 0
        self.t0 = time.perf_counter()
        self.nlopt_evals = 0
        counter = opts["count_solves"]
        self.solves0 = counter() if counter is not None else None
        finite = np.isfinite(lb) & np.isfinite(ub) & (ub > lb)
        self.grey_mask = finite if finite.any() else None

    # -- evaluation ------------------------------------------------------
    def elapsed(self) -> float:
        return self.seconds0 + time.perf_counter() - self.t0

    def fe_solves(self) -> int | None:
        counter = self.o["count_solves"]
        if counter is None:
            return None
        return self.fe0 + int(counter()) - self.solves0

    def update_center(self, x, values, grads) -> None:
        """Track the design NLopt's MMA iterates from (its returned optimum).

        Mirrors mma.c's acceptance with one evaluation per iteration: the
        first design of a stage, then any with a lower objective, or, while
        no feasible design was accepted, with a smaller max violation.
        """
        infeasibility = max(0.0, float(np.max(values[1:]))) if values.size > 1 else 0.0
        if self.best is None:
            self.best_feasible = infeasibility == 0.0
        elif not (values[0] < self.best[1][0] or
                  (not self.best_feasible and infeasibility < self.best_infeasibility)):
            return
        self.best = (x, values, grads)
        self.best_infeasibility = infeasibility
        if infeasibility == 0.0:
            self.best_feasible = True

    def evaluate(self, x, gradients: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Values at `x` (one forward pass per design) and, if asked, the gradients."""
        if self.cache is not None and np.array_equal(x, self.cache[0]):
            return self.cache[1], self.cache[2]() if gradients else None
        if self.stop_reason is not None:
            raise nlopt.ForcedStop(self.stop_reason)
        if self.cache is not None:
            self.cache[2].release()              # one tape alive at a time
        x = np.array(x, dtype=float, copy=True)
        values, grads = self.responses(x)
        if self.k is None:
            self.k = values.size - 1
            self.responses.n_out = values.size
        self.cache = (x, values, grads)
        self.values[_key(x)] = values
        self.update_center(x, values, grads)
        self.stage_evals += 1
        self._record(x, values)
        self.x_prev = x
        cb = self.o["callback"]
        if cb is not None and cb(dict(self.history[-1]), x.copy()):
            self.stop_reason = self.stop_reason or "stopped"
        if self.o["history_path"] is not None:
            self.write_history("running")
        if self.o["checkpoint"] is not None and \
                len(self.history) % self.o["checkpoint_every"] == 0:
            self.save("running")
        if self.stop_reason is not None:
            raise nlopt.ForcedStop(self.stop_reason)
        return values, grads() if gradients else None

    def _record(self, x: np.ndarray, values: np.ndarray) -> None:
        change = None if self.x_prev is None else float(np.max(np.abs(x - self.x_prev)))
        grey = None
        if self.grey_mask is not None:
            m = self.grey_mask
            t = (x[m] - self.lb[m]) / (self.ub[m] - self.lb[m])
            grey = float(np.mean(4.0 * t * (1.0 - t)))
        cons = [float(v) for v in values[1:]]
        rec = {
            "evaluation": len(self.history) + 1,
            "stage": self.stage,
            "stage_evaluation": self.stage_evals,
            "objective": float(values[0]),
            "constraints": cons,
            "max_constraint": max(cons) if cons else None,
            "change": change,
            "grey": grey,
            "time": self.elapsed(),
            "fe_solves": self.fe_solves(),
        }
        self.history.append(rec)
        if self.o["verbose"]:
            fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
            print(f"{rec['evaluation']:5d} s{rec['stage']} obj {rec['objective']: .6e} "
                  f"cons {fmt(rec['max_constraint'], '+.3e')} ch {fmt(change, '.3e')} "
                  f"grey {fmt(grey, '.3f')} t {rec['time']:8.2f}s",
                  file=sys.stderr, flush=True)

    # -- stages ------------------------------------------------------------
    def start_stage(self, index: int, stage: Stage, x: np.ndarray, seed=None,
                    evals_done: int = 0) -> None:
        self.stage = index
        self.stage_evals = evals_done
        self.stage_done = False
        self.stage_status = None
        self.x_stage = x
        self.responses.params = dict(stage.params)
        self.cache = None
        self.values = {}
        self.best = None
        if seed is not None:
            values, grads = seed
            grads = _Gradients(value=grads)
            self.cache = (x, values, grads)
            self.update_center(x, values, grads)
            self.values[_key(x)] = values

    def run_stage(self, stage: Stage, budget: int) -> tuple[np.ndarray, str]:
        """MMA from ``self.x_stage`` for at most `budget` (>= 1) forward evaluations."""
        x0 = self.x_stage
        opt = None
        try:
            if self.k is None:
                self.evaluate(x0, False)     # learn k; NLopt's first call is a cache hit
                budget -= 1
            cached = self.cache is not None and np.array_equal(self.cache[0], x0)
            opt = nlopt.opt(nlopt.LD_MMA, self.n)
            opt.set_lower_bounds(self.lb)
            opt.set_upper_bounds(self.ub)
            opt.set_maxeval(budget + (1 if cached else 0))
            ftol = self.o["ftol_rel"] if stage.ftol_rel is None else stage.ftol_rel
            xtol = self.o["xtol_abs"] if stage.xtol_abs is None else stage.xtol_abs
            opt.set_ftol_rel(ftol)
            if xtol > 0:
                opt.set_xtol_abs(xtol)
            for name, v in self.o["mma_params"].items():
                opt.set_param(name, v)
            if self.o["initial_step"] is not None:
                opt.set_initial_step(self.o["initial_step"])

            def objective(x, grad):
                values, grads = self.evaluate(x, grad.size > 0)
                if grad.size:
                    grad[:] = grads[0]
                return float(values[0])

            def constraints(result, x, grad):
                values, grads = self.evaluate(x, grad.size > 0)
                result[:] = values[1:]
                if grad.size:
                    grad[:] = grads[1:]

            opt.set_min_objective(objective)
            if self.k:
                opt.add_inequality_mconstraint(constraints, [self.o["constraint_tol"]] * self.k)
            x = opt.optimize(x0.copy())
            status = _STATUS.get(opt.last_optimize_result(), "unknown")
        except nlopt.ForcedStop:
            status = self.stop_reason or "forced_stop"
            x = x0 if self.best is None else self.best[0]
        except nlopt.RoundoffLimited:
            status = "roundoff_limited"
            x = x0 if self.best is None else self.best[0]
        finally:
            if opt is not None:
                self.nlopt_evals += opt.get_numevals()
        return np.array(x, dtype=float), status

    def values_at(self, x: np.ndarray) -> np.ndarray | None:
        return self.values.get(_key(x))

    # -- output ------------------------------------------------------------
    def write_history(self, status: str) -> None:
        text = json.dumps({"status": status, "stage": self.stage,
                           "evaluations": len(self.history), "fe_solves": self.fe_solves(),
                           "history": self.history}, default=jsonable)
        atomic_write_text(self.o["history_path"], text)

    def save(self, status: str, x_final: np.ndarray | None = None) -> None:
        """Write the checkpoint: the restart design (the stage's result when it
        is done, else MMA's current center), history and counters."""
        if self.stage_done and x_final is not None:
            x = x_final
        elif self.best is not None:
            x = self.best[0]
        else:
            x = self.x_stage
        arrays = {"x": x}
        if self.x_prev is not None:
            arrays["x_last"] = self.x_prev
        if self.best is not None and np.array_equal(self.best[0], x) and self.best[2].ready:
            arrays["seed_values"], arrays["seed_grads"] = self.best[1], self.best[2]()
        meta = {
            "status": status, "n": self.n,
            "n_constraints": self.k, "stage": self.stage,
            "stage_evaluations": self.stage_evals, "stage_done": self.stage_done,
            "stage_status": self.stage_status, "evaluations": len(self.history),
            "stages": self.stage_results, "seconds": self.elapsed(),
            "fe_solves": self.fe_solves(), "nlopt_evaluations": self.nlopt_evals,
            "history": self.history,
        }
        save_checkpoint(self.o["checkpoint"], arrays, meta)


class _Signals:
    """SIGINT/SIGTERM: first one requests a clean stop, a second one raises."""

    def __init__(self, run: _Run, enabled: bool):
        self.run = run
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.previous: dict = {}

    def handler(self, signum, frame):
        if self.run.stop_reason == "interrupted":
            raise KeyboardInterrupt(signal.Signals(signum).name)
        self.run.stop_reason = "interrupted"
        self.run.signal = signal.Signals(signum).name
        if self.run.o["verbose"]:
            print(f"{signal.Signals(signum).name}: stopping after this evaluation "
                  "(again to abort)", file=sys.stderr, flush=True)

    def __enter__(self):
        if self.enabled:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self.handler)
        return self

    def __exit__(self, *exc):
        for sig, old in self.previous.items():
            signal.signal(sig, signal.SIG_DFL if old is None else old)
        return False
