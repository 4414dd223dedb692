"""The extension API: make a function differentiable and give it rules.

``@ad.primitive`` marks a function the tape treats as one operation,
``@ad.rrule(fun)`` / ``@ad.frule(fun)`` register its reverse and forward
rules, `opt_out` traces through an implementation for some types instead,
`remove_rule` undoes a registration. A pullback returns `thunk` for an
expensive cotangent and `not_differentiable` for a parameter; a forward
rule calls `check_tangents` for its parameters.

This module sits below the tracing core (`core`): it knows the registry
(`registry.REGISTRY`) and nothing of boxes or tapes.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from .registry import REGISTRY

__all__ = ["primitive", "rrule", "frule", "opt_out", "remove_rule", "Registration",
           "Thunk", "thunk", "NotDifferentiable", "not_differentiable", "check_tangents"]


class Thunk:
    """A cotangent computed only if the walk needs it (ChainRules' ``@thunk``).

    Return ``thunk(lambda: expensive)`` from a pullback for an argument that
    may be a constant: the backward walk calls it only for traced arguments.
    """

    __slots__ = ("fun",)

    def __init__(self, fun: Callable[[], Any]):
        self.fun = fun

    def __call__(self):
        return self.fun()


thunk = Thunk


class NotDifferentiable(Thunk):
    """The cotangent of an argument that has no derivative (a parameter).

    Return ``ad.not_differentiable("beta of project")`` from a pullback: if
    that argument is traced the walk raises instead of returning a silent
    zero. `check_rule` skips such arguments.
    """

    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what
        super().__init__(self._fail)

    def _fail(self):
        raise TypeError(f"{self.what} is not differentiable; pass a plain number "
                        "(ad.value(...)) for it")


not_differentiable = NotDifferentiable


def check_tangents(tangents, names: dict) -> None:
    """Raise if a forward rule receives a tangent for a non-differentiable argument.

    `names` maps argument positions to descriptions, e.g. ``{1: "beta of project"}``.
    """
    for pos, what in names.items():
        if pos < len(tangents) and tangents[pos] is not None:
            NotDifferentiable(what)()


def primitive(fun: Callable) -> Callable:
    """Mark `fun` as a primitive: traced calls use its registered rules.

    Calls without traced arguments run `fun` directly. Use it for functions
    the tape cannot see into (scipy, C code) and for functions with a cheaper
    hand-derived pullback than tracing would give.

    Traced values take the call through their type's ``_ad_apply`` (the
    tracing core's dispatch, as numpy's ``__array_function__`` protocol).
    """
    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        dispatch = _traced_dispatch(args) or (kwargs and _traced_dispatch(kwargs.values()))
        if dispatch:
            return dispatch(wrapper, args, kwargs)
        return fun(*args, **kwargs)

    wrapper._impl = fun
    return wrapper


def _traced_dispatch(items):
    """The ``_ad_apply`` of the first traced value among `items` and in their subtrees."""
    for a in items:
        t = type(a)
        dispatch = getattr(t, "_ad_apply", None)
        if dispatch is not None:
            return dispatch
        if t is list or t is dict or isinstance(a, tuple):   # a container (see `tree`)
            dispatch = _traced_dispatch(a.values() if t is dict else a)
            if dispatch is not None:
                return dispatch
    return None


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
        REGISTRY.register("rrule", fun, rule, types)
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
        REGISTRY.register("frule", fun, rule, types)
        return rule
    return decorator


class Registration:
    """A handle on one registry entry: ``remove()`` (or a ``with`` block) removes it."""

    def __init__(self, kind: str, fun: Callable, types):
        self.kind, self.fun, self.types = kind, fun, types

    def remove(self) -> None:
        REGISTRY.remove(self.kind, self.fun, self.types)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def opt_out(fun: Callable, types: type | tuple) -> Registration:
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
    REGISTRY.register("opt_out", fun, True, types)
    return Registration("opt_out", fun, types)


def remove_rule(fun: Callable, types: type | tuple | None = None) -> None:
    """Remove the reverse and forward rules registered for `fun` and `types`."""
    for kind in ("rrule", "frule"):
        REGISTRY.remove(kind, fun, types)
