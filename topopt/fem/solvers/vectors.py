"""The vector updates of CG and the Chebyshev smoother, each in one pass where numba runs.

CG's update ``x += alpha p; r -= alpha q`` with ``r . r``, its new direction
``p = z + beta p`` in place, and the smoother's step ``x += d; r -= A d;
d = c1 d + c2 D^-1 r``: numpy needs one to three passes over memory and a
temporary for each product with a scalar, the compiled kernels
(`topopt.fem.solvers._vectors_jit`, numba: the `fast` extra) one pass on all
threads and no temporary. Without numba, with ``TOPOPT_NUMBA=0``
(`enabled`), or for arrays the kernels do not take (mixed
dtypes, complex, non-contiguous), numpy runs the same operations per entry
in the same order: the updated vectors are the same to the bit either way
(``tests/test_vectors.py``); ``r . r`` is summed in another order.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["enabled", "residual", "cg_update", "cg_direction", "chebyshev_step"]

_KERNELS: dict = {}


def enabled() -> bool:
    """Whether compiled kernels can run here (numba importable, not switched off): the one
    switch of these and of `topopt.grid.kernels`.

    ``TOPOPT_NUMBA=0`` (or ``false``, ``no``, ``off``) in the environment turns
    them off: the numpy paths run, for comparisons and where compiling is
    unwanted. numba is imported on the first call only.

    Examples
    --------
    >>> from topopt.fem.solvers.vectors import enabled
    >>> isinstance(enabled(), bool)
    True
    """
    if os.environ.get("TOPOPT_NUMBA", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    if "numba" not in _KERNELS:
        try:
            import numba
            _KERNELS["numba"] = numba
        except ImportError:
            _KERNELS["numba"] = None
    return _KERNELS["numba"] is not None


def _kernels(*arrays: np.ndarray):
    """The compiled kernels where they take `arrays` (one real dtype, contiguous 1-D), else None."""
    first = arrays[0]
    if not (enabled() and first.dtype in (np.float32, np.float64)
            and all(a.dtype == first.dtype and a.ndim == 1 and a.flags.c_contiguous
                    and a.shape == first.shape for a in arrays)):
        return None
    if "cg_update" not in _KERNELS:
        from . import _vectors_jit
        _KERNELS.update(cg_update=_vectors_jit.cg_update, cg_direction=_vectors_jit.cg_direction,
                        chebyshev_step=_vectors_jit.chebyshev_step)
    return _KERNELS


def residual(A, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``b - A x`` made in the array of the product ``A x`` (one allocation, not two).

    ``A @ x`` must return a new array (scipy's sparse products and the
    library's operators do): the result is written into it and returned.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.fem.solvers.vectors import residual
    >>> residual(np.diag([1.0, 2.0]), np.ones(2), np.ones(2))
    array([ 0., -1.])
    """
    r = A @ x
    if r.dtype == np.result_type(b, r) and r.shape == np.shape(b):
        return np.subtract(b, r, out=r)
    return b - r


def cg_update(x: np.ndarray, r: np.ndarray, p: np.ndarray, q: np.ndarray,
              alpha: float) -> float:
    """``x += alpha p`` and ``r -= alpha q`` in place; returns ``r . r``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.fem.solvers.vectors import cg_update
    >>> x, r = np.zeros(3), np.ones(3)
    >>> cg_update(x, r, np.ones(3), np.full(3, 0.5), 2.0), x
    (0.0, array([2., 2., 2.]))
    """
    k = _kernels(x, r, p, q)
    if k is not None:
        return float(k["cg_update"](x, r, p, q, x.dtype.type(alpha)))
    x += alpha * p
    r -= alpha * q
    if np.iscomplexobj(r) or r.ndim != 1:
        return float(np.vdot(r, r).real)
    return float(np.einsum("i,i->", r, r))


def cg_direction(p: np.ndarray, z: np.ndarray, beta: float) -> np.ndarray:
    """``p = z + beta p`` in place; returns `p`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.fem.solvers.vectors import cg_direction
    >>> cg_direction(np.ones(2), np.array([1.0, 2.0]), 0.5)
    array([1.5, 2.5])
    """
    k = _kernels(p, z)
    if k is not None:
        k["cg_direction"](p, z, p.dtype.type(beta))
        return p
    p *= beta
    p += z
    return p


def chebyshev_step(x, r, d, Ad, dinv, c1: float, c2: float) -> None:
    """One Chebyshev step in place: ``x += d; r -= Ad; d = c1 d + c2 (dinv r)``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.fem.solvers.vectors import chebyshev_step
    >>> x, r, d = np.zeros(2), np.ones(2), np.ones(2)
    >>> chebyshev_step(x, r, d, np.full(2, 0.5), np.full(2, 2.0), 0.5, 1.0)
    >>> x, r, d
    (array([1., 1.]), array([0.5, 0.5]), array([1.5, 1.5]))
    """
    k = _kernels(x, r, d, Ad, dinv)
    if k is not None:
        k["chebyshev_step"](x, r, d, Ad, dinv, x.dtype.type(c1), x.dtype.type(c2))
        return
    x += d
    r -= Ad
    d *= c1
    d += c2 * (dinv * r)
