"""The rule registry: reverse and forward rules, opt-outs and call forms per function.

One `Registry` object, `REGISTRY`, holds every table; `core.apply` looks up
there which rule processes a call, `callforms` registers how a function's
calls are normalised before the rule sees them, and the decorators of
`extend` (``@ad.rrule``, ``@ad.frule``, `opt_out`, `remove_rule`) write to it.

Examples
--------
>>> from topopt.ad.registry import REGISTRY
>>> def double(x):
...     return 2 * x
>>> def double_rrule(x):
...     return double(x), lambda ybar: (2 * ybar,)
>>> REGISTRY.register("rrule", double, double_rrule)
>>> REGISTRY.lookup("rrule", double, (1.0,)) == (double_rrule, None)
True
>>> REGISTRY.remove("rrule", double), REGISTRY.lookup("rrule", double, (1.0,))
(True, (None, None))
"""

from __future__ import annotations

import sys
from typing import Callable

import numpy as np

from . import tree

__all__ = ["Registry", "REGISTRY", "function_name"]

KINDS = ("rrule", "frule", "opt_out")


def _types_tuple(types) -> tuple | None:
    if types is None:
        return None
    types = types if isinstance(types, tuple) else (types,)
    if not types or not all(isinstance(t, type) for t in types):
        raise TypeError(f"types must be a type or a non-empty tuple of types, got {types!r}")
    return types


class Registry:
    """Rule tables keyed by function, each entry ``(types or None, rule)``.

    Kinds: ``"rrule"`` (reverse rules), ``"frule"`` (forward rules),
    ``"opt_out"`` (trace through the implementation for these types; the
    rule is ``True``). Call forms (`callforms.CallForm`) have their own
    table, `nondiff` holds the functions without a derivative (called on
    plain values), `lifts` which arguments numpy reads as arrays (a Python
    sequence there is made an array before the rule runs; `lift_args` and
    `drops_derivative` are the hooks of `coerce`), `deferred` the
    registrations waiting for a library's import, `ufunc_keywords`
    handles a traced ufunc call with keywords and `ufunc_methods` a traced
    ``ufunc.reduce`` / ``accumulate`` / ``outer`` (NotImplemented: no rule).
    A type-specific entry matching an argument beats the generic one.
    """

    def __init__(self):
        self.rrules: dict = {}
        self.frules: dict = {}
        self.opt_outs: dict = {}
        self.forms: dict = {}
        self.nondiff: set = set()
        self.lifts: dict = {}
        self.deferred: list = []      # (module name, registration), see `defer`
        self.ufunc_keywords: Callable | None = None
        self.ufunc_methods: Callable = lambda ufunc, method, inputs, kwargs: NotImplemented
        self.lift_args: Callable = lambda fun, form, args: args      # coerce._lift
        self.drops_derivative: Callable = lambda fun, form, args, kwargs: False

    def _table(self, kind: str) -> dict:
        if kind == "rrule":
            return self.rrules
        if kind == "frule":
            return self.frules
        if kind == "opt_out":
            return self.opt_outs
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")

    def register(self, kind: str, fun: Callable, rule, types=None) -> None:
        """Register `rule` for `fun` (and `types`), replacing an entry for the same types."""
        table, types = self._table(kind), _types_tuple(types)
        entries = [e for e in table.get(fun, []) if e[0] != types]
        entries.insert(0, (types, rule))
        table[fun] = entries

    def remove(self, kind: str, fun: Callable, types=None) -> bool:
        """Remove the entry of `fun` for `types`; True if there was one."""
        table, types = self._table(kind), _types_tuple(types)
        old = table.get(fun, [])
        entries = [e for e in old if e[0] != types]
        if entries:
            table[fun] = entries
        else:
            table.pop(fun, None)
        return len(entries) != len(old)

    def lookup(self, kind: str, fun: Callable, args) -> tuple:
        """``(rule, types)``: the type-specific entry matching a part of `args`, else
        ``(generic rule, None)``, else ``(None, None)``."""
        self.resolve()
        return _match(self._table(kind).get(fun), args)

    def entries(self, kind: str, fun: Callable) -> list:
        """The ``(types, rule)`` entries of `fun`, newest first."""
        self.resolve()
        return list(self._table(kind).get(fun, []))

    def functions(self, kind: str) -> list:
        """Every function with an entry of `kind`."""
        self.resolve()
        return list(self._table(kind))

    def mark_nondifferentiable(self, funs) -> None:
        """Call `funs` on plain values even when traced (comparisons, argmax, shape queries)."""
        self.nondiff.update(funs)

    def register_lift(self, fun: Callable, spec) -> None:
        """Which arguments of `fun` numpy reads as arrays (see `callforms.lifting`)."""
        self.lifts[fun] = spec

    def defer(self, module: str, registration: Callable) -> None:
        """Run `registration` once `module` is imported (at once if it is already).

        The rules of a library's functions (scipy.special's ufuncs) need the
        library only when a traced call of one of them can happen, that is
        after the user imported it; `resolve` runs what became ready.
        """
        if module in sys.modules:
            registration()
        else:
            self.deferred.append((module, registration))

    def resolve(self) -> bool:
        """Run the deferred registrations whose module is imported now; True if any ran."""
        ready = [d for d in self.deferred if d[0] in sys.modules]
        if not ready:
            return False
        self.deferred = [d for d in self.deferred if d[0] not in sys.modules]
        for _, registration in ready:
            registration()
        return True

    def register_form(self, fun: Callable, form) -> None:
        """Register the call form of `fun` (see `callforms.callform`)."""
        self.forms[fun] = form

    def form(self, fun: Callable):
        """The call form of `fun`, or None."""
        return self.forms.get(fun)


def _match(entries, args) -> tuple:
    """The entry of `entries` for the leaves of `args` (see `Registry.lookup`)."""
    if not entries:
        return None, None
    generic = None
    for types, rule in entries:
        if types is None:
            generic = rule
        elif any(isinstance(s, types) for a in args for s in tree.walk(a)):
            return rule, types
    return generic, None


REGISTRY = Registry()


def function_name(fun) -> str:
    """The name of `fun` for messages: ``numpy.exp``, ``scipy.special.erf``, ``module.f``."""
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", repr(fun))
    if isinstance(fun, np.ufunc):
        if getattr(np, fun.__name__, None) is fun:
            return f"numpy.{name}"
        sp = sys.modules.get("scipy.special")
        return f"scipy.special.{name}" if getattr(sp, fun.__name__, None) is fun else name
    module = getattr(fun, "__module__", None) or ""
    if module.startswith("numpy"):
        module = next((f"numpy.{sub}" for sub in ("linalg", "fft") if sub in module), "numpy")
    return f"{module}.{name}" if module else name
