"""Density and Helmholtz filters: brute-force and matrix oracles, rules, errors."""

import numpy as np
import pytest
from skfem import (Basis, ElementQuad0, ElementQuad1, MeshHex, MeshQuad, MeshTet,
                   MeshTri, MeshWedge1)
from skfem.models.poisson import laplace, mass

from topopt import ad
from topopt.design import (DensityFilter, HelmholtzFilter, apply_filter, apply_filter_transpose,
                           helmholtz_radius)
from topopt.design.interpolation import project, simp

QUAD = MeshQuad.init_tensor(np.linspace(0, 3, 7), np.linspace(0, 2, 5))
TRI = MeshTri.init_tensor(np.linspace(0, 2, 5), np.linspace(0, 1, 4))
HEX = MeshHex.init_tensor(*[np.linspace(0, 1, 4)] * 3)
TET = MeshTet().refined(1)
# graded: element sizes from 0.25 to 2, so the normalized weights are far from symmetric
GRADED = MeshQuad.init_tensor(np.array([0, 0.25, 0.5, 1, 1.75, 3, 5]),
                              np.array([0, 0.3, 1, 2.2, 3]))


def dense(linear_map, n):
    """The matrix of a linear map by applying it to the unit vectors."""
    return np.column_stack([linear_map(e) for e in np.eye(n)])


def brute_force_weights(mesh, rmin):
    """H_ij = max(0, rmin - |c_i - c_j|), element by element."""
    n = mesh.t.shape[1]
    c = [(mesh.p[:, mesh.t[:, e]].min(axis=1) + mesh.p[:, mesh.t[:, e]].max(axis=1)) / 2
         for e in range(n)]  # bounding-box centre: the centroid of an axis-aligned quad
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            H[i, j] = max(0.0, rmin - float(np.sqrt(np.sum((c[i] - c[j]) ** 2))))
    return H


def brute_force_filter(H, x):
    n = len(x)
    out = np.zeros(n)
    for i in range(n):
        num = den = 0.0
        for j in range(n):
            num += H[i, j] * x[j]
            den += H[i, j]
        out[i] = num / den
    return out


def brute_force_transpose(H, y):
    n = len(y)
    out = np.zeros(n)
    for j in range(n):
        for i in range(n):
            out[j] += H[i, j] * y[i] / np.sum(H[i])
    return out


# ------------------------------------------------------------ density filter

def test_density_filter_matches_brute_force_on_6x4_mesh():
    mesh = MeshQuad.init_tensor(np.arange(7.0), np.arange(5.0))
    flt = DensityFilter(mesh, 1.5)
    H = brute_force_weights(mesh, 1.5)
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, 24), rng.standard_normal(24)
    np.testing.assert_allclose(flt(x), brute_force_filter(H, x), rtol=1e-14)
    np.testing.assert_allclose(flt.transpose(y), brute_force_transpose(H, y), rtol=1e-13)
    np.testing.assert_allclose(flt.H.toarray(), H, rtol=1e-14)
    # an interior element: itself 1.5, four edge neighbours 0.5, four diagonal 1.5 - sqrt(2)
    interior = np.flatnonzero(np.all(np.abs(mesh.p[:, mesh.t].mean(axis=1).T - [2.5, 1.5]) < 1e-12,
                                     axis=1))[0]
    assert flt.Hs[interior] == pytest.approx(1.5 + 4 * 0.5 + 4 * (1.5 - np.sqrt(2)), rel=1e-14)
    # a corner element: itself, two neighbours, one diagonal
    corner = np.flatnonzero(np.all(np.abs(mesh.p[:, mesh.t].mean(axis=1).T - [0.5, 0.5]) < 1e-12,
                                   axis=1))[0]
    assert flt.Hs[corner] == pytest.approx(1.5 + 2 * 0.5 + (1.5 - np.sqrt(2)), rel=1e-14)


