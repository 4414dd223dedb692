"""Plain-numpy objectives, rules, errors (issue 2, requirements 1, 2 and 6)."""

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sps

from topopt import ad

from oracles import central_gradient


def test_plain_numpy_objective_matches_central_differences():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, 6))
    K = sps.random(6, 6, density=0.5, random_state=1, format="csr") + sps.eye(6)

    def f(x):
        M = x.reshape(2, 3)
        v = np.concatenate([M[0], M.T[:, 1] ** 2])
        w = np.stack([np.exp(v[:3]), np.tanh(v[3:])])
        s = np.sum(w) + np.mean(np.sqrt(np.abs(x) + 1)) - x[1] / (2 + x[0] ** 2)
        s = s + np.dot(A @ x, A @ x) * 0.01 + np.linalg.norm(K @ x)
        s = s + np.sum(np.maximum(x, 0.1) * np.minimum(x, 0.2)) + np.sum(np.clip(x, -0.5, 0.5))
        s = s + np.sum(np.where(x > 0, np.log(np.abs(x) + 1), -x))
        z = x[:3] + 1j * x[3:]
        s = s + np.sum(np.real(z * np.conj(z))) + np.sum(np.imag(z ** 2))
        return -s + 3.0 * np.sum(x) - x @ x

    x = rng.standard_normal(6)
    g = ad.gradient(f, x)
    np.testing.assert_allclose(g, central_gradient(f, x), rtol=1e-6, atol=1e-8)


