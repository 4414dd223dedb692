"""The tape: traced values, their records and the backward walk.

A *trace* is one differentiation in progress. Every call of `pullback` or
`jvp` opens a new trace with a larger id; its inputs are wrapped in a `Box`
that belongs to it. An operation on boxes runs `dispatch.apply` (reached
through ``Box._ad_apply``), which records a `Node` on a reverse trace (the
pullback and the parent nodes) or carries the tangent in the output box on a
forward trace.

Traced values may sit anywhere in the argument trees (tuples, lists, dicts:
`tree`); a parent on the tape is the argument position and the key path
below it, and the walk (`backward`) reads the cotangent at that path from
the pullback's result. `core` imports neither the dispatch nor the
transformations (`api`) nor the rule modules.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np

from .extend import Thunk, primitive
from .registry import REGISTRY
from .registry import function_name as _name

__all__ = ["Box", "NoRuleError", "value", "is_traced", "trace_of", "backward", "getitem",
           "astype"]

# the registry's tables, read directly on the hot path of `dispatch.apply`
_rrules = REGISTRY.rrules
_frules = REGISTRY.frules
_opt_outs = REGISTRY.opt_outs
_forms = REGISTRY.forms
_nondiff = REGISTRY.nondiff


class NoRuleError(NotImplementedError):
    """An operation on a traced value has no differentiation rule."""




_trace_ids = itertools.count(1)


class Trace:
    __slots__ = ("id", "reverse")

    def __init__(self, reverse: bool):
        self.id = next(_trace_ids)
        self.reverse = reverse


class Node:
    """One recorded call: its pullback and, per traced argument, the parent."""

    __slots__ = ("pullback", "parents", "name", "nout")

    def __init__(self, pullback, parents, name, nout):
        self.pullback = pullback
        # (argpos, key path below it, parent node, parent output index, shape, is_real)
        self.parents = parents
        self.name = name
        self.nout = nout


# --------------------------------------------------------------------- boxes

class Box:
    """A value traced by one differentiation (reverse or forward).

    Boxes behave like numpy arrays for arithmetic, indexing and numpy
    functions; numpy routes calls to `dispatch.apply` through ``__array_ufunc__`` and
    ``__array_function__``. They are immutable: item assignment and ``out=``
    raise, and so does conversion to a plain array, which would silently
    lose the derivative.
    """

    __slots__ = ("value", "_trace", "_node", "_idx", "_tangent")
    __array_priority__ = 1000.0

    def __init__(self, value, trace, node=None, idx=None, tangent=None):
        self.value = value
        self._trace = trace
        self._node = node
        self._idx = idx
        self._tangent = tangent

    # --- array attributes
    @property
    def shape(self):
        return _shape(self.value)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def dtype(self):
        return _dtype(self.value)

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of unsized traced value")
        return shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        kind = "reverse" if self._trace.reverse else "forward"
        return f"Box({self.value!r}, {kind} trace {self._trace.id})"

    # --- numpy protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            raise TypeError(
                f"{_name(ufunc)}(..., out=...) on a traced value: traced arrays "
                "are immutable; use the returned array instead of out=")
        if method == "at":
            raise TypeError(
                f"numpy.{ufunc.__name__}.at modifies an array in place, which a traced "
                f"value cannot be; use the functional form ad.scatter_add(x, idx, v) "
                f"(for np.add.at) and build a new array")
        if method != "__call__":
            result = REGISTRY.ufunc_methods(ufunc, method, inputs, kwargs)
            if result is not NotImplemented:
                return result
            raise NoRuleError(
                f"no differentiation rule for numpy.{ufunc.__name__}.{method} with these "
                "arguments (add/multiply/maximum/minimum.reduce, add/multiply.accumulate "
                "and the .outer of a two-argument ufunc have one); use np.sum/np.cumsum-"
                "style functions, or register a rule for a primitive with @ad.primitive "
                "and @ad.rrule")
        if kwargs:     # callforms.ufunc_call, registered when the rules are imported
            return REGISTRY.ufunc_keywords(ufunc, inputs, kwargs)
        return self._ad_apply(ufunc, inputs)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.copyto:
            raise TypeError(
                "numpy.copyto writes a traced value into a plain array, which drops its "
                "derivative (np.full(shape, x, dtype=...) does this); build the array "
                "instead: np.full_like(template, x), np.broadcast_to(x, shape) + 0.0 or "
                "np.where(mask, x, other)")
        return self._ad_apply(func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        if dtype is not None and _no_derivative_dtype(dtype, "numpy.asarray"):
            # np.asarray(x, dtype=int): a cast without derivative, numpy's own value
            return np.asarray(value(self)).astype(dtype)
        caller = sys._getframe(1)
        if caller.f_code.co_name == "_matmul_dispatch":
            # scipy.sparse returns NotImplemented for a 0-d object array, so
            # that `K @ x` comes back to Box.__rmatmul__ and is traced.
            return np.array(None, dtype=object)
        if caller.f_code.co_name == "full" and caller.f_globals["__name__"].startswith("numpy"):
            raise TypeError(
                "numpy.full(shape, fill_value) with a traced fill_value: numpy converts it "
                "to a plain array, which drops its derivative; use np.full_like(template, "
                "x), np.broadcast_to(x, shape) + 0.0 or x * np.ones(shape)")
        if caller.f_globals.get("__name__", "").startswith("numpy.lib._index_tricks"):
            raise TypeError(
                "numpy.r_[...] / numpy.c_[...] with a traced value: numpy converts each "
                "item to a plain array, which drops its derivative; use np.concatenate"
                "([...]) for r_ and np.column_stack([...]) for c_ (items as arrays)")
        user, numpy_fun = _caller_names()
        via = f" by numpy.{numpy_fun}" if numpy_fun else ""
        raise TypeError(
            f"a traced value was converted to a plain numpy array{via} in {user}: the "
            "derivative would be lost. A list or tuple holding traced values, passed where "
            "no argument is traced itself, does this: build it with np.stack([...]) first. "
            "So do a call to a library without a differentiation rule (scipy, C code) and "
            "an assignment into a plain array: wrap the function with ad.primitive and "
            "register @ad.rrule (and @ad.frule) for it, or pass ad.value(x) if it is not to "
            "be differentiated.")

    def __float__(self):
        raise TypeError(
            "float() of a traced value would drop its derivative (so would math.exp(x) "
            "and the other math-module functions, which call float()); use the numpy "
            "function (np.exp(x)...) to keep it, or ad.value(x) if that is intended")

    __complex__ = __float__

    def __int__(self):
        return int(value(self))     # piecewise constant: no derivative to lose

    def __round__(self, ndigits=None):
        return round(value(self), ndigits)

    def __format__(self, spec):
        return format(value(self), spec)

    def __bool__(self):
        return bool(value(self))

    def __setitem__(self, key, val):
        raise TypeError(
            "in-place modification of a traced array (x[...] = v) is not "
            "differentiable; build a new array (np.where, np.concatenate, "
            "ad.scatter_add) instead")

    # --- comparisons: not differentiable, act on values
    def __lt__(self, other):
        return value(self) < value(other)

    def __le__(self, other):
        return value(self) <= value(other)

    def __gt__(self, other):
        return value(self) > value(other)

    def __ge__(self, other):
        return value(self) >= value(other)

    def __eq__(self, other):
        return value(self) == value(other)

    def __ne__(self, other):
        return value(self) != value(other)

    __hash__ = object.__hash__

    # --- arithmetic
    def __add__(self, other):
        return self._ad_apply(np.add, (self, other))

    def __radd__(self, other):
        return self._ad_apply(np.add, (other, self))

    def __sub__(self, other):
        return self._ad_apply(np.subtract, (self, other))

    def __rsub__(self, other):
        return self._ad_apply(np.subtract, (other, self))

    def __mul__(self, other):
        return self._ad_apply(np.multiply, (self, other))

    def __rmul__(self, other):
        return self._ad_apply(np.multiply, (other, self))

    def __truediv__(self, other):
        return self._ad_apply(np.true_divide, (self, other))

    def __rtruediv__(self, other):
        return self._ad_apply(np.true_divide, (other, self))

    def __pow__(self, other):
        return self._ad_apply(np.power, (self, other))

    def __rpow__(self, other):
        return self._ad_apply(np.power, (other, self))

    def __floordiv__(self, other):
        return self._ad_apply(np.floor_divide, (self, other))

    def __rfloordiv__(self, other):
        return self._ad_apply(np.floor_divide, (other, self))

    def __mod__(self, other):
        return self._ad_apply(np.remainder, (self, other))

    def __rmod__(self, other):
        return self._ad_apply(np.remainder, (other, self))

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self

    def __matmul__(self, other):
        return self._ad_apply(np.matmul, (self, other))

    def __rmatmul__(self, other):
        return self._ad_apply(np.matmul, (other, self))

    def __neg__(self):
        return self._ad_apply(np.negative, (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return self._ad_apply(np.absolute, (self,))

    def __getitem__(self, idx):
        return self._ad_apply(getitem, (self, idx))

    # the ndarray methods and attributes: `methods`


def _caller_names() -> tuple:
    """``("module.function()", numpy function or None)``: the user's frame that
    converted a traced value and the numpy function it called, if any."""
    frame, numpy_fun = sys._getframe(2), None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not (module.startswith("numpy") or module.startswith("topopt.ad")):
            return f"{module}.{frame.f_code.co_name}()", numpy_fun
        if module.startswith("numpy") and not frame.f_code.co_name.startswith("_"):
            numpy_fun = ("linalg." if ".linalg" in module else "") + frame.f_code.co_name
        frame = frame.f_back
    return "<unknown>", numpy_fun


def _shape(x) -> tuple:
    shape = getattr(x, "shape", None)
    return () if shape is None else tuple(shape)


def _dtype(x) -> np.dtype:
    dtype = getattr(x, "dtype", None)
    return np.dtype(dtype) if dtype is not None else np.result_type(x)


def value(x):
    """The plain value of `x`, with every trace removed (a stop-gradient)."""
    while isinstance(x, Box):
        x = x.value
    return x


def _no_derivative_dtype(dtype, where: str) -> bool:
    """True if a result of `dtype` has no derivative (integer, boolean, string...).

    Float and complex keep the derivative; ``object`` is refused (`where`
    names the call in the message): numpy would compute with Python objects
    that are not traced.
    """
    dt = np.dtype(dtype)
    if dt.kind == "O":
        raise TypeError(f"{where}: dtype=object of a traced value is not differentiable "
                        "(numpy computes with untraced Python objects); use a float or "
                        "complex dtype")
    return dt.kind not in "fc"


def is_traced(x) -> bool:
    """True if `x` is a traced value of any differentiation in progress."""
    return isinstance(x, Box)


# ------------------------------------------------------------ backward walk

def _toposort(roots):
    order, seen, stack = [], set(), [(n, False) for n in roots]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((p[2], False) for p in node.parents if id(p[2]) not in seen)
    return order


def _accumulate(cts, node, idx, ct):
    if idx is None:
        old = cts.get(node)
        cts[node] = ct if old is None else old + ct
    else:
        slots = cts.setdefault(node, [None] * node.nout)
        slots[idx] = ct if slots[idx] is None else slots[idx] + ct


def _cotangent_at(arg_cts, pos, sub, forced, fun):
    """The cotangent ``arg_cts[pos][sub[0]]...`` of one traced argument leaf.

    A `Thunk` met on the way is called once per node (cached in `forced`
    under its key path); ``None`` anywhere is a zero cotangent.
    """
    if pos >= len(arg_cts):
        raise ValueError(f"the pullback of {_name(fun)} returned {len(arg_cts)} "
                         f"cotangents but argument {pos} is traced")
    c = arg_cts[pos]
    if isinstance(c, Thunk):
        c = forced[pos] = forced[pos] if pos in forced else c()
    return _descend(c, (pos,), sub, forced) if sub else c


def _descend(c, path, sub, forced):
    for key in sub:
        if c is None:
            return None
        c, path = c[key], path + (key,)
        if isinstance(c, Thunk):
            c = forced[path] = forced[path] if path in forced else c()
    return c


def backward(outputs, cotangents) -> dict:
    """Propagate `cotangents` from the boxes `outputs` to every leaf node.

    The one backward walk: nodes in reverse topological order, each pullback
    called once with the summed cotangent of its outputs. Returns
    ``{leaf node: cotangent}``.
    """
    cts: dict = {}
    for out, ct in zip(outputs, cotangents):
        if ct is not None:
            _accumulate(cts, out._node, out._idx, ct)
    leaves = {}
    for node in reversed(_toposort([o._node for o in outputs])):
        ct = cts.pop(node, None)
        if ct is None:
            continue
        if node.pullback is None:
            leaves[node] = ct
            continue
        if node.nout is not None:
            ct = tuple(ct)
        arg_cts = node.pullback(ct)
        forced = {}
        for pos, sub, parent, idx, shape, real in node.parents:
            if pos >= len(arg_cts):      # _cotangent_at, its common case inlined
                _cotangent_at(arg_cts, pos, sub, forced, node.name)
            c = arg_cts[pos]
            if isinstance(c, Thunk):
                c = forced[pos] = forced[pos] if pos in forced else c()
            if sub:
                c = _descend(c, (pos,), sub, forced)
            if c is None:
                continue
            if real and np.iscomplexobj(value(c)):
                c = np.real(c)
            if _shape(c) != shape:
                raise ValueError(
                    f"the pullback of {_name(node.name)} returned a cotangent of "
                    f"shape {_shape(c)} for argument {pos}{list(sub) if sub else ''} "
                    f"of shape {shape}")
            _accumulate(cts, parent, idx, c)
    return leaves


# ------------------------------------------------ structural primitives

@primitive
def getitem(x, idx):
    """``x[idx]`` as a traced operation."""
    return x[idx]


@primitive
def astype(x, dtype):
    """``x.astype(dtype)`` as a traced operation."""
    return np.asarray(x).astype(dtype)


def trace_of(x):
    """The trace (``.id``, ``.reverse``) that traced value `x` belongs to (None if untraced)."""
    return x._trace if isinstance(x, Box) else None
