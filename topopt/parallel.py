"""Embarrassingly parallel work on any `concurrent.futures.Executor`: sweeps, multi-starts.

A parameter sweep, a multi-start optimization or a Monte Carlo estimate of
pf with ``1e5`` finite-element solves is a list of independent evaluations
of one model. The helpers here send that list to an executor -- a
``concurrent.futures.ProcessPoolExecutor``, a Dask cluster through
``distributed.Client(cluster).get_executor()`` (a ``LocalCluster``, or
dask-jobqueue's ``SLURMCluster`` / ``PBSCluster`` on a cluster) -- or run it
in this process (``executor=None``), with the same results to the last bit.

Three rules make that work:

* **The model travels as a recipe.** A finite-element model holding a
  factorization does not pickle (and would be slow to send). A `Builder`
  names a module-level function and its (picklable) arguments; each worker
  process calls it once and keeps the model in a small module-level cache
  keyed by the builder (`Builder.build`).
* **Chunks, not single items.** The items go in tasks of ``chunksize``
  consecutive items (one task per item costs more in pickling and
  scheduling than it gains: a few ms of FE solve against ~0.1-1 ms of
  per-task overhead). The split depends on the number of items and
  ``chunksize`` only, never on the number of workers.
* **Fixed order, caller-side randomness.** Results come back in the order of
  the items whatever the worker that computed them; random numbers are drawn
  by the caller (see `topopt.reliability.sampling_estimate`) or per item from
  seeds derived with `spawn_seeds` -- so the same seed gives the same result
  on 1, 2 or 200 workers.

Examples
--------
A model is what the builder returns; `sweep` calls it on every item:

>>> from operator import mul
>>> import functools
>>> from topopt import parallel
>>> times3 = parallel.Builder(functools.partial, mul, 3)        # model(p) = 3 * p
>>> parallel.sweep(times3, [1, 2, 5], chunksize=2)
[3, 6, 15]
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import math
import pickle
from collections import OrderedDict
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ._keywords import check_keywords_of as _check_keywords_of
from ._validate import check_callable, check_int, \
    check_seed, check_sequence

__all__ = ["Builder", "sweep", "multistart", "MultistartResult", "spawn_seeds", "DEFAULT_TASKS"]

#: Tasks a list is split into when ``chunksize`` is not given (independent of
#: the number of workers: enough for load balance on a few dozen workers).
DEFAULT_TASKS = 64
#: Models kept per process (least recently used dropped first).
CACHE_SIZE = 8
_BUILT: "OrderedDict[str, Any]" = OrderedDict()


def _pickled(name: str, obj) -> bytes:
    """``pickle.dumps(obj)``, or `TypeError` naming `name` (a lambda, a local function...)."""
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError) as err:
        raise TypeError(f"{name} must pickle to reach a worker process (a module-level "
                        f"function and plain arguments; not a lambda or a local "
                        f"function): {err}") from None


def _key(payload: bytes) -> str:
    return hashlib.sha1(payload).hexdigest()


def _cached(key: str, make: Callable[[], Any]):
    """The object cached under `key` in this process, made by `make()` the first time."""
    if key in _BUILT:
        _BUILT.move_to_end(key)
        return _BUILT[key]
    obj = make()
    _BUILT[key] = obj
    while len(_BUILT) > CACHE_SIZE:
        _BUILT.popitem(last=False)
    return obj


class Builder:
    """A picklable recipe for a model: ``fn(*args, **kwargs)``, built once per process.

    Parameters
    ----------
    fn : callable
        A module-level function (or class) that builds the model; it is
        pickled by reference, so a worker process imports it.
    *args, **kwargs
        Its arguments; they must pickle (numbers, strings, arrays...).

    Raises
    ------
    TypeError
        `fn` is not callable, or `fn` or an argument does not pickle (a
        lambda, a local function, an open file...).

    Notes
    -----
    `build` calls ``fn(*args, **kwargs)`` the first time in a process and
    returns the cached model after that (at most `CACHE_SIZE` models per
    process). Two builders with the same function and arguments share the
    model. The model must not be changed by its use: a worker evaluates its
    tasks one after the other on the same object.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.parallel import Builder
    >>> b = Builder(np.linspace, 0.0, 1.0, num=3)
    >>> b.build()
    array([0. , 0.5, 1. ])
    >>> b.build() is b.build()                       # built once, then cached
    True
    >>> Builder(lambda: 1)
    Traceback (most recent call last):
    ...
    TypeError: builder must pickle to reach a worker process (a module-level function ...
    """

    def __init__(self, fn: Callable, *args, **kwargs):
        self.fn = check_callable("builder", fn)
        self.args, self.kwargs = args, dict(kwargs)
        self.key = _key(_pickled("builder", (fn, args, sorted(self.kwargs.items()))))

    def build(self):
        """The model ``fn(*args, **kwargs)``, cached in this process."""
        return _cached(self.key, lambda: self.fn(*self.args, **self.kwargs))

    get = build

    def __eq__(self, other):
        return isinstance(other, Builder) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        name = getattr(self.fn, "__name__", type(self.fn).__name__)
        parts = [name] + [_short(a) for a in self.args]
        parts += [f"{k}={_short(v)}" for k, v in self.kwargs.items()]
        return f"Builder({', '.join(parts)})"


def _short(v) -> str:
    if isinstance(v, np.ndarray):
        return f"<array {v.shape}>"
    text = repr(v) if not callable(v) else getattr(v, "__name__", repr(v))
    return text if len(text) <= 40 else text[:37] + "..."


class _Shipped:
    """A picklable object sent with each task and cached per process by its pickle's hash.

    What `_run_chunks` makes of a model that is not a `Builder` (an analytic
    limit state, a module-level function). The caller checks that it pickles
    before any work; the executor pickles it with the tasks (Dask's
    cloudpickle sends a function of ``__main__`` by value), and a worker
    keeps the first copy it gets.
    """

    def __init__(self, obj, name: str = "model"):
        self.obj = obj
        self.key = _key(_pickled(name, obj))

    def get(self):
        return _cached(self.key, lambda: self.obj)


def _ship(model, name: str = "model"):
    """`model` as a `Builder` (unchanged) or a `_Shipped` pickle."""
    return model if isinstance(model, (Builder, _Shipped)) else _Shipped(model, name)


def _check_executor(executor) -> cf.Executor | None:
    """``None`` or a `concurrent.futures.Executor` (a Dask ``Client.get_executor()`` is one).

    Examples
    --------
    >>> from topopt.parallel import _check_executor
    >>> _check_executor(None) is None
    True
    >>> _check_executor(4)
    Traceback (most recent call last):
    ...
    TypeError: executor must be None (serial) or a concurrent.futures.Executor ..., got int
    """
    if executor is None or isinstance(executor, cf.Executor):
        return executor
    hint = " (call its get_executor())" if hasattr(executor, "get_executor") else ""
    raise TypeError("executor must be None (serial) or a concurrent.futures.Executor "
                    "(ProcessPoolExecutor, distributed.Client(...).get_executor())"
                    f"{hint}, got {type(executor).__name__}")


def _chunk_bounds(n: int, chunksize: int | None,
                  name: str = "chunksize") -> list[tuple[int, int]]:
    """``[(start, stop), ...]``: `n` items in tasks of `chunksize` consecutive items.

    ``chunksize=None`` makes ``ceil(n / DEFAULT_TASKS)`` (at least 1): the
    split depends on `n` only, never on the number of workers.

    Examples
    --------
    >>> from topopt.parallel import _chunk_bounds
    >>> _chunk_bounds(5, 2)
    [(0, 2), (2, 4), (4, 5)]
    >>> len(_chunk_bounds(1000, None)), _chunk_bounds(0, 3)
    (63, [])
    """
    n = check_int("n", n, 0, what="number of items")
    if chunksize is None:
        chunksize = max(1, math.ceil(n / DEFAULT_TASKS))
    chunksize = check_int(name, chunksize, 1, what="items per task")
    return [(i, min(i + chunksize, n)) for i in range(0, n, chunksize)]


def _task(spec, fn: Callable, payload):
    """One task on a worker: ``fn(model, payload)`` with the worker's cached model."""
    return fn(spec.get(), payload)


def _run_chunks(model, fn: Callable, payloads: Sequence, executor=None) -> list:
    """``[fn(m, p) for p in payloads]`` with ``m`` the built `model`, in order.

    Parameters
    ----------
    model : Builder or picklable object
        A `Builder` (built once per process) or a picklable object sent with
        the tasks and kept by each worker (checked here, before any task).
    fn : callable
        A module-level function ``fn(model, payload)``: one task.
    payloads : sequence
        One picklable payload per task.
    executor : concurrent.futures.Executor, optional
        ``None`` runs the tasks here, one after the other.

    Returns
    -------
    list
        The task results in the order of `payloads` (a failed task's error
        is raised after the other tasks are cancelled).

    Examples
    --------
    >>> import operator
    >>> from topopt.parallel import _run_chunks
    >>> _run_chunks(10, operator.add, [1, 2])
    [11, 12]
    """
    executor = _check_executor(executor)
    check_callable("fn", fn)
    if executor is None:
        built = model.get() if isinstance(model, (Builder, _Shipped)) else model
        return [fn(built, p) for p in payloads]
    spec = _ship(model)
    _pickled("fn", fn)
    futures = [executor.submit(_task, spec, fn, p) for p in payloads]
    try:
        return [f.result() for f in futures]
    except BaseException:
        for f in futures:
            f.cancel()
        raise


def _sweep_task(model, items):
    return [model(p) for p in items]


def sweep(builder, params: Sequence, *, executor=None, chunksize: int | None = None) -> list:
    """``[model(p) for p in params]`` with ``model = builder.build()``, on workers.

    Parameters
    ----------
    builder : Builder or callable
        The model's recipe; a plain callable (a module-level function) is
        the model itself, ``Builder``-wrapped by nothing (it must pickle).
    params : sequence
        The items, each picklable (checked before any task).
    executor : concurrent.futures.Executor, optional
        ``ProcessPoolExecutor``, ``distributed.Client(...).get_executor()``;
        ``None`` (the default) runs in this process.
    chunksize : int, optional
        Items per task, >= 1; default ``ceil(len(params) / DEFAULT_TASKS)``.
        The result does not depend on it.

    Returns
    -------
    list
        ``model(p)`` for each item, in the order of `params`.

    Raises
    ------
    TypeError
        A bad executor, a model that is not callable, an item or builder
        that does not pickle.
    ValueError
        ``chunksize < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from topopt.parallel import Builder, sweep
    >>> poly = Builder(np.poly1d, [1.0, 0.0, -2.0])             # model(p) = p^2 - 2
    >>> with ThreadPoolExecutor(2) as ex:
    ...     [float(v) for v in sweep(poly, [0.0, 1.0, 2.0, 3.0], executor=ex, chunksize=3)]
    [-2.0, -1.0, 2.0, 7.0]
    """
    executor = _check_executor(executor)
    params = check_sequence("params", params)
    bounds = _chunk_bounds(len(params), chunksize)
    model = builder if isinstance(builder, Builder) else check_callable("builder", builder)
    if executor is not None:
        model = _ship(model, "builder")
        _pickled("params", params)
    elif isinstance(builder, Builder) and not callable(builder.build()):
        raise TypeError(f"the model built by {builder!r} must be callable, got "
                        f"{type(builder.build()).__name__}")
    chunks = [params[a:b] for a, b in bounds]
    out = _run_chunks(model, _sweep_task, chunks, executor)
    return [r for chunk in out for r in chunk]


class MultistartResult(NamedTuple):
    """The best of several starts: its result, index and key, and all of them."""

    best: Any
    index: int
    value: float
    results: list
    values: list


def _default_key(result) -> float:
    if isinstance(result, (tuple, list)) and result:
        result = result[0]
    try:
        return float(result)
    except (TypeError, ValueError):
        raise TypeError(f"multistart: pass key= (a function of a result -> float); a "
                        f"{type(result).__name__} result is not a number or a "
                        f"(value, ...) tuple") from None


def multistart(builder, starts: Sequence, *, key: Callable | None = None, executor=None,
               chunksize: int | None = 1) -> MultistartResult:
    """Run ``model(start)`` from every start (on workers) and keep the smallest key.

    Parameters
    ----------
    builder : Builder or callable
        As for `sweep`; ``model(start)`` runs one local search.
    starts : sequence
        Starting points (or any picklable items), in a fixed order.
    key : callable, optional
        ``key(result) -> float``, minimized; called here, not on a worker.
        Default: the result itself if it is a number, else its first entry
        (a ``(value, x)`` pair).
    executor, chunksize
        As for `sweep` (default: one start per task, as local searches are
        long and of uneven length).

    Returns
    -------
    MultistartResult
        ``(best, index, value, results, values)``; ties and NaN keys: the
        first finite smallest key wins (the order of `starts`).

    Raises
    ------
    ValueError
        No start, or no start with a finite key.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import minimize_scalar
    >>> from topopt.parallel import multistart
    >>> def local_min(x0):                      # a module-level search in real use
    ...     f = lambda x: np.cos(3 * x) + 0.1 * (x - 1) ** 2
    ...     r = minimize_scalar(f, bracket=(x0, x0 + 0.1))
    ...     return float(r.fun), round(float(r.x), 3)
    >>> r = multistart(local_min, [-2.0, 0.5, 4.0])
    >>> r.index, r.best[1], [round(v, 3) for v in r.values]
    (1, 1.046, [-0.59, -1.0, -0.551])
    """
    starts = check_sequence("starts", starts)
    if not starts:
        raise ValueError("starts must hold at least one starting point")
    key = _default_key if key is None else check_callable("key", key)
    results = sweep(builder, starts, executor=executor, chunksize=chunksize)
    values = [float(key(r)) for r in results]
    finite = [i for i, v in enumerate(values) if np.isfinite(v)]
    if not finite:
        raise ValueError(f"no start gave a finite key (values {values})")
    index = min(finite, key=lambda i: values[i])
    return MultistartResult(results[index], index, values[index], results, values)


#: The most seeds `spawn_seeds` makes: a Python list of 1e8 ints takes some 3 GB and minutes.
_MAX_SEEDS = 10**8


def spawn_seeds(seed: int, n: int) -> list[int]:
    """`n` independent integer seeds derived from `seed` (``numpy.random.SeedSequence``).

    The ``i``-th seed depends on `seed` and ``i`` only: give item ``i`` of a
    sweep its own ``default_rng(seeds[i])`` and the result does not depend on
    the chunking or the number of workers.

    Examples
    --------
    >>> from topopt.parallel import spawn_seeds
    >>> a = spawn_seeds(7, 3)
    >>> a == spawn_seeds(7, 5)[:3], len(set(a))
    (True, 3)
    """
    seed = check_seed("seed", seed)
    if seed is None:
        raise TypeError("seed must be an integer >= 0 (None would not reproduce)")
    n = check_int("n", n, 0, _MAX_SEEDS, what="number of seeds, one per task")
    return [int(s.generate_state(1, np.uint64)[0])
            for s in np.random.SeedSequence(seed).spawn(n)]


_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one
