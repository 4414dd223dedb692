"""The voxel path (topopt.grid) against the assembled scikit-fem path, number by number.

Source of every reference: the library's mesh path on ``grid.to_mesh()``
(scikit-fem element matrices, the sparse assembly of `LinearSystem`, CHOLMOD
or SuperLU), which shares no code with the grid's operators, transfers,
Galerkin cells or multigrid.
"""

import numpy as np
import pytest
import scipy.sparse as sps
import scipy.sparse.linalg as spla

from topopt import ad, fem
from topopt.grid import (Grid, GridModel, GridMultigrid, GridOperator, CellOperator,
                         cells_from_cells, cells_from_coefficients, elasticity_matrix,
                         grid_elasticity, grid_heat, heat_matrix, prolong, restrict)

RNG = np.random.default_rng(0)
SHAPES = [(5, 3), (4, 1), (3, 2, 2), (2, 1, 3), (4, 4, 1)]


def _mesh_model(grid, physics):
    mesh, perm = grid.to_mesh()
    model = (fem.elasticity if physics == "elasticity" else fem.heat)(mesh)
    return mesh, model, perm


def _dof_map(grid, model, mesh):
    """``sk[d]``: the scikit-fem dof of grid dof ``d`` (component-major)."""
    X = grid.node_coordinates()
    order = np.lexsort(mesh.p[::-1])
    node = np.empty(grid.n_nodes, dtype=np.int64)
    node[np.lexsort(X[::-1])] = order                          # same coordinates, same node
    nodal = model.basis.nodal_dofs                             # (components, n_points)
    return np.concatenate([nodal[c, node] for c in range(nodal.shape[0])])


