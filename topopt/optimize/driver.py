"""NLopt MMA driver: one forward pass per design, continuation, checkpoints.

`minimize` runs NLopt's ``LD_MMA`` on responses differentiated with
`topopt.ad`. In topology optimization the objective and every constraint
come out of one expensive forward pass (an FE solve), so the driver
evaluates all responses together, once per design: ``fun(x)`` returns
``[f, g_1, ..., g_k]`` (or the objective and a list of constraint
functions are combined into such a function), one `ad.pullback` runs the
forward pass, and the ``k + 1`` gradients come from calling ``back`` with
unit cotangents. The last design and its values/gradients are cached, so
NLopt's separate objective and constraint calls at one ``x`` cost one
forward pass.

The pieces: the options, checked in one place (`topopt.optimize.options`, with
the table of NLopt's ``LD_MMA`` parameters), the evaluator (cache, lazy
gradients: `topopt.optimize.evaluator`), one run's state and history
(`topopt.optimize.run`), its NLopt stages (`topopt.optimize.nlopt_stage`),
progress lines (`topopt.optimize.progress`) and the checkpoint file
(`topopt.optimize.checkpoint`); here the stage loop and `Result`.

Settings, one line each with the figure behind it (details in
``docs/notes/mma.md``):

* ``inner_maxeval`` stays NLopt's 0: with 1, the EM focusing stages stalled
  (enhancement 8.3 against 23.6); the MBB beam gives 233.50 either way.
* ``dual_ftol_rel`` stays 1e-14: 1e-8 cost two orders of magnitude in final
  accuracy on ``sum(c / x)``.
* ``dual_algorithm`` is ``LD_SLSQP``: 13 ms per MMA step against 75 ms with
  NLopt's MMA dual on the MBB beam at 240 x 80, the same compliance to 7 digits.
* ``rho_init`` is ``"auto"``: Svanberg's ``0.1 mean_j |df/dx_j| (ub_j - lb_j)``
  at each stage's start instead of NLopt's constant 1, which in objective
  units penalized each of thousands of variables as if it alone carried the
  objective; MBB 60 x 20 after 10/20/30 evaluations 318/243/234 against
  328/271/238, 16 evaluations instead of 35 on ``sum(c / x)``; over the 14
  problem scripts see ``scripts/studies/study_mma.py``.
* A start that violates a constraint by more than 1e-3 runs with Svanberg's
  elastic variables (`topopt.optimize.nlopt_stage`): MBB 60 x 20 from x = 0.7, 0.9, 1
  reaches 233.49-233.50 where the run used to stop after 1 evaluation.
* ``initial_step`` stays NLopt's ``(upper - lower) / 2``: 0.05 to 0.3 on the
  EM focusing problem gave 14.5 to 26.7 against 18.2, no trend.
* Gradients on demand: with ``inner_gradients=0``, 15 reverse passes instead
  of 60 for 60 designs of ``sum(c / x)``, the same iterates.
* A resume restarts MMA's move limits: MBB 60 x 20 interrupted at 60 of 120,
  233.505 against 233.501 straight (``scripts/studies/resume_mbb.py``).

Stopping: ``maxeval`` (forward evaluations per stage), ``ftol_rel`` and
``xtol_abs`` (NLopt's own checks, applied between consecutive MMA
iterates: ``|f - f_prev| < ftol_rel * |f|`` and ``max_i |x_i - x_prev_i| <
xtol_abs``, i.e. the "max design change" criterion), a user ``callback``
returning True, and SIGINT/SIGTERM (the current evaluation finishes, a
checkpoint is written, ``status="interrupted"`` and ``signal`` names the
signal; a second signal raises ``KeyboardInterrupt``). `minimize` never
exits the process: problem scripts turn an interrupted `Result` into exit
status 130 or 143 (`topopt.cli.script.finish`).

Resuming (``resume=PATH``) continues from the checkpoint's design, stage,
stage budget left, history and counters; MMA restarts from the checkpoint
design with fresh move limits (NLopt keeps its asymptotes internal): the
same optimum, not the same bits. The design, values and gradients of the
restart point are in the checkpoint, so the restart costs no extra forward
pass (unless its gradients were never computed, with ``inner_gradients=0``).
Checkpoint files are read and checked by `topopt.optimize.Checkpoint.load`
(`load_checkpoint`).

Examples
--------
One forward pass returning all responses, ``[sum(c / x), sum(x) - 1.2]``;
the optimum is ``x ~ sqrt(c)``:

>>> import numpy as np
>>> c = np.array([1.0, 4.0])
>>> res = minimize(lambda x: np.stack([np.sum(c / x), np.sum(x) - 1.2]),
...                np.full(2, 0.5), bounds=(0.01, 1.0), maxeval=60,
...                ftol_rel=1e-12, verbose=False)
>>> np.round(res.x, 4), res.evaluations == len(res.history)
(array([0.4, 0.8]), True)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from . import progress
from .._files import atomic_write_text, jsonable
from .checkpoint import CheckpointError, load_checkpoint
from .ending import ending, ending_line
from .evaluator import _Responses
from .options import Options, Stage
from .perturb import perturbed_start
from .run import _params_json, _Run, _Signals

__all__ = ["minimize", "Result"]

# a run ends early after a stage that ended with one of these statuses
_STOPPED = ("interrupted", "stopped", "forced_stop", "roundoff_limited")


@dataclass
class Result:
    """Outcome of `minimize`.

    Attributes
    ----------
    x : ndarray
        Final design: NLopt's optimum of the last stage run. After an
        interruption or a callback stop, the design MMA was iterating from:
        the first design of the stage, then each design with a lower
        objective (while none feasible was accepted, also each with a
        smaller violation), as in NLopt's mma.c.
    fun : float
        Objective at `x`.
    constraints : list of float
        Constraint values at `x` (feasible when <= 0).
    status : str
        MMA's result of the last stage (``"ftol_reached"``, ``"xtol_reached"``,
        ``"maxeval_reached"``, ...), ``"interrupted"`` (SIGINT/SIGTERM) or
        ``"stopped"`` (the callback asked to stop).
    signal : str or None
        ``"SIGINT"`` or ``"SIGTERM"`` when a signal interrupted the run
        (``status="interrupted"``), else None. `minimize` never exits the
        process; a script turns this into its exit status
        (`topopt.cli.script.finish`).
    history : list of dict
        One record per forward evaluation: ``evaluation``, ``stage``,
        ``stage_evaluation``, ``objective``, ``constraints``,
        ``max_constraint``, ``change`` (max ``|x - x_prev|``, None at first),
        ``grey`` (mean of ``4 t (1 - t)`` over ``t = (x - lower) / (upper -
        lower)``, entries with finite bounds), ``time`` (s since start) and
        ``fe_solves``.
    evaluations : int
        Forward evaluations, including those before a resume.
    stages : list of dict
        Per stage: index, params, status, evaluations, fun, constraints.
    seconds : float
        Wall time, including the time before a resume.
    fe_solves, fe_solves_per_iteration : int or float or None
        From the ``count_solves`` counter; None without one.
    nlopt_evaluations : int
        Function evaluations MMA requested (cache hits included): NLopt's, or
        ours with ``optimizer="mma"``.
    x_last : ndarray or None
        The last design evaluated.
    verdict : str
        ``"ok"``, or what is wrong with the final design whatever `status`
        says: ``"infeasible"`` (a constraint violated by more than
        `topopt.optimize.ending.FEASIBILITY_TOL`), ``"worse_than_start"``
        (the objective ended worse than at the first evaluation), joined by
        ``", "``; `ending` has the figures.
    ending : dict
        `topopt.optimize.ending.ending`: ``max_violation``,
        ``objective_start``, ``objective``, ``start_violation``, the limits.
    counters : dict
        The totals of `minimize`'s ``counters=`` over the whole run.
    resumed : dict or None
        After a resume, the totals the checkpoint carried: ``evaluations``,
        ``seconds``, ``fe_solves``, ``counters`` (the run before the
        resume); `evaluations`, `seconds`, `fe_solves`, `counters` and
        `history` already include them. A caller that counts its own
        solves or time in this process adds these.
    """

    x: np.ndarray
    fun: float
    constraints: list
    status: str
    history: list
    evaluations: int
    stages: list
    seconds: float
    fe_solves: int | None = None
    fe_solves_per_iteration: float | None = None
    nlopt_evaluations: int = 0
    x_last: np.ndarray | None = None
    signal: str | None = None
    verdict: str = "ok"
    ending: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict)
    resumed: dict | None = None

    def __getitem__(self, key: str):
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)

    def to_dict(self) -> dict:
        """The result as JSON-compatible data (arrays become lists)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["x"] = np.asarray(self.x).tolist()
        d["x_last"] = None if self.x_last is None else np.asarray(self.x_last).tolist()
        return d

    def to_json(self, path: str | os.PathLike | None = None, indent: int | None = None) -> str:
        """JSON text of `to_dict`; with `path`, also written there atomically.

        Examples
        --------
        >>> import json, numpy as np
        >>> r = Result(np.zeros(2), 0.0, [], "success", [], 0, [], 0.0)
        >>> json.loads(r.to_json())["x"]
        [0.0, 0.0]
        """
        text = json.dumps(self.to_dict(), indent=indent, default=jsonable)
        if path is not None:
            atomic_write_text(path, text)
        return text


