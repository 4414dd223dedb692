"""The evaluator of `topopt.optimize.minimize`: one forward pass per design, lazy gradients.

`_Responses` evaluates all responses of a design in one forward pass
(``ad.pullback``) and keeps the reverse pass for when NLopt asks for
gradients (`_Gradients`: ``k + 1`` ``back`` calls with unit cotangents);
`_Cache` keeps the last design with its tape, so NLopt's separate objective
and constraint calls at one ``x`` cost one forward pass, and the values of
every design of a stage.
"""

from __future__ import annotations

import hashlib
from typing import Callable, Sequence

import numpy as np

from .. import ad
from .._validate import check_callable, check_int


def _has_dict(treedef) -> bool:
    return treedef.kind is dict or any(_has_dict(c) for c in treedef.children)


def _leaves(y) -> tuple[list, object]:
    """The responses' leaves (`ad.tree_flatten`) and their structure; no dicts."""
    leaves, treedef = ad.tree_flatten(y)
    if _has_dict(treedef):
        raise TypeError("the response function returned a dict; return a 1-D array "
                        "[f, g1, ..., gk] or a tuple (f, g1, ..., gk) / (f, [g1, ...])")
    return leaves, treedef


def _unit(leaves: list, treedef, i: int):
    """Cotangent with the structure of the responses: 1 at flat index `i`, None elsewhere."""
    cotangents, start = [], 0
    for leaf in leaves:
        size = int(np.size(leaf))
        if not start <= i < start + size:
            cotangents.append(None)
        elif np.ndim(leaf) == 0:
            cotangents.append(1.0)
        else:
            e = np.zeros(np.shape(leaf))
            e.flat[i - start] = 1.0
            cotangents.append(e)
        start += size
    return ad.tree_unflatten(treedef, cotangents)


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

    @classmethod
    def of(cls, fun: Callable, constraints: Sequence[Callable] | None,
           n_constraints: int | None) -> _Responses:
        """The responses of `minimize`'s two forms, checked (see `minimize`)."""
        check_callable("fun", fun)
        if constraints is not None:
            if callable(constraints) or isinstance(constraints, (str, bytes)) or \
                    not isinstance(constraints, Sequence):
                raise TypeError("constraints must be a list of callables g(x) <= 0, or None")
            for i, g in enumerate(constraints):
                check_callable(f"constraints[{i}]", g)
        if n_constraints is not None:
            n_constraints = check_int("n_constraints", n_constraints, 0)
            if constraints is not None and n_constraints != len(constraints):
                raise ValueError(f"n_constraints={n_constraints} but {len(constraints)} "
                                 "constraint functions were given")
        if constraints is None:
            return cls(fun, None if n_constraints is None else n_constraints + 1)
        gs = list(constraints)

        def combined(x, **params):
            return (fun(x, **params), *[g(x, **params) for g in gs])
        return cls(combined, len(gs) + 1)

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, _Gradients]:
        params = self.params
        self.calls += 1
        y, back = ad.pullback(lambda z: self.fun(z, **params), x)
        leaves, treedef = _leaves(y)
        values = self._values(leaves)

        def reverse_pass() -> np.ndarray:
            grads = np.empty((values.size, x.size))
            for i in range(values.size):
                grads[i] = np.real(back(_unit(leaves, treedef, i))[0])
            if not np.all(np.isfinite(grads)):
                bad = [i for i in range(values.size) if not np.all(np.isfinite(grads[i]))]
                raise FloatingPointError(f"non-finite gradient of response(s) {bad}")
            return grads
        return values, _Gradients(reverse_pass)

    def _values(self, leaves: list) -> np.ndarray:
        """The responses as one checked float vector ``(k+1,)``."""
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
        return values


def _key(x: np.ndarray) -> bytes:
    """Digest of the bytes of `x`, read in place (``x.tobytes()`` would copy n floats)."""
    return hashlib.blake2b(memoryview(np.ascontiguousarray(x)).cast("B"),
                           digest_size=16).digest()


class _Cache:
    """The last design ``(x, values, grads)`` and the values of each design of a stage."""

    def __init__(self):
        self.last: tuple | None = None
        self.values: dict[bytes, np.ndarray] = {}

    def clear(self) -> None:
        self.last, self.values = None, {}

    def hit(self, x) -> bool:
        """Whether `x` is the last design (NLopt's next call at the same point)."""
        return self.last is not None and np.array_equal(x, self.last[0])

    def release(self) -> None:
        """Drop the last design's tape before a new forward pass (one alive at a time)."""
        if self.last is not None:
            self.last[2].release()

    def store(self, x: np.ndarray, values: np.ndarray, grads: _Gradients) -> None:
        self.last = (x, values, grads)
        self.values[_key(x)] = values

    def values_at(self, x: np.ndarray) -> np.ndarray | None:
        return self.values.get(_key(x))
