"""Iterative backends: geometric multigrid CG on lattices, smoothed-aggregation AMG CG."""

import sys

import numpy as np
import pytest
import scipy.sparse as sps
import skfem
from scipy.sparse.csgraph import connected_components

from topopt import ad, fem
from topopt.fem.solvers.multigrid import _Chebyshev
from topopt.fem import ConvergenceError, SingularSystemError, rigid_body_modes
from topopt.fem.solvers import GeometricMultigrid, element_lmax_bound, pcg
from topopt.design.filters import DensityFilter
from topopt.design.interpolation import simp
from topopt.formulations.compliance import ComplianceProblem

from topopt_problems import cantilever3d

EMIN = 1e-9
SMALL = {"coarse_size": 60}          # several levels on test-sized meshes


def solid_parts(mesh, x) -> int:
    """Connected pieces of the solid (x > 0.5) elements."""
    t = mesh.t[:, x > 0.5]
    k = t.shape[0]
    G = sps.coo_matrix((np.ones(t.size * k), (np.repeat(t, k, axis=0).ravel(),
                                              np.tile(t, (k, 1)).ravel())),
                       shape=(mesh.p.shape[1],) * 2)
    label = connected_components(G)[1]
    return np.unique(label[np.unique(t)]).size


def contrast_design(mesh, seed=0, void=0.35):
    """Filtered random 0.001/1 pattern (void holes in a connected solid) with grey elements.

    A solid bottom layer and load end. Floating solid islands (held only by
    Emin = 1e-9) are avoided: each gives near-zero eigenvalues that geometric
    multigrid does not resolve (CG then needs hundreds of iterations).
    """
    rng = np.random.default_rng(seed)
    flt = DensityFilter(mesh, 2.0)
    x = np.asarray(flt(rng.uniform(size=mesh.t.shape[1])))
    x = np.where(x > np.quantile(x, void), 1.0, 1e-3)
    grey = rng.uniform(size=x.size) < 0.15
    x[grey] = rng.uniform(1e-3, 1.0, grey.sum())   # values in [0.001, 1], mixed
    c = fem.element_centroids(mesh)
    x[(c[:, 1] < 1.0) | (c[:, 0] > c[:, 0].max() - 1.0)] = 1.0
    return x


def clamped(mesh):
    model = fem.elasticity(mesh).fix(nodes=lambda x: np.isclose(x[0], 0.0))
    dim = mesh.p.shape[0]
    corner = mesh.p.max(axis=1) * np.r_[1.0, 0.0, 0.5][:dim]
    f = model.point_load(corner, np.r_[0.0, -1.0, 0.0][:dim])
    return model, f


MESHES = {"2d": lambda: fem.rectangle(40, 20), "3d": lambda: fem.box(12, 6, 6),
          "odd": lambda: fem.box(9, 5, 3)}


@pytest.mark.parametrize("name", sorted(MESHES))
def test_mg_cg_equals_direct_high_contrast(name):
    mesh = MESHES[name]()
    model, f = clamped(mesh)
    x = contrast_design(mesh, seed=int(name == "2d"), void=0.3 if name == "2d" else 0.35)
    assert np.mean(x < 0.01) > 0.2 and solid_parts(mesh, x) == 1    # void holes, no islands
    E = simp(x, 3.0, EMIN)
    ref = model.solve(E, f, "superlu")
    # default tolerance (relative residual 1e-8): compliance and energy norm
    S = model.system("mg-cg", SMALL)
    assert len(S._iterative.sizes) >= 3
    u = fem.solve(S, E, f)
    c_ref = f @ ref
    assert abs(f @ u - c_ref) <= 1e-10 * c_ref
    e = (u - ref)[S.free]
    assert np.sqrt(e @ (S.matrix(E) @ e)) <= 1e-6 * np.sqrt(c_ref)
    assert 0 < S.counts["cg_iterations"] <= 100
    # a tighter tolerance: the displacements themselves (void ones included)
    u = fem.solve(model.system("mg-cg", {**SMALL, "rtol": 1e-11}), E, f)
    assert np.linalg.norm(u - ref) <= 1e-7 * np.linalg.norm(ref)


@pytest.mark.parametrize("cycle", ["V", "W"])
def test_cycles(cycle):
    mesh = fem.box(16, 8, 4)
    model, f = clamped(mesh)
    E = simp(contrast_design(mesh), 3.0, EMIN)
    S = model.system("mg-cg", {**SMALL, "cycle": cycle})
    u = fem.solve(S, E, f)
    c_ref = f @ model.solve(E, f, "superlu")
    assert abs(f @ u - c_ref) <= 1e-10 * c_ref and S.counts["cg_iterations"] <= 60
    assert S._iterative.sizes[-1] < 100 and len(S._iterative.sizes) >= 3