def minimize(fun: Callable, x0, constraints: Sequence[Callable] | None = None, *,
             n_constraints: int | None = None, bounds: tuple | None = (0.0, 1.0),
             maxeval: int | None = None, ftol_rel: float = 1e-6, xtol_abs: float = 0.0,
             constraint_tol: float = 1e-8, stages: Sequence[Stage] | None = None,
             mma_params: Mapping[str, float] | None = None, initial_step=None,
             history_path: str | os.PathLike | None = None,
             checkpoint: str | os.PathLike | None = None, checkpoint_every: int = 10,
             resume: str | os.PathLike | None = None, verbose: bool = True,
             callback: Callable[[dict, np.ndarray], bool | None] | None = None,
             count_solves: Callable[[], int] | None = None,
             handle_signals: bool = True, objective_scale: float = 1.0, objective_name: str = "obj",
             counters: Callable[[], dict] | None = None, optimizer: str = "nlopt") -> Result:
    """Minimize ``f(x)`` subject to ``g_i(x) <= 0`` and bounds with MMA (NLopt's or ours).

    Two forms, both evaluated once per design (one `ad.pullback`):

    * shared forward pass (``constraints=None``): ``fun(x, **params)`` returns
      all responses, a 1-D array ``[f, g_1, ..., g_k]`` or a tuple ``(f, g_1,
      ..., g_k)`` / ``(f, [g_1, ...])``; ``k`` is `n_constraints` (checked)
      or is read off the first evaluation;
    * separate functions: ``fun(x, **params)`` is the objective and each
      ``g(x, **params)`` in `constraints` one constraint.

    Parameters
    ----------
    fun : callable
        Objective, or all responses (see above). Plain numpy code.
    x0 : array_like
        Initial design, 1-D, finite, within `bounds` (moved by ``TOPOPT_PERTURB``).
    constraints : sequence of callable, optional
        Constraint functions ``g(x) <= 0``; None for the shared form.
    n_constraints : int, optional
        Number of constraints ``k`` of the shared form.
    resume : path, optional
        Continue from this checkpoint; `x0` gives only the size.
    bounds, maxeval, ftol_rel, xtol_abs, constraint_tol, stages, mma_params, \
    initial_step, history_path, checkpoint, checkpoint_every, verbose, callback, \
    count_solves, handle_signals, objective_scale, objective_name, counters, optimizer
        The run's options, documented and checked in `Options` (``optimizer="mma"``: ours).

    Returns
    -------
    Result

    Raises
    ------
    TypeError, ValueError, OutputPathError, FileNotFoundError, CheckpointError
        Bad arguments, unwritable paths, no checkpoint to resume: before any
        evaluation. Whatever `fun` raises propagates after the checkpoint is
        written, its path in the exception's ``topopt_checkpoint``.

    Examples
    --------
    ``sum(c / x)`` subject to ``sum(x) <= 1.2`` has its optimum at ``x ~ sqrt(c)``:

    >>> c = np.array([1.0, 4.0])
    >>> res = minimize(lambda x: np.sum(c / x), np.full(2, 0.5), [lambda x: np.sum(x) - 1.2],
    ...                bounds=(0.01, 1.0), maxeval=60, ftol_rel=1e-12, verbose=False)
    >>> np.round(res.x, 4), round(res.fun, 4)
    (array([0.4, 0.8]), 7.5)
    """
    responses = _Responses.of(fun, constraints, n_constraints)
    x0, opts = Options.check(
        x0, bounds=bounds, maxeval=maxeval, ftol_rel=ftol_rel, xtol_abs=xtol_abs,
        constraint_tol=constraint_tol, stages=stages, mma_params=mma_params,
        initial_step=initial_step, history_path=history_path, checkpoint=checkpoint,
        checkpoint_every=checkpoint_every, verbose=verbose, callback=callback,
        count_solves=count_solves, handle_signals=handle_signals, optimizer=optimizer,
        objective_scale=objective_scale, objective_name=objective_name, counters=counters)
    ck = None if resume is None else _resume_checkpoint(resume, x0.size, responses, opts)
    run = _Run(responses, x0.size, opts)
    first, x, seed, done = (0, x0, None, 0) if ck is None else run.restore(ck)
    with _Signals(run, opts.handle_signals):
        try:
            x, status = _run_stages(run, first, x, seed, done, ck)
        except BaseException as e:
            run.abort(e)
            raise
    run.finish(status, x)
    return _result(run, x, status, None if ck is None else ck["fe_solves"])


