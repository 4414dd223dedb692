"""Type-specific rules and opt-out: no piracy by the generic matmul rule (requirement 3)."""

import numpy as np
import pytest

from topopt import ad
from topopt.ad.registry import REGISTRY

from oracles import central_gradient


class Kron:
    """``A ⊗ B`` stored by its factors; products by two small matmuls.

    ``K @ vec(X) = vec(A X Bᵀ)`` and ``vec(X) @ K = vec(Aᵀ X B)`` (row-major
    vec). ``densified`` counts the calls that build the full matrix.
    """

    def __init__(self, A, B):
        self.A, self.B = A, B
        self.shape = (A.shape[0] * B.shape[0], A.shape[1] * B.shape[1])
        self.dtype = np.result_type(A, B)
        self.densified = 0

    def dense(self):
        self.densified += 1
        return np.kron(self.A, self.B)

    @property
    def T(self):          # no structured transpose: a generic caller densifies
        return self.dense().T

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul and method == "__call__":
            a, b = inputs
            if b is self:
                X = a.reshape(self.A.shape[0], self.B.shape[0])
                return (self.A.T @ X @ self.B).reshape(-1)
            X = b.reshape(self.A.shape[1], self.B.shape[1])
            return (self.A @ X @ self.B.T).reshape(-1)
        return NotImplemented


@pytest.fixture
def kron():
    rng = np.random.default_rng(0)
    return Kron(rng.standard_normal((3, 3)), rng.standard_normal((4, 4)))


@pytest.fixture
def generic_matmul_calls():
    """Count the uses of the generic matmul rule with a Kron argument."""
    calls = []
    generic = next(rule for types, rule in REGISTRY.entries("rrule", np.matmul) if types is None)

    def counting(*args, **kw):
        if any(isinstance(a, Kron) for a in args):
            calls.append(args)
        return generic(*args, **kw)

    REGISTRY.register("rrule", np.matmul, counting)      # replaces the generic entry
    yield calls
    REGISTRY.register("rrule", np.matmul, generic)


def objective(K):
    return lambda x: np.sum(np.sin(x @ K) ** 2)


def test_generic_rule_takes_over_without_opt_out(kron, generic_matmul_calls):
    x = np.linspace(-1, 1, 12)
    g = ad.gradient(objective(kron), x)
    assert generic_matmul_calls, "the generic rule was expected for x @ Kron"
    assert kron.densified > 0            # the generic pullback formed K^T densely
    np.testing.assert_allclose(g, central_gradient(objective(kron), x), rtol=1e-6, atol=1e-9)


def test_opt_out_traces_the_specialised_implementation(kron, generic_matmul_calls):
    x = np.linspace(-1, 1, 12)
    with ad.opt_out(np.matmul, Kron):
        g = ad.gradient(objective(kron), x)
    assert not generic_matmul_calls
    assert kron.densified == 0
    np.testing.assert_allclose(g, central_gradient(objective(kron), x), rtol=1e-6, atol=1e-9)
    # and the opt-out is gone after the block
    ad.gradient(objective(kron), x)
    assert generic_matmul_calls


def test_type_specific_rule_takes_precedence(kron, generic_matmul_calls):
    used = []

    @ad.rrule(np.matmul, types=Kron)
    def kron_matmul_rrule(x, K):
        used.append(True)

        def kron_matmul_pullback(ybar):           # x̄ = ȳ Kᵀ = K ȳ for real K
            return K @ ybar, None
        return x @ K, kron_matmul_pullback

    try:
        x = np.linspace(-1, 1, 12)
        g = ad.gradient(objective(kron), x)
    finally:
        ad.remove_rule(np.matmul, Kron)
    assert used and not generic_matmul_calls and kron.densified == 0
    np.testing.assert_allclose(g, central_gradient(objective(kron), x), rtol=1e-6, atol=1e-9)


def test_opt_out_of_a_primitive_traces_its_body():
    rule_calls = []

    @ad.primitive
    def quad(M, x):
        return x @ (M @ x)

    @ad.rrule(quad)
    def quad_rrule(M, x):
        rule_calls.append(True)
        Md = np.asarray(M)

        def quad_pullback(ybar):
            return None, ybar * (Md + Md.T) @ x
        return x @ (Md @ x), quad_pullback

    class Diag:
        def __init__(self, d):
            self.d = d

        def __array__(self, dtype=None, copy=None):
            return np.diag(self.d)

        def __matmul__(self, x):
            return self.d * x

    D = Diag(np.array([1.0, 2.0, 3.0]))
    x = np.array([0.5, -1.0, 2.0])
    try:
        np.testing.assert_allclose(ad.gradient(lambda x: quad(D, x), x), 2 * D.d * x)
        assert rule_calls
        rule_calls.clear()
        with ad.opt_out(quad, Diag):
            np.testing.assert_allclose(ad.gradient(lambda x: quad(D, x), x), 2 * D.d * x)
        assert not rule_calls
    finally:
        ad.remove_rule(quad)
