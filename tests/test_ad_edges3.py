"""Round three of the `ad` edge forms (issue 35): the refused derivatives JAX gives.

`np.sign` of complex input (``z / |z|``), the decompositions of
`topopt.ad.linalg_decomp` (``qr``, ``svd``, ``svdvals``, ``lstsq``, ``cond``),
every transform of `topopt.ad.fft_rules` with ``n=`` / ``s=`` / ``axes=`` /
``norm=``, and the composites of `topopt.ad.composite_calc` (``gradient``,
``meshgrid``, ``correlate``, ``cov``...). Each row is checked by
`ad.check_modes` in the four modes (reverse, forward, hvp, nested) against
central differences of the same call on plain arrays, with real and complex
inputs where numpy takes complex ones; complex singular vectors are checked
through functions that do not depend on their phase (``|U|^2``, ``U_k
Vh_k``), the only ones a phase-free derivative can be checked on. The
degenerate cases (repeated or zero singular values, rank-deficient
least squares, repeated eigenvalues) raise naming the case. The same forms
are cross-checked against JAX by ``scripts/crosscheck/crosscheck_ad_jax.py``.
"""

import numpy as np
import pytest

from edge_rows import check_in_every_mode, row, row_id
from oracles import draws
from topopt import ad
from topopt.ad import linalg_decomp, products

_n, _c = draws(20261207)           # real and complex draws of one fixed stream

X = {
    "v4": np.array([0.3, 1.7, -2.4, 3.9]),
    "v5": np.array([0.0, 0.4, 1.1, 1.5, 2.6]),
    "v4c": _c(4),
    "m34": np.array([[0.3, -1.2, 0.7, 2.1], [1.1, 0.4, -0.9, 0.2], [-0.5, 1.6, 0.8, -1.3]]),
    "m43": _n(4, 3), "m43c": _c(4, 3), "m34c": _c(3, 4), "m33": _n(3, 3) + 2 * np.eye(3),
    "m33c": _c(3, 3), "v3c": _c(3),
    "m45": _n(4, 5), "m45c": _c(4, 5), "t234": _n(2, 3, 4), "t234c": _c(2, 3, 4),
    "b243": _n(2, 4, 3), "b233": _n(2, 3, 3) + 3 * np.eye(3), "t333": 0.3 * _n(3, 3, 9),
}


def _phase_free(u, vh, k):
    """``u[:, :k] @ vh[:k]``: independent of the phases of the singular vectors."""
    return u[..., :, :k] @ vh[..., :k, :]


SIGN = [
    row(np.sign, "complex", lambda z: np.sign(z), "v4c"),
    row(np.sign, "complex, a zero entry", lambda z: np.sign(z * np.array([1.0, 0.0, 1.0, 1.0])),
        "v4c"),
    row(np.sign, "real times x (no derivative of sign)", lambda x: np.sign(x) * x, "v4"),
    row(np.sign, "complex from real", lambda x: np.sign(x * (1 + 2j) + 0.5j), "v4"),
]

UNARY = [
    row(np.arcsin, "real", lambda x: np.arcsin(x / 5), "v4"),
    row(np.arcsin, "complex", lambda z: np.arcsin(z), "v4c"),
    row(np.arccos, "real", lambda x: np.arccos(x / 5), "v4"),
    row(np.arccos, "complex", lambda z: np.arccos(z), "v4c"),
    row(np.arcsinh, "real", np.arcsinh, "v4"),
    row(np.arcsinh, "complex", np.arcsinh, "v4c"),
    row(np.arccosh, "real", lambda x: np.arccosh(np.abs(x) + 1.5), "v4"),
    row(np.arccosh, "complex", lambda z: np.arccosh(z + 3), "v4c"),
    row(np.arctanh, "real", lambda x: np.arctanh(x / 5), "v4"),
    row(np.arctanh, "complex", lambda z: np.arctanh(0.3 * z), "v4c"),
    row(np.fabs, "real", np.fabs, "v4"),
]