@pytest.mark.parametrize("options, error, message", [
    ({"maxiter": 2.5}, TypeError, "maxiter must be an integer"),       # was truncated to 2
    ({"degree": 0}, ValueError, "degree must be an integer >= 1"),
    ({"eig_ratio": 1.0}, ValueError, "eig_ratio must be > 1"),
    ({"semi_ratio": 0.0}, ValueError, "semi_ratio must be in"),
    ({"warm_start": "yes"}, TypeError, "warm_start must be True or False"),
    ({"rtol": 1.0}, ValueError, "rtol must be in"),
])
def test_bad_solver_options_are_rejected(options, error, message):
    model, _ = clamped(fem.box(4, 2, 2))
    with pytest.raises(error, match=message):
        model.system("mg-cg", {**SMALL, **options})


def test_unknown_cycle_is_rejected():
    """The K-cycle was dropped (no benchmark or problem used it): "K" is now an error."""
    mesh = fem.box(4, 2, 2)
    model, _ = clamped(mesh)
    with pytest.raises(ValueError, match=r"unknown cycle 'K': cycle must be one of \('V', 'W'\)"):
        model.system("mg-cg", {**SMALL, "cycle": "K"})


@pytest.mark.parametrize("name", sorted(MESHES))
def test_galerkin_from_coefficients_equals_sparse_products(name):
    """The per-design coarse operators from class matrices are exactly ``P^T A P``."""
    mesh = MESHES[name]()
    model = fem.elasticity(mesh)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0), components=0)     # symmetry plane
    model.fix(nodes=lambda x: np.isclose(x[1], 0.0) & (x[0] > 3.5) & (x[0] < 6.5))
    S = model.system("mg-cg", SMALL)
    H = S._iterative
    assert [lvl.mode for lvl in H.levels[1:]] == ["element"] * (len(H.levels) - 1)
    a = np.random.default_rng(1).uniform(1e-3, 1, model.n_el) ** 3
    ops = H.galerkin(S.matrix(a), a)
    A = ops[0]
    for lvl, Ac in zip(H.levels[1:], ops[1:]):
        A = (lvl.R @ A @ lvl.P).tocsr()
        assert abs(A - Ac).max() <= 1e-13 * abs(A).max()


def scaled_top(A) -> float:
    """Largest eigenvalue of ``D^-1 A`` (dense)."""
    s = 1 / np.sqrt(A.diagonal())
    return float(np.linalg.eigvalsh(A.toarray() * s[:, None] * s[None, :])[-1])


def salt(n_el, seed, solid):
    """Random solid (1) / void (1e-9) elements: isolated stiff elements with local modes."""
    return np.where(np.random.default_rng(seed).uniform(size=n_el) < solid, 1.0, EMIN)


# (mesh, seed, solid fraction): on the first two, 10 Lanczos steps (the old smoother
# bound) put the top of D^-1 A 2.7 % and 3.3 % too low on some level; the Chebyshev
# error polynomial of degree 2 on [l/30, l] leaves [-1, 1] above 1.033 l, which is
# how the 1200 x 400 MBB beam got r^T M r < 0 (4.3 % low there)
SPD_CASES = {"16x8 salt": ((16, 8), 4, 0.7), "32x16 salt": ((32, 16), 6, 0.3),
             "32x16 solid": ((32, 16), 0, 1.0), "6x4x4 salt": ((6, 4, 4), 1, 0.5)}


@pytest.mark.parametrize("case", sorted(SPD_CASES))
def test_smoothers_contract_and_the_v_cycle_is_spd(case):
    shape, seed, solid = SPD_CASES[case]
    mesh = fem.rectangle(*shape) if len(shape) == 2 else fem.box(*shape)
    model, _ = clamped(mesh)
    S = model.system("mg-cg", SMALL)
    F = S.factorize(salt(model.n_el, seed, solid))
    V = F.M
    assert len(V.A) >= 3
    for A, smoother in zip(V.A, V.smoothers):
        top = scaled_top(A)
        assert smoother.lmax >= top * (1 - 1e-12)        # a bound, not an estimate
        # the smoother's error propagation I - G A: eigenvalues inside (-1, 1)
        G = np.column_stack([smoother(e)[0] for e in np.eye(A.shape[0])])
        rho = np.abs(np.linalg.eigvals(np.eye(A.shape[0]) - G @ A.toarray())).max()
        assert rho < 1
    n = S.free.size
    M = np.column_stack([V(e) for e in np.eye(n)])
    assert np.abs(M - M.T).max() <= 1e-12 * np.abs(M).max()
    assert np.linalg.eigvalsh((M + M.T) / 2)[0] > 0


