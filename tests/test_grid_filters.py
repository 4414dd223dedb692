"""Grid filters against the mesh filters on ``grid.to_mesh()``: matrices, rules, errors.

The reference for every number is the existing scikit-fem path:
`DensityFilter` (cKDTree weights) and `HelmholtzFilter` (assembled Q1
matrices, SuperLU) on the mesh of the same grid, compared element by
element through ``perm`` (mesh element ``perm[e]`` = grid element ``e``).
"""

import numpy as np
import pytest

from topopt import ad
from topopt._validate import TopoptWarning
from topopt.design import DensityFilter, HelmholtzFilter, apply_filter, apply_filter_transpose
from topopt.grid import Grid
from topopt.grid.filters import GridDensityFilter, GridHelmholtzFilter, density_kernel

# (shape, h, rmin): 2-D and 3-D, h = 1 and 1/2, radius below h (the identity), integer
# and non-integer multiples of h, odd and even counts, grids one element thick
CASES = [
    ((6, 4), 1.0, 1.5),
    ((7, 5), 0.5, 0.3),
    ((9, 4), 1.0, 2.7),
    ((5, 1), 1.0, 2.0),
    ((8, 3), 0.5, 1.25),
    ((4, 3, 5), 1.0, 1.5),
    ((5, 4, 3), 0.5, 1.3),
    ((6, 1, 3), 0.5, 0.4),
    ((3, 4, 4), 1.0, 2.5),
    ((4, 2, 1), 1.0, 3.0),
]
IDS = [f"{'x'.join(map(str, s))}-h{h:g}-r{r:g}" for s, h, r in CASES]


def dense(linear_map, n):
    """The matrix of a linear map by applying it to the unit vectors."""
    return np.column_stack([linear_map(e) for e in np.eye(n)])


def mesh_filters(grid, rmin):
    """The mesh filters of ``grid.to_mesh()`` and ``perm``."""
    mesh, perm = grid.to_mesh()
    return DensityFilter(mesh, rmin), HelmholtzFilter.from_rmin(mesh, rmin), perm


def on_grid(matrix, perm):
    """A mesh-numbered element matrix renumbered to grid elements."""
    return matrix[np.ix_(perm, perm)]