DECOMPOSITIONS = [
    row(np.linalg.qr, "tall, both", np.linalg.qr, "m43"),
    row(np.linalg.qr, "square, complete", lambda a: np.linalg.qr(a, mode="complete"), "m33"),
    row(np.linalg.qr, "mode='r'", lambda a: np.linalg.qr(a, "r"), "m43"),
    row(np.linalg.qr, "complex tall", np.linalg.qr, "m43c"),
    row(np.linalg.qr, "stack", np.linalg.qr, "b243"),
    row(linalg_decomp.qr, "Q only", lambda a: linalg_decomp.qr(a)[0], "m43"),
    row(np.linalg.svd, "square", np.linalg.svd, "m33"),
    row(np.linalg.svd, "wide, reduced", lambda a: np.linalg.svd(a, full_matrices=False), "m34"),
    row(np.linalg.svd, "tall, reduced", lambda a: np.linalg.svd(a, False), "m43"),
    row(np.linalg.svd, "stack, reduced", lambda a: np.linalg.svd(a, False), "b243"),
    row(np.linalg.svd, "values only", lambda a: np.linalg.svd(a, compute_uv=False), "m45"),
    row(np.linalg.svd, "complex values", lambda a: np.linalg.svd(a, compute_uv=False), "m45c"),
    row(np.linalg.svd, "complex |U|^2 wide", lambda a: np.abs(np.linalg.svd(
        a, full_matrices=False)[0]) ** 2, "m34c"),
    row(np.linalg.svd, "complex U_k Vh_k tall", lambda a: _phase_free(*np.linalg.svd(
        a, full_matrices=False)[::2], 2), "m43c"),
    row(np.linalg.svd, "complex U_k Vh_k square", lambda a: _phase_free(*np.linalg.svd(
        a)[::2], 1), "m33c"),
    row(np.linalg.svd, "hermitian", lambda a: np.linalg.svd(a @ a.T - 2 * np.eye(3),
                                                          hermitian=True), "m34"),
    row(np.linalg.svd, "hermitian values", lambda a: np.linalg.svd(
        a @ a.T - 2 * np.eye(3), compute_uv=False, hermitian=True), "m34"),
    row(linalg_decomp.svd, "U", lambda a: linalg_decomp.svd(a)[0], "m43"),
    row(np.linalg.svdvals, "wide", np.linalg.svdvals, "m34"),
    row(linalg_decomp.svdvals, "complex", linalg_decomp.svdvals, "m43c"),
    row(np.linalg.norm, "ord=2 via svdvals", lambda a: np.linalg.norm(a, 2), "m45"),
    row(np.linalg.norm, "ord='nuc' complex", lambda a: np.linalg.norm(a, "nuc"), "m34c"),
    row(np.linalg.cond, "2", np.linalg.cond, "m33"),
    row(np.linalg.cond, "-2 complex", lambda a: np.linalg.cond(a, -2), "m33c"),
    row(np.linalg.cond, "'fro'", lambda a: np.linalg.cond(a, "fro"), "m33"),
    row(np.linalg.cond, "1 stack", lambda a: np.linalg.cond(a[:, :3], 1), "b243"),
    row(np.linalg.lstsq, "tall, vector b", lambda a, b: np.linalg.lstsq(a, b)[0], "m43,v4"),
    row(np.linalg.lstsq, "tall, all outputs", lambda a, b: np.linalg.lstsq(a, b)[:2], "m43,v4"),
    row(np.linalg.lstsq, "singular values", lambda a: np.linalg.lstsq(a, np.ones(4))[3], "m43"),
    row(np.linalg.lstsq, "wide, matrix b", lambda a: np.linalg.lstsq(a, np.ones((3, 2)))[0],
        "m34"),
    row(np.linalg.lstsq, "complex tall", lambda a, b: np.linalg.lstsq(a, b, rcond=None)[:2],
        "m43c,v4c"),
    row(np.linalg.lstsq, "complex wide", lambda a, b: np.linalg.lstsq(a, b[:3])[0], "m34c,v4c"),
    row(linalg_decomp.lstsq, "square", linalg_decomp.lstsq, "m33,v3c"),
    row(products.eigvalsh, "x x^T", lambda a: products.eigvalsh(a @ a.T), "m34"),
]

