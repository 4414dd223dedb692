"""The numba kernels behind `topopt.grid.kernels` (imported only when numba is installed).

One line of elements along the last axis at a time; see `topopt.grid.kernels`.
"""

import numba
import numpy as np
from numba import prange

njit = numba.njit(parallel=True, fastmath=False, cache=True, nogil=True)


@njit
def apply3(K0, E, u, y, parity):
    comps, nx, ny, nz = u.shape[0], u.shape[1] - 1, u.shape[2] - 1, u.shape[3] - 1
    n_loc = 8 * comps
    for r in prange((nx - parity + 1) // 2):
        i = 2 * r + parity
        U = np.empty((n_loc, nz), dtype=u.dtype)
        Y = np.empty((n_loc, nz), dtype=u.dtype)
        for j in range(ny):
            e0 = (i * ny + j) * nz
            for q in range(8):                       # corner (a, b, c) = bits of q
                a, b, c = q >> 2, (q >> 1) & 1, q & 1
                for comp in range(comps):
                    for k in range(nz):
                        U[q * comps + comp, k] = u[comp, i + a, j + b, k + c]
            for m in range(n_loc):
                for k in range(nz):
                    Y[m, k] = 0.0
                for n in range(n_loc):
                    kmn = K0[m, n]
                    for k in range(nz):
                        Y[m, k] += kmn * U[n, k]
                for k in range(nz):
                    Y[m, k] *= E[e0 + k]
            for q in range(8):
                a, b, c = q >> 2, (q >> 1) & 1, q & 1
                for comp in range(comps):
                    for k in range(nz):
                        y[comp, i + a, j + b, k + c] += Y[q * comps + comp, k]


@njit
def apply2(K0, E, u, y, parity):
    comps, nx, ny = u.shape[0], u.shape[1] - 1, u.shape[2] - 1
    n_loc = 4 * comps
    for r in prange((nx - parity + 1) // 2):
        i = 2 * r + parity
        U = np.empty((n_loc, ny), dtype=u.dtype)
        Y = np.empty((n_loc, ny), dtype=u.dtype)
        e0 = i * ny
        for q in range(4):
            a, b = q >> 1, q & 1
            for comp in range(comps):
                for k in range(ny):
                    U[q * comps + comp, k] = u[comp, i + a, k + b]
        for m in range(n_loc):
            for k in range(ny):
                Y[m, k] = 0.0
            for n in range(n_loc):
                kmn = K0[m, n]
                for k in range(ny):
                    Y[m, k] += kmn * U[n, k]
            for k in range(ny):
                Y[m, k] *= E[e0 + k]
        for q in range(4):
            a, b = q >> 1, q & 1
            for comp in range(comps):
                for k in range(ny):
                    y[comp, i + a, k + b] += Y[q * comps + comp, k]


@njit
def products3(K0, v, w, out):
    comps, nx, ny, nz = v.shape[0], v.shape[1] - 1, v.shape[2] - 1, v.shape[3] - 1
    n_loc = 8 * comps
    for i in prange(nx):
        V = np.empty((n_loc, nz), dtype=out.dtype)
        W = np.empty((n_loc, nz), dtype=out.dtype)
        for j in range(ny):
            e0 = (i * ny + j) * nz
            for q in range(8):
                a, b, c = q >> 2, (q >> 1) & 1, q & 1
                for comp in range(comps):
                    for k in range(nz):
                        V[q * comps + comp, k] = v[comp, i + a, j + b, k + c]
                        W[q * comps + comp, k] = w[comp, i + a, j + b, k + c]
            for k in range(nz):
                out[e0 + k] = 0.0
            for m in range(n_loc):
                for n in range(n_loc):
                    kmn = K0[m, n]
                    for k in range(nz):
                        out[e0 + k] += V[m, k] * kmn * W[n, k]


@njit
def products2(K0, v, w, out):
    comps, nx, ny = v.shape[0], v.shape[1] - 1, v.shape[2] - 1
    n_loc = 4 * comps
    for i in prange(nx):
        V = np.empty((n_loc, ny), dtype=out.dtype)
        W = np.empty((n_loc, ny), dtype=out.dtype)
        e0 = i * ny
        for q in range(4):
            a, b = q >> 1, q & 1
            for comp in range(comps):
                for k in range(ny):
                    V[q * comps + comp, k] = v[comp, i + a, k + b]
                    W[q * comps + comp, k] = w[comp, i + a, k + b]
        for k in range(ny):
            out[e0 + k] = 0.0
        for m in range(n_loc):
            for n in range(n_loc):
                kmn = K0[m, n]
                for k in range(ny):
                    out[e0 + k] += V[m, k] * kmn * W[n, k]
