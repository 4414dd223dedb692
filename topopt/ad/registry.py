"""Rule registries: reverse and forward rules, opt-outs and call forms per function.

`core.apply` looks up here which rule processes a call; `callforms`
registers how a function's calls are normalised before the rule sees them.
"""

from __future__ import annotations

import sys
from typing import Callable

import numpy as np

__all__ = ["rrule", "frule", "opt_out", "remove_rule"]

_rrules: dict = {}
_frules: dict = {}
_opt_outs: dict = {}
_forms: dict = {}      # function -> callforms.CallForm


def _register(table: dict, fun, types, rule) -> None:
    types = None if types is None else (types if isinstance(types, tuple) else (types,))
    entries = [e for e in table.get(fun, []) if e[0] != types]
    entries.insert(0, (types, rule))
    table[fun] = entries


def rrule(fun: Callable, types: type | tuple | None = None):
    """Register the reverse rule of `fun`: ``rule(*args, **kw) -> (y, pullback)``.

    ``pullback(ybar)`` returns a tuple with one cotangent per positional
    argument of `fun` (trailing ``None`` may be left out, as for numpy's
    optional `axis`); ``None`` means zero or not differentiable, and a
    `Thunk` is evaluated only when that argument is traced. For a function
    with several outputs, `y` is a tuple and `ybar` a tuple (``None`` for an
    output that received no cotangent).

    With `types`, the rule is used only when an argument is an instance of
    one of them, and then it takes precedence over the generic rule.

    For a function with a call form (`callforms.callform`), the rule is
    called in the canonical form: the data arguments by position, the
    options by name, options left at numpy's default omitted. Declare the
    options as keyword parameters; never take ``**kwargs`` it does not handle.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> @ad.primitive
    ... def cube(x):
    ...     return np.asarray(x) ** 3
    >>> @ad.rrule(cube)
    ... def cube_rrule(x):
    ...     def cube_pullback(ybar):
    ...         return (3 * ybar * np.conj(x) ** 2,)
    ...     return cube(x), cube_pullback
    >>> float(ad.gradient(cube, 2.0))
    12.0
    """
    def decorator(rule):
        _register(_rrules, fun, types, rule)
        return rule
    return decorator


def frule(fun: Callable, types: type | tuple | None = None):
    """Register the forward rule of `fun`: ``rule(primals, tangents, **kw) -> (y, ydot)``.

    `tangents` holds one tangent per positional argument, ``None`` for the
    arguments that are not traced; ``ydot = None`` means a zero tangent.
    A primitive without a forward rule is differentiated in forward mode by
    transposing its pullback, which works when the pullback is written with
    traced operations.
    """
    def decorator(rule):
        _register(_frules, fun, types, rule)
        return rule
    return decorator


class _Registration:
    def __init__(self, table, fun, types):
        self.table, self.fun, self.types = table, fun, types

    def remove(self) -> None:
        entries = [e for e in self.table.get(self.fun, []) if e[0] != self.types]
        if entries:
            self.table[self.fun] = entries
        else:
            self.table.pop(self.fun, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def opt_out(fun: Callable, types: type | tuple) -> _Registration:
    """Differentiate through `fun`'s implementation when an argument has `types`.

    The generic rule of `fun` is then not used for these types: the tape
    records the operations of the implementation instead -- the primitive's
    Python body, or for a numpy function the type's own ``__array_ufunc__`` /
    ``__array_function__``. Returns a handle whose ``remove()`` (or ``with``
    block) undoes the opt-out.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> class Diagonal:
    ...     def __init__(self, d):
    ...         self.d = d
    ...     def __array_ufunc__(self, ufunc, method, *inputs, **kw):
    ...         if ufunc is np.matmul and inputs[1] is self:
    ...             return inputs[0] * self.d
    ...         return NotImplemented
    >>> D = Diagonal(np.array([1.0, 2.0]))
    >>> with ad.opt_out(np.matmul, Diagonal):
    ...     g = ad.gradient(lambda x: np.sum(x @ D), np.ones(2))
    >>> g
    array([1., 2.])
    """
    types = types if isinstance(types, tuple) else (types,)
    _register(_opt_outs, fun, types, True)
    return _Registration(_opt_outs, fun, types)


def remove_rule(fun: Callable, types: type | tuple | None = None) -> None:
    """Remove the reverse and forward rules registered for `fun` and `types`."""
    types = None if types is None else (types if isinstance(types, tuple) else (types,))
    for table in (_rrules, _frules):
        _Registration(table, fun, types).remove()


def _lookup(table: dict, fun, args):
    """The type-specific entry matching an argument, else the generic one."""
    entries = table.get(fun)
    if not entries:
        return None, None
    generic = None
    for types, rule in entries:
        if types is None:
            generic = rule
        elif any(isinstance(a, types) for a in _flat(args)):
            return rule, types
    return generic, None


def _flat(args):
    for a in args:
        if type(a) in (list, tuple):
            yield from a
        else:
            yield a


def _name(fun) -> str:
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", repr(fun))
    if isinstance(fun, np.ufunc):
        if getattr(np, fun.__name__, None) is fun:
            return f"numpy.{name}"
        sp = sys.modules.get("scipy.special")
        return f"scipy.special.{name}" if getattr(sp, fun.__name__, None) is fun else name
    module = getattr(fun, "__module__", None) or ""
    if module.startswith("numpy"):
        module = "numpy.linalg" if "linalg" in module else "numpy"
    return f"{module}.{name}" if module else name