FFTS = [
    row(np.fft.fft, "n pads", lambda x: np.fft.fft(x, 7), "v4"),
    row(np.fft.fft, "n crops, ortho", lambda x: np.fft.fft(x, 3, norm="ortho"), "v4c"),
    row(np.fft.fft, "axis 0, forward", lambda x: np.fft.fft(x, 5, axis=0, norm="forward"), "m34c"),
    row(np.fft.ifft, "n pads, forward", lambda x: np.fft.ifft(x, n=6, norm="forward"), "v4c"),
    row(np.fft.ifft, "n crops", lambda x: np.fft.ifft(x, 2, 0), "m34"),
    row(np.fft.rfft, "plain", np.fft.rfft, "v4"),
    row(np.fft.rfft, "n=7 odd pads, ortho", lambda x: np.fft.rfft(x, 7, norm="ortho"), "v4"),
    row(np.fft.rfft, "n=2 crops, axis 0, forward", lambda x: np.fft.rfft(x, 2, 0, "forward"),
        "m34"),
    row(np.fft.irfft, "plain", np.fft.irfft, "v4c"),
    row(np.fft.irfft, "n=7 odd, ortho", lambda x: np.fft.irfft(x, 7, norm="ortho"), "v4c"),
    row(np.fft.irfft, "n=4 crops, forward", lambda x: np.fft.irfft(x, 4, norm="forward"), "m45c"),
    row(np.fft.irfft, "n=3, axis 0", lambda x: np.fft.irfft(x, 3, axis=0), "m34c"),
    row(np.fft.irfft, "real input", lambda x: np.fft.irfft(x, 6), "v4"),
    row(np.fft.fft2, "plain", np.fft.fft2, "m34"),
    row(np.fft.fft2, "s pads and crops, ortho", lambda x: np.fft.fft2(x, s=(4, 3), norm="ortho"),
        "m34c"),
    row(np.fft.ifft2, "axes (0, 2)", lambda x: np.fft.ifft2(x, axes=(0, 2)), "t234c"),
    row(np.fft.fftn, "all axes", np.fft.fftn, "t234"),
    row(np.fft.fftn, "s and axes, forward", lambda x: np.fft.fftn(x, (2, 5), (0, 1), "forward"),
        "m34c"),
    row(np.fft.ifftn, "s and axes", lambda x: np.fft.ifftn(x, s=(2, 5), axes=(0, 1)), "m34c"),
    row(np.fft.rfft2, "plain", np.fft.rfft2, "m34"),
    row(np.fft.rfftn, "s and axes, forward", lambda x: np.fft.rfftn(x, (4, 6), (0, 1),
                                                                    "forward"), "m34"),
    row(np.fft.rfftn, "3-d", np.fft.rfftn, "t234"),
    row(np.fft.irfft2, "plain", np.fft.irfft2, "m34c"),
    row(np.fft.irfftn, "s and axes, ortho", lambda x: np.fft.irfftn(x, (4, 5), (0, 1), "ortho"),
        "m34c"),
    row(np.fft.irfftn, "3-d", np.fft.irfftn, "t234c"),
    row(np.fft.hfft, "plain", np.fft.hfft, "v4c"),
    row(np.fft.hfft, "n=5, ortho", lambda x: np.fft.hfft(x, 5, norm="ortho"), "v4c"),
    row(np.fft.ihfft, "n=5", lambda x: np.fft.ihfft(x, 5), "v4"),
    row(np.fft.ihfft, "forward", lambda x: np.fft.ihfft(x, norm="forward"), "m34"),
    row(np.fft.fftshift, "all axes", np.fft.fftshift, "m34c"),
    row(np.fft.ifftshift, "axis 1", lambda x: np.fft.ifftshift(x, axes=1), "m34"),
]

