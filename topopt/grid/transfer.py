"""Multilinear interpolation between a grid and a coarser one, by strided slices.

The prolongation ``P`` from the nodes of a grid coarsened by `factor` to
its fine nodes is the tensor product of 1-D linear interpolations: fine node
``f j + s`` of an axis gets ``(1 - s/f) c_j + (s/f) c_(j+1)``. Applied one
axis at a time on the nodal array ``(components,) + nodes_shape``; the
restriction is its exact transpose. No matrix is stored.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_factor, check_int, check_real_array

__all__ = ["prolong", "restrict"]



def _prolong_axis(c: np.ndarray, axis: int, factor: int) -> np.ndarray:
    """Linear interpolation of `c` along `axis` to ``factor (m - 1) + 1`` points."""
    m = c.shape[axis]
    shape = list(c.shape)
    shape[axis] = factor * (m - 1) + 1
    out = np.empty(shape, dtype=c.dtype)
    lead = (slice(None),) * axis
    out[lead + (slice(0, None, factor),)] = c
    left, right = c[lead + (slice(0, m - 1),)], c[lead + (slice(1, m),)]
    for s in range(1, factor):
        t = s / factor
        out[lead + (slice(s, None, factor),)] = (1 - t) * left + t * right
    return out


def _restrict_axis(f: np.ndarray, axis: int, factor: int) -> np.ndarray:
    """The transpose of `_prolong_axis`: ``(n - 1) / factor + 1`` points from ``n``."""
    m = (f.shape[axis] - 1) // factor + 1
    lead = (slice(None),) * axis
    out = np.array(f[lead + (slice(0, None, factor),)])
    for s in range(1, factor):
        t = s / factor
        fs = f[lead + (slice(s, None, factor),)]
        out[lead + (slice(0, m - 1),)] += (1 - t) * fs
        out[lead + (slice(1, m),)] += t * fs
    return out


def _nodal(name: str, values) -> np.ndarray:
    """`values` as a real nodal array ``(components,) + nodes_shape``, >= 2 nodes per axis."""
    values = values if isinstance(values, np.ndarray) and values.dtype.kind == "f" \
        else check_real_array(name, values)
    if values.ndim < 2 or min(values.shape[1:]) < 2 or values.shape[0] < 1:
        raise ValueError(f"{name} must be a nodal array (components,) + nodes_shape with at "
                         f"least 2 nodes per axis, got shape {values.shape}")
    return values


def prolong(coarse: np.ndarray, factor: int) -> np.ndarray:
    """``P c`` for the nodal array `coarse` ``(components,) + coarse nodes_shape``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.grid.transfer import prolong, restrict
    >>> prolong(np.array([[0.0, 4.0]]), 4)
    array([[0., 1., 2., 3., 4.]])
    >>> c, f = np.random.default_rng(0).random((2, 3, 3)), np.random.default_rng(1).random((2, 5, 5))
    >>> bool(np.isclose(np.sum(prolong(c, 2) * f), np.sum(c * restrict(f, 2))))
    True
    """
    coarse = _nodal("coarse", coarse)
    factor = check_int("factor", factor, 1, what="elements of the fine grid per coarse element")
    out = coarse
    for axis in range(1, coarse.ndim):
        out = _prolong_axis(out, axis, factor)
    return out


def restrict(fine: np.ndarray, factor: int) -> np.ndarray:
    """``P^T f`` for the nodal array `fine` (the transpose of `prolong`)."""
    fine = _nodal("fine", fine)
    check_factor("factor", factor, [n - 1 for n in fine.shape[1:]],
                 "element count of the fine grid (nodes - 1 per axis)")
    out = fine
    for axis in range(fine.ndim - 1, 0, -1):
        out = _restrict_axis(out, axis, factor)
    return out
