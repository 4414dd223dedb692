"""The compiled kernels of `topopt.grid.kernels` against the numpy path of `GridOperator`.

Reference: `GridOperator` with ``TOPOPT_NUMBA=0`` (numpy's gather, ``K0 @ X``,
scatter), itself checked against scikit-fem's assembled matrices in
``tests/test_grid_operator.py``. In float64 the two sum in different orders:
equal to 1e-13 relative; in float32 to the single-precision round-off.
"""

import numpy as np
import pytest

from topopt.fem.solvers.vectors import enabled
from topopt.grid import Grid
from topopt.grid.element import elasticity_matrix, heat_matrix
from topopt.grid.operator import CellOperator, GridOperator

pytest.importorskip("numba")

# (shape, components): 2-D and 3-D, heat and elasticity, odd and even row counts
CASES = [((7, 5, 4), 3), ((6, 3, 5), 1), ((1, 2, 3), 3), ((9, 6), 2), ((8, 1), 1), ((2, 7), 2)]


def _operator(shape, comps):
    g = Grid(shape, h=0.5)
    return GridOperator(g, elasticity_matrix(g) if comps > 1 else heat_matrix(g), comps)


def _numpy(monkeypatch, fun):
    monkeypatch.setenv("TOPOPT_NUMBA", "0")
    out = fun()
    monkeypatch.setenv("TOPOPT_NUMBA", "1")
    return out


@pytest.mark.parametrize("shape, comps", CASES)
def test_apply_and_products_equal_numpy(monkeypatch, shape, comps):
    op = _operator(shape, comps)
    rng = np.random.default_rng(len(shape) * 10 + comps)
    E, u, w = rng.random(op.grid.n_el) + 0.1, rng.normal(size=op.ndof), rng.normal(size=op.ndof)
    y0, p0 = _numpy(monkeypatch, lambda: (op.apply(E, u), op.products(u, w)))
    assert enabled()
    y1, p1 = op.apply(E, u), op.products(u, w)
    assert np.max(np.abs(y1 - y0)) <= 1e-13 * np.max(np.abs(y0))
    assert np.max(np.abs(p1 - p0)) <= 1e-13 * np.max(np.abs(p0))
    out = np.full(op.ndof, np.nan)                   # `out` is overwritten, not added to
    assert op.apply(E, u, out=out) is out and np.allclose(out, y0, rtol=0, atol=1e-13)


@pytest.mark.parametrize("shape, comps", CASES)
def test_float32_product_to_single_rounding(monkeypatch, shape, comps):
    op = _operator(shape, comps)
    rng = np.random.default_rng(3)
    E, u = rng.random(op.grid.n_el) + 0.1, rng.normal(size=op.ndof)
    y0 = _numpy(monkeypatch, lambda: op.apply(E, u))
    y = op.apply(E.astype(np.float32), u.astype(np.float32))
    assert y.dtype == np.float32
    assert np.max(np.abs(y - y0)) <= 1e-5 * np.max(np.abs(y0))


def test_switched_off_and_other_operators(monkeypatch):
    monkeypatch.setenv("TOPOPT_NUMBA", "0")
    assert not enabled()
    monkeypatch.setenv("TOPOPT_NUMBA", "1")
    op = _operator((3, 2, 2), 3)
    E = np.ones(op.grid.n_el)
    u = np.ones(op.ndof)
    assert op._compiled(E, op.nodal(u))
    assert not op._compiled(E + 0j, op.nodal(u + 0j))          # complex: numpy
    assert not op._compiled(E.astype(np.float32), op.nodal(u))   # mixed dtypes: numpy
    cells = CellOperator(op.grid, E[:, None, None] * op.K0, 3)
    assert not cells._compiled(E, op.nodal(u))                   # a cell per element: numpy
    assert np.allclose(cells.apply(None, u), op.apply(E, u), atol=1e-12)