_COORDS = np.array([0.0, 1.0, 3.0, 4.5])
CALCULUS = [
    row(np.gradient, "vector", np.gradient, "v4"),
    row(np.gradient, "spacing, edge_order 2", lambda f: np.gradient(f, 0.5, edge_order=2), "v4"),
    row(np.gradient, "2-d, two spacings", lambda f: np.gradient(f, 0.5, 2.0), "m34"),
    row(np.gradient, "axis 1, edge_order 2", lambda f: np.gradient(f, axis=1, edge_order=2),
        "m34"),
    row(np.gradient, "coordinates", lambda f: np.gradient(f, X["v5"], axis=1), "m45"),
    row(np.gradient, "coordinates, edge_order 2", lambda f: np.gradient(
        f, [0.0, 1.0, 3.0, 4.5], X["v5"], edge_order=2), "m45"),
    row(np.gradient, "traced coordinates", lambda f, x: np.gradient(f, x + _COORDS,
                                                                    edge_order=2), "v4,v4"),
    row(np.gradient, "traced coordinates, tuple axis", lambda f, x: np.gradient(
        f, 1.0, x, axis=(0, 1)), "m45,v5"),
    row(np.gradient, "complex", lambda f: np.gradient(f, 0.3), "v4c"),
    row(np.meshgrid, "xy", lambda x, y: np.meshgrid(x, y), "v4,v5"),
    row(np.meshgrid, "ij sparse", lambda x, y: np.meshgrid(x, y, indexing="ij", sparse=True),
        "v4,v5"),
    row(np.meshgrid, "three, copy=False", lambda x, y: np.meshgrid(x, y, x[:2], copy=False),
        "v4,v5"),
    row(np.meshgrid, "list and complex", lambda z: np.meshgrid([1.0, 2.0], z, z[:2]), "v4c"),
    row(np.correlate, "valid", np.correlate, "v5,v4"),
    row(np.correlate, "full complex", lambda a, v: np.correlate(a, v, "full"), "v4c,v5"),
    row(np.correlate, "same, shorter first", lambda a, v: np.correlate(a, v, "same"), "v4,v5"),
    row(np.ediff1d, "to_begin, to_end", lambda x: np.ediff1d(x, to_end=[1.0, 2.0],
                                                             to_begin=x[0, 0]), "m34"),
    row(np.diagflat, "k=1", lambda x: np.diagflat(x, 1), "v4c"),
    row(np.vander, "N=4", lambda x: np.vander(x, 4), "v5"),
    row(np.vander, "increasing complex", lambda x: np.vander(x, increasing=True), "v4c"),
    row(np.cov, "rows", np.cov, "m45"),
    row(np.cov, "y, rowvar=False, ddof=0", lambda x, y: np.cov(x, y, rowvar=False, ddof=0),
        "m43,v4"),
    row(np.cov, "complex, bias", lambda x: np.cov(x, bias=True), "m34c"),
    row(np.corrcoef, "rows", np.corrcoef, "m45"),
    row(np.take_along_axis, "argsort order", lambda x: np.take_along_axis(
        x, np.argsort(X["m34"], axis=1), axis=1), "m34c"),
    row(np.real_if_close, "close", lambda x: np.real_if_close(x + 0j) * x, "v4"),
    row(np.real_if_close, "not close", lambda z: np.real_if_close(z * 1j), "v4c"),
    row(np.modf, "fraction", lambda x: np.modf(2 * x)[0], "v4"),
    row(np.frexp, "mantissa", lambda x: np.frexp(x)[0], "v4"),
    row(np.ldexp, "3", lambda x: np.ldexp(x, 3), "v4"),
    row(np.divmod, "remainder", lambda x: np.divmod(x, 0.7)[1], "v4"),
]