def test_sparse_matrix_times_traced_vector():
    K = sps.random(8, 8, density=0.4, random_state=2, format="csr")
    b = np.arange(8.0)
    for op in (lambda K, x: K @ x, lambda K, x: K.dot(x), lambda K, x: x @ K.T):
        f = lambda x: np.sum((op(K, x) - b) ** 2)
        x = np.linspace(-1, 1, 8)
        np.testing.assert_allclose(ad.gradient(f, x), central_gradient(f, x), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(ad.gradient(f, x), 2 * K.T @ (K @ x - b), rtol=1e-12)


def test_pullback_returns_one_cotangent_per_argument_none_for_nondifferentiable():
    def f(x, n, opts, y):
        return np.sum(x ** n) * opts["scale"] + 0 * y[0]

    x, y = np.array([1.0, 2.0]), np.array([5.0])
    val, back = ad.pullback(f, x, 3, {"scale": 2.0}, y)
    assert val == pytest.approx(18.0)
    gx, gn, gopts, gy = back(1.0)
    np.testing.assert_allclose(gx, [6.0, 24.0])
    assert gn is None and gopts is None
    np.testing.assert_array_equal(gy, [0.0])


def test_back_twice_gives_same_result():
    x = np.array([0.3, -1.2, 2.0])
    y, back = ad.pullback(lambda x: np.exp(x) * x + x, x)
    ybar = np.array([1.0, -2.0, 0.5])
    g1 = back(ybar)[0].copy()
    g2 = back(ybar)[0]
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_allclose(g1, ybar * (np.exp(x) * (1 + x) + 1))


def test_user_owns_the_returned_cotangents():
    """Rules may pass arrays on instead of multiplying by ones (the cotangent of a
    sum); what reaches the user is still a fresh, writable array."""
    x, c = np.array([0.3, -1.2, 2.0]), np.array([1.0, 2.0, 3.0])
    y, back = ad.pullback(lambda x, c: np.sum(np.exp(x) * c), x, c)
    gx, gc = back(1.0)
    np.testing.assert_allclose(gc, np.exp(x))
    np.testing.assert_allclose(gx, np.exp(x) * c)
    for g in (gx, gc):
        assert g.flags.writeable and not np.shares_memory(g, x) and not np.shares_memory(g, c)
        g *= 0.0                                           # mutating them changes nothing
    np.testing.assert_allclose(back(1.0)[1], np.exp(x))
    np.testing.assert_allclose(back(1.0)[0], np.exp(x) * c)
    g = ad.gradient(np.sum, x)
    assert g.flags.writeable and g.strides == (8,)
    np.testing.assert_array_equal(g, np.ones(3))


def test_multiple_output_rule_and_outputs():
    @ad.primitive
    def polar(z):
        z = np.asarray(z)
        return np.abs(z), np.angle(z)

    @ad.rrule(polar)
    def polar_rrule(z):
        r, t = polar(z)

        def polar_pullback(ybar):
            rbar, tbar = ybar
            zbar = 0
            if rbar is not None:
                zbar = zbar + rbar * z / r
            if tbar is not None:
                zbar = zbar + tbar * 1j * z / r ** 2
            return (zbar,)
        return (r, t), polar_pullback

    try:
        z = np.array([1 + 2j, -0.5 + 0.3j])
        ad.check_rule(polar, z)
        # only the angle output is used: the other output's cotangent is None
        g = ad.gradient(lambda z: np.sum(polar(z)[1]), z)
        eps = 1e-6
        fd = [(np.sum(np.angle(z + eps * d)) - np.sum(np.angle(z - eps * d))) / (2 * eps)
              for d in (np.array([1, 0]), np.array([1j, 0]))]
        assert g[0] == pytest.approx(fd[0] + 1j * fd[1], rel=1e-6)
    finally:
        ad.remove_rule(polar)

    (a, b), back = ad.pullback(lambda x: (x ** 2, np.sum(x)), np.array([1.0, 3.0]))
    np.testing.assert_allclose(back((np.ones(2), 2.0))[0], [4.0, 8.0])


def test_foreign_call_through_rule_and_error_without_one():
    A = np.array([[4.0, 1.0], [1.0, 3.0]])
    solve = ad.primitive(scipy.linalg.solve)

    with pytest.raises(ad.NoRuleError, match="scipy.linalg.*solve.*@ad.rrule"):
        ad.gradient(lambda b: np.sum(solve(A, b)), np.ones(2))

    @ad.rrule(solve)
    def solve_rrule(A, b):
        x = scipy.linalg.solve(A, b)

        def solve_pullback(ybar):
            return None, scipy.linalg.solve(A.T, ybar)
        return x, solve_pullback

    try:
        b = np.array([1.0, -2.0])
        f = lambda b: np.sum(solve(A, b) ** 2)
        np.testing.assert_allclose(ad.gradient(f, b), central_gradient(f, b), rtol=1e-7)
    finally:
        ad.remove_rule(solve)


def test_numpy_function_without_rule_raises_naming_it():
    with pytest.raises(ad.NoRuleError, match=r"numpy\.linalg\.eigvals.*@ad\.rrule"):
        ad.gradient(lambda x: np.sum(np.linalg.eigvals(np.outer(x, x) + np.eye(3)).real),
                    np.ones(3))


def test_conversion_to_plain_array_raises_instead_of_dropping_derivative():
    with pytest.raises(TypeError, match="derivative would be lost"):
        ad.gradient(lambda x: np.sum(scipy.linalg.expm(np.outer(x, x))), np.ones(2))
    with pytest.raises(TypeError, match="float\\(\\) of a traced value"):
        ad.gradient(lambda x: float(np.sum(x)), np.ones(2))


def test_in_place_modification_raises():
    def setitem(x):
        x[0] = 1.0
        return np.sum(x)

    with pytest.raises(TypeError, match="in-place modification"):
        ad.gradient(setitem, np.ones(3))

    def into_plain(x):
        buf = np.zeros(3)
        buf[:] = x
        return np.sum(buf)

    with pytest.raises(TypeError, match="assignment into a plain array"):
        ad.gradient(into_plain, np.ones(3))

    with pytest.raises(TypeError, match="out="):
        ad.gradient(lambda x: np.sum(np.exp(x, out=np.empty(3))), np.ones(3))


def test_exception_in_forward_pass_keeps_type_message_and_names_primitive():
    @ad.primitive
    def fragile(x):
        return np.asarray(x)

    @ad.rrule(fragile)
    def fragile_rrule(x):
        raise FloatingPointError("pivot 3 is zero")

    try:
        with pytest.raises(FloatingPointError, match="pivot 3 is zero") as info:
            ad.gradient(lambda x: np.sum(fragile(x)), np.ones(2))
        notes = getattr(info.value, "__notes__", [])
        assert any("fragile" in n for n in notes)
    finally:
        ad.remove_rule(fragile)

    with pytest.raises(ValueError, match="matmul") as info:
        ad.gradient(lambda x: np.sum(np.ones((2, 3)) @ x), np.ones(2))
    assert any("numpy.matmul" in n for n in info.value.__notes__)


def test_gradient_argument_errors():
    with pytest.raises(TypeError, match="real scalar output"):
        ad.gradient(lambda x: x * 2, np.ones(2))
    with pytest.raises(TypeError, match="real scalar output"):
        ad.gradient(lambda x: np.sum(x) * 1j, np.ones(2))
    with pytest.raises(TypeError, match="argument 1 of type int"):
        ad.gradient(lambda x, n: np.sum(x) * n, np.ones(2), 3, argnums=1)
    with pytest.raises(ValueError, match="out of range"):
        ad.gradient(lambda x: np.sum(x), np.ones(2), argnums=2)


def test_argnums_tuple_and_has_aux():
    f = lambda x, y: (np.sum(x * y), {"xy": x * y})
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    (gx, gy), aux = ad.gradient(f, x, y, argnums=(0, 1), has_aux=True)
    np.testing.assert_allclose(gx, y)
    np.testing.assert_allclose(gy, x)
    np.testing.assert_allclose(aux["xy"], x * y)
    assert not ad.is_traced(aux["xy"])


def test_jvp_matches_central_differences():
    rng = np.random.default_rng(3)
    f = lambda x: np.tanh(x) * np.sum(x ** 2) + x[::-1]
    x, v = rng.standard_normal(5), rng.standard_normal(5)
    y, ydot = ad.jvp(f, (x,), (v,))
    fd = (f(x + 1e-6 * v) - f(x - 1e-6 * v)) / 2e-6
    np.testing.assert_allclose(ydot, fd, rtol=1e-7)
    np.testing.assert_allclose(y, f(x))


def test_scalar_broadcast_in_forward_mode():
    # a traced scalar broadcast against a constant vector: the tangent has y's shape
    y, ydot = ad.jvp(lambda a: np.sum(a + np.arange(4.0)), (1.0,), (1.0,))
    assert ydot == pytest.approx(4.0)


def test_taylor_test_detects_wrong_gradient():
    f = lambda x: np.sum(np.sin(x) * x)
    x = np.linspace(0.1, 1, 6)
    dx = np.random.default_rng(0).standard_normal(6)
    assert ad.taylor_test(f, x, dx) > 1.9

    @ad.primitive
    def bad_sin(x):
        return np.sin(x)

    @ad.rrule(bad_sin)
    def bad_sin_rrule(x):
        return bad_sin(x), lambda ybar: (ybar * np.cos(x) * 1.01,)

    try:
        rate = ad.taylor_test(lambda x: np.sum(bad_sin(x) * x), x, dx)
        assert rate < 1.2
    finally:
        ad.remove_rule(bad_sin)


def test_value_is_a_stop_gradient():
    g = ad.gradient(lambda x: np.sum(x * ad.value(x)), np.array([2.0, 3.0]))
    np.testing.assert_allclose(g, [2.0, 3.0])


def test_nondifferentiable_helpers_on_traced_values():
    def f(x):
        n = np.argmax(x)
        mask = np.isfinite(x) & (x > 0)
        return np.sum(np.where(mask, x, 0.0)) * np.ones_like(x)[n] + np.sign(x)[0] * x[0]

    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(ad.gradient(f, x), [2.0, 0.0, 1.0])