def _resume_checkpoint(path, n: int, responses: _Responses, opts: Options) -> dict:
    """The checkpoint at `path`, checked against this problem and its stages."""
    ck = load_checkpoint(path)
    if ck["n"] != n:
        raise CheckpointError(path, f"written for {ck['n']} design variables; this "
                              f"problem has {n}")
    if ck["n_constraints"] is not None and responses.n_out is not None and \
            ck["n_constraints"] != responses.n_out - 1:
        raise CheckpointError(path, f"written for {ck['n_constraints']} constraints; "
                              f"this problem has {responses.n_out - 1}")
    if ck["stage"] >= len(opts.stages):
        raise ValueError(f"resume: the checkpoint is at stage {ck['stage']} but only "
                         f"{len(opts.stages)} stage(s) were given")
    return ck


def _run_stages(run: _Run, first: int, x: np.ndarray, seed, done: int,
                ck: dict | None) -> tuple[np.ndarray, str]:
    """Stages ``first, first + 1, ...`` (the first after `done` evaluations, from
    `seed`), each from the previous one's design; returns the last design and status
    (after a resume with nothing left to run, checkpoint `ck`'s status stands)."""
    opts = run.o
    if ck is None:            # a fresh run: its start moved by TOPOPT_PERTURB if set (perturb.py)
        x = perturbed_start(x, opts.lb, opts.ub)
    status = ck["stage_status"] if first >= len(opts.stages) else "success"
    if opts.verbose:
        progress.show(progress.header_line(opts.objective_name, opts.objective_scale,
                                          opts.constraint_tol))
    for i in range(first, len(opts.stages)):
        x, status = _run_stage(run, i, x, seed if i == first else None,
                               done if i == first else 0)
        if status in _STOPPED:
            break
        if opts.cap is not None and len(run.history) >= opts.cap:
            status = "maxeval_reached"
            break
    return x, status