MORE = [
    row(np.linalg.solve, "stack, 1-d b", np.linalg.solve, "b233,v3c"),
    row(np.linalg.solve, "matrix, stacked b", lambda a, b: np.linalg.solve(a, b[:, :3, :2]),
        "m33,b243"),
    row(np.linalg.solve, "stack, broadcast b", lambda a, b: np.linalg.solve(a, b[:3]),
        "b233,m43c"),
    row(np.linalg.matrix_transpose, "stack", np.linalg.matrix_transpose, "b243"),
    row(np.matrix_transpose, "complex", np.matrix_transpose, "m34c"),
    row(np.linalg.outer, "complex", np.linalg.outer, "v4c,v5"),
    row(np.linalg.cross, "axis 0", lambda a: np.linalg.cross(a[:, :2], a[:, 2:], axis=0), "m34"),
    row(np.linalg.trace, "stack, offset", lambda a: np.linalg.trace(a, offset=1), "b243"),
    row(np.linalg.diagonal, "complex", lambda a: np.linalg.diagonal(a, offset=-1), "m34c"),
    row(np.linalg.vecdot, "complex, axis 0", lambda a, b: np.linalg.vecdot(a, b, axis=0),
        "m34c,m34"),
    row(np.linalg.matmul, "stack", lambda a, b: np.linalg.matmul(a, b), "b243,m34"),
    row(np.linalg.tensordot, "axes 1", lambda a, b: np.linalg.tensordot(a, b, axes=1),
        "m43,m34c"),
    row(np.linalg.matrix_norm, "fro keepdims", lambda a: np.linalg.matrix_norm(a, keepdims=True),
        "b243"),
    row(np.linalg.matrix_norm, "nuc complex", lambda a: np.linalg.matrix_norm(a, ord="nuc"),
        "m34c"),
    row(np.linalg.vector_norm, "all, ord 3", lambda a: np.linalg.vector_norm(a, ord=3), "m34"),
    row(np.linalg.vector_norm, "axes, keepdims", lambda a: np.linalg.vector_norm(
        a, axis=(0, 2), keepdims=True), "t234c"),
    row(np.linalg.multi_dot, "vector ends", lambda a, b, v: np.linalg.multi_dot([v, a, b, v]),
        "m43,m34,v4"),
    row(np.linalg.multi_dot, "matrices", lambda a, b: np.linalg.multi_dot([a, b, a]),
        "m43,m34c"),
    row(np.linalg.tensorsolve, "2-d", lambda a: np.linalg.tensorsolve(
        np.reshape(a, (3, 3, 9)) + np.reshape(3 * np.eye(9), (3, 3, 9)), X["m33"]), "t333"),
    row(np.linalg.tensorinv, "ind 1", lambda a: np.linalg.tensorinv(
        np.reshape(a, (9, 3, 3)) + np.reshape(3 * np.eye(9), (9, 3, 3)), 1), "t333"),
    row(np.polyder, "m=2", lambda p: np.polyder(p, 2), "v5"),
    row(np.polyint, "k", lambda p: np.polyint(p, 2, [1.0, 3.0]), "v4c"),
    row(np.polyfit, "deg 2", lambda x, y: np.polyfit(x + np.arange(5.0), y, 2), "v5,v5"),
    row(np.polyfit, "several y", lambda y: np.polyfit(X["v5"], y.T, 1), "m45"),
    row(np.select, "two conditions", lambda a, b: np.select([X["v4"] > 1, X["v4"] > 0], [a, b],
                                                            a[0]), "v4,v4c"),
    row(np.select, "a list choice", lambda a: np.select([X["v4"] > 1, X["v4"] > 0],
                                                        [[1.0, 2.0, 3.0, 4.0], a]), "v4"),
    row(np.extract, "mask", lambda a: np.extract(X["m34"] > 0, a), "m34c"),
    row(np.resize, "larger", lambda a: np.resize(a, (3, 5)), "v4"),
    row(np.partition, "kth 1", lambda a: np.partition(a, 1, axis=1), "m34"),
    row(np.sort_complex, "real input", np.sort_complex, "v5"),
    row(np.cumulative_prod, "include_initial", lambda a: np.cumulative_prod(
        a, axis=1, include_initial=True), "m34"),
    row(np.unstack, "axis 1", lambda a: np.unstack(a, axis=1), "m34c"),
    row(np.add, "reduce", lambda a: np.add.reduce(a), "m34c"),
    row(np.multiply, "reduce axis 1 keepdims", lambda a: np.multiply.reduce(a, 1, keepdims=True),
        "m34"),
    row(np.maximum, "reduce axis None", lambda a: np.maximum.reduce(a, axis=None), "m34"),
    row(np.minimum, "reduce", lambda a: np.minimum.reduce(a, 1), "m34"),
    row(np.add, "accumulate", lambda a: np.add.accumulate(a, 1), "m34c"),
    row(np.multiply, "accumulate", np.multiply.accumulate, "m34"),
    row(np.subtract, "outer", lambda a, b: np.subtract.outer(a, b), "v4c,m34"),
    row(np.power, "outer", lambda a, b: np.power.outer(np.abs(a) + 0.5, b), "v4,v5"),
]

