"""Issue 26 item 3: transient heat conduction (`topopt.fem.transient`, `TransientHeatProblem`).

Rules in every mode against central differences (check_modes), the
checkpointed gradient against storing every state and against N taped dense
solves (an independent implementation on the tape), the solve and state
counts of the checkpointing scheme, the Taylor test of the problem's
responses, bad input, and pyMOTO's ex_transient_thermal (scripts/crosscheck/pymoto_transient.py)
when an interpreter with pymoto is at hand.
"""

import importlib.util
import math
import os

import numpy as np
import pytest

from topopt import ad, fem
from topopt.fem.modal import element_mass
from topopt.formulations.transient_heat import TransientHeatProblem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def small(theta=1.0, every=None, n_steps=9, seed=0):
    """A 4 x 3 plate fixed at y = 0, two sources with random signals, two observations."""
    model = fem.heat(fem.rectangle(4, 3)).fix(nodes=lambda x: x[1] == 0)
    rng = np.random.default_rng(seed)
    S = fem.TransientSystem(model, dt=0.3, theta=theta, capacity=2.0, every=every)
    Q = np.stack([model.body_load((1.0,)), model.point_load((2.0, 3.0), (1.0,))], 1)
    s = rng.uniform(0, 1, (n_steps + 1, 2))
    L = np.stack([model.point_load((2.0, 2.0), (1.0,)), model.body_load((0.3,))], 1)
    k, c = rng.uniform(0.2, 1, 12), rng.uniform(0.2, 1, 12)
    return model, S, Q, s, L, k, c


@pytest.mark.parametrize("theta, every", [(1.0, None), (0.5, None), (1.0, 1), (0.0, 4)])
def test_rules_in_every_mode(theta, every):
    """reverse (checkpointed adjoint), forward (tangent sweep), hvp and nested (the
    second-order sweep of transient_vjp's rules), in k and in c."""
    _, S, Q, s, L, k, c = small(theta, every)
    report = ad.check_modes(lambda k, c: fem.transient(S, k, c, Q, s, L), k, c)
    assert len(report) == 8 and max(report.values()) < 1e-8


def test_rules_of_the_pullback_primitive():
    _, S, Q, s, L, k, c = small()
    Ybar = np.random.default_rng(3).standard_normal((s.shape[0], 2))
    report = ad.check_modes(lambda k, c, Yb: fem.transient_vjp(S, k, c, Q, s, L, Yb), k, c, Ybar,
                            modes=("reverse", "forward"))
    assert max(report.values()) < 1e-8


def dense_reference(model, S, Q, s, L):
    """``J(k, c) = sum_n w_n . Y_n`` by N taped dense solves (no rule of fem.transient)."""
    free, n = S.free, model.n_el
    Kt, Mt = np.zeros((2, n, model.ndof, model.ndof))
    Me = element_mass(model, S.capacity)
    for e, d in enumerate(model.basis.element_dofs.T):
        Kt[e][np.ix_(d, d)] = model.Ke[e]
        Mt[e][np.ix_(d, d)] = Me[e]
    Kt, Mt = Kt[:, free][:, :, free], Mt[:, free][:, :, free]

    def Y(k, c):
        K, M = np.einsum("e,eij->ij", k, Kt), np.einsum("e,eij->ij", c, Mt)
        A, B = M / S.dt + S.theta * K, M / S.dt - (1 - S.theta) * K
        T, out = np.zeros(free.size), [L[free].T @ np.zeros(free.size)]
        for i in range(s.shape[0] - 1):
            r = Q[free] @ (S.theta * s[i + 1] + (1 - S.theta) * s[i])
            T = np.linalg.solve(A, B @ T + r)
            out.append(L[free].T @ T)
        return np.stack(out)
    return Y


@pytest.mark.parametrize("theta", [1.0, 0.5])
def test_gradient_matches_taped_dense_solves_and_store_all(theta):
    model, S, Q, s, L, k, c = small(theta)
    w = np.random.default_rng(1).standard_normal((s.shape[0], 2))
    J = lambda k, c, S=S: np.sum(w * fem.transient(S, k, c, Q, s, L))   # noqa: E731
    Y = dense_reference(model, S, Q, s, L)
    np.testing.assert_allclose(fem.transient(S, k, c, Q, s, L), Y(k, c), rtol=1e-12, atol=1e-14)
    gk = ad.gradient(lambda k: J(k, c), k)
    gc = ad.gradient(lambda c: J(k, c), c)
    ref_k = ad.gradient(lambda k: np.sum(w * Y(k, c)), k)
    ref_c = ad.gradient(lambda c: np.sum(w * Y(k, c)), c)
    np.testing.assert_allclose(gk, ref_k, rtol=1e-10)
    np.testing.assert_allclose(gc, ref_c, rtol=1e-10)
    S1 = fem.TransientSystem(model, dt=S.dt, theta=theta, capacity=S.capacity, every=1)
    np.testing.assert_allclose(ad.gradient(lambda k: J(k, c, S1), k), gk, rtol=1e-13)


