"""Keywords a function does not take: one error, naming the closest one it takes.

`keywords` wraps a public function (or method) so that a misspelled keyword
(``volfarc``) is refused with the closest name it takes (``volfrac``), also
when it was passed on through ``**options``; `check_keywords_of` gives every
public function and class of a package's ``__all__`` this check;
`keyword_error` is the error itself (`topopt._validate.check_keywords` raises
it for a function that reads ``**options`` on its own).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import re
import sys
import types
from typing import Iterable

__all__ = ["keyword_error", "keywords", "check_keywords_of"]


def keyword_error(where: str, unknown, known, passable=None) -> TypeError:
    """The `TypeError` for keywords `unknown` that `where` does not take: it names the
    closest of `known` to each (``difflib``) and keeps the lists (``.keywords``), so that a
    function that passed them on can name its own keywords and the `passable` ones (those
    of `known` a caller may pass on to `where`, all by default) too.

    Examples
    --------
    >>> from topopt._keywords import keyword_error
    >>> print(keyword_error("run", ["volfarc", "zzz"], ["volfrac", "maxeval"]))
    run got unknown keyword(s) ['volfarc', 'zzz'] (did you mean 'volfarc' -> 'volfrac'?); \
known: ['maxeval', 'volfrac']
    """
    unknown, known = sorted(unknown), sorted(set(known))
    close = {u: difflib.get_close_matches(u, known, n=1, cutoff=0.6) for u in unknown}
    if len(unknown) == 1 and close[unknown[0]]:
        hint = f" (did you mean {close[unknown[0]][0]!r}?)"
    else:
        pairs = [f"{u!r} -> {c[0]!r}" for u, c in close.items() if c]
        hint = f" (did you mean {', '.join(pairs)}?)" if pairs else ""
    err = TypeError(f"{where} got unknown keyword(s) {unknown}{hint}; known: {known}")
    err.keywords = (unknown, known, known if passable is None else sorted(set(passable)))
    return err


_UNEXPECTED = re.compile(r"got an unexpected keyword argument '(\w+)'")


def _keyword_error(err: TypeError, given: dict, where: str, known: tuple, optional: tuple):
    """The `keyword_error` that `err` (raised by a call with keywords `given`) stands for, or
    ``None``: a keyword of the caller's that this function, or one it passes it on to, does
    not take (Python's bare "unexpected keyword argument", or an inner `keyword_error`:
    its passable keywords join ours, not those the function passing them on sets itself)."""
    inner = getattr(err, "keywords", None)
    if inner is not None:
        unknown = [u for u in inner[0] if u in given and u not in known]
        deeper = tuple(inner[2])
        return keyword_error(where, unknown, known + deeper, optional + deeper) \
            if unknown else None
    match = _UNEXPECTED.search(str(err))
    if match and match.group(1) in given and match.group(1) not in known:
        return keyword_error(where, [match.group(1)], known, optional)
    return None


def keywords(fn, where: str | None = None):
    """`fn`, refusing a keyword it does not take with a `TypeError` that suggests the
    closest one it takes (``volfarc`` -> ``volfrac``), also for keywords that `fn` passes on
    through ``**options`` to a function that refuses them.

    The check costs nothing on a valid call (the refusal is Python's own, looked at after
    the fact); the wrapper shares `fn`'s module (doctests, pickling by name) and signature.

    Examples
    --------
    >>> from topopt._keywords import keywords
    >>> def cantilever(nelx=4, volfrac=0.5):
    ...     return nelx * volfrac
    >>> keywords(cantilever)(volfarc=0.3)
    Traceback (most recent call last):
    ...
    TypeError: cantilever got unknown keyword(s) ['volfarc'] (did you \
mean 'volfrac'?); known: ['nelx', 'volfrac']
    """
    if getattr(fn, "__keywords_checked__", False):
        return fn
    params = inspect.signature(fn).parameters.values()
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    known = tuple(p.name for p in params if p.kind in named and p.name not in ("self", "cls"))
    optional = tuple(p.name for p in params if p.kind in named and p.default is not p.empty)
    where = where or fn.__qualname__.replace(".__init__", "")
    refusal = _keyword_error

    def checked(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as err:
            error = refusal(err, kwargs, where, known, optional) if kwargs else None
            if error is None:
                raise
            raise error from None

    # the wrapper lives in fn's module: doctest finds fn's examples, pickle finds it by name
    out = types.FunctionType(checked.__code__, fn.__globals__, fn.__name__, None,
                             checked.__closure__)
    functools.update_wrapper(out, fn)
    out.__kwdefaults__ = None
    out.__keywords_checked__ = True
    return out


def check_keywords_of(namespace: dict, names: Iterable[str]) -> None:
    """Give the public functions and classes `names` of a package's `namespace` (its
    ``__all__``) `keywords`: a function wherever topopt's modules hold it (one object under
    every name), the constructor, ``__call__`` and public methods of a class in place."""
    checked = {}
    for name in names:
        obj = namespace.get(name)
        if inspect.isfunction(obj) and hasattr(obj, "_impl"):
            _check_primitive(obj)
        elif inspect.isfunction(obj):
            checked[id(obj)] = (obj, keywords(obj))
        elif inspect.isclass(obj) and not issubclass(obj, BaseException) \
                and obj.__module__.startswith("topopt."):
            _check_methods(obj)
    if not checked:
        return
    for module in [namespace] + [vars(m) for n, m in list(sys.modules.items())
                                 if n.startswith("topopt.") and m is not None]:
        for attr, value in list(module.items()):
            if id(value) in checked and checked[id(value)][0] is value:
                module[attr] = checked[id(value)][1]
    for raw, out in checked.values():
        # a reference kept before (a default argument, a table) still pickles by name
        raw.__qualname__ = f"{out.__qualname__}.__wrapped__"


def _check_primitive(fun) -> None:
    """`keywords` for the function inside a `topopt.ad.primitive` `fun`, in place: the
    primitive stays the object its rules are registered for."""
    impl = fun._impl
    if getattr(impl, "__keywords_checked__", False):
        return
    out = keywords(impl, fun.__qualname__)
    cells = [c for c in fun.__closure__ or () if c.cell_contents is impl]
    for cell in cells:                   # the untraced call, `fun(*args, **kwargs)`
        cell.cell_contents = out
    fun._impl = out                      # the rules' calls


def _check_methods(cls) -> None:
    """`keywords` for the constructor, ``__call__`` and public methods of `cls`, in place."""
    for attr, value in list(vars(cls).items()):
        if attr.startswith("_") and attr not in ("__init__", "__call__"):
            continue
        label = cls.__name__ if attr == "__init__" else f"{cls.__name__}.{attr}"
        if inspect.isfunction(value):
            setattr(cls, attr, keywords(value, label))
        elif isinstance(value, (classmethod, staticmethod)) and inspect.isfunction(value.__func__):
            setattr(cls, attr, type(value)(keywords(value.__func__, label)))