ROWS = SIGN + UNARY + DECOMPOSITIONS + FFTS + CALCULUS + MORE


@pytest.mark.parametrize("fun, label, call, inputs", ROWS, ids=[row_id(r) for r in ROWS])
def test_edge_form_in_every_mode(fun, label, call, inputs):
    check_in_every_mode(call, [X[name] for name in inputs], seed=13)


VALUES = [
    lambda z: np.sign(z * (1 + 1j)), lambda a: np.linalg.qr(a), lambda a: np.linalg.svd(a, False),
    lambda a: np.linalg.lstsq(a, np.arange(4.0)), lambda a: np.fft.rfftn(a, (4, 6), (0, 1)),
    lambda a: np.fft.irfft2(a * 1j), lambda a: np.gradient(a, [0.0, 1.0, 3.0, 4.5], 0.5),
    lambda a: np.meshgrid(a[0], a[1]), lambda a: np.cov(a), lambda a: np.corrcoef(a),
    lambda a: np.correlate(a[0], a[1, :2] * 1j, "same"), lambda a: np.vander(a[0]),
    lambda a: np.linalg.cond(a[:, :3]), lambda a: np.fft.hfft(a * 1j, 5),
]


@pytest.mark.parametrize("call", VALUES)
def test_traced_values_are_numpys(call):
    x = X["m43"]
    got, want = ad.pullback(call, x)[0], call(x)
    for g, w in zip(ad.tree_leaves(got), ad.tree_leaves(want)):
        assert np.array_equal(ad.value(g), w)


def test_sign_of_complex_is_z_over_abs_z():
    # d sign(z) / dz along dz for z = 3 + 4i: (dz - z Re(conj(z) dz) / |z|^2) / |z|
    z, dz = np.array([3.0 + 4.0j]), np.array([1.0 - 2.0j])
    expected = (dz - z * np.real(np.conj(z) * dz) / 25.0) / 5.0
    np.testing.assert_allclose(ad.jvp(np.sign, (z,), (dz,))[1], expected, rtol=1e-15)
    # at 0: numpy's 0, derivative 0 (as for real input)
    assert ad.jvp(np.sign, (np.array([0j]),), (np.array([1.0 + 0j]),))[1] == 0


def test_svd_values_gradient_is_u_v():
    a = X["m34"]
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    g = ad.gradient(lambda a: np.linalg.svd(a, compute_uv=False)[0], a)
    np.testing.assert_allclose(g, np.outer(u[:, 0], vh[0]), rtol=1e-13)   # d s_1 = u_1^T dA v_1


def test_lstsq_gradient_of_b_is_the_pseudo_inverse():
    a = X["m43"]
    g = ad.gradient(lambda b: np.linalg.lstsq(a, b)[0][1], X["v4"])
    np.testing.assert_allclose(g, np.linalg.pinv(a)[1], rtol=1e-12)


def test_repeated_eigenvalues_keep_the_first_derivative():
    x = np.array([2.0, -1.0])
    f = lambda x: np.sum(np.linalg.eigvalsh(x[0] * np.eye(3)) * [1.0, 2.0, 3.0])  # noqa: E731
    np.testing.assert_allclose(ad.gradient(f, x), [6.0, 0.0], rtol=1e-14, atol=1e-14)
    wdot = ad.jvp(lambda x: np.linalg.eigvalsh(x[0] * np.eye(3)), (x,), (np.ones(2),))[1]
    np.testing.assert_allclose(wdot, np.ones(3), rtol=1e-14)


def _diag_repeated(x):
    return np.diag(np.stack([x[0], x[0], x[1]]))


