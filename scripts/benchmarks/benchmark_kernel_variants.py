"""Loop orders of the fused element product tried against `topopt.grid._jit.apply3`.

The kernel of `topopt.grid.kernels` gathers a whole line of ``nz`` elements
(``U``, ``Y``: ``24 x nz``; 20 kB each in float64 at ``nz = 104``, so the two
spill out of a 32 kB L1 cache) and multiplies ``Y[m, :] += K0[m, n] U[n, :]``
row by row. The variants here cut the line into blocks of `CHUNKS` elements
(both buffers in L1), update 4 output rows per pass over ``U[n, :]``
(one load of ``U`` feeding 4 multiply-adds), and allow fused multiply-adds
(numba ``fastmath={"contract"}``). Each product ``K(E) u`` on the 3-D
elasticity grid of `SHAPE` (6.9 M dofs), float64 and float32, median of 5,
with its flop rate (1 152 flops per element) and its difference from the
kernel's result.

    python scripts/benchmarks/benchmark_kernel_variants.py [--out results/benchmark_kernel_variants.json]

Needs numba (the `fast` extra). Measured on 2 EPYC cores (AVX-512), idle
machine, float64 / float32 ms: the kernel 88.7 / 69.9; blocks of 16, 32,
56 elements, one row per pass 251 / 224, 155 / 134, 137 / 92; four rows per
pass 136 / 103, 114 / 86, 104 / 83; with contraction (32, four rows)
129 / 85. None beats the whole-line kernel: the blocks' shorter inner loops
(a bound known only at run time) cost more than the cache misses they save.
"""

from __future__ import annotations

import argparse
import os
import sys

import numba
import numpy as np
from numba import prange

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
import harness  # noqa: E402

SHAPE = (208, 104, 104)
CHUNKS = (16, 32, 56)


def variant(chunk: int, rows: int, fastmath):
    """The product over blocks of `chunk` elements, `rows` (1 or 4) output rows per pass."""
    @numba.njit(parallel=True, fastmath=fastmath, nogil=True)
    def apply3(K0, E, u, y, parity):
        comps, nx, ny, nz = u.shape[0], u.shape[1] - 1, u.shape[2] - 1, u.shape[3] - 1
        n_loc = 8 * comps
        for r in prange((nx - parity + 1) // 2):
            i = 2 * r + parity
            U = np.empty((n_loc, chunk), dtype=u.dtype)
            Y = np.zeros((n_loc, chunk), dtype=u.dtype)
            for j in range(ny):
                e0 = (i * ny + j) * nz
                for k0 in range(0, nz, chunk):
                    w = min(chunk, nz - k0)
                    for q in range(8):
                        a, b, c = q >> 2, (q >> 1) & 1, q & 1
                        for comp in range(comps):
                            for k in range(w):
                                U[q * comps + comp, k] = u[comp, i + a, j + b, k0 + k + c]
                    for m in range(0, n_loc, rows):
                        for mm in range(m, m + rows):
                            for k in range(w):
                                Y[mm, k] = 0.0
                        for n in range(n_loc):
                            if rows == 1:
                                a0 = K0[m, n]
                                for k in range(w):
                                    Y[m, k] += a0 * U[n, k]
                            else:
                                a0, a1, a2, a3 = K0[m, n], K0[m + 1, n], K0[m + 2, n], K0[m + 3, n]
                                for k in range(w):
                                    un = U[n, k]
                                    Y[m, k] += a0 * un
                                    Y[m + 1, k] += a1 * un
                                    Y[m + 2, k] += a2 * un
                                    Y[m + 3, k] += a3 * un
                        for mm in range(m, m + rows):
                            for k in range(w):
                                Y[mm, k] *= E[e0 + k0 + k]
                    for q in range(8):
                        a, b, c = q >> 2, (q >> 1) & 1, q & 1
                        for comp in range(comps):
                            for k in range(w):
                                y[comp, i + a, j + b, k0 + k + c] += Y[q * comps + comp, k]
    return apply3


def variants(smallest: bool) -> dict:
    """The whole-line kernel and the block variants (``smallest``: one of them)."""
    from topopt.grid._jit import apply3
    out = {"kernel (whole line)": apply3}
    for chunk in CHUNKS[:1] if smallest else CHUNKS:
        for rows in (4,) if smallest else (1, 4):
            out[f"blocks of {chunk}, {rows} row(s) per pass"] = variant(chunk, rows, False)
    if not smallest:
        out["blocks of 32, 4 rows, contraction"] = variant(32, 4, {"contract"})
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.options(parser, repeats=5, smallest="16 x 8 x 8, float64, two variants",
                    out=os.path.join(ROOT, "results", "benchmark_kernel_variants.json"))
    args = parser.parse_args(argv)
    from topopt.grid import Grid
    from topopt.grid.element import elasticity_matrix
    shape = (16, 8, 8) if args.smallest else SHAPE
    g = Grid(shape)
    rng = np.random.default_rng(0)
    out = harness.record({"command": harness.command(__file__, argv), "shape": shape, "cases": []},
                         args.repeats)
    for dtype in (np.float64,) if args.smallest else (np.float64, np.float32):
        E = rng.random(g.n_el).astype(dtype)
        u = rng.normal(size=(3,) + g.nodes_shape).astype(dtype)
        K0, ref = elasticity_matrix(g).astype(dtype), None
        for name, fun in variants(args.smallest).items():
            y = np.zeros_like(u)

            def product():
                y[...] = 0.0
                fun(K0, E, u, y, 0)
                fun(K0, E, u, y, 1)

            seconds, _ = harness.timed(product, args.repeats, warmup=1)   # the first compiles
            ref = y.copy() if ref is None else ref
            s = seconds["median"]
            case = {"dtype": np.dtype(dtype).name, "variant": name, "ms": 1e3 * s,
                    "gflop_s": g.n_el * 1152 / s / 1e9, "seconds": seconds,
                    "difference": float(np.max(np.abs(y - ref)) / np.max(np.abs(ref)))}
            out["cases"].append(case)
            print(f"{case['dtype']:8s} {name:36s} {case['ms']:7.1f} ms "
                  f"{case['gflop_s']:5.1f} Gflop/s  {case['difference']:.1e}", flush=True)
    harness.write(args.out, out)
    return out


if __name__ == "__main__":
    main()
