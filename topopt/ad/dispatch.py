"""The dispatch: an operation on traced values runs its rule on the innermost trace.

`apply` takes the innermost trace among the arguments (largest id), unwraps
that trace's boxes one level and asks the trace to process the call: a
reverse trace records a `core.Node` (`_record`), a forward trace carries the
tangent in the output box (`_wrap_forward`), or, for a primitive with only a
reverse rule, transposes it (`_forward_by_transpose`). The box types of
`core` reach `apply` through ``Box._ad_apply`` (set here), as
`extend.primitive` does.

* a reverse trace calls the function's reverse rule ``rule(*args) -> (y,
  pullback)`` and records a `Node` (the pullback and the parent nodes);
* a forward trace calls the forward rule ``rule(primals, tangents) -> (y,
  ydot)`` and carries the tangent in the output box.

Unwrapping one level only is what makes nesting work: the arguments a rule
sees may still be boxes of an outer trace, so whatever the rule computes, its
pullback included, is recorded by the outer trace (autograd's design). The
rules come from `registry.REGISTRY` (written by `extend`); the
forward-by-transpose path runs its own one-leaf backward walk.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from . import tree
from .core import (Box, Node, NoRuleError, Trace, _cotangent_at, _dtype, _forms, _frules,
                   _nondiff, _opt_outs, _rrules, _shape, backward, value)
from .registry import REGISTRY, _match
from .registry import function_name as _name

__all__ = ["apply"]

def _arg_leaves(args):
    """The leaves of the arguments and their `tree.TreeDef` (None: `args` is flat)."""
    for a in args:
        t = type(a)
        if t is tuple or t is list or t is dict or isinstance(a, tuple):
            return tree.flatten(tuple(args))
    return args, None


def _top_trace(leaves):
    top = None
    for a in leaves:
        if isinstance(a, Box) and (top is None or a._trace.id > top.id):
            top = a._trace
    return top


def _implementation(fun, args, kwargs, types):
    """Call `fun`'s own implementation with the boxed arguments (opt-out)."""
    impl = getattr(fun, "_impl", None)
    if impl is not None:
        return impl(*args, **kwargs)
    owner = next(a for a in tree.walk(args) if isinstance(value(a), types))
    owner = value(owner)
    if isinstance(fun, np.ufunc) and hasattr(owner, "__array_ufunc__"):
        result = owner.__array_ufunc__(fun, "__call__", *args, **kwargs)
    elif hasattr(owner, "__array_function__"):
        result = owner.__array_function__(fun, (type(owner),), args, kwargs)
    else:
        return fun(*args, **kwargs)
    if result is NotImplemented:
        raise NoRuleError(
            f"{_name(fun)} is opted out for {type(owner).__name__}, but its "
            f"__array_ufunc__/__array_function__ does not implement it")
    return result


def apply(fun: Callable, args, kwargs=None):
    """Run `fun(*args, **kwargs)` on the innermost trace among `args`.

    Traced values may sit anywhere in the argument trees (`tree`). A call of
    a function with a `callforms.CallForm` that is not canonical already
    (keywords, or options by position) is bound to its signature first, so
    the rule sees data positionally and options by name.
    """
    kwargs = kwargs or {}
    leaves, treedef = _arg_leaves(args)
    trace = _top_trace(leaves)
    if trace is None and not (kwargs and _top_trace(tree.leaves(kwargs))):
        return fun(*args, **kwargs)
    form = _forms.get(fun)
    bound = form is not None and (kwargs or len(args) != form.ndata or form.always)
    if (bound or kwargs) and REGISTRY.drops_derivative(fun, form, args, kwargs):
        return fun(*tree.map(value, tuple(args)), **tree.map(value, kwargs))
    if bound:
        args, kwargs = form.bind(args, kwargs)
    if bound or treedef is not None:
        args = REGISTRY.lift_args(fun, form, tuple(args))
        leaves, treedef = _arg_leaves(args)
        trace = _top_trace(leaves)
    if bound and form.rewrite is not None:
        result = form.rewrite(*args, **kwargs)
        if result is not NotImplemented:
            return result
    if fun in _nondiff:
        return fun(*tree.map(value, tuple(args)), **tree.map(value, kwargs))
    if trace is None:
        raise NoRuleError(
            f"{_name(fun)} got a traced value as a keyword argument; pass it by position "
            "(or register a call form for it)")
    try:
        return _dispatch(trace, fun, args, kwargs, leaves, treedef)
    except NoRuleError:
        raise
    except Exception as err:
        _annotate(err, fun)
        raise