REFUSED = [
    # (call of a traced vector of 4, exception, words the message must contain)
    (lambda x: np.linalg.svd(_diag_repeated(x))[0], ValueError,
     ["numpy.linalg.svd", "repeated singular values", "compute_uv=False"]),
    (lambda x: np.linalg.svd(np.stack([x[:3], 2 * x[:3]]), full_matrices=False)[0], ValueError,
     ["numpy.linalg.svd", "zero singular value", "non-square"]),
    (lambda x: np.linalg.svd(np.outer(x, x), compute_uv=False), ValueError,
     ["numpy.linalg.svd", "singular values is undefined at a zero singular value"]),
    (lambda x: np.linalg.norm(np.outer(x, x), "nuc"), ValueError, ["zero singular value"]),
    (lambda x: np.linalg.svd(np.outer(x, x[:3]))[0], ad.NoRuleError,
     ["numpy.linalg.svd", "full_matrices=True", "full_matrices=False"]),
    (lambda x: np.linalg.qr(np.outer(x[:3], x)), ad.NoRuleError, ["numpy.linalg.qr", "wide"]),
    (lambda x: np.linalg.qr(np.outer(x, x[:3]) + np.eye(4, 3), "complete"), ad.NoRuleError,
     ["numpy.linalg.qr", "mode='reduced'"]),
    (lambda x: np.linalg.qr(np.outer(x, x[:3]) + np.eye(4, 3), "raw"), ad.NoRuleError,
     ["numpy.linalg.qr", "mode='raw'"]),
    (lambda x: np.linalg.qr(np.outer(x, x[:3])), ValueError,
     ["numpy.linalg.qr", "full column rank"]),
    (lambda x: np.linalg.lstsq(np.outer(x, x[:3]), x)[0], ValueError,
     ["numpy.linalg.lstsq", "full rank", "rank 1"]),
    (lambda x: np.linalg.eigh(_diag_repeated(x))[1], ValueError,
     ["numpy.linalg.eigh", "repeated eigenvalues", "eigvalsh"]),
    (lambda x: np.fft.fft(x, 0), ValueError, ["numpy.fft.fft", "FFT data points (0)"]),
    (lambda x: np.fft.rfft(x, norm="half"), ValueError, ["numpy.fft.rfft", "'ortho'"]),
    (lambda x: np.gradient(x, edge_order=3), ValueError, ["numpy.gradient", "1 or 2"]),
    (lambda x: np.meshgrid(x, x, indexing="yx"), ValueError, ["numpy.meshgrid", "'ij'"]),
    (lambda x: np.cov(x, fweights=[1, 2, 1, 1]), ad.NoRuleError, ["numpy.cov", "fweights"]),
    (lambda x: np.linalg.eig(np.outer(x, x)), ad.NoRuleError, ["numpy.linalg.eig", "rule"]),
    (lambda x: np.add.reduce(x, initial=1.0), ad.NoRuleError, ["numpy.add.reduce", "rule"]),
    (lambda x: np.maximum.accumulate(x), ad.NoRuleError, ["numpy.maximum.accumulate", "rule"]),
]


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("call, exc, words", REFUSED, ids=[", ".join(r[2][:2]) for r in REFUSED])
def test_edge_form_refused_with_a_clear_message(call, exc, words, mode):
    x = X["v4"]
    with pytest.raises(exc) as info:      # the whole derivative: a pullback may refuse late
        if mode == "reverse":
            y, back = ad.pullback(call, x)
            back(ad.tree_map(lambda y: np.ones(np.shape(y), np.result_type(y)), y))
        else:
            ad.jvp(call, (x,), (np.ones_like(x),))
    for word in words:
        assert word in str(info.value), f"{word!r} not in {str(info.value)!r}"


def test_second_derivative_of_repeated_eigenvalues_is_refused():
    f = lambda x: np.sum(np.linalg.eigvalsh(_diag_repeated(x)) ** 2)    # noqa: E731
    with pytest.raises(ValueError, match="repeated eigenvalues"):
        ad.hvp(f, X["v4"], np.ones(4))
