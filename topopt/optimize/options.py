"""The options of `topopt.optimize.minimize`, checked in one place (`Options.check`).

Every option is validated before the first evaluation: a wrong type raises
``TypeError``, a value outside its range ``ValueError``, both naming the
argument; the output paths are really written to (`check_writable_file`).
The measurements behind the defaults are in ``docs/notes/mma.md``.

NLopt MMA parameters (``opt.set_param``; NLopt 2.11 reads exactly these for
``LD_MMA``, any other name is silently ignored by NLopt and rejected here):

==================  =========  ==============================================
name                NLopt      meaning
                    default
==================  =========  ==============================================
``inner_maxeval``   0          inner (conservativeness) iterations per outer
                               iteration, 0 = unlimited. Kept at 0.
``dual_ftol_rel``   1e-14      relative tolerance of the dual subproblem
``dual_ftol_abs``   0          absolute tolerance of the dual subproblem
``dual_xtol_rel``   0          relative multiplier tolerance of the dual
``dual_xtol_abs``   0          absolute multiplier tolerance of the dual
``dual_maxeval``    100000     evaluations of the dual subproblem
``dual_algorithm``  LD_MMA     NLopt algorithm code for the dual. **Set to
                               LD_SLSQP here**.
``rho_init``        1          initial MMA penalty ``rho`` (> 0), or
                               ``"auto"`` (**the default here**):
                               Svanberg's ``0.1 mean_j |df/dx_j| (ub_j -
                               lb_j)`` at each stage's start, >= 1e-5
``inner_gradients`` 1          0: inner iterations ask for values only, and
                               the gradient is requested again at a design
                               MMA accepts
``always_improve``  1          1: accept any improving design even before
                               the inner iterations end; 0: Svanberg's
                               rule, only a conservative one
``sigma_min``       0          lower bound of the MMA move limits (>= 0)
``verbosity``       0          > 0: MMA prints its iterations (C stdout)
==================  =========  ==============================================
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import nlopt
import numpy as np

from .._validate import check_bool, check_callable, check_choice, check_int, check_range
from .._files import check_writable_file

__all__ = ["Stage", "Options", "MMA_PARAMS", "DEFAULT_MMA_PARAMS", "OPTIMIZERS"]

#: NLopt 2.11 ``LD_MMA`` parameter names and NLopt's defaults.
MMA_PARAMS: dict[str, float] = {
    "inner_maxeval": 0, "dual_ftol_rel": 1e-14, "dual_ftol_abs": 0.0,
    "dual_xtol_rel": 0.0, "dual_xtol_abs": 0.0, "dual_maxeval": 100000,
    "dual_algorithm": nlopt.LD_MMA, "rho_init": 1.0, "inner_gradients": 1,
    "always_improve": 1, "sigma_min": 0.0, "verbosity": 0,
}
#: What `minimize` sets unless ``mma_params`` overrides it (``docs/notes/mma.md``).
DEFAULT_MMA_PARAMS = {"dual_algorithm": nlopt.LD_SLSQP, "rho_init": "auto"}
#: `minimize`'s ``optimizer``: NLopt's ``LD_MMA`` (the default) or ours (`topopt.optimize.mma`).
OPTIMIZERS = ("nlopt", "mma")


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


@dataclass(frozen=True, eq=False)
class Options:
    """The checked options of one `minimize` run, built by `check`.

    `check` takes `minimize`'s keywords below; the fields are their checked
    forms: ``lb``/``ub`` arrays of shape ``(n,)``, ``stages`` a tuple of
    `Stage` (one of ``maxeval`` evaluations without continuation) and ``cap``
    the total budget over the stages (None: no cap), ``mma_params`` NLopt's
    parameters over `DEFAULT_MMA_PARAMS`, ``initial_step`` None or an array
    of shape ``(n,)``, the paths str.

    Parameters
    ----------
    x0 : array_like
        Initial design, 1-D, finite, within `bounds`.
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
        `DEFAULT_MMA_PARAMS` (the SLSQP dual, ``rho_init="auto"``). Our MMA
        (``optimizer="mma"``) reads the same names but ``dual_algorithm`` (its
        dual is Newton's; ``dual_maxeval`` counts its passes).
    optimizer : {"nlopt", "mma"}
        ``"nlopt"`` (default): NLopt's ``LD_MMA``; ``"mma"``: ours,
        `topopt.optimize.mma.MMA`, the same algorithm written for designs
        split across processes (its iterates follow NLopt's).
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
    verbose : bool
        Progress on stderr (`topopt.optimize.progress`): a header, one line per
        stage and per evaluation (evaluation, stage, objective, max
        constraint, max change, the variables' grey level, time, estimated
        time left of the budget), a summary line at the end.
    objective_scale : float
        Finite, > 0: the progress lines show ``f * objective_scale``, the
        objective in the user's unit when `fun` minimizes a scaled one
        (e.g. ``c0`` for ``f = c / c0``); the header says so. Default 1.
    objective_name : str
        Non-empty name of the objective in the progress lines. Default ``"obj"``.
    callback : callable, optional
        ``callback(record, x)`` after each evaluation; returning True stops
        the run (``status="stopped"``).
    count_solves : callable, optional
        ``count_solves()``: the FE solves so far (a process-wide counter);
        the run reports its own, those before a resume included.
    counters : callable, optional
        ``counters()``: further counters of the caller, a dict of names to
        numbers >= 0 so far (CG iterations, eigensolves, ...). The run adds
        up their growth, carries the totals in its checkpoint and adds them
        on resume (`Result.counters`); a name ending in ``_max`` is a
        largest value (the larger is kept).

    Raises
    ------
    TypeError, ValueError
        From `check`, naming the argument and its accepted range.
    OutputPathError
        From `check`: `checkpoint` or `history_path` cannot be written (an
        `OSError` and a `ValueError`).

    Examples
    --------
    >>> import numpy as np
    >>> x0, opts = Options.check(np.full(3, 0.5), bounds=(0.0, None), maxeval=20)
    >>> opts.ub, [s.maxeval for s in opts.stages], opts.cap
    (array([inf, inf, inf]), [20], None)
    >>> Options.check(np.full(3, 0.5), ftol_rel=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: ftol_rel must be >= 0, got -1
    """

    lb: np.ndarray
    ub: np.ndarray
    stages: tuple
    cap: int | None
    ftol_rel: float
    xtol_abs: float
    constraint_tol: float
    mma_params: dict
    initial_step: np.ndarray | None
    checkpoint: str | None
    checkpoint_every: int
    history_path: str | None
    verbose: bool
    callback: Callable | None
    count_solves: Callable | None
    handle_signals: bool
    objective_scale: float = 1.0
    objective_name: str = "obj"
    counters: Callable | None = None
    optimizer: str = "nlopt"

    @classmethod
    def check(cls, x0, *, bounds=(0.0, 1.0), maxeval: int | None = None,
              ftol_rel: float = 1e-6, xtol_abs: float = 0.0, constraint_tol: float = 1e-8,
              stages: Sequence[Stage] | None = None, mma_params: Mapping | None = None,
              initial_step=None, history_path: str | os.PathLike | None = None,
              checkpoint: str | os.PathLike | None = None, checkpoint_every: int = 10,
              verbose: bool = True, callback: Callable | None = None,
              count_solves: Callable | None = None,
              handle_signals: bool = True, objective_scale: float = 1.0,
              objective_name: str = "obj",
              counters: Callable | None = None,
              optimizer: str = "nlopt") -> tuple[np.ndarray, Options]:
        """The design `x0` as floats and the options, checked (see `Options`).

        The output paths are written to last, after every other check.
        """
        x0 = _check_x0(x0)
        lb, ub = _check_bounds(bounds, x0.size)
        outside = (x0 < lb) | (x0 > ub)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise ValueError(f"x0 must lie within bounds; x0[{i}] = {x0[i]} is outside "
                             f"[{lb[i]}, {ub[i]}]")
        stage_list, cap = _check_stages(stages, maxeval)
        if not isinstance(objective_name, str) or not objective_name.strip():
            raise TypeError(f"objective_name must be a non-empty str, got {objective_name!r}")
        opts = cls(
            lb=lb, ub=ub, stages=tuple(stage_list), cap=cap,
            ftol_rel=check_range("ftol_rel", ftol_rel, 0.0),
            xtol_abs=check_range("xtol_abs", xtol_abs, 0.0),
            constraint_tol=check_range("constraint_tol", constraint_tol, 0.0),
            mma_params=_check_mma_params(mma_params),
            initial_step=_check_initial_step(initial_step, x0.size),
            checkpoint=checkpoint, history_path=history_path,
            checkpoint_every=check_int("checkpoint_every", checkpoint_every, 1),
            verbose=check_bool("verbose", verbose),
            handle_signals=check_bool("handle_signals", handle_signals),
            objective_scale=check_range("objective_scale", objective_scale, 0.0,
                                        lo_open=True),
            objective_name=objective_name,
            callback=check_callable("callback", callback, allow_none=True),
            count_solves=check_callable("count_solves", count_solves, allow_none=True),
            counters=check_callable("counters", counters, allow_none=True),
            optimizer=check_choice("optimizer", optimizer, OPTIMIZERS))
        paths = {name: check_writable_file(getattr(opts, name), name)   # a real write test
                 for name in ("checkpoint", "history_path") if getattr(opts, name) is not None}
        return x0, dataclasses.replace(opts, **paths)

    def tolerances(self, stage: Stage) -> tuple[float, float]:
        """``(ftol_rel, xtol_abs)`` of `stage`: its own, else the run's."""
        return (self.ftol_rel if stage.ftol_rel is None else stage.ftol_rel,
                self.xtol_abs if stage.xtol_abs is None else stage.xtol_abs)


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


def _per_variable(value, n: int, what: str, allow_bool: bool = False,
                  view: bool = False) -> np.ndarray:
    """A real scalar (broadcast) or array of shape ``(n,)``, as floats.

    With `view`, a scalar becomes a read-only broadcast view (no memory per variable)."""
    v = np.asarray(value)
    if v.dtype == object or np.iscomplexobj(v) or not (
            np.issubdtype(v.dtype, np.number) or (allow_bool and v.dtype == bool)):
        raise TypeError(f"{what} must be real, got dtype {v.dtype}")
    if v.ndim == 0:
        return np.broadcast_to(np.float64(v), (n,)) if view else np.full(n, float(v))
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
    for name, b, none in zip(("lower", "upper"), bounds, (-np.inf, np.inf)):
        b = _per_variable(none if b is None else b, n, f"bounds: the {name} bound",
                          allow_bool=True, view=True)
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
        m = 200 if maxeval is None else check_int("maxeval", maxeval, 1)
        return [Stage(maxeval=m)], None
    if isinstance(stages, Stage) or not isinstance(stages, Sequence) or not stages:
        raise TypeError("stages must be a non-empty list of Stage objects, or None")
    for i, s in enumerate(stages):
        if not isinstance(s, Stage):
            raise TypeError(f"stages[{i}] must be a Stage, got {type(s).__name__}")
        check_int(f"stages[{i}].maxeval", s.maxeval, 1)
        if not isinstance(s.params, Mapping) or not all(isinstance(k, str) for k in s.params):
            raise TypeError(f"stages[{i}].params must be a mapping with str keys")
        for name in ("ftol_rel", "xtol_abs"):
            if getattr(s, name) is not None:
                check_range(f"stages[{i}].{name}", getattr(s, name), 0.0)
    cap = None if maxeval is None else check_int("maxeval", maxeval, 1)
    return list(stages), cap


def _check_mma_params(mma_params) -> dict:
    params = dict(DEFAULT_MMA_PARAMS)
    if mma_params is None:
        return params
    if not isinstance(mma_params, Mapping):
        raise TypeError(f"mma_params must be a dict {{name: number}}, got "
                        f"{type(mma_params).__name__}")
    for k, v in mma_params.items():
        if k not in MMA_PARAMS:
            raise ValueError(f"mma_params: unknown NLopt LD_MMA parameter {k!r}; "
                             f"accepted: {', '.join(MMA_PARAMS)}")
        params[k] = v if (k, v) == ("rho_init", "auto") else check_range(f"mma_params[{k!r}]", v)
    if params["rho_init"] != "auto" and params["rho_init"] <= 0:
        raise ValueError("mma_params['rho_init'] must be > 0 or 'auto'")
    for k in ("inner_gradients", "always_improve"):
        if params.get(k, 1) not in (0, 1):
            raise ValueError(f"mma_params[{k!r}] must be 0 or 1, got {params[k]!r}")
    if params.get("sigma_min", 0.0) < 0:
        raise ValueError("mma_params['sigma_min'] must be >= 0")
    return params
