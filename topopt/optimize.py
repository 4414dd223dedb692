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

NLopt MMA parameters (``opt.set_param``; NLopt 2.11 reads exactly these for
``LD_MMA``, any other name is silently ignored by NLopt and rejected here):

==================  =========  ==============================================
name                NLopt      meaning
                    default
==================  =========  ==============================================
``inner_maxeval``   0          inner (conservativeness) iterations per outer
                               iteration, 0 = unlimited. Kept at 0 (see
                               below).
``dual_ftol_rel``   1e-14      relative tolerance of the dual subproblem
``dual_ftol_abs``   0          absolute tolerance of the dual subproblem
``dual_xtol_rel``   0          relative multiplier tolerance of the dual
``dual_xtol_abs``   0          absolute multiplier tolerance of the dual
``dual_maxeval``    100000     evaluations of the dual subproblem
``dual_algorithm``  LD_MMA     NLopt algorithm code for the dual. **Set to
                               LD_SLSQP here** (see below).
``rho_init``        1          initial MMA penalty ``rho`` (> 0)
``inner_gradients`` 1          0: inner iterations ask for values only, and
                               the gradient is requested again at a design
                               MMA accepts (see below)
``always_improve``  1          1: accept any improving design even before
                               the inner iterations end; 0: Svanberg's
                               rule, only a conservative one
``sigma_min``       0          lower bound of the MMA move limits (>= 0)
``verbosity``       0          > 0: MMA prints its iterations (C stdout)
==================  =========  ==============================================

Inner iterations. MMA makes its approximations conservative by inner
iterations: each is a new design, evaluated like any other (one forward
pass, one FE solve), so FE solves per evaluated design stay 1. On a smooth
convex problem (``sum(c / x)``, one linear constraint) NLopt's default
``inner_maxeval=0`` took 2.7 to 3.3 evaluations per outer iteration and
``inner_maxeval=1`` exactly 1.0 (tests count the ``verbosity`` lines). But
with ``inner_maxeval=1`` a non-conservative step is rejected and the old
design proposed again: on the EM focusing problem the stages stalled after
37, 15 and 20 distinct designs of 100 (enhancement 8.3 against 23.6 with
the default), and on a reliability penalty MMA oscillated. On the MBB beam
and the cantilever both settings give the same compliance (233.50 and
233.51 after 120 evaluations). So the default stays NLopt's; pass
``mma_params={"inner_maxeval": 1}`` for one design per outer iteration.
Loosening ``dual_ftol_rel`` to 1e-8 (common advice) cost two orders of
magnitude in final accuracy on the convex problem, so it stays at 1e-14.

Move limits. MMA's asymptotes start at ``sigma = (upper - lower) / 2`` and
adapt (x1.2 while a variable keeps its direction, x0.7 when it oscillates);
``initial_step`` sets the first ``sigma`` of every stage. On the EM focusing
problem (4 nm, three stages of 100) 0.05, 0.1, 0.2, 0.3 and the default 0.5
gave enhancements 20.8, 22.2, 26.7, 14.5 and 18.2: no trend, different local
optima; at 1 nm 0.2 gave 26.7 against 28.1, and 0.1 or 0.2 in the last two
stages only 28.1 and 28.0. So the default stays NLopt's.

The dual subproblem has one variable per constraint and costs O(n) per
evaluation; NLopt's default inner MMA needs thousands of such evaluations.
Measured on the MBB beam at 240 x 80 (19 200 variables, one constraint):
75 ms per MMA step with the default dual, 13 ms with ``LD_SLSQP`` and the
same compliance to 7 digits (233.50 at 60 x 20, as with the default).
``LD_LBFGS`` was as fast but failed with NLopt runtime errors on small
problems. A design NLopt asks for again (MMA near convergence) is served
from the cache: a stage may end with fewer forward evaluations than its
budget.

Gradients on demand. Each design costs one forward pass; its gradients
(the reverse pass: adjoint solves, filter transposes) are computed only
when NLopt asks for them, and the tape of the last design is kept for
that. With ``inner_gradients=0`` the designs that MMA's inner iterations
reject never pay the reverse pass, and the repeated call at an accepted
design is served from the cache (no second forward pass). MMA's iterates do
not change (it uses gradients of accepted designs only): on ``sum(c / x)``
with one constraint, 60 designs took 15 reverse passes instead of 60; on
the EM focusing problem (4 nm) the same 60 designs and objective to the
last digit, the time saved within noise (its adjoint solve reuses the
factorization).

