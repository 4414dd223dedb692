"""fem.modal: consistent mass, the eigenvalue primitive and its rules, beam theory."""

import re

import numpy as np
import pytest
import scipy.sparse as sps
import skfem
from scipy.optimize import brentq

from topopt import ad, fem
from topopt.fem import modal
from topopt.fem.errors import SingularSystemError
from topopt.fem.modal import ModalSystem, eigenmodes, eigenvalues, element_mass, point_mass

# ------------------------------------------------------------------ mass matrix


def rigid_translation(model, component):
    t = np.zeros(model.ndof)
    t[model.basis.nodal_dofs[component]] = 1.0
    return t


@pytest.mark.parametrize("make, rho0", [
    (lambda: fem.elasticity(fem.rectangle(3, 2, h=0.5)), 1.0),
    (lambda: fem.elasticity(skfem.MeshTri.init_circle(2)), 2.5),
    (lambda: fem.elasticity(fem.box(2, 1, 2)), 0.7),
    (lambda: fem.heat(fem.rectangle(4, 3)), 3.0),
])
def test_a_rigid_translation_carries_the_whole_mass(make, rho0):
    """``t^T M t = rho0 |Omega|`` for a unit translation t in each direction."""
    model = make()
    Me = element_mass(model, rho0)
    S = fem.LinearSystem(model.basis.element_dofs.T, Me, model.ndof)
    M = S.matrix(np.ones(model.n_el))
    volume = float(np.sum(fem.element_volumes(model.mesh)))
    for c in range(model.components):
        t = rigid_translation(model, c)
        assert t @ M @ t == pytest.approx(rho0 * volume, rel=1e-12)


def test_bilinear_mass_matrix_is_the_textbook_one():
    """Q4 consistent mass ``rho A / 36 [[4 2 1 2] ...]`` per direction (Cook et al. 2002,
    Sec. 11.3), here as eigenvalues (node order free) on a 2 x 0.5 element."""
    model = fem.elasticity(skfem.MeshQuad.init_tensor(np.array([0.0, 2.0]),
                                                      np.array([0.0, 0.5])))
    Me = element_mass(model, 3.0)[0]
    book = 3.0 * 1.0 / 36 * np.array([[4, 2, 1, 2], [2, 4, 2, 1], [1, 2, 4, 2], [2, 1, 2, 4]])
    expected = np.sort(np.repeat(np.linalg.eigvalsh(book), 2))
    np.testing.assert_allclose(np.linalg.eigvalsh(Me), expected, rtol=1e-12)
    ux, uy = model.basis.nodal_dofs
    assert np.all(Me[np.ix_(ux, uy)] == 0)


def test_point_mass_is_diagonal_on_the_selected_nodes():
    model = fem.elasticity(fem.rectangle(4, 2))
    M0 = point_mass(model, lambda x: np.isclose(x[0], 2.0), 0.25)
    assert M0.shape == (model.ndof, model.ndof) and M0.nnz == 6       # 3 nodes x 2 dofs
    assert M0.sum() == pytest.approx(1.5) and abs(M0 - sps.diags(M0.diagonal())).max() == 0


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(mass=0.0), ValueError, "mass"),
    (dict(mass=np.nan), ValueError, "mass"),
    (dict(mass="1"), TypeError, "mass"),
    (dict(mass=1.0, where=(40.0, 0.0)), ValueError, "point"),
])
def test_point_mass_refuses(kwargs, error, match):
    model = fem.elasticity(fem.rectangle(4, 2))
    with pytest.raises(error, match=match):
        point_mass(model, kwargs.pop("where", (1.0, 1.0)), **kwargs)


def test_element_mass_refuses_bad_density():
    with pytest.raises(ValueError, match="rho0"):
        element_mass(fem.elasticity(fem.rectangle(2, 1)), -1.0)


# ------------------------------------------------------------ closed-form cases


def axial_bar(n=40, L=20.0):
    """A fixed-free bar of n x 1 elements with nu = 0 and u_y = 0: 1-D axial vibration."""
    model = fem.elasticity(fem.rectangle(n, 1, h=L / n), nu=0.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0)).fix(nodes=lambda x: x[0] >= 0, components=1)
    return model


def test_axial_bar_eigenvalues_converge_to_the_rod_formula():
    """``lambda_n = k_n^2 E / rho``, ``k_n = (2n - 1) pi / (2L)`` (fixed-free rod); linear
    elements with consistent mass overestimate it by ``(k_n h)^2 / 12 + O(h^4)`` (the
    dispersion of the discrete rod, Cook et al. 2002, Sec. 11.9)."""
    k = (2 * np.arange(1, 4) - 1) * np.pi / 40.0
    for n in (20, 40):
        S = ModalSystem(axial_bar(n), n_modes=3)
        error = eigenvalues(S, np.ones(n), np.ones(n)) / k ** 2 - 1
        np.testing.assert_allclose(error, (k * 20.0 / n) ** 2 / 12, rtol=0.03)


