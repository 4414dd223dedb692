"""FE layer: element matrices, analytic solutions, supports, solver backends."""

import ast
import importlib
import pathlib
import sys
import types

import numpy as np
import pytest
import scipy.sparse as sps
import skfem

from topopt import ad, fem
from topopt.fem.solvers.direct import CholmodFactor, SuperLUFactor, factorize_spd, has_module
from topopt.fem.solvers.table import BACKENDS, pick_solver
from topopt.fem.supports import unrestrained_modes

FEM_DIR = pathlib.Path(fem.__file__).parent


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


SOLVERS = fem.available_solvers(iterative=True)


def _left(x):
    return np.isclose(x[0], 0)


def plate():
    return fem.elasticity(fem.rectangle(8, 4))


def brick():
    return fem.elasticity(fem.box(4, 2, 2))


def heat_strips():
    """Two separate 2 x 1 strips side by side (not one lattice)."""
    p = np.array([[0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5], [0, 0, 0, 1, 1, 1] * 2], dtype=float)
    t = np.array([[0, 1, 6, 7], [1, 2, 7, 8], [4, 5, 10, 11], [3, 4, 9, 10]])
    return fem.heat(skfem.MeshQuad(p, t))


# case: (model with too few supports, free rigid-body modes (counted by hand), the
# support that holds them, a lattice (mg-cg can run))
UNSUPPORTED = {
    "roller 2d": (lambda: plate().fix(nodes=_left, components=0), 1,         # u_y translation
                  lambda m: m.fix(nodes=(0.0, 0.0), components=1), True),
    "pin 2d": (lambda: plate().fix(nodes=(0.0, 0.0)), 1,                    # rotation
               lambda m: m.fix(nodes=(8.0, 0.0), components=1), True),
    "free 2d": (plate, 3, lambda m: m.fix(nodes=_left), True),
    "free 3d": (brick, 6, lambda m: m.fix(nodes=_left), True),
    "pin 3d": (lambda: brick().fix(nodes=(0.0, 0.0, 0.0)), 3,               # 3 rotations
               lambda m: m.fix(nodes=_left), True),
    "hinge line 3d": (lambda: brick().fix(nodes=lambda x: _left(x) & np.isclose(x[1], 0)), 1,
                      lambda m: m.fix(nodes=(0.0, 2.0, 0.0), components=0), True),
    "heat floating strip": (lambda: heat_strips().fix(nodes=_left), 1,
                            lambda m: m.fix(nodes=(5.0, 1.0)), False),
    "heat free 1d": (lambda: fem.heat(skfem.MeshLine(np.linspace(0, 1, 6))), 1,
                     lambda m: m.fix(nodes=_left), False),
}


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_unrestrained_modes_are_exact_null_vectors(case):
    """Each reported motion r has r = 0 at the fixed dofs and K(a) r = 0 for any a."""
    build, count, hold, _ = UNSUPPORTED[case]
    model = build()
    args = (model.basis.element_dofs.T, model.Ke, model.ndof)
    geometry = (model.mesh.p, model.basis.nodal_dofs)
    found = unrestrained_modes(*args, model.fixed, geometry)
    assert found.singular and found.count == found.modes.shape[1] == count
    r = found.modes
    assert np.all(r[model.fixed] == 0)
    S = fem.LinearSystem(*args, solver="superlu")
    a = np.random.default_rng(0).uniform(1e-3, 1.0, model.n_el)
    K = S.matrix(a)
    assert np.abs(K @ r).max() <= 1e-13 * abs(K).max() * np.abs(r).max()
    assert not unrestrained_modes(*args, hold(model).fixed, geometry).singular


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_unsupported_models_raise_on_every_backend(case, solver):
    build, count, hold, lattice = UNSUPPORTED[case]
    if solver == "mg-cg" and not lattice:
        pytest.skip("mg-cg needs a lattice")
    model = build()
    f = model.body_load(np.ones(model.components))
    E = np.random.default_rng(1).uniform(0.5, 1.0, model.n_el)
    word = "no fixed dof" if "free " in case or "floating" in case else r"mode\(s\) free"
    with pytest.raises(fem.SingularSystemError, match=word):
        model.solve(E, f, solver)
    hold(model)                                                # the same model, held
    u = model.solve(E, f, solver)
    ref = model.solve(E, f, "superlu")
    np.testing.assert_allclose(u, ref, rtol=0, atol=1e-6 * np.abs(ref).max())


