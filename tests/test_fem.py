"""FE layer: element matrices, analytic solutions, supports, solver backends."""

import numpy as np
import pytest
import scipy.sparse as sps
import skfem

from topopt import ad, fem


def top88_KE(nu=0.3):
    """Element stiffness matrix printed in top88 (Andreassen et al. 2011), E = 1."""
    A11 = np.array([[12, 3, -6, -3], [3, 12, 3, 0], [-6, 3, 12, -3], [-3, 0, -3, 12]])
    A12 = np.array([[-6, -3, 0, 3], [-3, -6, -3, -6], [0, -3, -6, 3], [3, -6, 3, -6]])
    B11 = np.array([[-4, 3, -2, 9], [3, -4, -9, 4], [-2, -9, -4, -3], [9, 4, -3, -4]])
    B12 = np.array([[2, -3, 4, -9], [-3, 2, 9, -2], [4, 9, 2, 3], [-9, -2, 3, 2]])
    return 1 / (1 - nu ** 2) / 24 * (np.block([[A11, A12], [A12.T, A11]])
                                     + nu * np.block([[B11, B12], [B12.T, B11]]))


def test_quad_element_matrix_is_top88s_up_to_dof_order():
    Ke = fem.elasticity(fem.rectangle(1, 1)).Ke[0]
    np.testing.assert_allclose(np.linalg.eigvalsh(Ke), np.linalg.eigvalsh(top88_KE()),
                               atol=1e-12)
    assert np.trace(Ke) == pytest.approx(np.trace(top88_KE()), rel=1e-14)


def test_structured_mesh_gets_one_element_matrix():
    model = fem.elasticity(fem.rectangle(5, 3)).fix(nodes=lambda x: np.isclose(x[0], 0))
    assert model.system("superlu").uniform
    tri = fem.elasticity(skfem.MeshTri.init_circle(2)).fix(nodes=(1.0, 0.0))
    assert not tri.system("superlu").uniform


def tip_deflection(model, L):
    tip = model.dofs(nodes=lambda x: np.isclose(x[0], L), components=1)
    return -model.solve(np.ones(model.n_el), model.f)[tip].mean()


def test_cantilever_tip_deflection_matches_timoshenko():
    L, H, P, nu = 40.0, 2.0, 1.0, 0.3
    model = fem.elasticity(fem.rectangle(200, 10, h=0.2), nu=nu)
    model.fix(nodes=lambda x: np.isclose(x[0], 0))
    model.f = model.traction(lambda x: np.isclose(x[0], L), (0, -P / H))
    I, G = H ** 3 / 12, 1 / (2 * (1 + nu))
    timoshenko = P * L ** 3 / (3 * I) + P * L / (5 / 6 * G * H)
    assert tip_deflection(model, L) == pytest.approx(timoshenko, rel=0.02)


def test_3d_slab_agrees_with_plane_stress():
    L, H, h = 20.0, 2.0, 0.5
    slab = fem.elasticity(fem.box(40, 4, 1, h)).fix(nodes=lambda x: np.isclose(x[0], 0))
    slab.f = slab.traction(lambda x: np.isclose(x[0], L), (0, -1 / H, 0))
    plane = fem.elasticity(fem.rectangle(40, 4, h)).fix(nodes=lambda x: np.isclose(x[0], 0))
    plane.f = plane.traction(lambda x: np.isclose(x[0], L), (0, -1 / H))
    # the slab has thickness h: per unit thickness it carries the same load
    assert tip_deflection(slab, L) == pytest.approx(tip_deflection(plane, L), rel=0.02)


def test_uniaxial_bar_on_tetrahedra_is_exact():
    mesh = skfem.MeshTet.init_tensor(np.linspace(0, 4, 5), np.linspace(0, 1, 3),
                                     np.linspace(0, 1, 3))
    model = fem.elasticity(mesh, nu=0.25, E0=2.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0), components=0)
    model.fix(nodes=lambda x: np.isclose(x[1], 0), components=1)
    model.fix(nodes=lambda x: np.isclose(x[2], 0), components=2)
    f = model.traction(lambda x: np.isclose(x[0], 4), (3.0, 0, 0))
    u = model.solve(np.ones(model.n_el), f)
    end = model.dofs(nodes=lambda x: np.isclose(x[0], 4), components=0)
    np.testing.assert_allclose(u[end], 3.0 * 4 / 2.0, rtol=1e-10)        # sigma L / E
    side = model.dofs(nodes=lambda x: np.isclose(x[1], 1), components=1)
    np.testing.assert_allclose(u[side], -0.25 * 3.0 / 2.0, rtol=1e-10)   # -nu sigma / E