def test_density_filter_graded_mesh_pullback():
    flt = DensityFilter(GRADED, 1.6)
    n = GRADED.t.shape[1]
    H = brute_force_weights(GRADED, 1.6)
    F = flt.matrix.toarray()
    assert np.abs(F - F.T).max() > 0.05  # the pullback is not the forward map
    rng = np.random.default_rng(1)
    x, w = rng.uniform(0, 1, n), rng.standard_normal(n)
    np.testing.assert_allclose(flt(x), brute_force_filter(H, x), rtol=1e-13)

    def f(x):
        return flt(x) @ w

    g = ad.gradient(f, x)
    h = 1e-6
    fd = np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(n)])
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(g, brute_force_transpose(H, w), rtol=1e-13)
    assert np.abs(g - F @ w).max() > 0.1


def test_density_filter_matrix_and_operator():
    flt = DensityFilter(TRI, 0.6)
    n = TRI.t.shape[1]
    F = flt.matrix.toarray()
    np.testing.assert_allclose(F.sum(axis=1), 1.0, rtol=1e-14)  # rows are averages
    np.testing.assert_allclose(dense(flt, n), F, rtol=1e-14)
    np.testing.assert_allclose(dense(flt.transpose, n), F.T, rtol=1e-14)
    np.testing.assert_allclose(dense(flt.operator.rmatvec, n), F.T, rtol=1e-14)
    assert np.count_nonzero(F) < n * n  # the radius actually truncates


def test_density_filter_complex_and_3d():
    flt = DensityFilter(HEX, 0.5)
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((2, 27))
    np.testing.assert_allclose(flt(a + 1j * b), flt(a) + 1j * flt(b), rtol=1e-14)
    np.testing.assert_allclose(flt(np.ones(27)), 1.0, rtol=1e-14)


# ---------------------------------------------------------- Helmholtz filter

@pytest.mark.filterwarnings("ignore:filter radius:topopt._validate.TopoptWarning")  # r ~ domain
@pytest.mark.parametrize("mesh", [QUAD, TRI, HEX, TET], ids=["quad", "tri", "hex", "tet"])
def test_helmholtz_preserves_constants_and_mass(mesh):
    flt = HelmholtzFilter(mesh, 0.3)
    n = mesh.t.shape[1]
    np.testing.assert_allclose(flt(np.full(n, 0.7)), 0.7, rtol=0, atol=1e-12)
    np.testing.assert_allclose(flt.transpose(flt.measures), flt.measures, rtol=1e-12)
    # natural BCs conserve the integral: sum(|e| (F x)_e) = sum(|e| x_e)
    x = np.random.default_rng(3).uniform(0, 1, n)
    y = flt(x)
    assert flt.measures @ y == pytest.approx(flt.measures @ x, rel=1e-12)
    assert np.ptp(y) < np.ptp(x)  # and it smooths


def test_helmholtz_matches_dense_construction():
    mesh, r = QUAD, 0.4
    basis = Basis(mesh, ElementQuad1())
    basis0 = basis.with_element(ElementQuad0())
    Kf = (r ** 2 * laplace.assemble(basis) + mass.assemble(basis)).toarray()
    T = mass.assemble(basis0, basis).toarray()
    vol = np.full(24, 0.25)  # 0.5 x 0.5 elements
    F = np.diag(1 / vol) @ T.T @ np.linalg.solve(Kf, T)
    flt = HelmholtzFilter(mesh, r)
    np.testing.assert_allclose(flt.measures, vol, rtol=1e-14)
    np.testing.assert_allclose(dense(flt, 24), F, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dense(flt.transpose, 24), F.T, rtol=1e-12, atol=1e-14)