def _dispatch(trace, fun, args, kwargs, leaves, treedef):
    """Call the rule of `fun` for `trace` (or its opt-out implementation).

    `leaves` and `treedef` are the flattened `args` (`treedef` None when no
    argument is a container); the rule sees `trace`'s boxes unwrapped.
    """
    if REGISTRY.deferred and fun not in _rrules:
        REGISTRY.resolve()      # rules of a library imported since (scipy.special)
    unboxed = [x.value if isinstance(x, Box) and x._trace is trace else x for x in leaves]
    if treedef is not None:
        unboxed = tree.unflatten(treedef, unboxed)
    rule, types = _match((_rrules if trace.reverse else _frules).get(fun), unboxed)
    if types is None and fun in _opt_outs:
        optout, opt_types = _match(_opt_outs.get(fun), unboxed)
        if optout and opt_types is not None:
            return _implementation(fun, args, kwargs, opt_types)
    if trace.reverse:
        if rule is None:
            _raise_no_rule(fun, "reverse")
        return _record(trace, fun, leaves, treedef, *rule(*unboxed, **kwargs))
    tangents = [x._tangent if isinstance(x, Box) and x._trace is trace else None for x in leaves]
    tangents = tuple(tangents) if treedef is None else tree.unflatten_sparse(treedef, tangents)
    if rule is None:
        rrule_ = _match(_rrules.get(fun), unboxed)[0]
        if rrule_ is None:
            _raise_no_rule(fun, "forward")
        traced = _traced_leaves(leaves, treedef, trace)
        return _forward_by_transpose(trace, fun, unboxed, traced, rrule_, kwargs)
    y, ydot = rule(tuple(unboxed), tangents, **kwargs)
    return _wrap_forward(trace, y, ydot)


def _raise_no_rule(fun, mode):
    name = _name(fun)
    how = "@ad.rrule" if mode == "reverse" else "@ad.frule"
    raise NoRuleError(
        f"no {mode}-mode differentiation rule for {name}. Register one with "
        f"{how}({name}) -- for a function outside numpy first wrap it with "
        f"ad.primitive -- or, if it is not to be differentiated, call it on "
        f"ad.value(x).")


def _annotate(err: Exception, fun) -> None:
    note = f"(raised while tracing primitive {_name(fun)})"
    notes = getattr(err, "__notes__", None) or []
    if any(n.startswith("(raised while tracing primitive") for n in notes):
        return
    if hasattr(err, "add_note"):
        err.add_note(note)
    else:  # Python 3.10
        err.__notes__ = notes + [note]


def _is_numeric(y) -> bool:
    return isinstance(y, (np.ndarray, np.generic, float, complex, int, Box))


def _traced_leaves(leaves, treedef, trace) -> list:
    """``(pos, sub, box)`` of `trace`'s boxes among the argument leaves.

    The box is ``args[pos][sub[0]][sub[1]]...`` (`sub` is ``()`` for an
    argument that is a box itself).
    """
    if treedef is None:
        return [(k, (), x) for k, x in enumerate(leaves)
                if isinstance(x, Box) and x._trace is trace]
    paths = treedef.paths()
    return [(paths[k][0], paths[k][1:], x) for k, x in enumerate(leaves)
            if isinstance(x, Box) and x._trace is trace]


def _record(trace, fun, leaves, treedef, y, pullback):
    """The output boxes of a reverse-mode call and its `Node` on the tape."""
    if treedef is None:      # the common flat case without `_traced_leaves`' list
        parents = [(k, (), x._node, x._idx, _shape(x.value), not np.iscomplexobj(value(x)))
                   for k, x in enumerate(leaves) if isinstance(x, Box) and x._trace is trace]
    else:
        parents = [(pos, sub, x._node, x._idx, _shape(x.value), not np.iscomplexobj(value(x)))
                   for pos, sub, x in _traced_leaves(leaves, treedef, trace)]
    if isinstance(y, tuple):
        node = Node(pullback, parents, fun, len(y))
        return tree.rebuild(y, [Box(yi, trace, node, i) if _is_numeric(yi) else yi
                                for i, yi in enumerate(y)])
    return Box(y, trace, Node(pullback, parents, fun, None))


def _forward_box(y, trace, ydot):
    if ydot is None:
        return y
    if _shape(ydot) != _shape(y):
        ydot = np.broadcast_to(ydot, _shape(y))
    return Box(y, trace, tangent=ydot)


def _wrap_forward(trace, y, ydot):
    if isinstance(y, tuple):
        ydot = ydot if ydot is not None else (None,) * len(y)
        return tree.rebuild(y, [_forward_box(yi, trace, ti) for yi, ti in zip(y, ydot)])
    return _forward_box(y, trace, ydot)


def _forward_by_transpose(trace, fun, unboxed, traced, rule, kwargs):
    """Tangent of a primitive with only a reverse rule: ``ydot = J xdot``.

    With ``back(u) = J^H u``, ``J xdot`` is the gradient in `u` of
    ``Re <back(u), xdot>``; this needs a pullback written with traced ops.
    """
    y, back = rule(*unboxed, **kwargs)
    if isinstance(y, tuple):
        raise NoRuleError(f"{_name(fun)} has several outputs and no forward rule; "
                          "register @ad.frule for it")

    def linear(u):
        cts, forced, total = back(u), {}, 0.0
        for pos, sub, x in traced:
            ct = _cotangent_at(cts, pos, sub, forced, fun)
            if ct is not None and x._tangent is not None:
                total = total + np.sum(np.real(np.conj(ct) * x._tangent))
        return total

    return _wrap_forward(trace, y, _gradient_at_zero(linear, y))


def _gradient_at_zero(linear, like):
    """The gradient of the real ``linear(u)`` at ``u = 0`` shaped like `like` (one walk)."""
    zeros = np.zeros(_shape(like), _dtype(like))
    leaf = Node(None, (), None, None)
    trace = Trace(reverse=True)
    out = linear(Box(zeros, trace, leaf))
    if not (isinstance(out, Box) and out._trace is trace):
        return zeros
    ct = backward([out], [1.0]).get(leaf)
    return zeros if ct is None else ct


Box._ad_apply = staticmethod(apply)     # the dispatch of `extend.primitive` for traced values