def cut_design(model, kind):
    """Coefficients of a plate clamped at x = 0 with the column 3 < x < 4 cut out.

    "cut": the whole column is void, the part x > 4 floats; "hinge": the
    column keeps its bottom element and the next one keeps only its second
    element, which touch at the node (4, 1) only: the right part turns about it.
    """
    c = fem.element_centroids(model.mesh)
    a = np.ones(model.n_el)
    a[(c[:, 0] > 3) & (c[:, 0] < 4)] = 0.0
    if kind == "hinge":
        a[(c[:, 0] > 3) & (c[:, 0] < 4) & (c[:, 1] < 1)] = 1.0
        a[(c[:, 0] > 4) & (c[:, 0] < 5) & ((c[:, 1] < 1) | (c[:, 1] > 2))] = 0.0
    return a


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("kind", ["cut", "hinge"])
def test_zero_coefficients_that_cut_a_part_loose_raise(kind, solver):
    model = plate().fix(nodes=_left)
    f = model.point_load((8.0, 4.0), (0.0, -1.0))
    a = cut_design(model, kind)
    with pytest.raises(fem.SingularSystemError, match="coefficient is 0 left out"):
        model.solve(a, f, solver)
    # the structural verdict counts the motions: a floating part (3) or one hinge (1)
    S = model.system(solver)
    found = unrestrained_modes(S.element_dofs, S.Ke, S.ndof, S.fixed, S.geometry,
                               active=a != 0)
    assert found.count == (3 if kind == "cut" else 1)
    # Emin = 1e-9 instead of 0 holds the part: a regular system (not a false alarm),
    # solved like SuperLU does (to ~1e-6: its condition number is ~1e10). CG stops at
    # a relative residual 1e-8, below the rounding floor eps |K| |u| / |f| ~ 2e-6 of
    # that system (it raises "CG stalled"): 1e-6 for the CG backends
    a = np.where(a == 0, 1e-9 if solver in fem.available_solvers() else 1e-6, a)
    ref = model.solve(a, f, "superlu")
    u = model.solve(a, f, solver)
    assert abs(f @ u - f @ ref) <= 1e-5 * abs(f @ ref)


@pytest.mark.parametrize("solver", SOLVERS)
def test_singular_to_working_precision_raises(solver):
    """A part held by coefficients of 1e-20 (contrast beyond 1/eps) is caught numerically.

    The structure is sound (no zero coefficient), so only the solve can tell:
    the Rayleigh quotient ``x^T b / x^T D x`` of the computed solution is at
    most about 1e-20 (or the factorization or CG fails outright).
    """
    model = plate().fix(nodes=_left)
    f = model.point_load((8.0, 4.0), (0.0, -1.0))
    a = np.where(cut_design(model, "cut") == 0, 1e-20, 1.0)
    with pytest.raises(fem.SingularSystemError):
        model.solve(a, f, solver)


def test_springs_in_K0_hold_a_free_mode():
    """A spring in the constant part restrains the translation that the roller leaves free."""
    model = plate().fix(nodes=_left, components=0)
    args = (model.basis.element_dofs.T, model.Ke, model.ndof, model.fixed)
    geometry = (model.mesh.p, model.basis.nodal_dofs)
    f = model.point_load((8.0, 4.0), (0.0, -1.0))
    spring = sps.coo_matrix(([2.0], ([model.dofs(nodes=(0.0, 0.0), components=1)[0]],) * 2),
                            shape=(model.ndof, model.ndof))
    with pytest.raises(fem.SingularSystemError, match="mode"):
        fem.solve(fem.LinearSystem(*args, geometry=geometry, solver="superlu"),
                  np.ones(model.n_el), f)
    S = fem.LinearSystem(*args, K0=spring, geometry=geometry, solver="superlu")
    u = fem.solve(S, np.ones(model.n_el), f)
    # the whole load passes through the spring: its extension is F / k = -1 / 2
    assert u[model.dofs(nodes=(0.0, 0.0), components=1)[0]] == pytest.approx(-0.5, rel=1e-9)