@pytest.mark.parametrize("n_steps", [9, 16, 50])
def test_checkpointing_counts(n_steps):
    """k = ceil(sqrt N): N forward + (N - segments) recomputed + N adjoint solves, at most
    N/k + k + 1 states held."""
    _, S, Q, s, L, k, c = small(n_steps=n_steps)
    ad.gradient(lambda k: np.sum(fem.transient(S, k, c, Q, s, L)), k)
    kk = math.ceil(math.sqrt(n_steps))
    segments = math.ceil(n_steps / kk)
    assert S.interval(n_steps) == kk
    assert S.counts["recomputed"] == n_steps - segments
    assert S.counts["solves"] == 3 * n_steps - segments
    assert S.counts["states"] <= n_steps / kk + kk + 1 < n_steps + 1


def test_temperatures_are_the_observed_states():
    model, S, Q, s, L, k, c = small()
    T = fem.temperatures(S, k, c, Q, s, range(s.shape[0]))
    np.testing.assert_allclose(L.T @ T, fem.transient(S, k, c, Q, s, L).T, rtol=1e-13)


def test_uniform_heating_closed_form():
    """No supports, uniform source q: T rises by q dt / (rho c) per step, any theta."""
    model = fem.heat(fem.rectangle(3, 2))
    for theta in (1.0, 0.5):
        S = fem.TransientSystem(model, dt=0.25, theta=theta, capacity=4.0)
        Y = fem.transient(S, np.ones(6), np.ones(6), model.body_load((2.0,)), np.ones(5),
                          np.full(model.ndof, 1.0 / model.ndof))
        np.testing.assert_allclose(Y, 2.0 * 0.25 / 4.0 * np.arange(5), rtol=1e-12)


def problem(theta=1.0):
    from topopt_problems import transient_heat
    model, Q, s, L, dt = transient_heat.setup(8, 12, 6, 0.1)
    return TransientHeatProblem(model, Q, s, L, dt, 0.5, 2 * transient_heat.LX / 8, theta=theta,
                                capacity=1000.0, scale=100.0, Emin=1e-6)


@pytest.mark.parametrize("theta", [1.0, 0.5])
def test_taylor_of_the_responses(theta):
    p = problem(theta)
    rng = np.random.default_rng(2)
    x, dx = rng.uniform(0.3, 0.7, p.n), rng.standard_normal(p.n)
    p.J0 = float(p.objective(x))
    assert ad.taylor_test(lambda z: p.responses(z)[0], x, dx) >= 1.9
    # the volume constraint is linear in x (its Taylor remainder is round-off): its gradient
    g = ad.gradient(lambda z: p.responses(z)[1], x)
    np.testing.assert_allclose(g, p.filter.transpose(p.weights / (p.weights.sum() * 0.5)),
                               rtol=1e-12)


@pytest.mark.parametrize("call, error, match", [
    (lambda m: fem.TransientSystem(m, dt=0.0), ValueError, "dt"),
    (lambda m: fem.TransientSystem(m, dt=1.0, theta=1.5), ValueError, "theta"),
    (lambda m: fem.TransientSystem(m, dt=1.0, capacity=-1.0), ValueError, "capacity"),
    (lambda m: fem.TransientSystem(m, dt=1.0, every=0), ValueError, "every"),
    (lambda m: fem.TransientSystem(m, dt=1.0, solver="mg-cg"), ValueError, "solver"),
    (lambda m: fem.TransientSystem(fem.elasticity(fem.rectangle(2, 2)), dt=1.0), ValueError,
     "scalar"),
])
def test_bad_system(call, error, match):
    with pytest.raises(error, match=match):
        call(fem.heat(fem.rectangle(2, 2)))


def test_bad_data():
    _, S, Q, s, L, k, c = small()
    with pytest.raises(ValueError, match="c must be > 0"):
        fem.transient(S, k, np.zeros(12), Q, s, L)
    with pytest.raises(ValueError, match="k has shape"):
        fem.transient(S, k[:3], c, Q, s, L)
    with pytest.raises(ValueError, match="s has shape"):
        fem.transient(S, k, c, Q, s[:, :1], L)
    with pytest.raises(ValueError, match="s has shape"):
        fem.transient(S, k, c, Q, s[:1], L)
    with pytest.raises(ValueError, match="L has shape"):
        fem.transient(S, k, c, Q, s, L[:5])
    with pytest.raises(TypeError, match="sources Q"):
        ad.gradient(lambda q: np.sum(fem.transient(S, k, c, q, s, L)), Q)


def _pymoto_python():
    path = os.environ.get("PYMOTO_PYTHON", "/tmp/pymoto-venv/bin/python")
    return path if os.path.exists(path) else None


@pytest.mark.skipif(_pymoto_python() is None, reason="no interpreter with pymoto "
                    "(set PYMOTO_PYTHON or create /tmp/pymoto-venv)")
def test_matches_pymoto(monkeypatch):
    """pyMOTO's ex_transient_thermal on 80 x 120 elements, 12 steps, two designs."""
    monkeypatch.syspath_prepend(os.path.join(ROOT, "scripts", "crosscheck"))
    spec = importlib.util.spec_from_file_location(
        "pymoto_transient", os.path.join(ROOT, "scripts", "crosscheck", "pymoto_transient.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for case in module.CASES:
        rows = module.compare(case, _pymoto_python(), n_steps=12, n_designs=2)
        assert max(max(r["err_J"], r["err_dJ"]) for r in rows) < 1e-8
