"""Issue 14, item 5: element stresses, relaxation, p-norm aggregate, adaptive normalisation.

Oracles: Hooke's law on an imposed linear displacement field (every element
shape and plane state), a bar in uniaxial tension, Kirsch's stress
concentration 3 at a small circular hole, the exact area of the meshes; the
four differentiation modes of every differentiable piece (`ad.check_modes`).
The pyMOTO cross-check is ``scripts/crosscheck/pymoto_stress.py``.
"""

import numpy as np
import pytest
import skfem

from topopt import ad, fem
from topopt.fem.shapes import l_shape, plate_with_hole
from topopt.design.interpolation import simp
from topopt.responses.stress import (AdaptiveNormalization, ElementStress, relaxed_stress,
                                     stress_pnorm, von_mises_matrix)

NU, E0 = 0.3, 2.5
LAM, MU = E0 * NU / ((1 + NU) * (1 - 2 * NU)), E0 / (2 * (1 + NU))

MESHES = {
    "quad": fem.rectangle(3, 2),
    "tri": skfem.MeshTri.init_tensor(np.linspace(0, 2, 4), np.linspace(0, 1, 3)),
    "graded quad": skfem.MeshQuad.init_tensor(np.array([0, 0.3, 1.0, 2.2]),
                                              np.array([0, 0.5, 2.0])),
    "plate with hole": plate_with_hole(1.0, 3.0, 4, 3, 1.2),
    "hex": fem.box(2, 2, 1),
    "tet": skfem.MeshTet().refined(1),
}
# (mesh, plane); plane is ignored in 3-D
CASES = [(name, plane) for name in MESHES for plane in ("stress", "strain")
         if MESHES[name].p.shape[0] == 2] + [("hex", "stress"), ("tet", "stress")]
GRAD = np.array([[0.3, -0.7, 0.2], [0.4, -0.1, 0.5], [-0.6, 0.25, 0.15]])   # du_i / dx_j


def hooke_by_hand(dim: int, plane: str) -> tuple[np.ndarray, float]:
    """Voigt stress and von Mises stress of the strain sym(GRAD), from the tensor formulas."""
    eps = 0.5 * (GRAD[:dim, :dim] + GRAD[:dim, :dim].T)
    tr = np.trace(eps)
    if dim == 2 and plane == "stress":
        lam = 2 * LAM * MU / (LAM + 2 * MU)
        sig = lam * tr * np.eye(2) + 2 * MU * eps
        full = np.zeros((3, 3))
        full[:2, :2] = sig
    elif dim == 2:
        full = np.zeros((3, 3))
        full[:2, :2] = LAM * tr * np.eye(2) + 2 * MU * eps
        full[2, 2] = LAM * tr
    else:
        full = LAM * tr * np.eye(3) + 2 * MU * eps
    dev = full - np.trace(full) / 3 * np.eye(3)
    vm = np.sqrt(1.5 * np.sum(dev * dev))
    if dim == 3:
        voigt = [full[0, 0], full[1, 1], full[2, 2], full[1, 2], full[0, 2], full[0, 1]]
    elif plane == "stress":
        voigt = [full[0, 0], full[1, 1], full[0, 1]]
    else:
        voigt = [full[0, 0], full[1, 1], full[2, 2], full[0, 1]]
    return np.array(voigt), vm


def linear_field(model) -> np.ndarray:
    """Nodal dofs of ``u(x) = GRAD x`` (plus a rigid translation)."""
    dim = model.mesh.p.shape[0]
    u_nodes = GRAD[:dim, :dim] @ model.mesh.p + np.arange(1.0, dim + 1.0)[:, None]
    u = np.zeros(model.ndof)
    for c in range(dim):
        u[model.basis.nodal_dofs[c]] = u_nodes[c]
    return u