def test_wave_like_systems_held_by_K0_are_not_singular():
    """A mass term in K0 holds the constant mode that Ke alone leaves free (PML-like K0)."""
    mesh = fem.rectangle(6, 6)
    basis = skfem.Basis(mesh, skfem.ElementQuad1())
    Ke = skfem.BilinearForm(lambda u, v, w: skfem.helpers.dot(skfem.helpers.grad(u),
                                                              skfem.helpers.grad(v)))
    Ke = Ke.elemental(basis).tolocal()
    M = skfem.BilinearForm(lambda u, v, w: u * v).assemble(basis)
    geometry = (mesh.p, basis.nodal_dofs)
    rng = np.random.default_rng(4)
    f = rng.standard_normal(basis.N) + 1j * rng.standard_normal(basis.N)
    a = rng.uniform(0.5, 1.5, mesh.t.shape[1])
    for solver in COMPLEX_SOLVERS:
        S = fem.LinearSystem(basis.element_dofs.T, Ke, basis.N, (), K0=(-2.0 + 0.7j) * M,
                             symmetric=True, solver=solver, geometry=geometry)
        u = fem.solve(S, a, f)
        K = S.matrix(a)
        assert np.linalg.norm(K @ u - f) <= 1e-10 * np.linalg.norm(f)
    # without the mass term nothing holds the constant
    S = fem.LinearSystem(basis.element_dofs.T, Ke, basis.N, (), solver="superlu",
                         geometry=geometry)
    with pytest.raises(fem.SingularSystemError, match="no fixed dof"):
        fem.solve(S, a, f.real)


def test_singular_systems_raise():
    mesh = fem.rectangle(4, 2)
    with pytest.raises(fem.SingularSystemError, match="no fixed dof"):
        fem.elasticity(mesh).solve(np.ones(8), np.ones(30))
    two_parts = skfem.MeshQuad(np.array([[0, 1, 1, 0, 3, 4, 4, 3], [0, 0, 1, 1, 0, 0, 1, 1.]]),
                               np.array([[0, 4], [1, 5], [2, 6], [3, 7]]))
    model = fem.elasticity(two_parts).fix(nodes=lambda x: x[0] < 2)
    with pytest.raises(fem.SingularSystemError, match="no fixed dof"):
        model.solve(np.ones(2), model.point_load((4, 1), (0, 1)))
    # without geometry only "a fixed dof per connected part" is checked structurally
    S = fem.LinearSystem(model.basis.element_dofs.T, model.Ke, model.ndof, model.fixed,
                         requires_support=True, solver="superlu")
    with pytest.raises(fem.SingularSystemError, match="no fixed dof"):
        fem.solve(S, np.ones(2), model.point_load((4, 1), (0, 1)))
    # ... and the roller case of the issue by the solve (Rayleigh quotient ~1e-16)
    model = fem.elasticity(mesh).fix(nodes=_left, components=0)
    for solver in fem.available_solvers():
        S = fem.LinearSystem(model.basis.element_dofs.T, model.Ke, model.ndof, model.fixed,
                             requires_support=True, solver=solver)
        with pytest.raises(fem.SingularSystemError):
            fem.solve(S, np.ones(8), model.point_load((4, 1), (0, 1)))


def test_bad_input():
    model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda x: np.isclose(x[0], 0))
    f = model.point_load((4, 2), (0, -1))
    with pytest.raises(ValueError, match="one value per element"):
        model.solve(np.ones(7), f)
    with pytest.raises(ValueError, match="NaN"):
        model.solve(np.full(8, np.nan), f)
    with pytest.raises(ValueError, match=r"f has shape \(29,\); expected \(30,\)"):
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


# ------------------------------------------------------------ package layout

