"""Rules for numpy functions that rearrange entries: sort, moveaxis, hstack,
vstack, dstack, column_stack, tile, repeat.

All are linear in their array arguments (sort piecewise: a permutation), so
each pullback is the transposed rearrangement, written with numpy calls that
are recorded again on traced values (hvp, nested gradients).
"""

from __future__ import annotations

import numpy as np

from .callforms import callform
from .core import _dtype, _shape, getitem, value
from .extend import frule, rrule
from .reduce_rules import _cast
from .rulekit import _axes, _filled, _named
from .shapes import scatter_add

__all__: list = []


# --------------------------------------------------------------------- sort

def _sort_index(a, axis):
    """Fancy index with ``a[index] == np.sort(a, axis)``, ties in stable order."""
    a = value(a)
    if axis is None:
        return np.argsort(np.ravel(a), kind="stable")
    ax = int(axis) % a.ndim
    perm = np.argsort(a, axis=ax, kind="stable")
    index = [np.arange(n).reshape([-1 if i == k else 1 for i in range(a.ndim)])
             for k, n in enumerate(a.shape)]
    index[ax] = perm
    return tuple(index)


def _inverse_index(index, axis):
    """The index of the inverse permutation (a scatter of ``arange``, no second sort)."""
    if axis is None:
        inverse = np.empty_like(index)
        inverse[index] = np.arange(index.size)
        return inverse
    ax = int(axis) % len(index)
    perm = index[ax]
    inverse = np.empty_like(perm)
    ranks = np.arange(perm.shape[ax]).reshape([-1 if i == ax else 1 for i in range(perm.ndim)])
    np.put_along_axis(inverse, perm, np.broadcast_to(ranks, perm.shape), axis=ax)
    return tuple(inverse if i == ax else ix for i, ix in enumerate(index))


callform(np.sort, 1, ("axis", "kind", "stable"))


@rrule(np.sort)
def sort_rrule(a, axis=-1, kind=None, stable=None):
    y = np.sort(a, axis=axis, kind=kind, stable=stable)
    shape = _shape(a)
    index = _sort_index(a, axis)
    inverse = _inverse_index(index, axis)

    def sort_pullback(ybar):
        # y = a[perm]: abar = ybar[perm^-1] (a permutation's transpose is its inverse)
        return (np.reshape(getitem(ybar, inverse), shape),)
    return y, sort_pullback


@frule(np.sort)
def sort_frule(primals, tangents, axis=-1, kind=None, stable=None):
    (a,), (adot,) = primals, tangents
    y = np.sort(a, axis=axis, kind=kind, stable=stable)
    index = _sort_index(a, axis)
    return y, getitem(np.ravel(adot) if axis is None else adot, index)


# ----------------------------------------------------------------- moveaxis

callform(np.moveaxis, 1, ("source", "destination"))


@rrule(np.moveaxis)
def moveaxis_rrule(a, source, destination):
    def moveaxis_pullback(ybar):
        return (np.moveaxis(ybar, destination, source),)
    return np.moveaxis(a, source, destination), moveaxis_pullback


@frule(np.moveaxis)
def moveaxis_frule(primals, tangents, source, destination):
    return (np.moveaxis(primals[0], source, destination),
            np.moveaxis(tangents[0], source, destination))


# ---------------------------------------------------------------- stacking

def _lift_h(shape):
    return shape if shape else (1,)


def _lift_v(shape):
    return {0: (1, 1), 1: (1,) + shape}.get(len(shape), shape)


def _lift_d(shape):
    return {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}.get(len(shape), shape)


def _lift_column(shape):
    return {0: (1, 1), 1: shape + (1,)}.get(len(shape), shape)


_STACKING = {
    # fun: (shape of a piece after numpy's atleast_nd, joining axis for that ndim, options)
    np.hstack: (_lift_h, lambda nd: 0 if nd == 1 else 1, ("dtype",)),
    np.vstack: (_lift_v, lambda nd: 0, ("dtype",)),
    np.dstack: (_lift_d, lambda nd: 2, ()),
    np.column_stack: (_lift_column, lambda nd: 1, ()),
}


def _stacking(fun):
    name = f"numpy.{fun.__name__}"
    lift, axis_of, accepts = _STACKING[fun]

    def rewrite(tup, dtype=None):
        """One array is its sequence of rows; ``dtype=`` casts every piece."""
        if type(tup) in (list, tuple) and dtype is None:
            return NotImplemented
        tup = list(tup)
        if dtype is not None:
            tup = [_cast(name, t, dtype) for t in tup]
        return fun(tup)
    callform(fun, 1, accepts, rewrite=rewrite, lift="s")

    @rrule(fun)
    def stacking_rrule(tup):
        shapes = [_shape(t) for t in tup]
        lifted = [lift(s) for s in shapes]
        ax = axis_of(len(lifted[0])) if lifted else 0
        ends = np.cumsum([s[ax] for s in lifted])

        def pullback(ybar):
            pieces = tuple(np.reshape(getitem(ybar, (slice(None),) * ax + (slice(e - s[ax], e),)),
                                      shape)
                           for s, e, shape in zip(lifted, ends, shapes))
            # one array stacks its rows: their cotangents stacked again
            return (pieces if type(tup) in (list, tuple) else np.stack(pieces),)
        return fun(tup), _named(pullback, f"{fun.__name__}_pullback")

    @frule(fun)
    def stacking_frule(primals, tangents):
        return fun(primals[0]), fun(_filled(tangents[0], primals[0]))


for _fun in _STACKING:
    _stacking(_fun)


# ------------------------------------------------------------- tile, repeat

callform(np.tile, 1, ("reps",))


@rrule(np.tile)
def tile_rrule(A, reps):
    shape = _shape(A)
    r = tuple(int(v) for v in np.ravel(reps))
    d = max(len(shape), len(r))
    base = (1,) * (d - len(shape)) + shape
    r = (1,) * (d - len(r)) + r

    def tile_pullback(ybar):
        # y[k, s] (k: the copy, s: the entry of A): sum over the copies k
        split = np.reshape(ybar, tuple(v for pair in zip(r, base) for v in pair))
        return (np.reshape(np.sum(split, axis=tuple(range(0, 2 * d, 2))), shape),)
    return np.tile(A, reps), tile_pullback


@frule(np.tile)
def tile_frule(primals, tangents, reps):
    return np.tile(primals[0], reps), np.tile(tangents[0], reps)


callform(np.repeat, 1, ("repeats", "axis"))


@rrule(np.repeat)
def repeat_rrule(a, repeats, axis=None):
    shape = _shape(a)
    y = np.repeat(a, repeats, axis=axis)
    repeats = value(repeats)
    ax = 0 if axis is None else _axes(axis, len(shape))[0]
    base = (int(np.prod(shape, dtype=int)),) if axis is None else shape

    def repeat_pullback(ybar):
        if np.size(repeats) == 1:
            # each entry repeated r times in a row: sum the r copies
            r = int(np.ravel(repeats)[0])
            g = np.sum(np.reshape(ybar, base[:ax] + (base[ax], r) + base[ax + 1:]), axis=ax + 1)
        else:
            index = np.repeat(np.arange(base[ax]), repeats)
            zeros = np.zeros(base, np.result_type(_dtype(ybar), _dtype(a)))
            g = scatter_add(zeros, (slice(None),) * ax + (index,), ybar)
        return (np.reshape(g, shape),)
    return y, repeat_pullback


@frule(np.repeat)
def repeat_frule(primals, tangents, repeats, axis=None):
    return np.repeat(primals[0], repeats, axis=axis), np.repeat(tangents[0], repeats, axis=axis)