def test_a_smoother_bound_below_the_spectrum_amplifies():
    """Why the bound must be one: 10 % below the top, Chebyshev amplifies the top modes."""
    mesh = fem.rectangle(16, 8)
    model, _ = clamped(mesh)
    A = model.system("superlu").matrix(np.ones(model.n_el))
    top = scaled_top(A)
    for upper, amplifies in [(0.9 * top, True), (np.inf, False)]:
        smoother = _Chebyshev(A, 2, 30.0, upper)
        G = np.column_stack([smoother(e)[0] for e in np.eye(A.shape[0])])
        rho = np.abs(np.linalg.eigvals(np.eye(A.shape[0]) - G @ A.toarray())).max()
        assert (rho > 1) == amplifies


@pytest.mark.parametrize("dim", [2, 3])
def test_element_bound_of_the_spectrum(dim):
    """``max_e lmax(diag(K_e)^-1 K_e)`` bounds ``D^-1 K`` for any a >= 0, and is near it."""
    mesh = fem.rectangle(12, 6) if dim == 2 else fem.box(4, 3, 3)
    model, _ = clamped(mesh)
    bound = element_lmax_bound(model.Ke[0])
    S = model.system("superlu")
    tops = [scaled_top(S.matrix(a)) for a in
            (np.ones(model.n_el), salt(model.n_el, 2, 0.5),
             np.random.default_rng(3).uniform(0, 1, model.n_el) ** 3)]
    assert max(tops) <= bound * (1 + 1e-12)
    assert bound <= 1.35 * max(tops)


def test_heat_and_multiple_and_complex_loads():
    mesh = fem.rectangle(24, 16)
    model = fem.heat(mesh).fix(nodes=lambda x: x[0] == 0)
    x = contrast_design(mesh, seed=2)
    E = simp(x, 3.0, 1e-6)
    rng = np.random.default_rng(3)
    F = rng.standard_normal((model.ndof, 2)) * (np.abs(mesh.p[1]) < 1.5)[:, None]
    S = model.system("mg-cg", SMALL)
    U = fem.solve(S, E, F)
    ref = model.solve(E, F, "superlu")
    assert np.allclose(U, ref, rtol=0, atol=1e-7 * np.abs(ref).max())
    Fc = F[:, 0] + 1j * F[:, 1]
    factor = S.factorize(E)
    sol = S.expand(factor.solve(Fc[S.free]), Fc)
    assert np.allclose(sol, ref[:, 0] + 1j * ref[:, 1], atol=1e-7 * np.abs(ref).max())
    assert factor.solve_adjoint is not None and factor.matrix.shape[0] == S.free.size


def optimized_iterates(maxeval=12):
    mesh, model, f = cantilever3d.setup(16, 8, 8)
    problem = ComplianceProblem(model, f, 0.3, 1.5, solver="mg-cg")
    problem.system = model.system("mg-cg", SMALL)
    designs = []
    responses = problem.responses

    def record(x, beta=None):
        designs.append(np.asarray(ad.value(x)).copy())
        return responses(x, beta)

    problem.responses = record
    problem.run(maxeval=maxeval, verbose=False)
    return problem, designs


def test_iterations_bounded_on_design_iterates():
    problem, designs = optimized_iterates()
    log = problem.system._iterative.log
    assert len(log) >= len(designs) and max(log) <= 60, log
    # the last iterate again, cold: the same bound
    S = problem.system
    E = simp(problem.x_phys(designs[-1]), 3.0, EMIN)
    S._cache = None
    F = S.factorize(E)
    S.free_solve(F, problem.f[S.free])
    assert F.last_iterations <= 60


def test_warm_start_saves_iterations():
    mesh, model, f = cantilever3d.setup(16, 8, 8)
    S = model.system("mg-cg", {**SMALL, "warm_start": True})
    x = contrast_design(mesh)
    u1 = fem.solve(S, simp(x, 3.0, EMIN), f)
    cold = S.counts["cg_iterations"]
    x2 = np.clip(x * (1 + 0.02 * np.random.default_rng(7).standard_normal(x.size)), 1e-3, 1)
    u2 = fem.solve(S, simp(x2, 3.0, EMIN), f)
    warm = S.counts["cg_iterations"] - cold
    assert warm < cold
    ref = model.solve(simp(x2, 3.0, EMIN), f, "superlu")
    assert abs(f @ u2 - f @ ref) <= 1e-10 * (f @ ref) and u1.shape == u2.shape