def test_heat_on_triangles_from_a_meshio_file(tmp_path):
    path = str(tmp_path / "strip.msh")
    skfem.MeshTri.init_tensor(np.linspace(0, 2, 9), np.linspace(0, 1, 4)).save(path)
    mesh = skfem.Mesh.load(path)
    model = fem.heat(mesh, k0=0.5).fix(nodes=lambda x: np.isclose(x[0], 0))
    T = model.solve(np.ones(model.n_el), model.traction(lambda x: np.isclose(x[0], 2), 1.5))
    hot = model.dofs(nodes=lambda x: np.isclose(x[0], 2))
    np.testing.assert_allclose(T[hot], 1.5 * 2 / 0.5, rtol=1e-10)       # q L / k


def test_several_load_cases_at_once():
    model = fem.elasticity(fem.rectangle(8, 4)).fix(nodes=lambda x: np.isclose(x[0], 0))
    f1, f2 = model.point_load((8, 4), (0, -1)), model.point_load((8, 0), (1, 0))
    E = np.random.default_rng(0).uniform(0.1, 1, model.n_el)
    U = model.solve(E, np.stack([f1, f2], axis=1))
    np.testing.assert_allclose(U[:, 0], model.solve(E, f1), rtol=1e-12)
    np.testing.assert_allclose(U[:, 1], model.solve(E, f2), rtol=1e-12)


@pytest.mark.parametrize("solver", fem.available_solvers())
def test_solve_rule_and_second_order(solver):
    model = fem.elasticity(fem.rectangle(6, 3)).fix(nodes=lambda x: np.isclose(x[0], 0))
    S = model.system(solver)
    rng = np.random.default_rng(1)
    E = rng.uniform(0.2, 1, model.n_el)
    f = np.stack([model.point_load((6, 3), (0, -1)), rng.standard_normal(model.ndof)], axis=1)
    ad.check_rule(fem.solve, S, E, f)
    v, w = rng.standard_normal(model.ndof), rng.standard_normal(model.ndof)
    ad.check_rule(fem.matvec, S, E, v)
    ad.check_rule(fem.products, S, v, w)
    c = lambda E: np.sum(f * fem.solve(S, 1e-3 + E ** 3, f))
    dE = rng.standard_normal(model.n_el)
    hv = ad.hvp(c, E, dE)
    fd = (ad.gradient(c, E + 1e-6 * dE) - ad.gradient(c, E - 1e-6 * dE)) / 2e-6
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-8 * np.abs(hv).max())


def test_one_factorization_per_design_and_self_adjoint_compliance():
    model = fem.elasticity(fem.rectangle(6, 3)).fix(nodes=lambda x: np.isclose(x[0], 0))
    f = model.point_load((6, 3), (0, -1))
    S = model.system("superlu")
    E = np.full(model.n_el, 0.5)
    c = lambda E: 2.5 * (f @ model.solve(E, f, "superlu"))
    _, g = ad.value_and_gradient(c, E)
    assert S.counts["factorizations"] == 1 and S.counts["solves"] == 1
    assert S.counts["adjoints"] == 0 and S.counts["self_adjoint"] == 1   # lambda = 2.5 u
    # the same gradient through the adjoint solve: another objective direction
    w = np.random.default_rng(0).standard_normal(model.ndof)
    g2 = ad.gradient(lambda E: c(E) + 1e-30 * (w @ model.solve(E, f, "superlu")), E)
    assert S.counts["adjoints"] == 1
    np.testing.assert_allclose(g, g2, rtol=1e-12)
    fd = [(c(E + 1e-6 * e) - c(E - 1e-6 * e)) / 2e-6 for e in np.eye(model.n_el)[:4]]
    np.testing.assert_allclose(g[:4], fd, rtol=1e-6)


