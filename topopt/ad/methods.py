"""The ndarray methods and attributes of a traced value (`core.Box`).

Every public name of ``numpy.ndarray`` means on a traced value what numpy
means, or raises an error naming what to use instead; no internal attribute
shadows one (the tape record of a box is ``_trace``, so ``x.trace()`` is
numpy's trace). `NDARRAY` classifies each name:

* ``"function"``: ``x.name(*a, **k)`` is ``np.name(x, *a, **k)`` through
  `core.apply`, so the function's call form and rule accept or reject each
  argument (``x.compress(c)`` puts `x` where numpy does);
* ``"box"``: a form of its own (``T``, ``astype``, ``reshape``, ``mT``,
  ``itemsize``...), or an array attribute of `core.Box` (``shape``, ``dtype``);
* ``"refused"``: in-place methods (``sort``, ``fill``, ``put``...), methods
  that reinterpret or export memory (``view``, ``tobytes``, ``tolist``...)
  and memory attributes (``strides``, ``flags``...) raise ``TypeError``
  (``AttributeError`` for the attributes) naming the alternative.

A test walks ``dir(np.ndarray)`` against this table.

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> ad.gradient(lambda x: x.reshape(2, 2).trace(), np.arange(4.0))
array([1., 0., 0., 1.])
"""

from __future__ import annotations

import numpy as np

from .core import Box, astype, _no_derivative_dtype, value
from .dispatch import apply

__all__ = ["NDARRAY", "FUNCTIONS", "REFUSED"]

# x.name(...) == np.name(x, ...)
FUNCTIONS = {name: getattr(np, name) for name in (
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "clip", "cumprod", "cumsum",
    "diagonal", "dot", "max", "mean", "min", "nonzero", "prod", "ravel", "repeat", "round",
    "searchsorted", "squeeze", "std", "sum", "swapaxes", "take", "trace", "var")}

_IN_PLACE = "modifies the array in place, which a traced value cannot be"
_MEMORY = "reinterprets or exports the memory of the array, which drops its derivative"
REFUSED = {
    # name: (why, what to use)
    "sort": (_IN_PLACE, "y = np.sort(x, axis)"),
    "partition": (_IN_PLACE, "y = np.sort(x, axis) (a full sort)"),
    "fill": (_IN_PLACE, "np.full_like(x, value)"),
    "put": (_IN_PLACE, "ad.scatter_add(x, idx, v - x[idx]) or np.where"),
    "resize": (_IN_PLACE, "np.resize-free code: np.reshape, np.concatenate or np.tile"),
    "setfield": (_IN_PLACE, "build a new array"),
    "setflags": (_IN_PLACE, "build a new array (traced values are read-only already)"),
    "byteswap": (_MEMORY, "ad.value(x).byteswap() if no derivative is wanted"),
    "getfield": (_MEMORY, "x.real / x.imag or x.astype(dtype)"),
    "tolist": (_MEMORY, "list(x) (its items stay traced) or ad.value(x).tolist()"),
    "tobytes": (_MEMORY, "ad.value(x).tobytes()"),
    "tofile": (_MEMORY, "np.save(path, ad.value(x))"),
    "dump": (_MEMORY, "np.save(path, ad.value(x))"),
    "dumps": (_MEMORY, "ad.value(x).dumps()"),
    "choose": ("reads the array as integer indices, which have no derivative",
               "np.choose(index_array, choices) with a plain integer index array"),
}
REFUSED_ATTRIBUTES = {
    "base": "a traced value owns no memory",
    "ctypes": "a traced value owns no memory; use ad.value(x).ctypes",
    "data": "a traced value owns no memory; use ad.value(x).data",
    "flags": "a traced value owns no memory; use ad.value(x).flags",
    "strides": "a traced value owns no memory; use ad.value(x).strides",
    "flat": "use np.ravel(x)[i] (traced) or ad.value(x).flat",
}
_ON_BOX = ("T", "astype", "conj", "conjugate", "copy", "dtype", "flatten", "imag", "item",
           "ndim", "real", "reshape", "shape", "size", "transpose")
_HERE = ("mT", "itemsize", "nbytes", "device", "to_device", "compress", "view")

NDARRAY = {**{n: "function" for n in FUNCTIONS}, **{n: "box" for n in _ON_BOX + _HERE},
           **{n: "refused" for n in list(REFUSED) + list(REFUSED_ATTRIBUTES)}}