@pytest.mark.parametrize("options", [{}, {"warm_start": True}], ids=["cold", "warm"])
def test_taylor_compliance_mg_cg(options):
    mesh, model, f = cantilever3d.setup(12, 6, 6)
    problem = ComplianceProblem(model, f, 0.3, 1.5, solver="mg-cg")
    problem.system = model.system("mg-cg", {**SMALL, **options})
    rng = np.random.default_rng(4)
    x, dx = rng.uniform(0.05, 1, model.n_el), rng.standard_normal(model.n_el)
    assert ad.taylor_test(problem.compliance, x, dx) >= 1.9
    assert problem.system.counts["cg_iterations"] > problem.system.counts["cg_solves"]


def test_taylor_displacement_mg_cg_adjoint():
    """A non-self-adjoint objective: the pullback makes an MG-CG adjoint solve."""
    mesh, model, f = cantilever3d.setup(12, 6, 6)
    S = model.system("mg-cg", SMALL)
    flt = DensityFilter(mesh, 1.5)
    probe = model.dofs(nodes=(12.0, 6.0, 3.0), components=0)[0]

    def top_right_x(x):
        return fem.solve(S, simp(flt(x), 3.0, EMIN), f)[probe]

    rng = np.random.default_rng(5)
    x, dx = rng.uniform(0.05, 1, model.n_el), rng.standard_normal(model.n_el)
    assert ad.taylor_test(top_right_x, x, dx) >= 1.9
    assert S.counts["adjoints"] >= 1


@pytest.mark.parametrize("dim", [2, 3])
def test_amg_cg_unstructured_equals_direct(dim):
    pytest.importorskip("pyamg")
    mesh = (skfem.MeshTri.init_symmetric().refined(4) if dim == 2
            else skfem.MeshTet.init_tensor(*(np.linspace(0, 1, 7),) * 3))
    model = fem.elasticity(mesh).fix(nodes=lambda x: x[0] == 0)
    f = model.point_load(np.ones(dim), -np.eye(dim)[1])
    rng = np.random.default_rng(6)
    E = simp(rng.uniform(0.3, 1.0, model.n_el), 3.0, EMIN)
    u = model.solve(E, f, "amg-cg")
    ref = model.solve(E, f, "superlu")
    assert np.linalg.norm(u - ref) <= 1e-7 * np.linalg.norm(ref)
    S = model.system("amg-cg")
    assert S.counts["cg_iterations"] >= 1 and S._iterative.B.shape[1] == 3 * (dim - 1)


def test_rigid_body_modes_are_the_nullspace():
    model = fem.elasticity(fem.box(2, 2, 1))
    S = fem.LinearSystem(model.basis.element_dofs.T, model.Ke, model.ndof, solver="superlu")
    B = rigid_body_modes(model.mesh.p, model.basis.nodal_dofs, model.ndof)
    assert np.abs(S.matrix(np.ones(model.n_el)) @ B).max() < 1e-12


def test_non_convergence_raises():
    mesh, model, f = cantilever3d.setup(12, 6, 6)
    S = model.system("mg-cg", {**SMALL, "maxiter": 2})
    with pytest.raises(ConvergenceError, match="did not converge in 2 iterations"):
        fem.solve(S, simp(contrast_design(mesh), 3.0, EMIN), f)
    assert issubclass(ConvergenceError, SingularSystemError)
    assert issubclass(ConvergenceError, RuntimeError)
    A = sps.diags([1.0, -1.0]).tocsr()
    with pytest.raises(SingularSystemError, match="not positive definite"):
        pcg(A, np.array([0.0, 1.0]))


