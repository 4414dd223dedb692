"""The PETSc backend's geometric hierarchy (`topopt.fem.petsc.mg`; pure numpy, always run).

The reference is the serial ``"mg-cg"`` hierarchy (`topopt.fem.solvers.multigrid`):
on the free dofs the Galerkin operator ``P^T A P`` of every level must be
the serial one (same eigenvalues), and every fixed coarse dof must be a
decoupled diagonal row.
"""

import numpy as np
import pytest
import scipy.sparse as sps

from topopt import fem
from topopt.fem.petsc.layout import partition
from topopt.fem.petsc.mg import hierarchy, rank_rows
from topopt.fem.solvers.multigrid import GeometricMultigrid

MODELS = {      # name: (model, coarse_size); all coarsen at least twice
    "elasticity 2d": (lambda: fem.elasticity(fem.rectangle(12, 8)), 40),
    "elasticity 3d": (lambda: fem.elasticity(fem.box(8, 4, 4)), 100),
    "heat 3d": (lambda: fem.heat(fem.box(8, 8, 4)), 30),
    "slender 3d": (lambda: fem.elasticity(fem.box(16, 4, 2)), 100),     # semi-coarsening
}


def _setup(name, n_ranks):
    make, coarse = MODELS[name]
    model = make().fix(nodes=lambda x: np.isclose(x[0], 0.0) & (x[1] <= 2.0 + 1e-9))
    S = model.system("superlu")
    nodal = model.basis.nodal_dofs
    lay = partition(S.element_dofs, nodal, S.ndof, n_ranks)
    return model, S, nodal, lay, coarse


def _petsc_matrix(S, lay, a, model):
    """The matrix the ranks assemble (identity rows scaled by mean diag K_e at fixed dofs)."""
    n = S.ndof
    K = sps.lil_matrix((n, n))
    free = lay.petsc[S.free]
    K[np.ix_(free, free)] = S.matrix(a).toarray()
    fixed = lay.petsc[S.fixed]
    K[fixed, fixed] = np.mean(np.diag(S.Ke))
    return K.tocsr()


@pytest.mark.parametrize("n_ranks", [1, 3])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_galerkin_operators_equal_the_serial_hierarchy_on_free_dofs(name, n_ranks):
    model, S, nodal, lay, coarse = _setup(name, n_ranks)
    a = np.random.default_rng(0).uniform(1e-3, 1.0, S.n_el)
    levels = hierarchy(lay, model.mesh.p, nodal, S.fixed, coarse_size=coarse)
    serial = GeometricMultigrid(S, (model.mesh.p, nodal), {"coarse_size": coarse})
    ops = serial.galerkin(S.matrix(a), a)
    assert len(levels) == len(ops) - 1 >= 2
    A = _petsc_matrix(S, lay, a, model)
    scale = np.mean(np.diag(S.Ke))
    for lvl, ref in zip(levels, ops[1:]):
        A = (lvl.P.T @ A @ lvl.P).tocsr()
        dense = A.toarray()
        fixed = np.flatnonzero(np.isclose(np.diag(dense), scale) & (np.count_nonzero(
            dense, axis=1) == 1))
        free = np.setdiff1d(np.arange(lvl.n), fixed)
        assert free.size == ref.shape[0]                    # fixed coarse dofs: decoupled rows
        got = np.linalg.eigvalsh(dense[np.ix_(free, free)])
        want = np.linalg.eigvalsh(ref.toarray())
        assert np.allclose(got, want, rtol=1e-10, atol=1e-12 * want.max())


@pytest.mark.parametrize("n_ranks", [1, 2, 3])
def test_rank_rows_cover_every_row_and_keep_columns_near(n_ranks):
    model, S, nodal, lay, coarse = _setup("elasticity 3d", n_ranks)
    levels = hierarchy(lay, model.mesh.p, nodal, S.fixed, coarse_size=coarse)
    fine_starts = lay.node_starts * lay.bs
    blocks = [rank_rows(levels, fine_starts, r) for r in range(n_ranks)]
    for k, lvl in enumerate(levels):
        P = sps.vstack([sps.csr_matrix((b[k]["data"], b[k]["indices"], b[k]["indptr"]),
                                       shape=(np.diff(b[k]["rows"])[0], lvl.n))
                        for b in blocks]).tocsr()
        assert abs(P - lvl.P).max() == 0
        assert [b[k]["cols"] for b in blocks] == [
            (int(lvl.row_starts[r]), int(lvl.row_starts[r + 1])) for r in range(n_ranks)]
        assert lvl.row_starts[-1] == lvl.n and np.all(np.diff(lvl.row_starts) % lay.bs == 0)
    # P interpolates constants exactly (rows sum to one) except next to the support at x = 0
    x_of_row = np.empty(S.ndof)
    x_of_row[lay.petsc[nodal]] = model.mesh.p[0][None, :]
    sums = np.asarray(levels[0].P.sum(axis=1)).ravel()
    assert np.allclose(sums[x_of_row >= 2.0 - 1e-9], 1.0, rtol=0, atol=1e-14)
    assert np.all((sums >= 0) & (sums <= 1 + 1e-14))


def test_unstructured_mesh_is_refused_with_the_fix():
    mesh = fem.rectangle(6, 4)
    p = mesh.p.copy()
    p[0, 8] += 0.1                                          # one node off the lattice
    model = fem.elasticity(type(mesh)(p, mesh.t)).fix(nodes=lambda x: x[0] == 0)
    S = model.system("superlu")
    lay = partition(S.element_dofs, model.basis.nodal_dofs, S.ndof, 2)
    with pytest.raises(ValueError, match="pc='gamg'"):
        hierarchy(lay, p, model.basis.nodal_dofs, S.fixed)
