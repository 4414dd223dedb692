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
numba, or with ``TOPOPT_NUMBA=0`` in the environment, `available` is False
and the operator never calls these. In float64 the kernels sum in another
order than numpy's matrix product, so results agree to round-off (1e-15
relative, ``tests/test_grid_kernels.py``). Compiled on first use per dtype
and dimension (about 2 s each; cached on disk where the package is writable).
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["available", "apply", "products", "chebyshev_step"]

_KERNELS: dict = {}


def available() -> bool:
    """Whether the compiled kernels can run here (numba importable, not disabled).

    ``TOPOPT_NUMBA=0`` in the environment turns them off (the numpy path
    runs), for comparisons and for machines where compiling is unwanted.

    Examples
    --------
    >>> from topopt.grid import kernels
    >>> isinstance(kernels.available(), bool)
    True
    """
    if os.environ.get("TOPOPT_NUMBA", "1").strip() in ("0", "false", "no", "off"):
        return False
    if "numba" not in _KERNELS:
        try:
            import numba
            _KERNELS["numba"] = numba
        except ImportError:
            _KERNELS["numba"] = None
    return _KERNELS["numba"] is not None


def supports(E: np.ndarray, u: np.ndarray) -> bool:
    """Whether `apply` takes coefficients `E` and the nodal array `u`: real float32 or
    float64 of one dtype, `u` contiguous (the caller gives ``K0`` in that dtype)."""
    return (available() and u.dtype in (np.float32, np.float64) and E.dtype == u.dtype
            and u.flags.c_contiguous and u.ndim in (3, 4))


def _compile():
    """The numba kernels (imported once per process, compiled on first call)."""
    if "apply3" not in _KERNELS:
        from . import _jit
        _KERNELS.update(apply3=_jit.apply3, apply2=_jit.apply2, products3=_jit.products3,
                        products2=_jit.products2, chebyshev_step=_jit.chebyshev_step)
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
    >>> y = np.empty((1,) + g.nodes_shape)
    >>> if kernels.available():                          # constants: no flux
    ...     y = kernels.apply(op.K0, E, np.ones((1,) + g.nodes_shape), y)
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


def chebyshev_step(x, r, d, Ad, dinv, c1: float, c2: float) -> bool:
    """One Chebyshev step ``x += d; r -= Ad; d = c1 d + c2 dinv r`` in one pass, in place.

    The operations of `topopt.fem.solvers.smoothers._Chebyshev._step` in the
    same order per entry, so the results are the same to the bit; returns
    False (and does nothing) where the kernels cannot take the arrays (no
    numba, mixed dtypes, views): the caller then runs numpy's passes.
    """
    arrays = (x, r, d, Ad, dinv)
    if not (available() and x.dtype in (np.float32, np.float64)
            and all(a.dtype == x.dtype and a.flags.c_contiguous and a.shape == x.shape
                    for a in arrays)):
        return False
    _compile()["chebyshev_step"](x, r, d, Ad, dinv, x.dtype.type(c1), x.dtype.type(c2))
    return True
