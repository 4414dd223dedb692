"""Complex inputs and intermediates, Zygote's convention (requirement 4)."""

import numpy as np
import pytest

from topopt import ad


def test_abs_squared_of_complex_scalar():
    g = ad.gradient(lambda z: abs(z) ** 2, 1 + 2j)
    assert g == pytest.approx(2 + 4j, rel=1e-15)


def test_gradient_is_dLdx_plus_i_dLdy():
    rng = np.random.default_rng(0)
    z = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    L = lambda z: np.sum(np.abs(np.exp(z) - z ** 2) ** 1.5) + np.sum(np.imag(z) * np.real(z))
    g = ad.gradient(L, z)
    h = 1e-6
    for k in range(4):
        e = np.zeros(4)
        e[k] = h
        dx = (L(z + e) - L(z - e)) / (2 * h)
        dy = (L(z + 1j * e) - L(z - 1j * e)) / (2 * h)
        assert g[k] == pytest.approx(dx + 1j * dy, rel=1e-7)


def test_holomorphic_derivative_is_conjugate_gradient_of_real_part():
    f = lambda z: z ** 3 + np.exp(z) * np.sin(z) / (1 + z)
    for z in (0.3 + 0.7j, -1.2 + 0.1j):
        g = ad.gradient(lambda z: np.real(f(z)), z)
        h = 1e-6
        fprime = (f(z + h) - f(z - h)) / (2 * h)   # holomorphic: any direction
        assert np.conj(g) == pytest.approx(fprime, rel=1e-8)


def test_imag_convention():
    assert ad.gradient(lambda z: np.imag(z), 1 + 1j) == pytest.approx(1j)
    assert ad.gradient(lambda z: np.real(z), 1 + 1j) == pytest.approx(1.0)


def test_complex_intermediate_real_input_gives_real_gradient():
    rng = np.random.default_rng(1)
    w = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    L = lambda x: np.abs(np.sum(np.exp(1j * x) * w)) ** 2
    x = rng.standard_normal(5)
    g = ad.gradient(L, x)
    assert g.dtype == np.float64
    fd = np.array([(L(x + 1e-6 * e) - L(x - 1e-6 * e)) / 2e-6 for e in np.eye(5)])
    np.testing.assert_allclose(g, fd, rtol=1e-7)


def test_complex_non_hermitian_solve_adjoint():
    """|u_k|^2 for (A0 + diag(eps(p))) u = b, complex symmetric, not Hermitian."""
    rng = np.random.default_rng(2)
    n = 6
    A0 = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    A0 = A0 + A0.T + 8 * np.eye(n)
    b = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    eps_n = (0.054 + 3.429j) ** 2

    def L(p):
        eps = (1 + p * (np.sqrt(eps_n) - 1)) ** 2
        u = np.linalg.solve(A0 + np.diag(np.ones(n)) * eps, b)
        return np.abs(u[2]) ** 2

    p = rng.uniform(0.2, 0.8, n)
    g = ad.gradient(L, p)
    fd = np.array([(L(p + 1e-6 * e) - L(p - 1e-6 * e)) / 2e-6 for e in np.eye(n)])
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    assert ad.taylor_test(L, p, rng.standard_normal(n)) > 1.9


def test_forward_mode_complex():
    z, v = 0.4 - 0.2j, 0.3 + 1.1j
    y, ydot = ad.jvp(lambda z: z * np.exp(z), (z,), (v,))
    assert ydot == pytest.approx((1 + z) * np.exp(z) * v, rel=1e-12)
    y, ydot = ad.jvp(lambda z: np.abs(z) ** 2, (z,), (v,))
    h = 1e-6
    assert ydot == pytest.approx((abs(z + h * v) ** 2 - abs(z - h * v) ** 2) / (2 * h), rel=1e-8)