@pytest.mark.filterwarnings("ignore:filter radius:topopt._validate.TopoptWarning")  # r ~ domain
@pytest.mark.parametrize("mesh", [GRADED, TRI, HEX], ids=["graded", "tri", "hex"])
def test_helmholtz_pullback_is_transpose(mesh):
    flt = HelmholtzFilter(mesh, 0.5)
    n = mesh.t.shape[1]
    rng = np.random.default_rng(4)
    x, ybar = rng.uniform(0, 1, n), rng.standard_normal(n)
    y, back = ad.pullback(flt, x)
    np.testing.assert_array_equal(y, flt(x))
    np.testing.assert_allclose(back(ybar)[0], dense(flt, n).T @ ybar, rtol=1e-11, atol=1e-14)
    # dot-product identity <F x, y> = <x, F^T y>
    assert flt(x) @ ybar == pytest.approx(x @ flt.transpose(ybar), rel=1e-12)
    if mesh is GRADED:  # F is not symmetric there, so the test can tell F from F^T
        F = dense(flt, n)
        assert np.abs(F - F.T).max() > 0.05


@pytest.mark.filterwarnings("ignore:filter radius:topopt._validate.TopoptWarning")  # r ~ domain
def test_helmholtz_factorizes_once(monkeypatch):
    flt = HelmholtzFilter(HEX, 0.3)
    import topopt.design.helmholtz_filter

    def no_factorization(*args, **kwargs):
        raise AssertionError("Kf factorized again")

    monkeypatch.setattr(topopt.design.helmholtz_filter.spla, "splu", no_factorization)
    x = np.linspace(0, 1, 27)
    g = ad.gradient(lambda x: np.sum(flt(x) ** 2), x)
    np.testing.assert_allclose(g, 2 * flt.transpose(flt(x)), rtol=1e-14)


def test_helmholtz_complex_input():
    flt = HelmholtzFilter(TRI, 0.3)
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 24))
    np.testing.assert_allclose(flt(a + 1j * b), flt(a) + 1j * flt(b), rtol=1e-13)
    np.testing.assert_allclose(flt.transpose(a + 1j * b),
                               flt.transpose(a) + 1j * flt.transpose(b), rtol=1e-13)


def test_helmholtz_radius():
    assert helmholtz_radius(1.5) == pytest.approx(1.5 / (2 * np.sqrt(3)), rel=1e-15)
    assert HelmholtzFilter.helmholtz_radius(3.0) == pytest.approx(0.8660254037844386, rel=1e-15)
    flt = HelmholtzFilter.from_rmin(QUAD, 1.5)
    assert flt.r == pytest.approx(0.4330127018922193, rel=1e-15)
    # comparable smoothing: a point density spreads over a similar neighbourhood
    x = np.zeros(24)
    x[np.argmin(np.sum((QUAD.p[:, QUAD.t].mean(axis=1).T - [1.25, 0.75]) ** 2, axis=1))] = 1.0
    yd, yh = DensityFilter(QUAD, 1.5)(x), flt(x)
    assert np.corrcoef(yd, yh)[0, 1] > 0.85


# ------------------------------------------------------------- rule checks

FILTERS = {
    "density-quad": lambda: DensityFilter(QUAD, 1.2),
    "density-tri": lambda: DensityFilter(TRI, 0.7),
    "density-graded": lambda: DensityFilter(GRADED, 1.6),
    "helmholtz-quad": lambda: HelmholtzFilter(QUAD, 0.3),
    "helmholtz-tri": lambda: HelmholtzFilter(TRI, 0.2),
    "helmholtz-hex": lambda: HelmholtzFilter(HEX, 0.25),
}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("primitive", [apply_filter, apply_filter_transpose])
@pytest.mark.parametrize("name", list(FILTERS))
def test_check_rule(name, primitive, seed):
    flt = FILTERS[name]()
    x = np.random.default_rng(seed).uniform(0, 1, flt.n)
    report = ad.check_rule(primitive, flt, x, seed=seed)
    assert report["arg 1 reverse"] < 1e-8
    assert report["arg 1 forward"] < 1e-8


def test_taylor_test_filter_project_simp():
    flt = HelmholtzFilter(QUAD, 0.3)
    rng = np.random.default_rng(6)
    x, dx, w = rng.uniform(0.2, 0.8, 24), rng.standard_normal(24), rng.uniform(0.5, 2, 24)

    def f(x):
        return np.sum(simp(project(flt(x), 8, 0.5)) * w)

    assert ad.taylor_test(f, x, dx) >= 1.9