def _run_stage(run: _Run, i: int, x: np.ndarray, seed, done: int) -> tuple[np.ndarray, str]:
    """Stage `i` from `x` within its budget and the total cap; checkpointed at its end."""
    opts, stage = run.o, run.o.stages[i]
    run.start_stage(i, stage, x, seed, done)
    budget = stage.maxeval - run.stage_evals
    if opts.cap is not None:
        budget = min(budget, opts.cap - len(run.history))
    if opts.verbose:
        progress.show(progress.stage_line(i, _params_json(stage.params), budget))
    if budget <= 0:                              # nothing left (resume, total cap)
        x_final, status = x, "maxeval_reached"
    else:
        x_final, status = run.run_stage(stage, budget)
    x_final = run.end_stage(status, x_final)
    if opts.checkpoint is not None:
        run.save("running", x_final)
    return x_final, status


def _result(run: _Run, x: np.ndarray, status: str, fe_saved: int | None) -> Result:
    """The `Result` of a finished run (`fe_saved`: the checkpoint's FE solves)."""
    last = run.stage_results[-1] if run.stage_results else {}
    fun_val, cons = last.get("fun"), last.get("constraints") or []
    fe = run.fe_solves() if run.o.count_solves is not None else fe_saved
    evaluations, seconds = len(run.history), run.elapsed()
    first = run.history[0] if run.history else {}
    end = ending(cons, fun_val, first.get("objective"), first.get("constraints"))
    if run.o.verbose:
        progress.show(progress.summary_line(
            status, evaluations, seconds,
            None if fun_val is None else fun_val * run.o.objective_scale, run.o.objective_name))
        if end["verdict"] != "ok":
            progress.show(ending_line(end))
    return Result(
        x=np.array(x, dtype=float),
        fun=float("nan") if fun_val is None else float(fun_val),
        constraints=[float(c) for c in cons],
        status=status, history=run.history, evaluations=evaluations,
        stages=run.stage_results, seconds=seconds, fe_solves=fe,
        fe_solves_per_iteration=None if fe is None or evaluations == 0 else fe / evaluations,
        nlopt_evaluations=run.nlopt_evals,
        x_last=None if run.x_prev is None else np.array(run.x_prev),
        signal=run.signal if status == "interrupted" else None,
        verdict=end["verdict"], ending=end, counters=run.counters(), resumed=run.resumed,
    )
