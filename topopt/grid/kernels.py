"""Fused element-by-element kernels of `GridOperator`, compiled with numba (the `fast` extra).

``y = sum_e E_e K0 u_e`` gathered, multiplied, scaled and scattered in one
pass, one line of elements along the last axis at a time: the line's element
vectors ``(n_loc, n_line)`` sit in two small buffers (a few kB, in cache), the
``K0`` product runs as ``n_loc^2`` contiguous multiply-adds over the line
(vectorized by the compiler), and nothing of size ``(n_loc, n_el)`` is ever
allocated. The two cores split the x-rows of elements; rows of one parity
touch disjoint node planes (row ``i`` writes planes ``i`` and ``i + 1``), so
the even rows run in parallel, then the odd ones: no write races, no locks.
The element products ``v_e^T K0 w_e`` (sensitivities) write one value per
element and need no colouring.

numpy (`topopt.grid.operator`) stays the reference and the fallback: without
numba, or with ``TOPOPT_NUMBA=0`` in the environment (`topopt.fem.solvers.vectors.enabled`
is False), the operator never calls these. In float64 the kernels sum in another
order than numpy's matrix product, so results agree to round-off (1e-15
relative, ``tests/test_grid_kernels.py``). Compiled on first use per dtype
and dimension (about 2 s each; cached on disk where the package is writable).
"""

from __future__ import annotations

import numpy as np

from ..fem.solvers.vectors import enabled

__all__ = ["supports", "apply", "products"]

_KERNELS: dict = {}


def supports(E: np.ndarray, u: np.ndarray) -> bool:
    """Whether `apply` takes coefficients `E` and the nodal array `u`: real float32 or
    float64 of one dtype, `u` contiguous (the caller gives ``K0`` in that dtype)."""
    return (enabled() and u.dtype in (np.float32, np.float64) and E.dtype == u.dtype
            and u.flags.c_contiguous and u.ndim in (3, 4))


def _compile():
    """The numba kernels (imported once per process, compiled on first call)."""
    if "apply3" not in _KERNELS:
        from . import _jit
        _KERNELS.update(apply3=_jit.apply3, apply2=_jit.apply2, products3=_jit.products3,
                        products2=_jit.products2)
    return _KERNELS


def apply(K0: np.ndarray, E: np.ndarray, u: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``y = sum_e E_e K0 u_e`` on nodal arrays ``(components,) + nodes_shape`` (overwrites `y`).

    `K0`, `E`, `u` and `y` share one real dtype (`supports`); local dofs are
    node-major as in `topopt.grid.element`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.grid import Grid, kernels
    >>> from topopt.grid.element import heat_matrix
    >>> from topopt.grid.operator import GridOperator
    >>> g = Grid((3, 2, 2)); op = GridOperator(g, heat_matrix(g), 1)
    >>> E = np.arange(1.0, 13.0)
    >>> u, y = np.ones((1,) + g.nodes_shape), np.empty((1,) + g.nodes_shape)
    >>> if kernels.supports(E, u):                      # constants: no flux
    ...     y = kernels.apply(op.K0, E, u, y)
    ... else:
    ...     y = op.apply(E, np.ones(36))
    >>> bool(np.allclose(y, 0.0))
    True
    """
    k = _compile()
    run = k["apply3"] if u.ndim == 4 else k["apply2"]
    y[...] = 0.0
    run(K0, E, u, y, 0)
    run(K0, E, u, y, 1)
    return y


def products(K0: np.ndarray, v: np.ndarray, w: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Per element ``v_e^T K0 w_e`` of nodal arrays `v`, `w` into `out` ``(n_el,)``."""
    k = _compile()
    (k["products3"] if v.ndim == 4 else k["products2"])(K0, v, w, out)
    return out
