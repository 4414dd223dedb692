"""`fem.solve_nonlinear`: Newton's method as one primitive, derivatives by the implicit
function theorem in every mode.

The model problem is ``-div(p (1 + u^2) grad u) = f`` on P1 elements, ``p`` one
coefficient per element (the design). Known solutions: in 1-D with ``f = 0``,
``u(0) = 0``, ``u(1) = 1`` the Kirchhoff transform ``V(u) = u + u^3 / 3`` is
linear in x, and P1 with exact quadrature gives ``V(u_i) = 4 x_i / 3`` at the
nodes exactly; in 2-D ``u = x`` with ``f = -2x`` (p = 1) is reproduced to
round-off, since the discrete residual of the exact solution vanishes.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
import skfem

from topopt import ad, fem


class Quasilinear:
    """``R(u, p) = sum_e p_e int (1 + u^2) grad u . grad phi - int f phi`` (P1).

    With continuation steps the source is scaled by ``t``.
    """

    def __init__(self, mesh, f=lambda x: 0.0 * x[0], fixed=None):
        element = skfem.ElementLineP1() if mesh.dim() == 1 else skfem.ElementTriP1()
        f = f if mesh.dim() > 1 else (lambda x: 0.0 * x[0])
        b = skfem.Basis(mesh, element, intorder=4)
        self.n, self.t = b.N, b.element_dofs                              # (nloc, ne)
        self.phi = np.stack([np.asarray(b.basis[i][0]) for i in range(self.t.shape[0])])
        self.dphi = np.stack([b.basis[i][0].grad for i in range(self.t.shape[0])])
        self.dx = b.dx
        self.load = skfem.asm(skfem.LinearForm(lambda v, w: f(w.x) * v), b)
        self.fixed = b.get_dofs().all() if fixed is None else fixed
        self.x = b.doflocs

    def _fields(self, u):
        ue = u[self.t]                                                    # (nloc, ne)
        uq = np.einsum("ie,ieq->eq", ue, self.phi)
        gq = np.einsum("ie,ideq->deq", ue, self.dphi)
        return uq, gq

    def residual(self, u, p, t=1.0):
        uq, gq = self._fields(u)
        flux = (p[:, None] * (1.0 + uq ** 2) * self.dx) * gq             # (d, ne, nq)
        Re = np.einsum("deq,ideq->ie", flux, self.dphi)
        return ad.scatter_add(np.zeros(self.n), self.t.ravel(), Re.ravel()) - t * self.load

    def jacobian(self, u, p, t=1.0):
        uq, gq = self._fields(u)
        w = p[:, None] * self.dx
        Ke = np.einsum("eq,ideq,jdeq->ije", w * (1.0 + uq ** 2), self.dphi, self.dphi) \
            + np.einsum("eq,deq,ideq,jeq->ije", 2.0 * w * uq, gq, self.dphi, self.phi)
        rows = np.broadcast_to(self.t[:, None, :], Ke.shape)
        cols = np.broadcast_to(self.t[None, :, :], Ke.shape)
        return sps.csr_matrix((Ke.ravel(), (rows.ravel(), cols.ravel())), (self.n, self.n))


def line(n=8):
    mesh = skfem.MeshLine(np.linspace(0.0, 1.0, n + 1))
    return Quasilinear(mesh)


def square(n=3, f=lambda x: 10.0 * np.sin(3 * x[0]) * (1 + x[1])):
    return Quasilinear(skfem.MeshTri().refined(n), f=f)


def design(model, seed=0):
    return np.random.default_rng(seed).uniform(0.5, 1.5, model.t.shape[1])


# ------------------------------------------------------------------ known solutions

def test_kirchhoff_line_is_nodally_exact():
    model = line(10)
    u0 = np.where(np.isclose(model.x[0], 1.0), 1.0, 0.0)
    u = fem.solve_nonlinear(model, np.ones(model.t.shape[1]), u0, rtol=1e-14)
    V = u + u ** 3 / 3
    np.testing.assert_allclose(V, 4.0 * model.x[0] / 3.0, rtol=0, atol=1e-13)


def test_linear_solution_in_2d_to_round_off():
    model = square(3, f=lambda x: -2.0 * x[0])
    u0 = np.where(np.isin(np.arange(model.n), model.fixed), model.x[0], 0.0)
    u = fem.solve_nonlinear(model, np.ones(model.t.shape[1]), u0)
    np.testing.assert_allclose(u, model.x[0], rtol=0, atol=1e-13)


def test_jacobian_of_the_test_model_by_central_differences():
    model = square(2)
    rng = np.random.default_rng(1)
    u, v, p = rng.standard_normal(model.n), rng.standard_normal(model.n), design(model)
    h = 1e-6
    fd = (model.residual(u + h * v, p) - model.residual(u - h * v, p)) / (2 * h)
    np.testing.assert_allclose(model.jacobian(u, p) @ v, fd, rtol=1e-7, atol=1e-8)


# ------------------------------------------------------------------ rules, every mode

OBJECTIVES = {
    "sum of squares": lambda u: np.sum(u ** 2),
    "sin": lambda u: np.sum(np.sin(3.0 * u)),
    "weighted cube": lambda u: np.dot(np.linspace(0.1, 1.0, u.size), u ** 3),
}
CASES = {
    "line": lambda: (line(6), None),
    "square": lambda: (square(2), None),
    "square, steps": lambda: (square(2), (0.25, 0.5, 1.0)),
}


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("case", CASES)
def test_rules_in_every_mode(case, objective):
    model, steps = CASES[case]()
    u0 = np.where(np.isin(np.arange(model.n), model.fixed), 0.3, 0.0)
    g = OBJECTIVES[objective]
    report = ad.check_modes(
        lambda p: g(fem.solve_nonlinear(model, p, u0, steps=steps, rtol=1e-13)),
        design(model), rtol=1e-6)
    assert set(report) == {f"{m}/arg 0" for m in ("reverse", "forward", "hvp", "nested")}


def test_taylor_rate_through_newton():
    model = square(2)
    u0 = np.zeros(model.n)
    f = lambda p: np.sum(fem.solve_nonlinear(model, p, u0, rtol=1e-13) ** 2)
    dx = np.random.default_rng(3).standard_normal(model.t.shape[1])
    assert ad.taylor_test(f, design(model), dx) >= 1.9


def test_state_is_the_root_and_derivative_the_implicit_one():
    """du/dp from one linear solve: J du = -(dR/dp) dp, checked against the formula."""
    model = square(2)
    p, u0 = design(model), np.zeros(model.n)
    u = fem.solve_nonlinear(model, p, u0, rtol=1e-14)
    free = np.setdiff1d(np.arange(model.n), model.fixed)
    assert np.linalg.norm(model.residual(u, p)[free]) < 1e-12 * np.linalg.norm(model.load)
    dp = np.random.default_rng(2).standard_normal(p.size)
    _, du = ad.jvp(lambda q: fem.solve_nonlinear(model, q, u0, rtol=1e-14), (p,), (dp,))
    dRdp = ad.jvp(lambda q: model.residual(u, q), (p,), (dp,))[1]
    J = model.jacobian(u, p)[free][:, free]
    np.testing.assert_allclose(J @ du[free], -dRdp[free], rtol=0, atol=1e-11)
    assert np.all(du[model.fixed] == 0.0)


# ------------------------------------------------------------------ the linear case

class LinearResidual:
    """``R(u, a) = K(a) u - f`` from a `LinearSystem` (the element matrices summed)."""

    def __init__(self, S, f):
        self.S, self.f, self.fixed = S, f, S.fixed
        n = S.ndof
        self.embed = sps.csr_matrix((np.ones(S.free.size), (S.free, np.arange(S.free.size))),
                                    (n, S.free.size))

    def residual(self, u, a):
        return fem.matvec(self.S, a, u) - self.f

    def jacobian(self, u, a):
        E = self.embed
        return E @ self.S.matrix(a) @ E.T + sps.diags(np.isin(np.arange(self.S.ndof),
                                                              self.S.fixed).astype(float))


@pytest.mark.parametrize("mesh", [lambda: fem.rectangle(8, 4), lambda: fem.box(3, 2, 2)],
                         ids=["quad", "hex"])
def test_linear_residual_equals_fem_solve(mesh):
    mesh = mesh()
    model = fem.elasticity(mesh).fix(nodes=lambda x: np.isclose(x[0], 0.0))
    dim = mesh.p.shape[0]
    f = model.point_load(mesh.p.max(axis=1) * np.r_[1.0, 0.0, 0.5][:dim],
                         np.r_[0.0, -1.0, 0.0][:dim])
    S = model.system("superlu")
    a = np.random.default_rng(0).uniform(0.2, 1.0, S.n_el)
    nl = LinearResidual(S, f)
    u_lin = fem.solve(S, a, f)
    u_nl = fem.solve_nonlinear(nl, a, np.zeros(S.ndof))
    np.testing.assert_allclose(u_nl, u_lin, rtol=0, atol=1e-12 * np.max(np.abs(u_lin)))
    compliance = lambda u: f @ u
    g_lin = ad.gradient(lambda a: compliance(fem.solve(S, a, f)), a)
    g_nl = ad.gradient(lambda a: compliance(fem.solve_nonlinear(nl, a, np.zeros(S.ndof))), a)
    np.testing.assert_allclose(g_nl, g_lin, rtol=1e-10, atol=1e-12 * np.max(np.abs(g_lin)))


# ------------------------------------------------------------------ failures and input

def test_non_convergence_raises_with_the_residual_and_advice():
    model = square(2, f=lambda x: 2e3 * (1 + 0 * x[0]))
    with pytest.raises(fem.NewtonError, match=r"residual norm \d.*steps=") as err:
        fem.solve_nonlinear(model, design(model), np.zeros(model.n), maxiter=3)
    assert err.value.iterations == 3 and err.value.residual > 0
    assert isinstance(err.value, fem.ConvergenceError)
    u = fem.solve_nonlinear(model, design(model), np.zeros(model.n), maxiter=50)
    assert np.all(np.isfinite(u))


class Diverging(Quasilinear):
    def residual(self, u, p, t=1.0):
        return super().residual(u, p, t) + np.inf


@pytest.mark.parametrize("kwargs, message", [
    (dict(rtol=-1.0), "rtol=-1.0"),
    (dict(rtol=0.0), "rtol=0 and atol=0"),
    (dict(maxiter=0), "maxiter"),
    (dict(steps=()), "steps="),
    (dict(steps=(0.5, np.nan)), "steps="),
    (dict(monitor=3), "monitor"),
    (dict(relax=0.5), "relax"),
])
def test_bad_options_are_refused(kwargs, message):
    model = line(4)
    with pytest.raises((ValueError, TypeError), match=message):
        fem.solve_nonlinear(model, np.ones(4), np.zeros(model.n), **kwargs)


def test_bad_models_and_states_are_refused():
    model = line(4)
    with pytest.raises(ValueError, match="u0 must be"):
        fem.solve_nonlinear(model, np.ones(4), np.zeros((model.n, 2)))
    with pytest.raises(ValueError, match="non-finite"):
        fem.solve_nonlinear(model, np.ones(4), np.full(model.n, np.nan))
    with pytest.raises(TypeError, match="residual"):
        fem.solve_nonlinear(object(), np.ones(4), np.zeros(model.n))
    with pytest.raises(ValueError, match="residual returned shape"):
        fem.solve_nonlinear(model, np.ones(4), np.zeros(model.n + 1))
    bad = Diverging(skfem.MeshLine(np.linspace(0, 1, 5)))
    with pytest.raises(fem.NewtonError, match="not finite"):
        fem.solve_nonlinear(bad, np.ones(4), np.zeros(bad.n))


def test_monitor_sees_quadratic_convergence():
    model = square(2)
    norms = []
    fem.solve_nonlinear(model, design(model), np.zeros(model.n), rtol=1e-14,
                        monitor=lambda t, it, r: norms.append(r))
    ratios = [b / a ** 2 for a, b in zip(norms[1:-1], norms[2:]) if a > 1e-6]
    assert len(norms) <= 8 and max(ratios) < 10.0


@pytest.mark.parametrize("linear, factorizations", [(False, 2), (True, 1)])
def test_a_linear_model_reuses_the_newton_factorization(monkeypatch, linear, factorizations):
    """One factorization per value and gradient when ``model.linear``: J is the same."""
    from topopt.fem import nonlinear
    mesh = fem.rectangle(6, 3)
    model = fem.elasticity(mesh).fix(nodes=lambda x: np.isclose(x[0], 0.0))
    f = model.point_load((6, 0), (0, -1))
    S = model.system("superlu")
    nl = LinearResidual(S, f)
    nl.linear = linear
    calls = []
    real = nonlinear.factorize_lu
    monkeypatch.setattr(nonlinear, "factorize_lu", lambda A: calls.append(1) or real(A))
    a = np.linspace(0.3, 1.0, S.n_el)
    g = ad.gradient(lambda a: f @ fem.solve_nonlinear(nl, a, np.zeros(S.ndof)), a)
    assert len(calls) == factorizations
    np.testing.assert_allclose(g, ad.gradient(lambda a: f @ fem.solve(S, a, f), a), rtol=1e-10)