@pytest.mark.parametrize("name", ["density-graded", "helmholtz-tri"])
def test_hvp_through_filter_project_simp(name):
    flt = FILTERS[name]()
    rng = np.random.default_rng(7)
    x, v, w = rng.uniform(0.2, 0.8, flt.n), rng.standard_normal(flt.n), rng.uniform(0.5, 2, flt.n)

    def f(x):
        return np.sum(simp(project(flt(x), 8.0, 0.5), 3.0) * w)

    hv = ad.hvp(f, x, v)
    h = 1e-5
    fd = (ad.gradient(f, x + h * v) - ad.gradient(f, x - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-7 * np.abs(fd).max())
    assert np.abs(hv).max() > 0.1


# -------------------------------------------------------------- bad input

@pytest.mark.parametrize("make, exc, match", [
    (lambda: DensityFilter(QUAD, 0.0), ValueError, r"rmin must be > 0"),
    (lambda: DensityFilter(QUAD, -1.5), ValueError, r"rmin must be > 0"),
    (lambda: DensityFilter(QUAD, "1.5"), TypeError, r"rmin must be a real number"),
    (lambda: DensityFilter(QUAD, np.nan), ValueError, r"rmin must be finite"),
    (lambda: DensityFilter(QUAD.p, 1.5), TypeError, r"mesh must be a scikit-fem Mesh"),
    (lambda: HelmholtzFilter(QUAD, 0.0), ValueError, r"r must be > 0"),
    (lambda: HelmholtzFilter(QUAD, -0.1), ValueError, r"r must be > 0"),
    (lambda: HelmholtzFilter.from_rmin(QUAD, -1.0), ValueError, r"rmin must be > 0"),
    (lambda: HelmholtzFilter(MeshWedge1(), 0.1), TypeError, r"supports MeshTri, MeshQuad"),
    # parameters are checked before the mesh is touched
    (lambda: DensityFilter(None, -1.0), ValueError, r"rmin must be > 0"),
])
def test_bad_construction(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


@pytest.mark.parametrize("flt", [DensityFilter(QUAD, 1.2), HelmholtzFilter(QUAD, 0.3)],
                         ids=["density", "helmholtz"])
def test_bad_design_vector(flt):
    with pytest.raises(ValueError, match=r"expected mesh.t.shape\[1\] = 24 entries"):
        flt(np.ones(23))
    with pytest.raises(ValueError, match=r"expected mesh.t.shape\[1\] = 24 entries"):
        flt(np.ones((24, 1)))
    with pytest.raises(ValueError, match=r"expected mesh.t.shape\[1\] = 24 entries"):
        ad.gradient(lambda x: np.sum(flt(x)), np.ones(25))
    with pytest.raises(ValueError, match=r"y has shape \(3,\)"):
        flt.transpose(np.ones(3))
    x = np.ones(24)
    x[5] = np.nan
    with pytest.raises(ValueError, match=r"x contains NaN"):
        flt(x)
    with pytest.raises(ValueError, match=r"x contains NaN"):
        ad.gradient(lambda x: np.sum(flt(x)), x)
    with pytest.raises(TypeError, match=r"x must be a numeric array"):
        flt(np.array(["a"] * 24))


def test_helmholtz_solver_is_checked_before_any_work():
    """solver: None or "petsc" (the MPI path itself: tests/test_petsc.py); "petsc" needs a
    uniform lattice, refused before PETSc is touched."""
    with pytest.raises(ValueError, match="solver must be None .* or 'petsc'"):
        HelmholtzFilter(MeshTri().refined(2), r=0.1, solver="cholmod")
    with pytest.raises(ValueError, match="uniform quadrilateral or hexahedral lattice"):
        HelmholtzFilter(MeshTri().refined(2), r=0.1, solver="petsc")