@pytest.mark.parametrize("physics", ["elasticity", "heat"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("h", [1.0, 0.5])
def test_operator_equals_assembled_matrix(shape, physics, h):
    grid = Grid(shape, h)
    mesh, model, perm = _mesh_model(grid, physics)
    K0 = elasticity_matrix(grid) if physics == "elasticity" else heat_matrix(grid)
    A = GridOperator(grid, K0, model.components)
    sk = _dof_map(grid, model, mesh)
    E = RNG.uniform(0.1, 1.0, grid.n_el)
    Em = np.empty(grid.n_el)
    Em[perm] = E
    K = model.system("superlu").matrix(Em) if False else _full_matrix(model, Em)
    u, v = RNG.standard_normal(A.ndof), RNG.standard_normal(A.ndof)
    um, vm = np.empty(A.ndof), np.empty(A.ndof)
    um[sk], vm[sk] = u, v
    np.testing.assert_allclose(A.apply(E, u), (K @ um)[sk], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(A.diagonal(E), K.diagonal()[sk], rtol=1e-12)
    S = model.system("superlu")
    np.testing.assert_allclose(A.products(v, u), fem.products(S, vm, um)[perm], rtol=1e-11,
                               atol=1e-12)


def _full_matrix(model, E):
    """``sum_e E_e K_e`` on all dofs, by scipy's COO assembly of the scikit-fem matrices."""
    dofs = model.basis.element_dofs.T
    data = E[:, None, None] * np.asarray(model.Ke)
    rows = np.broadcast_to(dofs[:, :, None], data.shape).ravel()
    cols = np.broadcast_to(dofs[:, None, :], data.shape).ravel()
    return sps.csr_matrix((data.ravel(), (rows, cols)), shape=(model.ndof, model.ndof))


@pytest.mark.parametrize("factor", [2, 4])
@pytest.mark.parametrize("shape", [(8, 4), (8, 4, 4), (4, 8, 12)])
def test_transfers_interpolate_linear_fields_and_are_transposes(shape, factor):
    fine = Grid(shape)
    coarse = fine.coarsened(factor)
    Xc, Xf = coarse.node_coordinates(), fine.node_coordinates()
    a = np.arange(1.0, fine.dim + 1)
    lin = lambda X: 0.5 + a @ X                                # noqa: E731
    up = prolong(lin(Xc).reshape((1,) + coarse.nodes_shape), factor).ravel()
    np.testing.assert_allclose(up, lin(Xf), rtol=1e-13)
    c = RNG.standard_normal((2,) + coarse.nodes_shape)
    f = RNG.standard_normal((2,) + fine.nodes_shape)
    assert np.isclose(np.sum(prolong(c, factor) * f), np.sum(c * restrict(f, factor)),
                      rtol=1e-13)


@pytest.mark.parametrize("components", [1, 2, 3])
@pytest.mark.parametrize("factor", [2, 3, 4])
def test_galerkin_cells_are_the_product_p_t_a_p(components, factor):
    shape = ((8, 4) if components < 3 else (8, 4, 4)) if factor != 3 else (
        (18, 9) if components < 3 else (9, 9, 9))
    fine = Grid(shape)
    K0 = heat_matrix(fine) if components == 1 else elasticity_matrix(fine)
    A = GridOperator(fine, K0, components)
    E = RNG.uniform(1e-3, 1.0, fine.n_el)
    coarse = fine.coarsened(factor)
    Ac = CellOperator(coarse, cells_from_coefficients(fine, K0, E, factor, components),
                      components)
    uc = RNG.standard_normal(Ac.ndof)
    shape_c = (components,) + coarse.nodes_shape
    ref = restrict(A.nodal(A.apply(E, prolong(uc.reshape(shape_c), factor).ravel())),
                   factor).ravel()
    np.testing.assert_allclose(Ac.apply(None, uc), ref, rtol=1e-12, atol=1e-12 * abs(ref).max())
    if factor in (2, 3):         # coarser cells from the cells: the product of the factors
        two = cells_from_cells(coarse, Ac.cells, components, factor)
        np.testing.assert_allclose(two, cells_from_coefficients(fine, K0, E, factor ** 2,
                                                                components),
                                   rtol=1e-12, atol=1e-13 * abs(two).max())


CASES = [  # grid, components, options
    ((32, 16), 2, {"coarse_size": 50}),
    ((32, 16), 2, {"coarse_size": 50, "first_factor": 2}),
    ((16, 8, 8), 3, {"coarse_size": 100}),
    ((16, 8, 8), 3, {"coarse_size": 100, "coarse": "rediscretized"}),
    ((16, 8, 8), 1, {"coarse_size": 20, "first_factor": 2}),
    ((12, 6, 6), 3, {"cycle": "W"}),
    ((18, 9, 9), 3, {"coarse_size": 50}),          # by 3, then 3: counts that 2 and 4 do not divide
    ((36, 18), 2, {"coarse_size": 50}),            # by 4, 3 (9 is odd), 3
]


@pytest.mark.parametrize("shape,factors", [
    ((336, 160, 160), [4, 2, 2]), ((324, 162, 162), [3, 2, 3]), ((18, 9, 9), [3, 3]),
    ((60, 30, 30), [3]), ((101, 51, 51), []), ((48, 24, 24), [4]), ((50, 26, 26), [2])])
def test_levels_coarsen_by_4_3_2(shape, factors):
    from topopt.grid import grid_levels
    shapes, found = grid_levels(shape, 3, coarse_size=100 if shape[0] < 20 else 10000)
    assert found == factors
    assert all(tuple(n // f for n in a) == b for a, b, f in zip(shapes, shapes[1:], found))


@pytest.mark.parametrize("shape, components, options", CASES)
def test_multigrid_cg_solves_to_its_tolerance(shape, components, options):
    grid = Grid(shape)
    K0 = heat_matrix(grid) if components == 1 else elasticity_matrix(grid)
    free = np.ones((components,) + grid.nodes_shape)
    free[:, 0] = 0.0                                           # the face x = 0 held
    free = free.ravel()
    springs = np.where(RNG.random(free.size) < 0.01, 0.3, 0.0)
    E = np.where(RNG.random(grid.n_el) < 0.6, 1.0, 1e-3)
    mg = GridMultigrid(grid, K0, components, free, springs, dict(options, rtol=1e-10))
    b = RNG.standard_normal(free.size) * free
    x = mg.factor(E).solve(b)
    from topopt.grid import GridSystem
    S = GridSystem(grid, K0, components, np.flatnonzero(free == 0), springs)
    K = S.matrix(E) + sps.diags(springs)
    keep = np.flatnonzero(free)
    ref = spla.spsolve(K[keep][:, keep].tocsc(), b[keep])
    np.testing.assert_allclose(x[keep], ref, rtol=1e-7, atol=1e-8 * abs(ref).max())
    assert np.all(x[free == 0] == 0.0)


@pytest.mark.parametrize("shape", [(10**6,) * 3, (10**7,) * 3, (10**10, 10**10)])
def test_a_grid_beyond_memory_is_refused_before_any_array(shape):
    """Issue 35: `Grid((10**6,)*3).node_coordinates()` reached numpy's MemoryError, and
    ``np.prod(..., dtype=int64)`` wrapped around past 9.2e18 elements (10**7 per axis)."""
    from topopt.fem.budget import MeshTooLargeError
    with pytest.raises(MeshTooLargeError, match=r"Grid\(.*one value per node and per element"):
        Grid(shape)


def _mixed_case(shape, components, seed=1):
    """A grid, its K0, free mask (the face x = 0 held), springs, SIMP-like E and a load."""
    rng = np.random.default_rng(seed)
    grid = Grid(shape)
    K0 = heat_matrix(grid) if components == 1 else elasticity_matrix(grid)
    free = np.ones((components,) + grid.nodes_shape)
    free[:, 0] = 0.0
    free = free.ravel()
    springs = np.where(rng.random(free.size) < 0.01, 0.3, 0.0)
    E = np.where(rng.random(grid.n_el) < 0.6, 1.0, 1e-3)
    return grid, K0, free, springs, E, rng.standard_normal(free.size) * free


@pytest.mark.parametrize("shape, components, options", [
    ((32, 16), 2, {"coarse_size": 50}),                                   # 3 levels
    ((16, 8, 8), 3, {"coarse_size": 100}),                                # 3 levels
    ((16, 8, 8), 3, {"coarse_size": 100, "coarse": "rediscretized"}),
    ((16, 8, 8), 1, {"coarse_size": 20, "first_factor": 2}),              # 4 levels
    ((12, 6, 6), 3, {"coarse_size": 50, "cycle": "W"})])
def test_mixed_precision_solves_as_double(shape, components, options):
    """precision="mixed" (float32 V-cycle in float64 CG): the solution of the assembled
    matrix (spsolve, as above) and that of "double" to 1e-8, in at most 1.2x its iterations
    (measured: the same count in every case, differences 5e-16 to 4e-12 at rtol 1e-10)."""
    grid, K0, free, springs, E, b = _mixed_case(shape, components)
    x, its = {}, {}
    for precision in ("double", "mixed"):
        mg = GridMultigrid(grid, K0, components, free, springs,
                           dict(options, rtol=1e-10, precision=precision))
        F = mg.factor(E)
        x[precision], its[precision] = F.solve(b), F.last_iterations
    assert np.linalg.norm(x["mixed"] - x["double"]) <= 1e-8 * np.linalg.norm(x["double"])
    assert its["mixed"] <= 1.2 * its["double"]
    from topopt.grid import GridSystem
    K = GridSystem(grid, K0, components, np.flatnonzero(free == 0)).matrix(E) + sps.diags(springs)
    keep = np.flatnonzero(free)
    ref = spla.spsolve(K[keep][:, keep].tocsc(), b[keep])
    np.testing.assert_allclose(x["mixed"][keep], ref, rtol=1e-7, atol=1e-8 * abs(ref).max())
    assert np.all(x["mixed"][free == 0] == 0.0)


@pytest.mark.parametrize("precision", ["double", "mixed"])
def test_the_cycle_runs_in_float32_when_mixed(precision):
    """Every vector a level's operator, a transfer or the coarsest solve sees is float32
    in and out (float64 with "double"); the smoothers' dinv and the coarse cells too, but for the coarsest (factorized in float64); CG's output is float64."""
    grid, K0, free, springs, E, b = _mixed_case((16, 8, 8), 3)
    mg = GridMultigrid(grid, K0, 3, free, springs, {"coarse_size": 100, "precision": precision})
    assert len(mg.grids) == 3
    F = mg.factor(E)
    cycle = F.M.cycle if precision == "mixed" else F.M         # _Single around _VCycle
    seen, coarse = set(), set()

    def spy(fun, into):                                    # the dtypes in and out
        return lambda v: (lambda out: (into.update((v.dtype, out.dtype)), out)[1])(fun(v))
    for op in cycle.A:
        op.apply = spy(op.apply, seen)
    for transfer in cycle.P + cycle.R:
        transfer._apply = spy(transfer._apply, seen)
    cycle.coarse.solver = spy(cycle.coarse.solver, coarse)
    z = F.M(b)
    single = np.dtype(np.float32 if precision == "mixed" else np.float64)
    assert seen == {single} and coarse == {np.dtype(np.float64)} and z.dtype == np.float64
    assert [s.dinv.dtype for s in cycle.smoothers] == [single] * 2
    assert [c.dtype for c in mg._cells(E)] == [single, np.dtype(np.float64)]
    assert F.solve(b).dtype == np.float64 and (F.matrix @ b).dtype == np.float64