def test_fem_all_is_the_public_namespace():
    public = {name for name, value in vars(fem).items()
              if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    assert public == set(fem.__all__)
    assert {"ConvergenceError", "SingularSystemError", "LinearSystem"} <= public
    for path in FEM_DIR.glob("*.py"):
        module = importlib.import_module(f"topopt.fem.{path.stem}")
        missing = [n for n in getattr(module, "__all__", []) if not hasattr(module, n)]
        assert not missing, (path.name, missing)


# ------------------------------------------------------------ backend table

def _without(monkeypatch, *modules):
    """Make `modules` fail to import (as when the optional extra is not installed)."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


# (solver, real, hermitian): the backend with cvxopt installed, and without it
PICKS = [
    ("auto", True, True, "cholmod", "superlu"),
    ("auto", True, False, "umfpack", "superlu"),
    ("auto", False, True, "umfpack", "superlu"),
    ("auto", False, False, "umfpack", "superlu"),
    ("superlu", False, False, "superlu", "superlu"),
    ("cholmod", True, True, "cholmod", ImportError),
    ("cholmod", False, True, ValueError, ImportError),
    ("umfpack", False, False, "umfpack", ImportError),
    ("mg-cg", True, True, "mg-cg", "mg-cg"),
    ("mg-cg", True, False, ValueError, ValueError),
    ("amg-cg", False, True, ValueError, ValueError),
    ("lu", True, True, ValueError, ValueError),
    (None, True, True, ValueError, ValueError),
]


@pytest.mark.parametrize("cvxopt", [True, False], ids=["with-cvxopt", "without-cvxopt"])
@pytest.mark.parametrize("solver, real, hermitian, with_cvxopt, without_cvxopt", PICKS)
def test_pick_solver_table(monkeypatch, cvxopt, solver, real, hermitian, with_cvxopt,
                           without_cvxopt):
    if cvxopt and not has_module("cvxopt.cholmod"):
        pytest.skip("cvxopt is not installed")
    if not cvxopt:
        _without(monkeypatch, "cvxopt", "cvxopt.cholmod", "cvxopt.umfpack")
    expected = with_cvxopt if cvxopt else without_cvxopt
    if isinstance(expected, type):
        with pytest.raises(expected, match="topopt\\[fast\\]|positive definite|unknown solver"):
            pick_solver(solver, real, hermitian)
    else:
        assert pick_solver(solver, real, hermitian) == expected


def test_backend_table_matches_available_solvers():
    assert fem.available_solvers() == [n for n, b in BACKENDS.items()
                                       if not b.iterative and b.available()]
    assert fem.ITERATIVE == ["mg-cg", "amg-cg", "petsc"]
    assert all(BACKENDS[n].hierarchy is not None for n in fem.ITERATIVE)
    assert [n for n, b in BACKENDS.items() if not b.spd_only] == ["umfpack", "superlu"]


@pytest.mark.parametrize("solver, modules", [("cholmod", ["cvxopt", "cvxopt.cholmod"]),
                                             ("umfpack", ["cvxopt", "cvxopt.umfpack"]),
                                             ("amg-cg", ["pyamg"])])
def test_missing_optional_dependency_names_the_extra(monkeypatch, solver, modules):
    _without(monkeypatch, *modules)
    model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda x: x[0] == 0)
    with pytest.raises(ImportError, match=f"solver='{solver}' needs "
                       "(cvxopt|pyamg): pip install 'topopt\\[fast\\]'"):
        model.system(solver)
    assert solver not in fem.available_solvers(iterative=True)
    if solver == "amg-cg":
        from topopt.fem.solvers.amg import SmoothedAggregation
        with pytest.raises(ImportError, match="topopt\\[fast\\]"):
            SmoothedAggregation(model.system("superlu"))


def test_spd_factor_is_cholmod_or_superlu(monkeypatch):
    """The multigrid coarse solve's factor: the same classes as the direct backends."""
    rng = np.random.default_rng(3)
    G = rng.standard_normal((12, 12))
    A = sps.csr_matrix(G @ G.T + 12 * np.eye(12))
    b = rng.standard_normal(12)
    expected = np.linalg.solve(A.toarray(), b)
    if has_module("cvxopt.cholmod"):
        F = factorize_spd(A)
        assert isinstance(F, CholmodFactor)
        np.testing.assert_allclose(F.solve(b), expected, rtol=1e-12)
    _without(monkeypatch, "cvxopt", "cvxopt.cholmod")
    F = factorize_spd(A)
    assert isinstance(F, SuperLUFactor)
    np.testing.assert_allclose(F.solve(b), expected, rtol=1e-12)
