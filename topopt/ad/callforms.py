"""Call forms: every numpy call normalised once, before its rule sees it.

numpy accepts ``np.sum(x, 0)``, ``np.sum(x, axis=0)``, ``np.sum(a=x,
axis=-2)``, ``np.clip(x, min=0, max=1)``... A `CallForm` binds a traced call
to the function's signature (cached per function) and hands the rule one
canonical form: the *data* arguments (the ones that may be traced) by
position, every other argument by name, arguments equal to their default left
out. An argument the rule does not declare raises `NoRuleError` naming the
function and the argument -- a keyword is never dropped -- and ``out=`` raises
``TypeError`` (traced arrays are immutable). A *rewrite* turns a form the rule
does not take (``where=``, ``dtype=``) into traced operations that it does.

`core.apply` binds only calls that are not canonical already (keywords, or
more positional arguments than data), so ``np.sum(x)`` costs one dict lookup.
"""

from __future__ import annotations

import inspect
from typing import Callable, Sequence

import numpy as np

from .coerce import _no_derivative_dtype
from .core import Box, NoRuleError, _dtype, astype, value
from .dispatch import apply
from . import tree
from .registry import REGISTRY
from .registry import function_name as _name

__all__ = ["CallForm", "callform", "lifting", "canonical", "ufunc_call"]

_NOVALUE = np._NoValue
_SIMPLE = (bool, int, float, str, type(None))
_UNKNOWN = object()


def _traced(v) -> bool:
    return any(isinstance(x, Box) for x in tree.leaves(v))


class CallForm:
    """How the calls of one function are normalised for its rules.

    Parameters
    ----------
    fun : callable
        The function (a numpy function, a ufunc-backed function...).
    data : int
        Number of leading parameters that may be traced; they are passed to
        the rule by position (a missing one as its default, ``None`` for
        numpy's "no value").
    accepts : sequence of str
        The other parameters the rule handles; any other one given with a
        value other than its default raises `NoRuleError`.
    aliases : dict, optional
        Other names of parameters, e.g. ``{"min": "a_min"}`` for `np.clip`.
    rewrite : callable, optional
        ``rewrite(*data, **named)`` returns the result of the call by traced
        operations, or ``NotImplemented`` to let the rule run.
    params : sequence of str, optional
        The parameter names when `fun` has no inspectable signature.
    always : bool
        Bind every traced call and run `rewrite` on it (a function computed
        by traced operations only, without a rule of its own).
    """

    __slots__ = ("fun", "name", "ndata", "positional", "names", "data_names", "fill",
                 "defaults", "required", "accepts", "aliases", "rewrite", "varargs", "special",
                 "always")

    def __init__(self, fun: Callable, data: int, accepts: Sequence[str] = (),
                 aliases: dict | None = None, rewrite: Callable | None = None,
                 params: Sequence[str] | None = None, always: bool = False):
        self.fun, self.name, self.ndata = fun, _name(fun), data
        self.always = always
        self.accepts, self.aliases, self.rewrite = frozenset(accepts), aliases or {}, rewrite
        if params is not None:
            sig = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                       default=None) for p in params])
        else:
            sig = inspect.signature(fun)
        kinds = inspect.Parameter
        plist = [p for p in sig.parameters.values()
                 if p.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)]
        self.varargs = any(p.kind is kinds.VAR_KEYWORD for p in sig.parameters.values())
        self.positional = tuple(p.name for p in plist
                                if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD))
        self.names = frozenset(p.name for p in plist)
        self.data_names = {p.name: i for i, p in enumerate(plist[:data])}
        self.fill = tuple(None if p.default in (_NOVALUE, kinds.empty) else p.default
                          for p in plist[:data])
        self.defaults = {p.name: p.default for p in plist[data:]}
        self.required = tuple(p.name for p in plist[data:] if p.default is kinds.empty)
        self.special = frozenset(self.data_names) | frozenset(self.aliases)
        unknown = self.accepts - self.names
        if unknown:
            raise ValueError(f"{self.name} has no parameters {sorted(unknown)}")

    def bind(self, args: tuple, kwargs: dict | None):
        """``(data, named)``: the canonical form of the call ``fun(*args, **kwargs)``."""
        if len(args) > len(self.positional):
            raise TypeError(f"{self.name}() takes at most {len(self.positional)} positional "
                            f"arguments ({len(args)} given)")
        nd = self.ndata
        data = tuple(args[:nd])
        named = dict(zip(self.positional[nd:], args[nd:])) if len(args) > nd else {}
        if kwargs:
            if self.special.isdisjoint(kwargs):
                for key in kwargs:
                    if key in named:
                        raise TypeError(f"{self.name}() got multiple values for argument "
                                        f"'{key}'")
                named.update(kwargs)
            else:
                data = self._data_keywords(list(data), named, kwargs)
        for key in self.required:
            if key not in named:
                raise TypeError(f"{self.name}() missing required argument '{key}'")
        return data, self._options(named)

    def _data_keywords(self, data, named, kwargs):
        """Move data arguments given by keyword (or by an alias) to their position."""
        given = {}
        for key, v in kwargs.items():
            key = self.aliases.get(key, key)
            pos = self.data_names.get(key)
            if key in named or (pos is not None and (pos < len(data) or pos in given)):
                raise TypeError(f"{self.name}() got multiple values for argument '{key}'")
            if pos is None:
                named[key] = v
            else:
                given[pos] = v
        if given:
            data += self.fill[len(data):max(given) + 1]
            for pos, v in given.items():
                data[pos] = v
        return tuple(data)

    def _options(self, named: dict) -> dict:
        """The options other than their defaults; raises for one the rule does not take."""
        out = {}
        for key, v in named.items():
            default = self.defaults.get(key, _UNKNOWN)
            if default is _UNKNOWN and not self.varargs:
                raise TypeError(f"{self.name}() got an unexpected keyword argument '{key}'")
            if v is default or v is _NOVALUE or (
                    type(v) in _SIMPLE and type(v) is type(default) and v == default):
                continue
            if key == "out":
                raise TypeError(
                    f"{self.name}(..., out=...) on a traced value: traced arrays are "
                    "immutable; use the returned array instead of out=")
            if key not in self.accepts:
                raise NoRuleError(
                    f"no differentiation rule for {self.name} with the argument {key}={v!r}; "
                    f"the rule supports {', '.join(sorted(self.accepts)) or 'no options'}")
            if _traced(v):
                raise NoRuleError(
                    f"argument '{key}' of {self.name} is traced but {self.name} is "
                    f"differentiated only in {', '.join(self.data_names)}; pass ad.value(...) "
                    "for it")
            out[key] = v
        return out