def relative(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("shape, h, rmin", CASES, ids=IDS)
def test_density_filter_is_the_mesh_filter(shape, h, rmin):
    grid = Grid(shape, h)
    ref, _, perm = mesh_filters(grid, rmin)
    flt = GridDensityFilter(grid, rmin)
    F = on_grid(ref.matrix.toarray(), perm)
    assert relative(dense(flt, grid.n_el), F) < 1e-12
    assert relative(dense(flt.transpose, grid.n_el), F.T) < 1e-12
    assert relative(flt.Hs, ref.Hs[perm]) < 1e-12
    if rmin <= h:                        # only the element itself within the radius
        assert np.array_equal(dense(flt, grid.n_el), np.eye(grid.n_el))


@pytest.mark.parametrize("shape, h, rmin", CASES, ids=IDS)
def test_helmholtz_filter_is_the_mesh_filter(shape, h, rmin):
    grid = Grid(shape, h)
    _, ref, perm = mesh_filters(grid, rmin)
    flt = GridHelmholtzFilter.from_rmin(grid, rmin)
    assert flt.r == ref.r
    F = on_grid(dense(ref, grid.n_el), perm)
    FT = on_grid(dense(ref.transpose, grid.n_el), perm)
    assert relative(dense(flt, grid.n_el), F) < 1e-12
    assert relative(dense(flt.transpose, grid.n_el), FT) < 1e-12


@pytest.mark.parametrize("shape, h, rmin", CASES[::3], ids=IDS[::3])
def test_complex_input_by_parts(shape, h, rmin):
    grid = Grid(shape, h)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(grid.n_el) + 1j * rng.standard_normal(grid.n_el)
    for flt in (GridDensityFilter(grid, rmin), GridHelmholtzFilter.from_rmin(grid, rmin)):
        for fun in (flt, flt.transpose):
            assert np.allclose(fun(x), fun(x.real) + 1j * fun(x.imag), rtol=0, atol=1e-14)


@pytest.mark.parametrize("shape, h, rmin", CASES, ids=IDS)
def test_constants_and_mass(shape, h, rmin):
    grid = Grid(shape, h)
    x = np.random.default_rng(2).uniform(0, 1, grid.n_el)
    dens, helm = GridDensityFilter(grid, rmin), GridHelmholtzFilter.from_rmin(grid, rmin)
    for flt in (dens, helm):            # both normalized: constants pass unchanged
        assert np.allclose(flt(np.full(grid.n_el, 0.7)), 0.7, rtol=1e-13, atol=0)
    # natural BCs: the Helmholtz filter keeps the total mass, (1, F x) = (1, x)
    assert helm(x).sum() == pytest.approx(x.sum(), rel=1e-12)


def test_density_kernel_values():
    # top88 eq. (6) at offsets k h: rmin - h |k|, positive part, trimmed to the grid
    k = density_kernel(Grid((5, 5, 5), h=0.5), 1.2)
    assert k.shape == (5, 5, 5)
    assert k[2, 2, 2] == pytest.approx(1.2, rel=1e-15)
    assert k[3, 2, 2] == pytest.approx(0.7, rel=1e-15)
    assert k[3, 3, 3] == pytest.approx(1.2 - 0.5 * np.sqrt(3), rel=1e-15)
    assert k[4, 2, 2] == pytest.approx(0.2, rel=1e-14)
    assert k[4, 4, 2] == 0.0
    assert density_kernel(Grid((3, 1)), 2.0).shape == (3, 1)   # trimmed at one element
    assert density_kernel(Grid((9, 9)), 3.0).shape == (5, 5)   # offset 3 has weight 0


# ------------------------------------------------------------- rule checks

RULE_CASES = {
    "density-2d": lambda: GridDensityFilter(Grid((7, 4), 0.5), 1.3),
    "density-3d": lambda: GridDensityFilter(Grid((4, 3, 3)), 1.8),
    "helmholtz-2d": lambda: GridHelmholtzFilter.from_rmin(Grid((7, 4), 0.5), 1.3),
    "helmholtz-3d": lambda: GridHelmholtzFilter(Grid((4, 3, 3)), 0.6),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("primitive", [apply_filter, apply_filter_transpose])
@pytest.mark.parametrize("name", list(RULE_CASES))
def test_check_rule(name, primitive, seed):
    flt = RULE_CASES[name]()
    x = np.random.default_rng(seed).uniform(0, 1, flt.n)
    report = ad.check_rule(primitive, flt, x, seed=seed)
    assert set(report) == {"arg 1 reverse", "arg 1 forward"}
    assert report["arg 1 reverse"] < 1e-8
    assert report["arg 1 forward"] < 1e-8


@pytest.mark.parametrize("name", list(RULE_CASES))
def test_hvp_and_gradient_through_filter(name):
    flt = RULE_CASES[name]()
    rng = np.random.default_rng(3)
    x, v, w = rng.uniform(0.2, 0.8, flt.n), rng.standard_normal(flt.n), rng.uniform(1, 2, flt.n)

    def f(x):
        y = flt(x)
        return np.sum(w * y * y)

    F = dense(flt, flt.n)                           # f = y^T diag(w) y: grad, Hessian known
    assert np.allclose(ad.gradient(f, x), 2 * F.T @ (w * (F @ x)), rtol=1e-12, atol=1e-14)
    assert np.allclose(ad.hvp(f, x, v), 2 * F.T @ (w * (F @ v)), rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------- bad input

@pytest.mark.parametrize("cls", [GridDensityFilter, GridHelmholtzFilter])
def test_bad_arguments(cls):
    mesh, _ = Grid((3, 2)).to_mesh()
    with pytest.raises(TypeError, match="grid must be a topopt.grid.Grid"):
        cls(mesh, 1.5)
    with pytest.raises(TypeError, match="grid must be"):
        cls((3, 2), 1.5)
    name = "rmin" if cls is GridDensityFilter else "r"
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match=rf"{name} must be > 0"):
            cls(Grid((3, 2)), bad)
    with pytest.raises(ValueError, match=rf"{name} must be finite"):
        cls(Grid((3, 2)), np.nan)
    with pytest.raises(TypeError, match=rf"{name} must be a real number"):
        cls(Grid((3, 2)), "1.5")
    with pytest.raises(ValueError, match="rmin must be > 0"):
        density_kernel(Grid((3, 2)), 0.0)


@pytest.mark.parametrize("make", [lambda g: GridDensityFilter(g, 1.5),
                                  lambda g: GridHelmholtzFilter.from_rmin(g, 1.5)])
def test_bad_design_vectors(make):
    grid = Grid((4, 3, 2))
    flt = make(grid)
    with pytest.raises(ValueError, match=r"x has shape \(4, 3, 2\): expected grid.n_el = 24"):
        flt(np.ones(grid.shape))
    with pytest.raises(ValueError, match=r"y has shape \(23,\): expected grid.n_el = 24"):
        flt.transpose(np.ones(23))
    x = np.ones(24)
    x[5] = np.nan
    with pytest.raises(ValueError, match="x contains NaN or inf"):
        flt(x)
    with pytest.raises(TypeError, match="x must be a numeric array"):
        flt(np.array(["a"] * 24))
    assert np.allclose(flt(np.ones(24, dtype=int)), 1.0)     # integers are read as floats


def test_radius_larger_than_domain_warns():
    grid = Grid((4, 2), h=0.5)                       # largest side 2
    with pytest.warns(TopoptWarning, match="rmin = 2.5 is larger than the domain"):
        GridDensityFilter(grid, 2.5)
    with pytest.warns(TopoptWarning, match=r"2 sqrt\(3\) r \(r = 0.721688\) = 2.5 is larger"):
        GridHelmholtzFilter.from_rmin(grid, 2.5)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GridDensityFilter(grid, 2.0)                 # equal to the domain: no warning
