"""The numba kernels behind `topopt.fem.solvers.vectors` (imported only when numba is installed).

Each is one pass over contiguous 1-D arrays on all of numba's threads, the
numpy path's operations per entry in its order (no fused multiply-add:
``fastmath`` off), so the updated vectors equal numpy's to the bit; only the
sums (``r . r``) are added in another order.
"""

import numba
from numba import prange

njit = numba.njit(parallel=True, fastmath=False, cache=True, nogil=True)


@njit
def chebyshev_step(x, r, d, Ad, dinv, c1, c2):
    """``x += d; r -= Ad; d = c1 d + c2 (dinv r)``."""
    for i in prange(x.size):
        x[i] += d[i]
        r[i] -= Ad[i]
        d[i] = d[i] * c1 + c2 * (dinv[i] * r[i])


@njit
def cg_update(x, r, p, q, alpha):
    """``x += alpha p; r -= alpha q``; returns ``r . r``."""
    rr = 0.0
    for i in prange(x.size):
        x[i] += alpha * p[i]
        r[i] -= alpha * q[i]
        rr += r[i] * r[i]
    return rr


@njit
def cg_direction(p, z, beta):
    """``p = z + beta p``."""
    for i in prange(p.size):
        p[i] = z[i] + beta * p[i]
