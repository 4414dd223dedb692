"""One MMA run of `topopt.optimize.minimize`: state, history, NLopt stages, checkpoints.

`_Run` holds a run's state (the evaluator's cache, MMA's center, the
history, the stage), evaluates designs for NLopt (`_Run.evaluate`), drives
NLopt's ``LD_MMA`` one stage at a time (`_Run.run_stage`, from
`topopt.optimize.nlopt_stage`) and writes the history and the checkpoint (`topopt.optimize.checkpoint`); `_Signals` turns
SIGINT/SIGTERM into a clean stop. The evaluator is in `topopt.optimize.evaluator`,
the options in `topopt.optimize.options`, the measurements behind the settings
in ``docs/notes/mma.md``.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from typing import Mapping

import nlopt
import numpy as np

from . import progress
from .._files import atomic_write_text, jsonable
from .checkpoint import Checkpoint
from ..design.measures import GREY_TOL, variable_grey_level
from .evaluator import _Cache, _Gradients, _Responses
from .nlopt_stage import _NloptStage
from .options import Options, Stage
from .progress import _CONVERGED    # a stage that ended so is finished; `resume` continues
                                     # any other (maxeval, interrupted, stopped) with budget left


def _params_json(params: Mapping) -> dict:
    return json.loads(json.dumps(dict(params), default=jsonable))


_BLOCK = 1 << 16      # entries per block of the per-design loops over n


def _max_change(x: np.ndarray, x_prev: np.ndarray) -> float:
    """``max_i |x_i - x_prev_i|`` with one temporary of n floats."""
    d = np.subtract(x, x_prev)
    return float(np.max(np.abs(d, out=d)))


class _Grey:
    """The history's ``grey``: `variable_grey_level` of each design, one n-temporary.

    Sigmund's ``mean(4 t (1 - t))``, ``t = (x - lower) / (upper - lower)``
    (Sigmund 2007, Struct. Multidisc. Optim. 33). When every variable has
    finite, distinct bounds, ``t`` is formed in one array and ``4 t (1 - t)``
    in place, in blocks, then averaged by the same ``np.mean``: the same bits
    as `variable_grey_level` (which holds ~5 n-vectors of temporaries);
    otherwise, or for a design outside its bounds (the error names the
    entry), `variable_grey_level` itself.
    """

    def __init__(self, lb: np.ndarray, ub: np.ndarray):
        self.lb, self.ub = lb, ub
        self.all_bounded = bool(lb.size) and bool(
            np.all(np.isfinite(lb)) and np.all(np.isfinite(ub)) and np.all(ub > lb))

    def of(self, x: np.ndarray) -> float | None:
        if not self.all_bounded or x.shape != self.lb.shape:
            return variable_grey_level(x, self.lb, self.ub)
        t = np.subtract(x, self.lb)
        for s in range(0, t.size, _BLOCK):
            t[s:s + _BLOCK] /= self.ub[s:s + _BLOCK] - self.lb[s:s + _BLOCK]
        if not (float(np.min(t)) >= -GREY_TOL and float(np.max(t)) <= 1.0 + GREY_TOL):
            return variable_grey_level(x, self.lb, self.ub)      # raises naming x[i]
        for s in range(0, t.size, _BLOCK):
            block = t[s:s + _BLOCK]
            u = 1.0 - block
            block *= 4.0                         # (4 t) (1 - t), numpy's order of operations
            block *= u
        return float(np.mean(t))


class _Center:
    """The design NLopt's MMA iterates from (its returned optimum).

    Mirrors mma.c's acceptance with one evaluation per iteration: the first
    design of a stage, then any with a lower objective, or, while no
    feasible design was accepted, with a smaller max violation.
    """

    def __init__(self, keep_gradients: bool = True):
        self.best: tuple | None = None           # (x, values, grads)
        self.keep_gradients = keep_gradients     # only a checkpoint's seed reads them
        self.feasible = False
        self.infeasibility = 0.0

    def update(self, x, values, grads) -> None:
        infeasibility = max(0.0, float(np.max(values[1:]))) if values.size > 1 else 0.0
        if self.best is None:
            self.feasible = infeasibility == 0.0
        elif not (values[0] < self.best[1][0] or
                  (not self.feasible and infeasibility < self.infeasibility)):
            return
        self.best = (x, values, grads if self.keep_gradients else None)
        self.infeasibility = infeasibility
        if infeasibility == 0.0:
            self.feasible = True


class _Run(_NloptStage):
    """State of one `minimize` call: cache, history, MMA center, checkpoints."""

    def __init__(self, responses: _Responses, n: int, opts: Options):
        self.responses, self.n, self.o = responses, n, opts
        self.history: list[dict] = []
        self.stage_results: list[dict] = []
        self.k: int | None = None if responses.n_out is None else responses.n_out - 1
        self.cache = _Cache()
        self.center = _Center(keep_gradients=opts.checkpoint is not None)
        self.grey = _Grey(opts.lb, opts.ub)
        self.x_prev: np.ndarray | None = None
        self.stage, self.stage_evals = 0, 0
        self.stage_done, self.stage_status = False, None
        self.x_stage = None                      # design the current stage started from
        self.stop_reason: str | None = None
        self.signal: str | None = None           # the signal that interrupted the run
        self.seconds0, self.fe0, self.nlopt_evals = 0.0, 0, 0
        self.t0 = time.perf_counter()
        self.solves0 = opts.count_solves() if opts.count_solves is not None else None
        self.counts0 = self._read_counters()      # the caller's counters at this start
        self.counts_before: dict = {}             # their totals before a resume
        self.resumed: dict | None = None          # the checkpoint's totals, on resume

    def elapsed(self) -> float:
        return self.seconds0 + time.perf_counter() - self.t0

    def fe_solves(self) -> int | None:
        counter = self.o.count_solves
        if counter is None:
            return None
        return self.fe0 + int(counter()) - self.solves0

    def _read_counters(self) -> dict:
        """The caller's ``counters()`` now (`Options.counters`), checked."""
        if self.o.counters is None:
            return {}
        counts = self.o.counters()
        if not isinstance(counts, dict) or not all(
                isinstance(k, str) and isinstance(v, (int, float, np.integer, np.floating))
                and not isinstance(v, bool) and np.isfinite(v) and v >= 0
                for k, v in counts.items()):
            raise TypeError(f"counters() must return a dict of names to numbers >= 0, got "
                            f"{counts!r}")
        return {k: v.item() if isinstance(v, np.generic) else v for k, v in counts.items()}

    def counters(self) -> dict:
        """The caller's counters over the whole run: their growth since this start plus
        the totals before a resume (a ``*_max`` counter: the larger value)."""
        out = dict(self.counts_before)
        for k, v in self._read_counters().items():
            out[k] = max(out.get(k, 0), v) if k.endswith("_max") else \
                out.get(k, 0) + v - self.counts0.get(k, 0)
        return out

    # -- resume ------------------------------------------------------------
    def restore(self, ck: dict) -> tuple[int, np.ndarray, tuple | None, int]:
        """Take over a checkpoint's history and counters; returns where to start:
        ``(stage, design, seed, evaluations done in the stage)``."""
        self.history, self.stage_results = list(ck["history"]), list(ck["stages"])
        self.seconds0, self.fe0 = float(ck["seconds"]), int(ck["fe_solves"] or 0)
        self.counts_before = dict(ck.get("counters") or {})
        self.resumed = {"evaluations": int(ck["evaluations"]), "seconds": self.seconds0,
                        "fe_solves": ck["fe_solves"], "counters": dict(self.counts_before)}
        self.nlopt_evals, self.x_prev = int(ck["nlopt_evaluations"]), ck["x_last"]
        if ck["n_constraints"] is not None:
            self.k = ck["n_constraints"]
            self.responses.n_out = self.k + 1
        first, x, seed, done = ck["stage"], ck["x"], ck["seed"], ck["stage_evaluations"]
        self.stage, self.stage_evals, self.x_stage = first, done, x
        self.stage_done, self.stage_status = ck["stage_done"], ck["stage_status"]
        budget_left = self.o.stages[first].maxeval - done
        if ck["stage_done"] and (ck["stage_status"] in _CONVERGED or budget_left <= 0):
            return first + 1, x, None, 0
        self.stage_results = [r for r in self.stage_results if r["stage"] != first]
        return first, x, seed, done

    # -- evaluation --------------------------------------------------------
    def evaluate(self, x, gradients: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Values at `x` (one forward pass per design) and, if asked, the gradients."""
        if self.cache.hit(x):
            _, values, grads = self.cache.last
            return values, grads() if gradients else None
        if self.stop_reason is not None:
            raise nlopt.ForcedStop(self.stop_reason)
        self.cache.release()
        x = np.array(x, dtype=float, copy=True)
        values, grads = self.responses(x)
        if self.k is None:
            self.k = values.size - 1
            self.responses.n_out = values.size
        self.cache.store(x, values, grads)
        self.center.update(x, values, grads)
        self.stage_evals += 1
        self._record(x, values)
        self.x_prev = x
        self._after_evaluation(x)
        if self.stop_reason is not None:
            raise nlopt.ForcedStop(self.stop_reason)
        return values, grads() if gradients else None

    def _after_evaluation(self, x: np.ndarray) -> None:
        """The callback, the history file and the periodic checkpoint."""
        cb = self.o.callback
        if cb is not None and cb(dict(self.history[-1]), x.copy()):
            self.stop_reason = self.stop_reason or "stopped"
        if self.o.history_path is not None:
            self.write_history("running")
        if self.o.checkpoint is not None and len(self.history) % self.o.checkpoint_every == 0:
            self.save("running")

    def _record(self, x: np.ndarray, values: np.ndarray) -> None:
        change = None if self.x_prev is None else _max_change(x, self.x_prev)
        grey = self.grey.of(x)
        cons = [float(v) for v in values[1:]]
        rec = {
            "evaluation": len(self.history) + 1, "stage": self.stage,
            "stage_evaluation": self.stage_evals, "objective": float(values[0]),
            "constraints": cons, "max_constraint": max(cons) if cons else None,
            "change": change, "grey": grey, "time": self.elapsed(),
            "fe_solves": self.fe_solves(),
        }
        self.history.append(rec)
        if self.o.verbose:
            budget = sum(s.maxeval for s in self.o.stages)
            budget = budget if self.o.cap is None else min(budget, self.o.cap)
            left = progress.time_left(rec["time"], len(self.history),
                                      budget - len(self.history))
            progress.show(progress.evaluation_line(rec, self.o.objective_scale, left,
                                                  self.o.constraint_tol))

    # -- stages ------------------------------------------------------------
    def start_stage(self, index: int, stage: Stage, x: np.ndarray, seed=None,
                    evals_done: int = 0) -> None:
        self.stage, self.stage_evals = index, evals_done
        self.stage_done, self.stage_status = False, None
        self.x_stage = x
        self.responses.params = dict(stage.params)
        self.cache.clear()
        self.center = _Center(keep_gradients=self.o.checkpoint is not None)
        if seed is not None:
            values, grads = seed
            grads = _Gradients(value=grads)
            self.cache.store(x, values, grads)
            self.center.update(x, values, grads)

    def end_stage(self, status: str, x: np.ndarray) -> np.ndarray:
        """Record the stage's result; returns its design (MMA's center if `x`
        was never evaluated)."""
        values = self.cache.values_at(x)
        if values is None and self.center.best is not None:
            x, values = self.center.best[0], self.center.best[1]
        self.stage_done, self.stage_status = True, status
        self.stage_results.append({
            "stage": self.stage, "params": _params_json(self.responses.params),
            "status": status, "evaluations": self.stage_evals,
            "fun": None if values is None else float(values[0]),
            "constraints": None if values is None else values[1:].tolist(),
        })
        return x

    # -- output ------------------------------------------------------------
    def write_history(self, status: str) -> None:
        text = json.dumps({"status": status, "stage": self.stage,
                           "evaluations": len(self.history), "fe_solves": self.fe_solves(),
                           "history": self.history}, default=jsonable)
        atomic_write_text(self.o.history_path, text)

    def save(self, status: str, x_final: np.ndarray | None = None) -> None:
        """Write the checkpoint: the restart design (the stage's result when it
        is done, else MMA's current center), history and counters."""
        best = self.center.best
        if self.stage_done and x_final is not None:
            x = x_final
        else:
            x = best[0] if best is not None else self.x_stage
        arrays = {"x": x}
        if self.x_prev is not None:
            arrays["x_last"] = self.x_prev
        grads = best[2] if best is not None and np.array_equal(best[0], x) else None
        if grads is not None and (grads.ready or grads.compute is not None):
            # the restart's gradients: kept, or one reverse pass on the last tape
            arrays["seed_values"], arrays["seed_grads"] = best[1], grads()
        Checkpoint(arrays, {
            "status": status, "n": self.n, "n_constraints": self.k, "stage": self.stage,
            "stage_evaluations": self.stage_evals, "stage_done": self.stage_done,
            "stage_status": self.stage_status, "evaluations": len(self.history),
            "stages": self.stage_results, "seconds": self.elapsed(),
            "fe_solves": self.fe_solves(), "nlopt_evaluations": self.nlopt_evals,
            "history": self.history, "counters": self.counters(),
        }).save(self.o.checkpoint)

    def finish(self, status: str, x_final: np.ndarray | None = None) -> None:
        """The last checkpoint and history file of the run (those that are asked for)."""
        if self.o.checkpoint is not None:
            self.save(status, x_final)
        if self.o.history_path is not None:
            self.write_history(status)

    def abort(self, exc: BaseException) -> None:
        """Save what a run that raises `exc` did, and tell the caller where it is."""
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "error"
        self.finish(status)
        if self.o.checkpoint is not None:
            path = self.o.checkpoint
            exc.add_note(f"topopt: the last good design and the history of "
                         f"{len(self.history)} evaluations are in the checkpoint {path}; "
                         f"resume from it with minimize(..., resume={path!r}) or a problem "
                         f"script's --resume {path}")
            try:
                exc.topopt_checkpoint = path
            except AttributeError:              # an exception type without a __dict__
                pass


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
        if self.run.o.verbose:      # not print: the signal may land inside a print to stderr
            progress.show_unbuffered(progress.signal_line(self.run.signal))

    def __enter__(self):
        if self.enabled:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self.handler)
        return self

    def __exit__(self, *exc):
        for sig, old in self.previous.items():
            signal.signal(sig, signal.SIG_DFL if old is None else old)
        return False
