"""The fused vector updates of `topopt.fem.solvers.vectors` against numpy's passes.

Reference: the same operations written with numpy (``TOPOPT_NUMBA=0``), the
code CG and the Chebyshev smoother ran before the kernels existed. The
compiled kernels do them per entry in the same order without fused
multiply-adds, so the updated vectors must be equal to the bit; only ``r . r``
is summed in another order (1e-13 relative).
"""

import numpy as np
import pytest

from topopt.fem.solvers import vectors
from topopt.grid import Grid
from topopt.grid.element import elasticity_matrix

pytest.importorskip("numba")

DTYPES = [np.float64, np.float32]


def _both(monkeypatch, fun, arrays):
    """`fun` on copies of `arrays`, compiled and with numpy's passes: (outputs, arrays) each."""
    runs = []
    for flag in ("1", "0"):
        monkeypatch.setenv("TOPOPT_NUMBA", flag)
        copies = [a.copy() for a in arrays]
        runs.append((fun(*copies), copies))
    return runs


@pytest.mark.parametrize("dtype", DTYPES)
def test_updates_equal_numpy_to_the_bit(monkeypatch, dtype):
    rng = np.random.default_rng(7)
    a = [rng.normal(size=1001).astype(dtype) for _ in range(5)]
    cases = [(lambda x, r, p, q: vectors.cg_update(x, r, p, q, 0.37), a[:4]),
             (lambda p, z: vectors.cg_direction(p, z, -1.3), a[:2]),
             (lambda x, r, d, Ad, dinv: vectors.chebyshev_step(x, r, d, Ad, dinv, 0.6, 1.7), a)]
    for fun, arrays in cases:
        (out1, new1), (out0, new0) = _both(monkeypatch, fun, arrays)
        for v1, v0, old in zip(new1, new0, arrays):
            assert v1.dtype == dtype and np.array_equal(v1, v0)
        if isinstance(out0, float):                      # r . r: another order of the sum
            assert out1 == pytest.approx(out0, rel=1e-13 if dtype == np.float64 else 1e-5)
            assert out0 == pytest.approx(float(np.sum(new0[1].astype(float) ** 2)), rel=1e-5)


def test_arrays_the_kernels_do_not_take_run_numpy(monkeypatch):
    monkeypatch.setenv("TOPOPT_NUMBA", "1")
    x64, x32 = np.ones(4), np.ones(4, np.float32)
    assert vectors._kernels(x64, x64) is not None
    assert vectors._kernels(x64, x32) is None                          # mixed dtypes
    assert vectors._kernels(x64 + 0j, x64 + 0j) is None                # complex
    assert vectors._kernels(np.ones(8)[::2], x64) is None               # a strided view
    assert vectors._kernels(np.ones((2, 2)), np.ones((2, 2))) is None   # not 1-D
    p = np.ones(8)[::2]
    assert np.array_equal(vectors.cg_direction(p, np.arange(4.0), 2.0), [2, 3, 4, 5])
    x, r = np.zeros(2, complex), np.array([1 + 1j, 2j])
    rr = vectors.cg_update(x, r, np.ones(2, complex), np.zeros(2, complex), 1j)
    assert np.allclose(x, 1j) and rr == pytest.approx(6.0)             # |1+1j|^2 + |2j|^2
    monkeypatch.setenv("TOPOPT_NUMBA", "0")
    assert vectors._kernels(x64, x64) is None


@pytest.mark.parametrize("precision", ["double", "mixed"])
def test_multigrid_cg_gives_the_same_bits(monkeypatch, precision):
    """The voxel path's CG (its updates) and V-cycle (its Chebyshev steps) with the kernels
    and with numpy's passes: the same solution to the bit, the same iterations."""
    from topopt.grid.multigrid import GridMultigrid
    monkeypatch.setenv("TOPOPT_NUMBA", "1")          # the grid kernels on in both runs
    g = Grid((12, 6, 6))
    free = np.ones(3 * g.n_nodes)
    free.reshape((3,) + g.nodes_shape)[:, 0] = 0.0                 # the face x = 0 held
    E = np.random.default_rng(0).random(g.n_el) + 1e-3
    b = free * np.random.default_rng(1).normal(size=free.size)

    def solve():
        F = GridMultigrid(g, elasticity_matrix(g), 3, free, None,
                          {"precision": precision, "coarse_size": 100}).factor(E)
        return F.solve(b), F.last_iterations
    taken, kernels = [], vectors._kernels
    monkeypatch.setattr(vectors, "_kernels", lambda *a: taken.append(kernels(*a)) or taken[-1])
    fused, its = solve()
    assert taken and all(k is not None for k in taken)            # the kernels ran every update
    monkeypatch.setattr(vectors, "_kernels", lambda *a: None)
    plain, its0 = solve()
    assert its == its0 > 3 and np.array_equal(fused, plain)