def complex_system(symmetric, rng, n_side=5, solver="superlu"):
    """A damped wave-like system: K0 = -k^2 M + i c M (+ a skew part if not symmetric)."""
    mesh = fem.rectangle(n_side, n_side)
    basis = skfem.Basis(mesh, skfem.ElementQuad1())
    Ke = skfem.BilinearForm(lambda u, v, w: skfem.helpers.dot(skfem.helpers.grad(u),
                                                              skfem.helpers.grad(v)))
    M = skfem.BilinearForm(lambda u, v, w: u * v).assemble(basis)
    K0 = (-2.0 + 0.7j) * M
    if not symmetric:
        K0 = K0 + 0.3j * sps.triu(M, 1) - 0.1 * sps.tril(M, -1)
    fixed = basis.get_dofs(lambda x: np.isclose(x[0], 0)).all()
    return fem.LinearSystem(basis.element_dofs.T, Ke.elemental(basis).tolocal(), basis.N,
                            fixed, K0=K0, symmetric=symmetric, solver=solver)


COMPLEX_SOLVERS = [s for s in fem.available_solvers() if s != "cholmod"]


@pytest.mark.parametrize("solver", COMPLEX_SOLVERS)
@pytest.mark.parametrize("symmetric", [True, False])
def test_complex_non_hermitian_solve_rule(symmetric, solver):
    rng = np.random.default_rng(3)
    S = complex_system(symmetric, rng, solver=solver)
    a = rng.uniform(0.5, 1.5, S.n_el) + 1j * rng.uniform(-0.3, 0.3, S.n_el)
    f = rng.standard_normal(S.ndof) + 1j * rng.standard_normal(S.ndof)
    K = S.matrix(a).toarray()
    assert not np.allclose(K, K.conj().T)
    assert np.allclose(K, K.T) == symmetric
    for seed in range(3):
        ad.check_rule(fem.solve, S, a, f, seed=seed)
        ad.check_rule(fem.solve, S, a.real, f, seed=seed)


def test_singular_systems_raise():
    mesh = fem.rectangle(4, 2)
    with pytest.raises(fem.SingularSystemError, match="no fixed dof"):
        fem.elasticity(mesh).solve(np.ones(8), np.ones(30))
    two_parts = skfem.MeshQuad(np.array([[0, 1, 1, 0, 3, 4, 4, 3], [0, 0, 1, 1, 0, 0, 1, 1.]]),
                               np.array([[0, 4], [1, 5], [2, 6], [3, 7]]))
    model = fem.elasticity(two_parts).fix(nodes=lambda x: x[0] < 2)
    with pytest.raises(fem.SingularSystemError, match="no fixed dof"):
        model.solve(np.ones(2), model.point_load((4, 1), (0, 1)))
    for solver in fem.available_solvers():
        model = fem.elasticity(mesh).fix(nodes=lambda x: np.isclose(x[0], 0), components=0)
        with pytest.raises(fem.SingularSystemError):
            model.solve(np.ones(8), model.point_load((4, 1), (0, 1)), solver)


def test_bad_input():
    model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda x: np.isclose(x[0], 0))
    f = model.point_load((4, 2), (0, -1))
    with pytest.raises(ValueError, match="one value per element"):
        model.solve(np.ones(7), f)
    with pytest.raises(ValueError, match="NaN"):
        model.solve(np.full(8, np.nan), f)
    with pytest.raises(ValueError, match="load has shape"):
        model.solve(np.ones(8), f[:-1])
    with pytest.raises(ValueError, match="Poisson"):
        fem.elasticity(fem.rectangle(2, 2), nu=0.5)
    with pytest.raises(ValueError, match="nelx"):
        fem.rectangle(0, 3)
    with pytest.raises(ValueError, match="no mesh node"):
        model.fix(nodes=lambda x: x[0] > 100)
    with pytest.raises(ValueError, match="unknown solver"):
        model.system("mumps")
    with pytest.raises(ValueError, match="2 component"):
        model.point_load((0, 0), 1.0)