def timoshenko_cantilever(L, h, E, nu, rho, kappa=5 / 6):
    """First bending frequency of a clamped-free Timoshenko beam (unit thickness).

    The roots ``s`` of ``kGA EI s^4 + (kGA rho I + rho A EI) w^2 s^2 + rho A w^2 (rho I w^2
    - kGA) = 0`` give ``w = C1 cosh(ax) + C2 sinh(ax) + C3 cos(bx) + C4 sin(bx)`` and
    the rotation ``psi``; clamped at 0 (w = psi = 0), free at L (psi' = 0, w' - psi = 0);
    the smallest ``w`` with a singular 4 x 4 system.
    """
    A, I, G = h, h ** 3 / 12, E / (2 * (1 + nu))
    kGA = kappa * G * A

    def det(w):
        c4, c2 = kGA * E * I, (kGA * rho * I + rho * A * E * I) * w ** 2
        c0 = rho * A * w ** 2 * (rho * I * w ** 2 - kGA)
        disc = np.sqrt(c2 ** 2 - 4 * c4 * c0)
        a, b = np.sqrt((disc - c2) / (2 * c4)), np.sqrt((disc + c2) / (2 * c4))
        R = (kGA * a ** 2 + rho * A * w ** 2) / (kGA * a)         # psi / w of e^{ax}
        Q = (rho * A * w ** 2 - kGA * b ** 2) / (kGA * b)         # of the cos/sin pair
        ch, sh, c, s = np.cosh(a * L), np.sinh(a * L), np.cos(b * L), np.sin(b * L)
        rows = [[1, 0, 1, 0], [0, R, 0, -Q],
                [R * a * ch, R * a * sh, Q * b * c, Q * b * s],
                [a * sh - R * sh, a * ch - R * ch, -b * s - Q * s, b * c + Q * c]]
        return np.linalg.det(np.array(rows))

    euler = 1.8751040687 ** 2 * np.sqrt(E * I / (rho * A * L ** 4))
    grid = np.linspace(0.5 * euler, 1.05 * euler, 400)
    d = np.array([det(w) for w in grid])
    i = np.flatnonzero(np.sign(d[:-1]) != np.sign(d[1:]))[0]
    return brentq(det, grid[i], grid[i + 1], xtol=1e-15), euler


def cantilever_omega1(nelx, nely, L=20.0, nu=0.3):
    model = fem.elasticity(fem.rectangle(nelx, nely, h=L / nelx), nu=nu)
    model.fix(nodes=lambda x: np.isclose(x[0], 0))
    S = ModalSystem(model, n_modes=1)
    return float(np.sqrt(eigenvalues(S, np.ones(model.n_el), np.ones(model.n_el))[0]))


def test_timoshenko_frequency_reduces_to_euler_bernoulli_for_a_slender_beam():
    """Shear and rotary inertia lower the frequency by ~ (h/L)^2: 0.2 % at L/h = 20, 2e-5 at
    L/h = 200."""
    w20, e20 = timoshenko_cantilever(20.0, 1.0, 1.0, 0.3, 1.0)
    w200, e200 = timoshenko_cantilever(200.0, 1.0, 1.0, 0.3, 1.0)
    assert 1e-3 < 1 - w20 / e20 < 3e-3
    assert 0 < 1 - w200 / e200 < 3e-5


def test_slender_cantilever_first_frequency_matches_timoshenko():
    """L/h = 20, plane stress, nu = 0.3, E = rho = 1, 160 x 8 bilinear elements (h/8):
    omega_1 within 1 % of Timoshenko's (measured +0.45 %; 80 x 4: +1.6 %; 320 x 16:
    +0.16 %) and of Euler-Bernoulli's (+0.25 %); the error falls with the mesh."""
    timo, euler = timoshenko_cantilever(20.0, 1.0, 1.0, 0.3, 1.0)
    coarse, fine = cantilever_omega1(80, 4), cantilever_omega1(160, 8)
    assert fine == pytest.approx(timo, rel=0.01)
    assert fine == pytest.approx(euler, rel=0.01)
    assert coarse == pytest.approx(timo, rel=0.03)
    assert coarse > fine > timo


# ------------------------------------------------------------- the primitive