class _OnBox:
    """The ndarray methods with a form of their own; copied onto `core.Box`."""

    def item(self, *args):
        raise TypeError(
            "x.item() of a traced value would drop its derivative; index it (x[i]) to "
            "keep the derivative, or use ad.value(x).item() if that is intended")

    @property
    def T(self):
        return apply(np.transpose, (self,))

    @property
    def real(self):
        return apply(np.real, (self,))

    @property
    def imag(self):
        return apply(np.imag, (self,))

    def conj(self):
        return apply(np.conjugate, (self,))

    conjugate = conj

    def reshape(self, *shape, order="C", copy=None):
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        kwargs = {"order": order} if order != "C" else {}
        if copy is not None:
            kwargs["copy"] = copy
        return apply(np.reshape, (self, shape), kwargs)

    def flatten(self, order="C"):
        return apply(np.ravel, (self,), {"order": order} if order != "C" else None)

    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = axes[0]
        return apply(np.transpose, (self, axes or None))

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        dtype = np.dtype(dtype)
        if _no_derivative_dtype(dtype, f"x.astype({dtype.name})"):
            # piecewise constant: numpy's own value (and refusals), no derivative
            return np.asarray(value(self)).astype(dtype, order, casting, subok, copy)
        if not np.can_cast(self.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {self.dtype!r} to {dtype!r} "
                            f"according to the rule {casting!r}")
        if order not in ("K", "A", "C", "F"):
            raise ValueError(f"astype: order must be one of 'K', 'A', 'C', 'F', got {order!r}")
        return apply(astype, (self, dtype))

    def copy(self, order="C"):
        return self


def _method(name, fun):
    """``box.<name>(*args, **kw)`` as ``fun(box, *args, **kw)``: every argument passed on."""
    def method(self, *args, **kwargs):
        return apply(fun, (self,) + args, kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``numpy.{fun.__name__}(x, *args, **kwargs)`` of the traced value."
    return method


def _refused(name, why, fix):
    def method(self, *args, **kwargs):
        raise TypeError(f"x.{name}() on a traced value: it {why}; use {fix}")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Refused on a traced value: use {fix}."
    return method


def _refused_attribute(name, why):
    def get(self):
        raise AttributeError(f"x.{name} of a traced value: {why}")
    return property(get, doc=f"Refused on a traced value: {why}.")


def _mT(self):
    if self.ndim < 2:
        raise ValueError(f"matrix transpose with ndim < 2 is undefined (x.mT of a traced "
                         f"value of shape {self.shape})")
    return apply(np.swapaxes, (self, -1, -2))


def _view(self, dtype=None, type=None):
    if dtype is None and type is None:
        return self          # the same values (traced values are immutable)
    raise TypeError(f"x.view({dtype!r}) on a traced value: it {_MEMORY}; use x.astype(dtype) "
                    "to convert the values")


def _to_device(self, device, /, *, stream=None):
    if device != "cpu" or stream is not None:
        raise ValueError(f"x.to_device({device!r}): numpy arrays (and traced values) live on "
                         "'cpu' only")
    return self


def _given(**kwargs) -> dict:
    return {k: v for k, v in kwargs.items() if v is not None}


def _compress(self, condition, axis=None, out=None):
    return apply(np.compress, (condition, self), _given(axis=axis, out=out))


for _name in _ON_BOX:
    if _name in vars(_OnBox):
        setattr(Box, _name, vars(_OnBox)[_name])
for _name, _fun in FUNCTIONS.items():
    setattr(Box, _name, _method(_name, _fun))
for _name, (_why, _fix) in REFUSED.items():
    setattr(Box, _name, _refused(_name, _why, _fix))
for _name, _why in REFUSED_ATTRIBUTES.items():
    setattr(Box, _name, _refused_attribute(_name, _why))
Box.mT = property(_mT, doc="The transpose of the last two axes (``np.swapaxes(x, -1, -2)``).")
Box.itemsize = property(lambda self: self.dtype.itemsize, doc="Bytes per entry.")
Box.nbytes = property(lambda self: self.size * self.dtype.itemsize, doc="Bytes of the entries.")
Box.device = property(lambda self: "cpu", doc="numpy arrays live on 'cpu'.")
Box.to_device = _to_device
Box.compress = _compress
Box.view = _view