Stopping: ``maxeval`` (forward evaluations per stage), ``ftol_rel`` and
``xtol_abs`` (NLopt's own checks, applied between consecutive MMA
iterates: ``|f - f_prev| < ftol_rel * |f|`` and ``max_i |x_i - x_prev_i| <
xtol_abs``, i.e. the "max design change" criterion), a user ``callback``
returning True, and SIGINT/SIGTERM (the current evaluation finishes, a
checkpoint is written, ``status="interrupted"`` and ``signal`` names the
signal; a second signal raises ``KeyboardInterrupt``). `minimize` never
exits the process: problem scripts turn an interrupted `Result` into exit
status 130 or 143 (`topopt.runio.finish`).

Resuming restarts MMA from the checkpoint design: NLopt keeps its
asymptotes and move limits internal, so a resumed run follows the same
path only up to the restart and converges to the same optimum, not to the
same bits. On the MBB beam (60 x 20) a SIGINT at 30 of 60 evaluations and a
resume to 60 gave 234.84 against 233.97 straight (within 0.5 % of top88's
233.71 after 58 evaluations instead of 46); at 60 of 120, 233.505 against
233.501 (``scripts/resume_mbb.py``). The design, values and gradients of
the restart point are in the checkpoint, so the restart costs no extra
forward pass (unless its gradients were never computed, with
``inner_gradients=0``). Checkpoint files are read and checked by
`topopt.runio.load_checkpoint`.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, Callable, Mapping, Sequence

import nlopt
import numpy as np

from .mma_run import _params_json, _Responses, _Run, _Signals
from .runio import (CheckpointError, OutputPathError, add_run_arguments, atomic_write_text,
                    check_writable_file, jsonable, load_checkpoint, run_options)

__all__ = ["minimize", "Stage", "Result", "load_checkpoint", "add_run_arguments",
           "run_options", "CheckpointError", "OutputPathError", "MMA_PARAMS",
           "DEFAULT_MMA_PARAMS"]

#: NLopt 2.11 ``LD_MMA`` parameter names and NLopt's defaults.
MMA_PARAMS: dict[str, float] = {
    "inner_maxeval": 0, "dual_ftol_rel": 1e-14, "dual_ftol_abs": 0.0,
    "dual_xtol_rel": 0.0, "dual_xtol_abs": 0.0, "dual_maxeval": 100000,
    "dual_algorithm": nlopt.LD_MMA, "rho_init": 1.0, "inner_gradients": 1,
    "always_improve": 1, "sigma_min": 0.0, "verbosity": 0,
}
#: What `minimize` sets unless ``mma_params`` overrides it.
DEFAULT_MMA_PARAMS = {"dual_algorithm": nlopt.LD_SLSQP}

# a stage that ended with one of these statuses is finished; any other
# (maxeval, interrupted, stopped) is continued by `resume` if budget is left
_CONVERGED = ("success", "stopval_reached", "ftol_reached", "xtol_reached")


@dataclass(frozen=True)
class Stage:
    """One continuation stage: a budget and the parameters passed to the responses.

    Parameters
    ----------
    maxeval : int
        Forward evaluations (designs) in this stage, >= 1.
    params : mapping, optional
        Keyword arguments for the response functions: ``fun(x, **params)``.
    ftol_rel, xtol_abs : float, optional
        Stopping tolerances for this stage; None uses `minimize`'s.

    Examples
    --------
    >>> Stage(maxeval=50, params={"beta": 8})
    Stage(maxeval=50, params={'beta': 8}, ftol_rel=None, xtol_abs=None)
    """

    maxeval: int
    params: Mapping[str, Any] = field(default_factory=dict)
    ftol_rel: float | None = None
    xtol_abs: float | None = None