def clamped_beam(nelx=12, nely=3, mass=0.0):
    model = fem.elasticity(fem.rectangle(nelx, nely))
    model.fix(nodes=lambda x: np.isclose(x[0], 0) | np.isclose(x[0], nelx))
    M0 = point_mass(model, (nelx / 2, nely / 2), mass) if mass else None
    return model, M0


def random_design(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.05, 1.0, n)
    return 1e-3 + x ** 3, rng.uniform(0.1, 1.0, n)


@pytest.fixture(params=["lapack", "arpack"])
def path(request, monkeypatch):
    if request.param == "arpack":
        monkeypatch.setattr(modal, "DENSE_MAX", 0)
    return request.param


@pytest.mark.parametrize("seed, mass, n_modes", [(0, 0.0, 1), (1, 0.0, 3), (2, 4.0, 3),
                                                 (3, 4.0, 2)])
def test_eigenvalue_rules_in_every_mode(path, seed, mass, n_modes):
    """Reverse, forward, Hessian-vector products and nested gradients of the eigenvalues
    against central differences, in both stiffness and mass coefficients."""
    model, M0 = clamped_beam(mass=mass)
    S = ModalSystem(model, n_modes=n_modes, M0=M0, solver="superlu")
    a, m = random_design(model.n_el, seed)
    report = ad.check_rule(eigenvalues, S, a, m, seed=seed)
    assert set(report) == {"arg 1 reverse", "arg 1 forward", "arg 2 reverse", "arg 2 forward"}
    report = ad.check_modes(lambda a, m: eigenvalues(S, a, m), a, m, seed=seed)
    assert len(report) == 8 and max(report.values()) < 1e-6


@pytest.mark.parametrize("seed, mass", [(0, 0.0), (2, 4.0)])
def test_eigenmode_rules(path, seed, mass):
    """Nelson's mode derivatives (reverse and forward) against central differences."""
    model, M0 = clamped_beam(mass=mass)
    S = ModalSystem(model, n_modes=3, M0=M0, solver="superlu")
    a, m = random_design(model.n_el, seed)
    report = ad.check_rule(eigenmodes, S, a, m, seed=seed)
    assert len(report) == 4
    report = ad.check_modes(lambda a, m: eigenmodes(S, a, m)[:, 2] ** 2, a, m,
                            modes=("reverse", "forward"), seed=seed)
    assert max(report.values()) < 1e-6


def test_lapack_and_arpack_agree(monkeypatch):
    model, M0 = clamped_beam(16, 4, mass=2.0)
    a, m = random_design(model.n_el, 5)
    lam_dense, phi_dense = ModalSystem(model, n_modes=3, M0=M0).modes(a, m)
    monkeypatch.setattr(modal, "DENSE_MAX", 0)
    for solver in fem.available_solvers():
        lam, phi = ModalSystem(model, n_modes=3, M0=M0, solver=solver).modes(a, m)
        np.testing.assert_allclose(lam, lam_dense, rtol=1e-10)
        # the same M-normalised modes up to sign
        np.testing.assert_allclose(np.abs(np.sum(phi * phi_dense, axis=0) / np.sum(
            phi_dense * phi_dense, axis=0)), 1.0, rtol=1e-8)


def test_mode_normalisation_and_homogeneity():
    """``phi^T M phi = 1``; ``lambda(t a, m) = t lambda`` and ``lambda(a, t m) = lambda / t``,
    so the gradients satisfy Euler's relations ``a . dlam/da = lam = -m . dlam/dm``."""
    model, M0 = clamped_beam()
    S = ModalSystem(model, n_modes=2)
    a, m = random_design(model.n_el, 7)
    lam, phi = S.modes(a, m)
    M = S.mass.matrix(m)
    free = S.stiffness.free
    np.testing.assert_allclose(np.einsum("ij,ij->j", phi[free], M @ phi[free]), 1.0,
                               rtol=1e-12)
    ga = ad.gradient(lambda a: eigenvalues(S, a, m)[1], a)
    gm = ad.gradient(lambda m: eigenvalues(S, a, m)[1], m)
    assert a @ ga == pytest.approx(lam[1], rel=1e-9)
    assert m @ gm == pytest.approx(-lam[1], rel=1e-9)


def square_plate(n=6):
    """A uniform square clamped on all sides: lambda_1 = lambda_2 (in-plane modes along x
    and along y, equal by the square's symmetry)."""
    model = fem.elasticity(fem.rectangle(n, n))
    model.fix(nodes=lambda x: np.isclose(x[0], 0) | np.isclose(x[0], n)
              | np.isclose(x[1], 0) | np.isclose(x[1], n))
    return model