def callform(fun: Callable, data: int = 1, accepts: Sequence[str] = (), *,
             aliases: dict | None = None, rewrite: Callable | None = None,
             params: Sequence[str] | None = None, lift=None, always: bool = False) -> CallForm:
    """Register the `CallForm` of `fun` (see there); returns it.

    `lift` (see `lifting`) says which data arguments numpy reads as arrays;
    by default all of them.
    """
    if always and rewrite is None:
        raise ValueError(f"callform of {_name(fun)}: always=True needs a rewrite")
    form = CallForm(fun, data, accepts, aliases, rewrite, params, always)
    REGISTRY.register_form(fun, form)
    if lift is not None:
        lifting(fun, lift)
    return form


def lifting(fun: Callable, spec) -> None:
    """Declare which arguments of `fun` numpy reads as arrays (`coerce._lift`).

    `spec` is a string, one letter per positional argument: ``"a"`` an array
    (a list or tuple there becomes one), ``"s"`` a sequence of arrays (each
    item becomes one), ``"-"`` as given (an index, a dtype); or a callable
    ``spec(args) -> args``. Without a declaration a ufunc reads every input
    and a function with a call form every data argument as an array.
    """
    if not (callable(spec) or (isinstance(spec, str) and set(spec) <= set("as-"))):
        raise ValueError(f"lifting of {_name(fun)}: spec must be a string of 'a', 's', '-' "
                         f"or a callable, got {spec!r}")
    REGISTRY.register_lift(fun, spec)


def canonical(fun: Callable, args: tuple, kwargs: dict | None):
    """The canonical ``(args, kwargs)`` of a call of `fun` (unchanged without a form)."""
    form = REGISTRY.form(fun)
    if form is None:
        return tuple(args), dict(kwargs or {})
    return form.bind(tuple(args), kwargs)


# ufunc keywords that do not change the values when they have these values
_UFUNC_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "signature": None}


def ufunc_call(ufunc, inputs: tuple, kwargs: dict):
    """A traced ufunc call with keywords: ``dtype=`` casts the inputs first.

    ``where=True`` and the default ``casting``/``order``/``subok``/
    ``signature`` are accepted; any other keyword raises `NoRuleError` naming
    the ufunc and the keyword (``where=mask`` leaves the masked-out entries
    uninitialised, and ``out=`` is rejected before this).
    """
    dtype = kwargs.get("dtype")
    if dtype is not None and _no_derivative_dtype(
            dtype, f"{_name(ufunc)}(..., dtype={np.dtype(dtype).name})"):
        # an integer/boolean result: numpy's own value and casting refusals, no derivative
        return ufunc(*tree.map(value, inputs), **tree.map(value, kwargs))
    for key, v in kwargs.items():
        if key == "dtype":
            continue
        elif key == "where" and np.ndim(v) == 0 and not _traced(v) and bool(v):
            continue
        elif key in _UFUNC_DEFAULTS and type(v) in _SIMPLE and v == _UFUNC_DEFAULTS[key]:
            continue
        else:
            raise NoRuleError(
                f"no differentiation rule for {_name(ufunc)} with the argument {key}={v!r}; "
                "traced ufunc calls take dtype= (and default casting/order/subok/where) only")
    if dtype is not None:
        dt = np.dtype(dtype)
        inputs = REGISTRY.lift_args(ufunc, None, tuple(inputs))   # lists read as arrays
        for a in inputs:
            if not np.can_cast(_dtype(a), dt, "same_kind"):
                raise TypeError(f"{_name(ufunc)}(..., dtype={dt.name}): cannot cast an input "
                                f"from {_dtype(a)} to {dt} with casting rule 'same_kind'")
        inputs = tuple(astype(a, dt) if isinstance(a, Box) else np.asarray(a).astype(dt)
                       for a in inputs)
    return apply(ufunc, inputs)


REGISTRY.ufunc_keywords = ufunc_call