@pytest.mark.parametrize("name, plane", CASES)
def test_hooke_on_a_linear_field(name, plane):
    mesh = MESHES[name]
    model = fem.elasticity(mesh, nu=NU, E0=E0, plane=plane)
    stress = ElementStress(model, nu=NU, E0=E0, plane=plane)
    u = linear_field(model)
    voigt, vm = hooke_by_hand(mesh.p.shape[0], plane)
    np.testing.assert_allclose(stress.components(u), np.tile(voigt, (model.n_el, 1)),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(stress.von_mises(u), vm, rtol=1e-10)


@pytest.mark.parametrize("plane, expected", [("stress", 1.0), ("strain", np.sqrt(0.79))])
def test_bar_in_uniaxial_tension(plane, expected):
    """sigma_xx = 1, sigma_yy = 0; plane strain adds sigma_zz = nu: vm^2 = (1 + .09 + .49) / 2."""
    model = fem.elasticity(fem.rectangle(6, 2), nu=NU, plane=plane)
    model.fix(nodes=lambda x: np.isclose(x[0], 0), components=0).fix(nodes=(0, 0))
    f = model.traction(lambda x: np.isclose(x[0], 6), (1.0, 0.0))
    u = model.solve(np.ones(model.n_el), f)
    np.testing.assert_allclose(ElementStress(model, nu=NU, plane=plane).von_mises(u), expected,
                               rtol=1e-10)


def kirsch_peak(n_theta: int, n_radial: int, growth: float):
    """Quarter plate 20 x 20 (d/W = 0.1), remote tension 1: the largest vm and where."""
    a, L = 1.0, 10.0
    model = fem.elasticity(plate_with_hole(a, L, n_theta, n_radial, growth), nu=NU)
    model.fix(nodes=lambda x: np.isclose(x[0], 0), components=0)        # symmetry
    model.fix(nodes=lambda x: np.isclose(x[1], 0), components=1)
    f = model.traction(lambda x: np.isclose(x[0], L), (1.0, 0.0))
    vm = ElementStress(model, nu=NU).von_mises(model.solve(np.ones(model.n_el), f))
    e = int(np.argmax(vm))
    return float(vm[e]), fem.element_centroids(model.mesh)[e]


def test_kirsch_stress_concentration_at_a_small_hole():
    """Kirsch (1898): sigma_theta = 3 sigma at the hole's edge, 90 degrees from the load.

    Hole diameter a tenth of the width; for d/W = 0.1 Howland's finite-width
    factor is about 3.03 (Peterson's Stress Concentration Factors).
    The element-centre stress of the mapped mesh: 2.996 at 48 x 40 rings,
    3.017 at 64 x 50 (the first ring 0.014 a wide).
    """
    peak, where = kirsch_peak(64, 50, 1.08)
    assert peak == pytest.approx(3.0, rel=0.05)
    assert peak == pytest.approx(3.03, rel=0.01)
    assert abs(where[0]) < 0.05 and where[1] == pytest.approx(1.0, abs=0.02)   # top of the hole


def test_mesh_areas():
    """The L: n^2 - (n - arm)^2; the plate: L^2 minus the inscribed polygon of the hole."""
    assert fem.element_volumes(l_shape(20, 8, h=0.5)).sum() == pytest.approx(
        0.25 * (400 - 144), rel=1e-12)
    n, a, L = 12, 1.0, 4.0
    polygon = n * 0.5 * a * a * np.sin(0.5 * np.pi / n)
    area = fem.element_volumes(plate_with_hole(a, L, n, 5, 1.3)).sum()
    assert area == pytest.approx(L * L - polygon, rel=1e-12)


def test_l_shape_is_one_element_matrix():
    """Every element a translate of the first: one element matrix, broadcast."""
    model = fem.elasticity(l_shape(10, 4))
    assert model.Ke.strides[0] == 0
    assert model.mesh.p[:, model.mesh.t].max() == 10.0


# ----------------------------------------------------------------- differentiation

def small_problem():
    model = fem.elasticity(l_shape(6, 3), nu=NU)
    model.fix(nodes=lambda x: np.isclose(x[1], 6))
    f = model.point_load((6, 3), (0.0, -1.0))
    return model, f, ElementStress(model, nu=NU)


@pytest.fixture(scope="module")
def state():
    model, f, stress = small_problem()
    rng = np.random.default_rng(1)
    x = rng.uniform(0.2, 1.0, model.n_el)
    u = model.solve(simp(x, 3.0, 1e-9), f)
    return model, f, stress, x, u


def test_modes_of_the_stress_components(state):
    _, _, stress, _, u = state
    report = ad.check_modes(stress.components, u)
    assert max(report.values()) < 1e-7
    report = ad.check_modes(stress.von_mises_squared, u)
    assert max(report.values()) < 1e-6


def test_modes_of_the_von_mises_stress(state):
    """The default step (1e-4 max|u| = 0.035) is too coarse for the sqrt of the smallest
    stresses (0.2); h = 1e-3 gives 2e-10."""
    _, _, stress, _, u = state
    assert max(ad.check_modes(stress.von_mises, u, h=1e-3).values()) < 1e-6


# not P = 2: then PN^2 is linear in sigma_vm^2, and so is check_modes' objective
# (sum w PN)^2 + (w PN)^2: its Hessian is zero and the hvp check compares 0 with 0
@pytest.mark.parametrize("q, P", [(0.5, 8.0), (1.0, 10.0), (0.5, 3.0), (2.0, 2.5)])
def test_modes_of_the_pnorm(state, q, P):
    _, _, stress, x, u = state
    vm2 = stress.von_mises_squared(u)
    # one step for both arguments, below the smallest sigma_vm^2 (0.038)
    report = ad.check_modes(lambda x, s: stress_pnorm(x, s, q=q, P=P), x, vm2, h=1e-3)
    assert max(report.values()) < 1e-6


def test_modes_of_the_relaxed_stress(state):
    _, _, stress, x, u = state
    report = ad.check_modes(lambda x, s: relaxed_stress(x, s, q=0.5), x, stress.von_mises(u),
                            h=1e-3)
    assert max(report.values()) < 1e-6


def test_taylor_of_the_aggregate_through_the_solve(state):
    model, f, stress, x, _ = state
    system = model.system()

    def pn(x):
        u = fem.solve(system, simp(x, 3.0, 1e-9), f)
        return stress_pnorm(x, stress.von_mises_squared(u))

    rate = ad.taylor_test(pn, x, np.random.default_rng(2).standard_normal(x.size))
    assert rate >= 1.9


def test_pnorm_finite_where_a_design_is_void_or_unstressed():
    """qP >= 1 and P >= 2: the gradient stays finite at x = 0 and sigma = 0."""
    x = np.array([0.0, 0.5, 1.0])
    s2 = np.array([4.0, 0.0, 1.0])
    gx = ad.gradient(lambda x: stress_pnorm(x, s2, q=0.5, P=4.0), x)
    gs = ad.gradient(lambda s: stress_pnorm(x, s, q=0.5, P=4.0), s2)
    assert np.all(np.isfinite(gx)) and np.all(np.isfinite(gs))
    # PN = (0 + 0.25^.. ) : d PN / d x_0 = 0 (x^2 at 0), d PN / d s2_1 = 0 (0.5^2 s^2 at 0)
    assert gx[0] == 0.0 and gs[1] == 0.0 and gx[2] > 0 and gs[2] > 0


# ----------------------------------------------------------------- the aggregate

def test_pnorm_approaches_the_maximum_and_is_homogeneous():
    s = np.array([1.0, 2.0, 3.0, 2.5])
    x = np.ones(4)
    values = [float(stress_pnorm(x, s ** 2, q=1.0, P=P)) for P in (2, 8, 64, 512)]
    assert values[0] == pytest.approx(np.sqrt(np.sum(s ** 2)))
    assert np.all(np.diff(values) < 0) and values[-1] == pytest.approx(3.0, rel=2e-3)
    huge = float(stress_pnorm(x, (1e150 * s) ** 2, q=1.0, P=16))       # no overflow
    assert huge == pytest.approx(1e150 * float(stress_pnorm(x, s ** 2, q=1.0, P=16)))


def test_adaptive_normalization_sequence():
    """Le et al. (2010), eq. (21): c_1 = max/PN, then alpha ratio + (1 - alpha) c."""
    norm = AdaptiveNormalization(alpha=0.25)
    ratios = [0.5, 0.8, 0.6]
    c = None
    for k, r in enumerate(ratios):
        got = norm.update(max_stress=2.0 * r, pnorm=2.0)
        c = r if k == 0 else 0.25 * r + 0.75 * c
        assert got == pytest.approx(c)
    exact = AdaptiveNormalization(alpha=1.0)
    s = np.array([1.0, 3.0, 2.0])
    pn = float(stress_pnorm(np.ones(3), s ** 2, q=1.0, P=8))
    assert exact.update(3.0, pn) * pn == pytest.approx(3.0)


def test_von_mises_matrices():
    """Uniaxial 1 -> 1; pure shear tau -> sqrt(3) tau; hydrostatic -> 0."""
    for dim, plane, uni, shear, hydro in [
            (2, "stress", [1, 0, 0], [0, 0, 1], None),
            (2, "strain", [1, 0, 0, 0], [0, 0, 0, 1], [1, 1, 1, 0]),
            (3, "stress", [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 0])]:
        V = von_mises_matrix(dim, plane)
        for vec, want in ((uni, 1.0), (shear, 3.0), (hydro, 0.0)):
            if vec is not None:
                assert np.asarray(vec) @ V @ np.asarray(vec) == pytest.approx(want)


# ----------------------------------------------------------------- bad input

def bad_calls():
    model, f, stress = small_problem()
    x, s = np.full(model.n_el, 0.5), np.ones(model.n_el)
    heat = fem.heat(fem.rectangle(2, 2))
    return [
        (lambda: ElementStress(heat), TypeError, "elasticity Model"),
        (lambda: ElementStress(model, nu=0.25), ValueError, "do not describe this model"),
        (lambda: ElementStress(model, E0=2.0), ValueError, "do not describe this model"),
        (lambda: ElementStress(model, plane="strain"), ValueError, "do not describe"),
        (lambda: ElementStress(model, plane="shell"), ValueError, "plane must be one of"),
        (lambda: ElementStress(model, nu=0.5), ValueError, "nu must be"),
        (lambda: stress.components(np.ones(3)), ValueError, "u has shape"),
        (lambda: stress.components(np.full(model.ndof, np.nan)), ValueError, "u contains NaN"),
        (lambda: relaxed_stress(x, s, q=-1.0), ValueError, "q must be"),
        (lambda: relaxed_stress(x[:3], s), ValueError, "x_phys has shape"),
        (lambda: relaxed_stress(x + 1.0, s), ValueError, "x_phys must lie in"),
        (lambda: relaxed_stress(x, -s), ValueError, "von_mises must lie in"),
        (lambda: stress_pnorm(x, s, P=1.5), ValueError, "P must be"),
        (lambda: stress_pnorm(x, s, q=0.1, P=4.0), ValueError, "q \\* P must be >= 1"),
        (lambda: stress_pnorm(x, 0 * s), ValueError, "every relaxed stress is zero"),
        (lambda: stress_pnorm(x, -s), ValueError, "von_mises_squared must lie in"),
        (lambda: AdaptiveNormalization(alpha=0.0), ValueError, "alpha must be"),
        (lambda: AdaptiveNormalization().update(1.0, 0.0), ValueError, "pnorm must be"),
        (lambda: von_mises_matrix(4), ValueError, "dim must be"),
        (lambda: l_shape(10, 10), ValueError, "arm must be"),
        (lambda: l_shape(10.0, 4), TypeError, "n must be an integer"),
        (lambda: plate_with_hole(a=2.0, L=2.0), ValueError, "L must be"),
        (lambda: plate_with_hole(n_theta=7), ValueError, "n_theta must be even"),
        (lambda: plate_with_hole(growth=0.9), ValueError, "growth must be"),
    ]


@pytest.mark.parametrize("k", range(len(bad_calls())))
def test_bad_input_names_the_parameter(k):
    call, error, fragment = bad_calls()[k]
    with pytest.raises(error, match=fragment):
        call()