def test_repeated_eigenvalue_refuses_a_derivative_of_its_own():
    model = square_plate()
    S = ModalSystem(model, n_modes=3)
    a, m = np.ones(model.n_el), np.ones(model.n_el)
    lam = eigenvalues(S, a, m)
    assert lam[1] - lam[0] < 1e-10 * lam[0] and lam[2] - lam[1] > 0.1 * lam[1]
    assert [list(g) for g in S.groups(S.modes(a, m)[0])] == [[0, 1]]
    with pytest.raises(ValueError, match="eigenvalues 1, 2 are repeated"):
        ad.gradient(lambda a: eigenvalues(S, a, m)[0], a)
    with pytest.raises(ValueError, match="repeated"):
        ad.jvp(lambda a: eigenvalues(S, a, m), (a,), (np.ones_like(a),))
    with pytest.raises(ValueError, match="eigenvalues 1, 2 are repeated"):
        ad.gradient(lambda a: eigenmodes(S, a, m)[20, 1], a)
    assert ad.gradient(lambda a: eigenmodes(S, a, m)[20, 2], a).shape == a.shape
    # the simple one and the group's sum are differentiable: central differences
    d = np.random.default_rng(0).standard_normal(model.n_el)
    h = 1e-6
    for weights in ([0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.5, 0.5, -2.0]):
        w = np.array(weights)
        g = ad.gradient(lambda a: eigenvalues(S, a, m) @ w, a)
        fd = (eigenvalues(S, a + h * d, m) @ w - eigenvalues(S, a - h * d, m) @ w) / (2 * h)
        assert g @ d == pytest.approx(fd, rel=1e-6)


def test_third_derivatives_are_refused_not_wrong():
    """Second derivatives of the modes (third of the eigenvalues) are not implemented."""
    model, _ = clamped_beam()
    S = ModalSystem(model, n_modes=2)
    a, m = random_design(model.n_el, 3)
    with pytest.raises(ad.NoRuleError, match="third derivatives of the eigenvalues"):
        ad.hvp(lambda a: eigenmodes(S, a, m)[10, 0], a, np.ones_like(a))
    with pytest.raises(ad.NoRuleError, match="third derivatives"):
        ad.gradient(lambda a: ad.gradient(lambda b: eigenmodes(S, b, m)[10, 1], a)[0], a)


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize("a_m, match", [
    ((np.ones(35), np.ones(36)), r"a has shape \(35,\)"),
    ((np.ones(36), np.ones((36, 1))), r"m has shape"),
    ((-np.ones(36), np.ones(36)), "a"),
    ((np.ones(36), np.full(36, np.nan)), "m"),
])
def test_bad_coefficients_are_refused(a_m, match):
    model, _ = clamped_beam()
    with pytest.raises(ValueError, match=match):
        eigenvalues(ModalSystem(model), *a_m)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n_modes=0), ValueError, "n_modes"),
    (dict(n_modes=2.0), TypeError, "n_modes"),
    (dict(gap_tol=0.0), ValueError, "gap_tol"),
    (dict(rho0=0.0), ValueError, "rho0"),
    (dict(solver="mg-cg"), ValueError, "direct backend"),
    (dict(M0=sps.eye(3)), ValueError, "M0"),
    (dict(M0=-sps.eye(104)), ValueError, "non-negative"),
    (dict(M0=sps.random(104, 104, density=0.1, random_state=0)), ValueError, "symmetric"),
])
def test_modal_system_refuses(kwargs, error, match):
    model, _ = clamped_beam()
    assert model.ndof == 104
    with pytest.raises(error, match=match):
        ModalSystem(model, **kwargs)


def test_too_many_modes_for_the_free_dofs():
    model, _ = clamped_beam(2, 1)              # the 2 middle nodes: 4 free dofs
    eigenvalues(ModalSystem(model, n_modes=2), np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match=re.escape(
            "n_modes = 3 needs at least 5 free dofs (n_modes + 2); the model has 4")):
        eigenvalues(ModalSystem(model, n_modes=3), np.ones(2), np.ones(2))


@pytest.mark.parametrize("arpack", [False, True])
def test_unsupported_structure_is_singular(monkeypatch, arpack):
    if arpack:
        monkeypatch.setattr(modal, "DENSE_MAX", 0)
    model = fem.elasticity(fem.rectangle(12, 3)).fix(nodes=(0.0, 0.0))     # can rotate
    with pytest.raises(SingularSystemError):
        eigenvalues(ModalSystem(model, solver="superlu"), np.ones(36), np.ones(36))
