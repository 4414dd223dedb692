"""User-facing transformations: pullback, gradient, jvp, hvp."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import tree
from .core import Box, Node, Trace, _dtype, _shape, backward, value

__all__ = ["pullback", "gradient", "value_and_gradient", "jvp", "hvp", "differentiable"]


def differentiable(x) -> bool:
    """True if `x` is a float or complex scalar or array, or a traced value."""
    if isinstance(x, Box):
        return True
    if isinstance(x, (bool, int, np.integer, np.bool_)):
        return False
    if isinstance(x, (float, complex, np.floating, np.complexfloating)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


_differentiable = differentiable


def _zeros_like(x):
    return np.zeros(_shape(x), _dtype(x))


def _own(trace):
    """``v -> v.value`` for the boxes of `trace`, other values unchanged."""
    return lambda v: v.value if isinstance(v, Box) and v._trace is trace else v


def pullback(f: Callable, *args) -> tuple[Any, Callable]:
    """Evaluate ``y = f(*args)`` and return ``(y, back)``.

    ``back(ybar)`` is the vector-Jacobian product: one cotangent per
    argument (zeros for a differentiable argument `y` does not depend on,
    ``None`` for a non-differentiable one such as an int or a mesh). `y` may
    be an array or a tree of them (tuples, lists, dicts, named tuples: see
    `tree`); `ybar` has the same structure, a dict's keys in any order and
    ``None`` for the zero cotangent of any subtree. Calling `back` again
    gives the same result.

    Complex numbers follow Zygote's convention: for a real function ``L`` of
    ``z = x + iy``, the cotangent is ``dL/dx + i dL/dy``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> y, back = ad.pullback(lambda a, b: a * b, np.array([1.0, 2.0]), 3.0)
    >>> back(np.ones(2))
    (array([3., 3.]), 3.0)
    """
    trace = Trace(reverse=True)
    leaves = [Node(None, (), None, None) if _differentiable(a) else None for a in args]
    boxed = [Box(a, trace, n) if n is not None else a for a, n in zip(args, leaves)]
    y = f(*boxed)
    ys, ydef = tree.flatten(y)
    outs = [v if isinstance(v, Box) and v._trace is trace else None for v in ys]

    def back(ybar):
        ybars = tree.flatten_as(ydef, ybar, "the cotangent of the output")
        pairs = [(o, c) for o, c in zip(outs, ybars) if o is not None]
        found = backward([o for o, _ in pairs], [c for _, c in pairs])
        cts = []
        for a, n in zip(args, leaves):
            if n is None:
                cts.append(None)
            else:
                ct = found.get(n)
                cts.append(_zeros_like(a) if ct is None else _cast(ct, a))
        return tuple(cts)

    return tree.map(_own(trace), y), back


def _cast(ct, a):
    """Cotangent in the type of a scalar argument (Python float in, float out).

    A read-only array (a broadcast, or a view that rules may pass on instead
    of a product with ones) is copied: the user owns what `back` returns;
    a cotangent is float or complex, never an integer or boolean array.
    """
    if isinstance(ct, np.ndarray) and not ct.flags.writeable:
        ct = np.array(ct)
    if isinstance(ct, (np.ndarray, np.generic)) and ct.dtype.kind not in "fc":
        ct = np.asarray(ct, np.float64)      # an integer or boolean constant factor's
    if isinstance(ct, (np.ndarray, np.generic)) and np.ndim(ct) == 0:
        if isinstance(a, (float, complex)):
            return complex(ct) if isinstance(a, complex) else float(np.real(ct))
        if not isinstance(a, np.ndarray):
            return ct[()]
    return ct


def value_and_gradient(f: Callable, *args, argnums: int | Sequence[int] = 0,
                       has_aux: bool = False):
    """Value of a real scalar function `f` and its gradient in `argnums`.

    With ``has_aux=True``, `f` returns ``(value, aux)`` and the result is
    ``((value, aux), gradient)``. For a complex argument the gradient is
    ``dL/dx + i dL/dy`` (see `pullback`): ``gradient(lambda z: abs(z)**2, z)``
    is ``2z``, and for holomorphic ``g``, ``conj(gradient(lambda z:
    real(g(z)), z))`` is ``g'(z)``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> v, g = ad.value_and_gradient(lambda x: np.sum(x ** 2), np.array([1.0, 2.0]))
    >>> float(v), g
    (5.0, array([2., 4.]))
    """
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for i in nums:
        if not -len(args) <= i < len(args):
            raise ValueError(f"argnums={argnums} is out of range for {len(args)} arguments")
        if not _differentiable(args[i]):
            raise TypeError(
                f"argument {i} of type {type(args[i]).__name__} is not differentiable; "
                "pass a float or complex scalar or array")
    fixed = list(args)

    def partial(*diff):
        call = list(fixed)
        for i, d in zip(nums, diff):
            call[i] = d
        return f(*call)

    out, back = pullback(partial, *[args[i] for i in nums])
    if has_aux and (type(out) not in (tuple, list) or len(out) != 2):
        raise ValueError("with has_aux=True, f must return (value, aux)")
    val = out[0] if has_aux else out
    if _shape(val) != () or np.iscomplexobj(value(val)):
        raise TypeError(
            f"gradient needs a real scalar output, got shape {_shape(val)} and "
            f"dtype {_dtype(val)}; use ad.pullback for other outputs and "
            "np.real(...) for a complex one")
    grads = back((1.0, None) if has_aux else 1.0)     # None: no cotangent for aux
    return out, grads[0] if isinstance(argnums, int) else grads


def gradient(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """Gradient of a real scalar function `f` in `argnums`.

    See `value_and_gradient` for the complex convention. With ``has_aux``,
    returns ``(gradient, aux)``.

    Examples
    --------
    >>> from topopt import ad
    >>> complex(ad.gradient(lambda z: abs(z) ** 2, 1 + 2j))
    (2+4j)
    """
    out, grads = value_and_gradient(f, *args, argnums=argnums, has_aux=has_aux)
    return (grads, out[1]) if has_aux else grads


def jvp(f: Callable, primals: Sequence, tangents: Sequence):
    """Forward mode: ``(f(*primals), J @ tangents)``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> y, ydot = ad.jvp(np.sin, (0.0,), (2.0,))
    >>> float(ydot)
    2.0
    """
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"jvp got {len(primals)} primals and {len(tangents)} tangents")
    trace = Trace(reverse=False)
    boxed = []
    for i, (p, t) in enumerate(zip(primals, tangents)):
        if t is None:
            boxed.append(p)
            continue
        if not _differentiable(p):
            raise TypeError(
                f"jvp: primal {i} of type {type(p).__name__} has a tangent but is not "
                "differentiable (a float or complex scalar or array is); pass "
                "np.asarray(primal, float), or None as its tangent")
        if _shape(t) != _shape(p):
            raise ValueError(f"tangent {i} has shape {_shape(t)}, primal has {_shape(p)}")
        if np.iscomplexobj(value(t)) and not np.iscomplexobj(value(p)):
            raise TypeError(f"tangent {i} is complex but primal {i} is real")
        boxed.append(Box(p, trace, tangent=t))
    y = f(*boxed)
    own = _own(trace)
    return tree.map(own, y), tree.map(lambda v: _tangent_of(v, trace), y)


def _tangent_of(v, trace):
    """The tangent of one output leaf: its own, zeros for a constant, None for the rest."""
    if isinstance(v, Box) and v._trace is trace:
        return v._tangent
    return _zeros_like(v) if _differentiable(v) else None


def hvp(f: Callable, x, v, *args):
    """Hessian-vector product ``H(x) v`` of a real scalar `f`, forward-over-reverse.

    Extra `args` are passed to `f` and not differentiated.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> ad.hvp(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    array([6., 0.])
    """
    return jvp(lambda x: gradient(f, x, *args), (x,), (v,))[1]