def spd_matrix(n, seed, cond):
    """Seeded SPD matrix (sparse format) with eigenvalues geometric in [1, `cond`]."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    return sps.csr_matrix((Q * np.geomspace(1.0, cond, n)) @ Q.T)


@pytest.mark.parametrize("n, seed, cond, rtol", [(20, 0, 1e2, 1e-8), (50, 1, 1e4, 1e-10),
                                                 (80, 2, 1e5, 1e-6)])
@pytest.mark.parametrize("jacobi", [False, True])
def test_pcg_meets_rtol_on_the_true_residual(n, seed, cond, rtol, jacobi):
    A = spd_matrix(n, seed, cond)
    b = np.random.default_rng(seed + 10).standard_normal(n)
    M = (lambda r: r / A.diagonal()) if jacobi else None
    x, its = pcg(A, b, M, rtol=rtol, maxiter=10 * n)
    assert np.linalg.norm(A @ x - b) <= rtol * np.linalg.norm(b)
    assert 1 <= its <= 10 * n
    x0 = x + 1e-3 * np.random.default_rng(seed).standard_normal(n)      # warm start
    x2, its2 = pcg(A, b, M, x0=x0, rtol=rtol, maxiter=10 * n)
    assert np.linalg.norm(A @ x2 - b) <= rtol * np.linalg.norm(b)
    assert pcg(A, np.zeros(n), M) == (pytest.approx(np.zeros(n)), 0)


def test_pcg_rejects_bad_preconditioner_and_rhs():
    A = spd_matrix(10, 4, 10.0)
    with pytest.raises(SingularSystemError, match="preconditioner is not positive definite"):
        pcg(A, np.ones(10), lambda r: -r)
    with pytest.raises(ValueError, match="NaN or inf"):
        pcg(A, np.r_[np.ones(9), np.nan])
    with pytest.raises(ConvergenceError, match="did not converge in 3 iterations"):
        pcg(spd_matrix(40, 5, 1e6), np.ones(40), rtol=1e-12, maxiter=3)


def test_mg_cg_without_cvxopt_uses_superlu_on_the_coarsest_level(monkeypatch):
    for name in ("cvxopt", "cvxopt.cholmod", "cvxopt.umfpack"):
        monkeypatch.setitem(sys.modules, name, None)
    mesh, model, f = cantilever3d.setup(8, 4, 4)
    E = simp(contrast_design(mesh), 3.0, EMIN)
    u = fem.solve(model.system("mg-cg", {**SMALL, "rtol": 1e-10}), E, f)
    ref = fem.solve(model.system("superlu"), E, f)
    assert np.linalg.norm(u - ref) <= 1e-7 * np.linalg.norm(ref)


def test_mg_cg_needs_a_lattice():
    tri = fem.elasticity(skfem.MeshTri.init_symmetric().refined(2)).fix(
        nodes=lambda x: x[0] == 0)
    with pytest.raises(ValueError, match="structured mesh"):
        tri.system("mg-cg")
    model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda x: x[0] == 0)
    with pytest.raises(ValueError, match="needs the mesh geometry"):
        fem.LinearSystem(model.basis.element_dofs.T, model.Ke, model.ndof, model.fixed,
                         solver="mg-cg")
    with pytest.raises(TypeError, match=r"solver_options got unknown keyword\(s\) \['tolerance'\]"):
        model.system("mg-cg", {"tolerance": 1e-3})
    with pytest.raises(ValueError, match="real symmetric"):
        fem.LinearSystem(model.basis.element_dofs.T, model.Ke, model.ndof, model.fixed,
                         K0=1j * sps.identity(model.ndof), solver="mg-cg")


def test_unsupported_structure_is_singular():
    model = fem.elasticity(fem.rectangle(8, 4))
    S = fem.LinearSystem(model.basis.element_dofs.T, model.Ke, model.ndof, [0, 1],
                         solver="mg-cg", geometry=(model.mesh.p, model.basis.nodal_dofs),
                         solver_options={**SMALL, "maxiter": 50})
    with pytest.raises(SingularSystemError, match=r"mode\(s\) free"):
        fem.solve(S, np.ones(model.n_el), model.point_load((8.0, 4.0), (0.0, -1.0)))


def test_available_and_picked():
    assert "mg-cg" in fem.available_solvers(iterative=True)
    assert "mg-cg" not in fem.available_solvers()
    model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda x: x[0] == 0)
    assert model.system("auto").solver in ("cholmod", "superlu")
    assert model.system("mg-cg").solver == "mg-cg"
    assert isinstance(model.system("mg-cg")._iterative, GeometricMultigrid)


def test_system_is_freed_without_the_garbage_collector():
    """No reference cycle system <-> hierarchy: big systems go as soon as they are dropped."""
    import gc
    import weakref
    mesh = fem.box(8, 4, 4)
    model, f = clamped(mesh)
    gc.collect()
    gc.disable()
    try:
        S = model.system("mg-cg", SMALL)
        fem.solve(S, np.ones(model.n_el), f)
        ref = weakref.ref(S)
        model._systems.clear()
        del S
        assert ref() is None
    finally:
        gc.enable()