@dataclass
class Result:
    """Outcome of `minimize`.

    Attributes
    ----------
    x : ndarray
        Final design: NLopt's optimum of the last stage run; after an
        interruption, the design MMA was iterating from (see `minimize`).
    fun : float
        Objective at `x`.
    constraints : list of float
        Constraint values at `x` (feasible when <= 0).
    status : str
        NLopt result of the last stage (``"ftol_reached"``, ``"xtol_reached"``,
        ``"maxeval_reached"``, ...), ``"interrupted"`` (SIGINT/SIGTERM) or
        ``"stopped"`` (the callback asked to stop).
    signal : str or None
        ``"SIGINT"`` or ``"SIGTERM"`` when a signal interrupted the run
        (``status="interrupted"``), else None. `minimize` never exits the
        process; a script turns this into its exit status
        (`topopt.runio.finish`).
    history : list of dict
        One record per forward evaluation (see `minimize`).
    evaluations : int
        Forward evaluations, including those before a resume.
    stages : list of dict
        Per stage: index, params, status, evaluations, fun, constraints.
    seconds : float
        Wall time, including the time before a resume.
    fe_solves, fe_solves_per_iteration : int or float or None
        From the ``count_solves`` counter; None without one.
    nlopt_evaluations : int
        Function evaluations NLopt requested (cache hits included).
    x_last : ndarray or None
        The last design evaluated.
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


# --------------------------------------------------------------------------
# input checks


def _check_int(name: str, v, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, Integral):
        raise TypeError(f"{name} must be an integer >= {lo}, got {v!r}")
    if v < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {v}")
    return int(v)


def _check_tol(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, Real):
        raise TypeError(f"{name} must be a real number >= 0, got {v!r}")
    if not (math.isfinite(v) and v >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {v}")
    return float(v)


def _check_x0(x0) -> np.ndarray:
    try:
        x = np.asarray(x0)
    except Exception as e:  # ragged input
        raise ValueError(f"x0 must be a 1-D array of finite real numbers: {e}") from None
    if x.dtype == object or not (np.issubdtype(x.dtype, np.number) or x.dtype == bool) \
            or np.iscomplexobj(x):
        raise TypeError(f"x0 must be a 1-D array of finite real numbers, got dtype {x.dtype}")
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"x0 must be a non-empty 1-D array, got shape {x.shape}")
    x = x.astype(float)
    if not np.all(np.isfinite(x)):
        i = int(np.flatnonzero(~np.isfinite(x))[0])
        raise ValueError(f"x0 must be finite; x0[{i}] = {x[i]}")
    return x


def _per_variable(value, n: int, what: str, allow_bool: bool = False) -> np.ndarray:
    """A real scalar (broadcast) or array of shape ``(n,)``, as floats."""
    v = np.asarray(value)
    if v.dtype == object or np.iscomplexobj(v) or not (
            np.issubdtype(v.dtype, np.number) or (allow_bool and v.dtype == bool)):
        raise TypeError(f"{what} must be real, got dtype {v.dtype}")
    if v.ndim == 0:
        return np.full(n, float(v))
    if v.shape != (n,):
        raise ValueError(f"{what} must be a scalar or have shape ({n},), got shape {v.shape}")
    return v.astype(float)


def _check_bounds(bounds, n: int) -> tuple[np.ndarray, np.ndarray]:
    if bounds is None:
        bounds = (-np.inf, np.inf)
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise TypeError("bounds must be a pair (lower, upper) of scalars or arrays of "
                        f"shape ({n},), or None; got {bounds!r}")
    out = []
    for name, b in zip(("lower", "upper"), bounds):
        b = _per_variable(-np.inf if b is None and name == "lower" else
                          np.inf if b is None else b, n, f"bounds: the {name} bound",
                          allow_bool=True)
        if np.any(np.isnan(b)):
            raise ValueError(f"bounds: the {name} bound contains NaN")
        out.append(b)
    lb, ub = out
    if np.any(lb > ub):
        i = int(np.flatnonzero(lb > ub)[0])
        raise ValueError(f"bounds: lower must be <= upper; lower[{i}] = {lb[i]} > "
                         f"upper[{i}] = {ub[i]}")
    return lb, ub


def _check_initial_step(initial_step, n: int) -> np.ndarray | None:
    if initial_step is None:
        return None
    step = _per_variable(initial_step, n, "initial_step")
    if not np.all(np.isfinite(step) & (step > 0)):
        raise ValueError("initial_step must be finite and > 0 (MMA's initial move limits)")
    return step


def _check_stages(stages, maxeval) -> tuple[list[Stage], int | None]:
    if stages is None:
        m = 200 if maxeval is None else _check_int("maxeval", maxeval, 1)
        return [Stage(maxeval=m)], None
    if isinstance(stages, Stage) or not isinstance(stages, Sequence) or not stages:
        raise TypeError("stages must be a non-empty list of Stage objects, or None")
    out = []
    for i, s in enumerate(stages):
        if not isinstance(s, Stage):
            raise TypeError(f"stages[{i}] must be a Stage, got {type(s).__name__}")
        _check_int(f"stages[{i}].maxeval", s.maxeval, 1)
        if not isinstance(s.params, Mapping) or not all(isinstance(k, str) for k in s.params):
            raise TypeError(f"stages[{i}].params must be a mapping with str keys")
        for name in ("ftol_rel", "xtol_abs"):
            if getattr(s, name) is not None:
                _check_tol(f"stages[{i}].{name}", getattr(s, name))
        out.append(s)
    cap = None if maxeval is None else _check_int("maxeval", maxeval, 1)
    return out, cap


def _check_mma_params(mma_params) -> dict:
    params = dict(DEFAULT_MMA_PARAMS)
    if mma_params is None:
        return params
    if not isinstance(mma_params, Mapping):
        raise TypeError("mma_params must be a dict {name: number}")
    for k, v in mma_params.items():
        if k not in MMA_PARAMS:
            raise ValueError(f"mma_params: unknown NLopt LD_MMA parameter {k!r}; "
                             f"accepted: {', '.join(MMA_PARAMS)}")
        if isinstance(v, bool) or not isinstance(v, Real) or not math.isfinite(v):
            raise TypeError(f"mma_params[{k!r}] must be a finite number, got {v!r}")
        params[k] = float(v)
    if params.get("rho_init", 1.0) <= 0:
        raise ValueError("mma_params['rho_init'] must be > 0")
    for k in ("inner_gradients", "always_improve"):
        if params.get(k, 1) not in (0, 1):
            raise ValueError(f"mma_params[{k!r}] must be 0 or 1, got {params[k]!r}")
    if params.get("sigma_min", 0.0) < 0:
        raise ValueError("mma_params['sigma_min'] must be >= 0")
    return params


# --------------------------------------------------------------------------


def minimize(
    fun: Callable,
    x0,
    constraints: Sequence[Callable] | None = None,
    *,
    n_constraints: int | None = None,
    bounds: tuple | None = (0.0, 1.0),
    maxeval: int | None = None,
    ftol_rel: float = 1e-6,
    xtol_abs: float = 0.0,
    constraint_tol: float = 1e-8,
    stages: Sequence[Stage] | None = None,
    mma_params: Mapping[str, float] | None = None,
    initial_step=None,
    history_path: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 10,
    resume: str | os.PathLike | None = None,
    verbose: bool = True,
    callback: Callable[[dict, np.ndarray], bool | None] | None = None,
    count_solves: Callable[[], int] | None = None,
    handle_signals: bool = True,
) -> Result:
    """Minimize ``f(x)`` subject to ``g_i(x) <= 0`` and bounds with NLopt's MMA.

    Two forms, both evaluated once per design (see the module docstring):

    * shared forward pass (``constraints=None``): ``fun(x, **params)`` returns
      all responses at once, as a 1-D array ``[f, g_1, ..., g_k]`` or a
      tuple ``(f, g_1, ..., g_k)`` / ``(f, [g_1, ...])`` / ``(f, g_array)``;
      ``k`` is `n_constraints` or is read off the first evaluation;
    * separate functions: ``fun(x, **params)`` is the objective and each
      ``g(x, **params)`` in `constraints` one constraint; they are called
      together, in one pullback, at each new design.

    Gradients come from `topopt.ad`: one `ad.pullback` per design and one
    ``back`` call per response.

    Parameters
    ----------
    fun : callable
        Objective, or all responses (see above). Plain numpy code.
    x0 : array_like
        Initial design, 1-D, finite, within `bounds`.
    constraints : sequence of callable, optional
        Constraint functions ``g(x) <= 0``; None for the shared form.
    n_constraints : int, optional
        Number of constraints ``k`` of the shared form (checked when given).
    bounds : (lower, upper), optional
        Scalars or arrays of shape ``(n,)``; None or an infinite entry for no
        bound. Default ``(0, 1)``: densities.
    maxeval : int, optional
        Forward evaluations without `stages` (default 200); with `stages`, an
        optional cap on the total.
    ftol_rel : float
        Stop when the relative objective change between MMA iterations is
        below this (0 disables).
    xtol_abs : float
        Stop when the max design change ``max |x - x_prev|`` between MMA
        iterations is below this (0 disables).
    constraint_tol : float
        NLopt's tolerance on each constraint.
    stages : sequence of Stage, optional
        Continuation: each stage restarts MMA from the previous stage's design
        with its own budget and calls the responses with ``**stage.params``.
    mma_params : dict, optional
        NLopt ``LD_MMA`` parameters (names in `MMA_PARAMS`) over
        `DEFAULT_MMA_PARAMS` (the SLSQP dual).
    initial_step : float or array_like, optional
        NLopt's initial step, which ``LD_MMA`` takes as its initial move
        limits ``sigma`` (distance of the asymptotes) at the start of each
        stage: a number > 0 or an array of shape ``(n,)``. Default (None):
        NLopt's ``(upper - lower) / 2``.
    history_path : path, optional
        JSON file rewritten atomically after every evaluation.
    checkpoint : path, optional
        ``.npz`` file written atomically every `checkpoint_every` evaluations,
        after each stage, on SIGINT/SIGTERM, on an exception (before it
        propagates) and at the end. Its folder (and that of `history_path`)
        is created and written to before the first evaluation.
    checkpoint_every : int
        Evaluations between checkpoints, >= 1.
    resume : path, optional
        Continue from this checkpoint: its design, stage, stage budget left,
        history and counters. `x0` must have the checkpoint's size; its values
        are not used. MMA restarts at the checkpoint's design with fresh
        move limits (see the module docstring).
    verbose : bool
        One progress line per evaluation on stderr: evaluation, stage,
        objective, max constraint, max change, grey level, time.
    callback : callable, optional
        ``callback(record, x)`` after each evaluation; returning True stops
        the run (``status="stopped"``).
    count_solves : callable, optional
        Returns a running count of FE solves (e.g. ``lambda: problem.solves``);
        recorded per evaluation and in ``result.fe_solves``.
    handle_signals : bool
        Catch SIGINT/SIGTERM for a clean stop (main thread only; the previous
        handlers are restored on return).

    Returns
    -------
    Result
        ``history`` has one dict per forward evaluation with ``evaluation``,
        ``stage``, ``stage_evaluation``, ``objective``, ``constraints``,
        ``max_constraint``, ``change`` (max ``|x - x_prev|``, None at first),
        ``grey`` (mean of ``4 t (1 - t)`` over ``t = (x - lower) / (upper -
        lower)``, entries with finite bounds), ``time`` (s since start) and
        ``fe_solves``.

    Raises
    ------
    TypeError, ValueError
        Invalid arguments, before any evaluation.
    OutputPathError
        `checkpoint` or `history_path` cannot be written (an `OSError` and a
        `ValueError`), before any evaluation.
    FileNotFoundError, CheckpointError
        `resume` names no file, or a file that is not a checkpoint of this
        problem (``not a topopt checkpoint: PATH (why)``), before any
        evaluation.
    Exception
        Whatever `fun` raises, after the checkpoint (last good design and
        history) is written; the exception then carries the checkpoint's
        path as ``topopt_checkpoint`` and a note saying how to resume.

    Notes
    -----
    After an interruption or a callback stop, ``result.x`` is the design MMA
    was iterating from: the first design of the stage, then each design with
    a lower objective (while none feasible was accepted, also each with a
    smaller violation), as in NLopt's mma.c.

    Examples
    --------
    Minimize ``sum(c / x)`` subject to ``sum(x) <= 1.2``; the optimum is
    ``x ~ sqrt(c)``:

    >>> import numpy as np
    >>> c = np.array([1.0, 4.0])
    >>> res = minimize(lambda x: np.sum(c / x), np.full(2, 0.5),
    ...                [lambda x: np.sum(x) - 1.2], bounds=(0.01, 1.0),
    ...                maxeval=60, ftol_rel=1e-12, verbose=False)
    >>> np.round(res.x, 4), round(res.fun, 4)
    (array([0.4, 0.8]), 7.5)

    The same with one forward pass returning all responses:

    >>> res = minimize(lambda x: np.stack([np.sum(c / x), np.sum(x) - 1.2]),
    ...                np.full(2, 0.5), bounds=(0.01, 1.0), maxeval=60,
    ...                ftol_rel=1e-12, verbose=False)
    >>> np.round(res.x, 4), res.evaluations == len(res.history)
    (array([0.4, 0.8]), True)
    """
    # ---- validate everything before the first evaluation
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    if constraints is not None:
        if callable(constraints) or isinstance(constraints, (str, bytes)) or \
                not isinstance(constraints, Sequence):
            raise TypeError("constraints must be a list of callables g(x) <= 0, or None")
        for i, g in enumerate(constraints):
            if not callable(g):
                raise TypeError(f"constraints[{i}] must be callable, got {type(g).__name__}")
    if n_constraints is not None:
        n_constraints = _check_int("n_constraints", n_constraints, 0)
        if constraints is not None and n_constraints != len(constraints):
            raise ValueError(f"n_constraints={n_constraints} but {len(constraints)} "
                             "constraint functions were given")
    x0 = _check_x0(x0)
    n = x0.size
    lb, ub = _check_bounds(bounds, n)
    outside = (x0 < lb) | (x0 > ub)
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise ValueError(f"x0 must lie within bounds; x0[{i}] = {x0[i]} is outside "
                         f"[{lb[i]}, {ub[i]}]")
    stage_list, cap = _check_stages(stages, maxeval)
    opts = {
        "ftol_rel": _check_tol("ftol_rel", ftol_rel),
        "xtol_abs": _check_tol("xtol_abs", xtol_abs),
        "constraint_tol": _check_tol("constraint_tol", constraint_tol),
        "checkpoint_every": _check_int("checkpoint_every", checkpoint_every, 1),
        "mma_params": _check_mma_params(mma_params),
        "initial_step": _check_initial_step(initial_step, n),
        "history_path": history_path, "checkpoint": checkpoint,
        "verbose": bool(verbose), "callback": callback, "count_solves": count_solves,
    }
    for name in ("callback", "count_solves"):
        if opts[name] is not None and not callable(opts[name]):
            raise TypeError(f"{name} must be callable or None")
    for name in ("checkpoint", "history_path"):       # a real write test, before any work
        if opts[name] is not None:
            opts[name] = check_writable_file(opts[name], name)

    if constraints is not None:
        gs = list(constraints)

        def combined(x, **params):
            return (fun(x, **params), *[g(x, **params) for g in gs])

        responses = _Responses(combined, len(gs) + 1)
    else:
        responses = _Responses(fun, None if n_constraints is None else n_constraints + 1)

    ck = None
    if resume is not None:
        ck = load_checkpoint(resume)
        if ck["n"] != n:
            raise CheckpointError(resume, f"written for {ck['n']} design variables; this "
                                  f"problem has {n}")
        if ck["n_constraints"] is not None and responses.n_out is not None and \
                ck["n_constraints"] != responses.n_out - 1:
            raise CheckpointError(resume, f"written for {ck['n_constraints']} constraints; "
                                  f"this problem has {responses.n_out - 1}")
        if ck["stage"] >= len(stage_list):
            raise ValueError(f"resume: the checkpoint is at stage {ck['stage']} but only "
                             f"{len(stage_list)} stage(s) were given")

    run = _Run(responses, n, lb, ub, opts)

    # ---- where to start
    first, x, seed, done_in_stage = 0, x0, None, 0
    if ck is not None:
        run.history = list(ck["history"])
        run.stage_results = list(ck["stages"])
        run.seconds0 = float(ck["seconds"])
        run.fe0 = int(ck["fe_solves"] or 0)
        run.nlopt_evals = int(ck["nlopt_evaluations"])
        run.x_prev = ck["x_last"]
        if ck["n_constraints"] is not None:
            run.k = ck["n_constraints"]
            responses.n_out = run.k + 1
        first, x, seed = ck["stage"], ck["x"], ck["seed"]
        done_in_stage = ck["stage_evaluations"]
        run.stage, run.stage_evals, run.x_stage = first, done_in_stage, x
        run.stage_done, run.stage_status = ck["stage_done"], ck["stage_status"]
        budget_left = stage_list[first].maxeval - done_in_stage
        if ck["stage_done"] and (ck["stage_status"] in _CONVERGED or budget_left <= 0):
            first, seed, done_in_stage = first + 1, None, 0
        else:
            run.stage_results = [r for r in run.stage_results if r["stage"] != first]

    status = ck["stage_status"] if ck is not None and first >= len(stage_list) else "success"
    x_final = x
    with _Signals(run, handle_signals):
        try:
            for i in range(first, len(stage_list)):
                stage = stage_list[i]
                run.start_stage(i, stage, x, seed if i == first else None,
                                done_in_stage if i == first else 0)
                budget = stage.maxeval - run.stage_evals
                if cap is not None:
                    budget = min(budget, cap - len(run.history))
                if opts["verbose"]:
                    print(f"stage {i}: params {_params_json(stage.params)}, "
                          f"{budget} evaluations", file=sys.stderr, flush=True)
                if budget <= 0:                  # nothing left (resume, total cap)
                    x_final, status = x, "maxeval_reached"
                else:
                    x_final, status = run.run_stage(stage, budget)
                values = run.values_at(x_final)
                if values is None and run.best is not None:
                    x_final, values = run.best[0], run.best[1]
                run.stage_done, run.stage_status = True, status
                run.stage_results.append({
                    "stage": i, "params": _params_json(stage.params), "status": status,
                    "evaluations": run.stage_evals,
                    "fun": None if values is None else float(values[0]),
                    "constraints": None if values is None else values[1:].tolist(),
                })
                if opts["checkpoint"] is not None:
                    run.save("running", x_final)
                x = x_final
                if status in ("interrupted", "stopped", "forced_stop", "roundoff_limited"):
                    break
                if cap is not None and len(run.history) >= cap:
                    status = "maxeval_reached"
                    break
        except BaseException as e:
            status = "interrupted" if isinstance(e, KeyboardInterrupt) else "error"
            if opts["checkpoint"] is not None:
                run.save(status)
                _note_checkpoint(e, opts["checkpoint"], len(run.history))
            if opts["history_path"] is not None:
                run.write_history(status)
            raise

    if ck is not None and first >= len(stage_list):      # nothing left to run
        last = run.stage_results[-1] if run.stage_results else {}
        fun_val, cons = last.get("fun"), last.get("constraints") or []
    else:
        last = run.stage_results[-1]
        fun_val, cons = last["fun"], last["constraints"] or []
    if opts["checkpoint"] is not None:
        run.save(status, x_final)
    if opts["history_path"] is not None:
        run.write_history(status)
    fe = run.fe_solves() if count_solves is not None else (
        ck["fe_solves"] if ck is not None else None)
    evaluations = len(run.history)
    return Result(
        x=np.array(x_final, dtype=float),
        fun=float("nan") if fun_val is None else float(fun_val),
        constraints=[float(c) for c in cons],
        status=status, history=run.history, evaluations=evaluations,
        stages=run.stage_results, seconds=run.elapsed(), fe_solves=fe,
        fe_solves_per_iteration=None if fe is None or evaluations == 0 else fe / evaluations,
        nlopt_evaluations=run.nlopt_evals,
        x_last=None if run.x_prev is None else np.array(run.x_prev),
        signal=run.signal if status == "interrupted" else None,
    )


def _note_checkpoint(exc: BaseException, path: str, evaluations: int) -> None:
    """Tell the caller of a failed run where its last good design is."""
    exc.add_note(f"topopt: the last good design and the history of {evaluations} "
                 f"evaluations are in the checkpoint {path}; resume from it with "
                 f"minimize(..., resume={path!r}) or a problem script's --resume {path}")
    try:
        exc.topopt_checkpoint = path
    except AttributeError:                  # an exception type without a __dict__
        pass
