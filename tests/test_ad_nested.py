"""Second order: nesting, hvp, forward-over-reverse through user rules (requirement 5)."""

import numpy as np
import pytest

from topopt import ad


def test_mixed_derivative_from_nested_ad_thread():
    """h(x, p) = g(grad_x f(x, p)); grad_p h against central differences."""
    f = lambda x, p: np.sum(p) ** 2 / np.linalg.norm(x) + p[0] * x[1]
    g = lambda y: np.sum(y) ** 3
    h = lambda x, p: g(ad.gradient(lambda x: f(x, p), x))
    rng = np.random.default_rng(7)
    x, p = rng.standard_normal(5), rng.standard_normal(4)

    grad_p = ad.gradient(h, x, p, argnums=1)
    eps = 1e-5
    fd = np.array([(h(x, p + eps * e) - h(x, p - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(grad_p, fd, rtol=1e-6)

    # the thread's forward-over-reverse formula: d/da grad_p f(x + a grad g, p) at a = 0
    dg = ad.gradient(g, ad.gradient(lambda x: f(x, p), x))
    _, fwd = ad.jvp(lambda a: ad.gradient(lambda q: f(x + a * dg, q), p), (0.0,), (1.0,))
    np.testing.assert_allclose(fwd, grad_p, rtol=1e-10)

    # a directional check as in the thread
    dp = rng.standard_normal(4) * 1e-4
    assert grad_p @ dp == pytest.approx(h(x, p + dp) - h(x, p - dp), rel=1e-6) or \
        abs(grad_p @ (2 * dp) - (h(x, p + dp) - h(x, p - dp))) < 1e-8 * abs(grad_p @ dp)


def test_gradient_of_gradient():
    d2 = ad.gradient(lambda x: ad.gradient(lambda y: y ** 3 * np.sin(y), x), 0.7)
    x = 0.7
    exact_fd = ((lambda y: 3 * y ** 2 * np.sin(y) + y ** 3 * np.cos(y))(x + 1e-6)
                - (lambda y: 3 * y ** 2 * np.sin(y) + y ** 3 * np.cos(y))(x - 1e-6)) / 2e-6
    assert d2 == pytest.approx(exact_fd, rel=1e-7)


def test_hvp_against_finite_differences_of_gradient():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((5, 5))
    f = lambda x: np.sum(np.tanh(A @ x) ** 2) + np.linalg.norm(x) ** 3 + np.sum(np.exp(x[:2]) * x[3:])
    x, v = rng.standard_normal(5), rng.standard_normal(5)
    hv = ad.hvp(f, x, v)
    gfd = (ad.gradient(f, x + 1e-6 * v) - ad.gradient(f, x - 1e-6 * v)) / 2e-6
    np.testing.assert_allclose(hv, gfd, rtol=1e-6)
    H = np.array([ad.hvp(f, x, e) for e in np.eye(5)])
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)


def _foreign_cube(x):
    return np.asarray(x, dtype=float) ** 3     # np.asarray: not traceable


def test_forward_over_reverse_through_user_rule_with_frule():
    cube = ad.primitive(_foreign_cube)

    @ad.rrule(cube)
    def cube_rrule(x):
        y = cube(x)                              # through the primitive: nesting works

        def cube_pullback(ybar):
            return (3 * ybar * x ** 2,)
        return y, cube_pullback

    @ad.frule(cube)
    def cube_frule(primals, tangents):
        (x,), (xdot,) = primals, tangents
        return cube(x), 3 * x ** 2 * xdot

    try:
        f = lambda x: np.sum(cube(x) * np.sin(x))
        x, v = np.array([0.3, -0.8, 1.1]), np.array([1.0, 0.5, -2.0])
        hv = ad.hvp(f, x, v)
        gfd = (ad.gradient(f, x + 1e-6 * v) - ad.gradient(f, x - 1e-6 * v)) / 2e-6
        np.testing.assert_allclose(hv, gfd, rtol=1e-7)
        _, jv = ad.jvp(lambda x: ad.gradient(f, x), (x,), (v,))
        np.testing.assert_allclose(jv, hv)
    finally:
        ad.remove_rule(cube)


def test_forward_mode_by_transposing_a_traced_pullback():
    softplus = ad.primitive(lambda x: np.log1p(np.exp(np.asarray(x))))

    @ad.rrule(softplus)
    def softplus_rrule(x):
        def softplus_pullback(ybar):
            return (ybar / (1 + np.exp(-x)),)     # traced ops only
        return softplus(x), softplus_pullback

    try:
        x, v = np.array([0.2, -1.0]), np.array([1.0, 3.0])
        _, ydot = ad.jvp(softplus, (x,), (v,))
        np.testing.assert_allclose(ydot, v / (1 + np.exp(-x)), rtol=1e-12)
        f = lambda x: np.sum(softplus(x) ** 2)
        hv = ad.hvp(f, x, v)
        gfd = (ad.gradient(f, x + 1e-6 * v) - ad.gradient(f, x - 1e-6 * v)) / 2e-6
        np.testing.assert_allclose(hv, gfd, rtol=1e-7)
    finally:
        ad.remove_rule(softplus)


def test_second_order_through_foreign_pullback_raises():
    cube = ad.primitive(_foreign_cube)

    @ad.rrule(cube)
    def cube_rrule(x):
        xv = np.asarray(x)

        def cube_pullback(ybar):
            return (3 * np.asarray(ybar) * xv ** 2,)   # foreign: cannot be traced
        return _foreign_cube(xv), cube_pullback

    try:
        with pytest.raises(TypeError, match="derivative would be lost"):
            ad.hvp(lambda x: np.sum(cube(x)), np.ones(2), np.ones(2))
    finally:
        ad.remove_rule(cube)
