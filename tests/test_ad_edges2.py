"""Round two of the `ad` edge forms of issue 23 (the held-out kinds), every mode.

Functions computed by traced operations (`topopt.ad.composite_rules`: the
nan-reductions, ptp, median, copy, angle, block, inner, kron, cross,
convolve, polyval, interp, linspace; `topopt.ad.composite_more`: flips,
roll, rot90, triangles, splits, trapezoid, quantiles, matrix_power and
ufuncs such as logaddexp, fmax, copysign), the arctan2/hypot/cbrt rules, casts and
``dtype=`` neighbours, constructors, builtins and in-place operators. Each
row is checked by `ad.check_modes` in the four modes against central
differences of the same call on plain arrays (numpy's own value);
`tests/test_ad_callforms.py` walks the registry over these rows too. The same
forms are cross-checked against JAX by ``scripts/crosscheck/crosscheck_ad_jax.py``.
"""


import numpy as np
import pytest

from edge_rows import check_in_every_mode, row, row_id
from refusals import refusal_message
from topopt import ad
from topopt.ad import linalg_rules

X = {
    "v4": np.array([0.3, 1.7, -2.4, 3.9]),
    "v5": np.array([0.3, 1.7, -2.4, 3.9, 1.1]),
    "v2": np.array([0.7, -1.3]),
    "v3": np.array([0.7, -1.3, 2.2]),
    "m34": np.array([[0.3, -1.2, 0.7, 2.1], [1.1, 0.4, -0.9, 0.2], [-0.5, 1.6, 0.8, -1.3]]),
    "m23": np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.9]]),
}
C4 = [1.0, 2.0, -3.0, 0.5]
NAN_AT = {(4,): np.array([False, True, False, False]),
          (3, 4): np.array([[False, True, False, False], [False] * 4, [False, False, True, False]])}


def nan(x):
    """`x` with NaN entries (one in a vector of 4, two in the 3 x 4 matrix), none traced."""
    return np.where(NAN_AT[np.shape(x)], np.nan, x)


def _inplace(x):
    y = x * 1.0
    y += [1.0, 2.0]
    y *= [x[0], 2.0]
    return y


COMPOSITES = [
    row(np.nansum, "nan entry", lambda x: np.nansum(nan(x)) * x, "v4"),
    row(np.nansum, "axis keepdims dtype", lambda x: np.nansum(nan(x), axis=1, keepdims=True,
                                                              dtype=float) * x, "m34"),
    row(np.nanprod, "axis 0", lambda x: np.nanprod(nan(x), axis=0), "m34"),
    row(np.nanmean, "nan entry", lambda x: np.nanmean(nan(x)) * x, "v4"),
    row(np.nanmean, "axis 1", lambda x: np.nanmean(nan(x), 1), "m34"),
    row(np.nanvar, "ddof=1 axis", lambda x: np.nanvar(nan(x), axis=1, ddof=1), "m34"),
    row(np.nanstd, "all", lambda x: np.nanstd(nan(x)), "v4"),
    row(np.nanmax, "nan entry", lambda x: np.nanmax(nan(x)) * x, "v4"),
    row(np.nanmin, "axis 0", lambda x: np.nanmin(nan(x), axis=0), "m34"),
    row(np.nancumsum, "nan entry", lambda x: np.nancumsum(nan(x)) * x, "v4"),
    row(np.nancumprod, "axis 1", lambda x: np.nancumprod(nan(x), axis=1), "m34"),
    row(np.ptp, "vector", lambda x: np.ptp(x) * x, "v4"),
    row(np.ptp, "axis keepdims", lambda x: np.ptp(x, axis=1, keepdims=True) * x, "m34"),
    row(np.median, "even", lambda x: np.median(x) * x, "v4"),
    row(np.median, "odd", lambda x: np.median(x) * x, "v5"),
    row(np.median, "axis keepdims", lambda x: np.median(x, axis=0, keepdims=True) * x, "m34"),
    row(np.copy, "np.copy", lambda x: np.copy(x) * x, "v4"),
    row(np.angle, "complex", lambda x: np.angle(x - 1j * x[0]), "v4"),
    row(np.angle, "deg", lambda x: np.angle(x + 1j, deg=True), "v4"),
    row(np.arctan2, "list operand", lambda x: np.arctan2(x, [1.0, -2.0, 0.5, 3.0]), "v4"),
    row(np.arctan2, "both traced", lambda x: np.arctan2(2 * x[0], x), "v4"),
    row(np.hypot, "broadcast 0-d", lambda x: np.hypot(x, x[1]), "v4"),
    row(np.block, "1-d pieces", lambda x: np.block([[x, x], [2 * x, x]]), "v4"),
    row(np.block, "2-d with constants", lambda x: np.block(
        [[x, np.zeros((3, 1))], [np.ones((1, 4)), np.ones((1, 1))]]), "m34"),
    row(np.inner, "list", lambda x: np.inner(x, C4), "v4"),
    row(np.inner, "matrices", lambda x: np.inner(x, x), "m34"),
    row(np.kron, "list second", lambda x: np.kron(x, [1.0, 2.0]), "v4"),
    row(np.kron, "2-d list first", lambda x: np.kron([[1.0, 2.0], [0.5, -1.0]], x), "m23"),
    row(np.cross, "3-vectors rows", lambda x: np.cross(x[:, :3], x[::-1, 1:]), "m34"),
    row(np.cross, "list", lambda x: np.cross(x, [1.0, 2.0, 3.0]), "v3"),
    row(np.convolve, "list full", lambda x: np.convolve(x, [1.0, 2.0, -1.0]), "v4"),
    row(np.convolve, "same", lambda x: np.convolve(x, [1.0, 2.0, -1.0], mode="same"), "v4"),
    row(np.convolve, "valid, short first", lambda x: np.convolve([1.0, 2.0], x, "valid"), "v4"),
    row(np.convolve, "self", lambda x: np.convolve(x, x), "v4"),
    row(np.polyval, "list coefficients", lambda x: np.polyval([1.0, -2.0, 0.5], x), "v4"),
    row(np.polyval, "traced both", lambda x: np.polyval(x[:3], x), "v4"),
    row(np.interp, "list knots", lambda x: np.interp(x, [-3.0, 0.0, 2.0, 5.0],
                                                     [1.0, 2.0, 0.0, 4.0]), "v4"),
    row(np.interp, "traced values", lambda x: np.interp([0.5, 1.5], [0.0, 1.0, 2.0, 3.0], x),
        "v4"),
    row(np.interp, "traced left", lambda x: np.interp(x, [-1.0, 0.0, 2.0], [1.0, 2.0, 0.0],
                                                      left=x[0], right=-1.0), "v4"),
    row(np.linspace, "traced ends", lambda x: np.linspace(x[0], x[1], 4) * x, "v4"),
    row(np.linspace, "no endpoint, retstep", lambda x: np.linspace(
        x[0], x[1], 5, endpoint=False, retstep=True)[0] * x[2], "v4"),
    row(np.linspace, "vector ends", lambda x: np.linspace(x[:2], x[2:], 3), "v4"),
]

NEIGHBOURS = [
    row(np.multiply, "astype(int8) * x", lambda x: x.astype(np.int8) * x, "v4"),
    row(np.add, "astype(uint8) + x*x", lambda x: np.abs(x).astype(np.uint8) + x * x, "v4"),
    row(np.multiply, "np.array(x, dtype=int) * x", lambda x: np.array(x, dtype=int) * x, "v4"),
    row(np.multiply, "rint * x", lambda x: np.rint(x) * x, "v4"),
    row(np.multiply, "sign * x", lambda x: np.sign(x) * x, "v4"),
    row(np.multiply, "x[abs(x).astype(int) % 4] * x",
        lambda x: x[np.abs(x).astype(int) % 4] * x, "v4"),
    row(np.where, "where(x > 0, x, 2)", lambda x: np.where(x > 0, x, 2), "v4"),
    row(np.zeros_like, "dtype=int + x*x", lambda x: np.zeros_like(x, dtype=int) + x * x, "v4"),
    row(np.broadcast_to, "0-d", lambda x: np.broadcast_to(x[1], (4,)) * x, "v4"),
    row(np.tile, "2-d", lambda x: np.tile(x, (2, 1)) ** 2, "m34"),
    row(np.repeat, "list counts", lambda x: np.repeat(x, [1, 2, 0, 1]) ** 2, "v4"),
    row(np.eye, "eye(3, 4, k=-1) * x", lambda x: np.eye(3, 4, k=-1) * x, "m34"),
    row(np.linalg.solve, "nested list holding traced", lambda x: np.linalg.solve(
        [[x[0] + 3, 1.0], [2.0, x[1] + 4]], x), "v2"),
    row(np.multiply, "list with numpy scalars", lambda x: x * [np.float64(2.0), np.int64(3)],
        "v2"),
    row(np.multiply, "list with traced 0-d", lambda x: x * [np.sum(x), 1.0], "v2"),
    row(np.add, "builtin sum of traced", lambda x: sum([x[0], x[1] * 2, x[0] * x[1]]) * x, "v2"),
    row(np.maximum, "builtin max", lambda x: max(x[0], x[1]) * x, "v2"),
    row(np.add, "in-place += list, *= [x0, 2]", _inplace, "v2"),
    row(np.mod, "list % x", lambda x: [0.5, 2.0] % x, "v2"),
    row(np.var, "x.var(axis=1, ddof=1)", lambda x: x.var(axis=1, ddof=1), "m34"),
    row(np.max, "x.max(initial=) active", lambda x: x.max(initial=-10.0) * x, "v4"),
    row(np.sum, "x.sum(where=)", lambda x: x.sum(where=x > 0) * x, "v4"),
    row(np.ravel, "x.ravel(order='F')", lambda x: x.ravel(order="F") ** 2, "m34"),
    row(np.reshape, "x.reshape(order='F')", lambda x: x.reshape((4, 3), order="F") ** 2, "m34"),
    row(np.real, "(complex).astype(float)", lambda x: (x * (1 + 2j)).astype(float) * x, "v4"),
]

MANIPULATIONS = [
    row(np.flip, "axis 1", lambda x: np.flip(x, 1) * x, "m34"),
    row(np.flip, "all axes", lambda x: np.flip(x) ** 2, "m34"),
    row(np.flipud, "matrix", lambda x: np.flipud(x) * x, "m34"),
    row(np.fliplr, "matrix", lambda x: np.fliplr(x) * x, "m34"),
    row(np.roll, "flat", lambda x: np.roll(x, 5) * x, "m34"),
    row(np.roll, "two axes", lambda x: np.roll(x, (1, -1), axis=(0, 1)) * x, "m34"),
    row(np.rot90, "k=1", lambda x: np.rot90(x) ** 2, "m34"),
    row(np.rot90, "k=-1", lambda x: np.rot90(x, -1) @ x, "m34"),
    row(np.rot90, "k=2", lambda x: np.rot90(x, 2) * x, "m34"),
    row(np.triu, "k=1", lambda x: np.triu(x, 1) ** 2, "m34"),
    row(np.tril, "k=-1", lambda x: np.tril(x, -1) * x, "m34"),
    row(np.split, "sections", lambda x: np.split(x, 2)[1] * x[:2], "v4"),
    row(np.split, "indices axis 1", lambda x: np.split(x, [1, 3], axis=1)[1] ** 2, "m34"),
    row(np.array_split, "uneven", lambda x: np.array_split(x, 3)[0] ** 2, "v4"),
    row(np.trapezoid, "unit spacing", lambda x: np.trapezoid(x ** 2), "v4"),
    row(np.trapezoid, "list x, axis 0", lambda x: np.trapezoid(x, [0.0, 0.5, 2.0], axis=0),
        "m34"),
    row(np.quantile, "0.4 axis 1", lambda x: np.quantile(x, 0.4, axis=1), "m34"),
    row(np.quantile, "list q keepdims", lambda x: np.quantile(x, [0.1, 0.7], axis=0,
                                                              keepdims=True), "m34"),
    row(np.percentile, "30", lambda x: np.percentile(x, 30.0) * x, "v4"),
    row(np.linalg.matrix_power, "3", lambda x: np.linalg.matrix_power(x[:, :3], 3), "m34"),
    row(np.linalg.matrix_power, "-2", lambda x: np.linalg.matrix_power(x[:, 1:] + 2 * np.eye(3),
                                                                       -2), "m34"),
    row(np.sinc, "vector", lambda x: np.sinc(x), "v4"),
    row(np.logaddexp, "0-d broadcast", lambda x: np.logaddexp(x, x[0]), "v4"),
    row(np.logaddexp2, "constant", lambda x: np.logaddexp2(x, 1.0), "v4"),
    row(np.fmax, "constant", lambda x: np.fmax(x, 1.0), "v4"),
    row(np.fmin, "list", lambda x: np.fmin(x, C4), "v4"),
    row(np.copysign, "negative", lambda x: np.copysign(x, -1.0) * x, "v4"),
    row(np.float_power, "abs", lambda x: np.float_power(np.abs(x), 1.5), "v4"),
    row(np.nan_to_num, "finite", lambda x: np.nan_to_num(x) * x, "v4"),
    row(np.nan_to_num, "nan entries", lambda x: np.nan_to_num(nan(x), nan=2.0) * x, "v4"),
    row(np.vecdot, "rows", lambda x: np.vecdot(x, x), "m34"),
    row(np.matvec, "list vector", lambda x: np.matvec(x, C4), "m34"),
    row(np.vecmat, "list vector", lambda x: np.vecmat([1.0, 2.0, 3.0], x), "m34"),
    row(np.cumulative_sum, "include_initial", lambda x: np.cumulative_sum(
        x, include_initial=True) * 1.5, "v4"),
    row(np.cbrt, "vector", lambda x: np.cbrt(x), "v4"),
    row(np.deg2rad, "vector", lambda x: np.deg2rad(x) * x, "v4"),
    row(np.radians, "vector", lambda x: np.radians(x), "v4"),
    row(np.rad2deg, "vector", lambda x: np.rad2deg(x) * x, "v4"),
    row(np.degrees, "vector", lambda x: np.degrees(x), "v4"),
    row(np.atleast_2d, "vector", lambda x: np.atleast_2d(x) ** 2, "v4"),
    row(np.atleast_3d, "two arrays", lambda x: np.atleast_3d(x, x[0])[0] * x[1], "m34"),
    row(np.unwrap, "jumps", lambda x: np.unwrap(3 * x) * x, "v4"),
    row(np.linalg.eigvalsh, "x x^T", lambda x: np.linalg.eigvalsh(x @ x.T), "m34"),
    row(np.linalg.eigvalsh, "lower triangle read", lambda x: np.linalg.eigvalsh(
        x[:, :3] + 3 * np.eye(3)), "m34"),
    row(np.linalg.eigh, "UPLO='U' eigenvalues", lambda x: np.linalg.eigh(
        x[:, 1:] + 3 * np.eye(3), UPLO="U")[0], "m34"),
    row(np.linalg.cholesky, "x x^T + 3 I", lambda x: np.linalg.cholesky(
        x @ x.T + 3 * np.eye(3)), "m34"),
    row(linalg_rules._cholesky_h, "upper", lambda x: np.linalg.cholesky(
        x[:, :3] @ x[:, :3].T + np.eye(3), upper=True), "m34"),
    row(np.linalg.pinv, "wide", lambda x: np.linalg.pinv(x), "m34"),
    row(np.linalg.pinv, "tall", lambda x: np.linalg.pinv(x.T) * 2, "m34"),
    row(np.fft.fft, "real part", lambda x: np.real(np.fft.fft(x * (1 + 0.5j))), "v4"),
    row(np.fft.fft, "axis 0, ortho", lambda x: np.abs(np.fft.fft(x, axis=0, norm="ortho")),
        "m34"),
    row(np.fft.ifft, "forward", lambda x: np.imag(np.fft.ifft(x * x, norm="forward")), "v4"),
]

ROWS = COMPOSITES + NEIGHBOURS + MANIPULATIONS


@pytest.mark.parametrize("fun, label, call, inputs", ROWS, ids=[row_id(r) for r in ROWS])
def test_edge_form_in_every_mode(fun, label, call, inputs):
    check_in_every_mode(call, [X[name] for name in inputs], seed=11)


def test_composite_values_are_numpys():
    x = nan(X["m34"])
    for fun in (np.nansum, np.nanmean, np.nanmax, np.nanvar, np.nanstd, np.nanprod):
        got = ad.pullback(lambda x: fun(nan(x), axis=1), x)[0]
        np.testing.assert_allclose(got, fun(x, axis=1), rtol=1e-15)
    v = X["v4"]
    np.testing.assert_array_equal(ad.pullback(lambda x: np.linspace(x[0], x[1], 7), v)[0],
                                  np.linspace(v[0], v[1], 7))
    for mode in ("full", "same", "valid"):
        np.testing.assert_allclose(ad.pullback(lambda x: np.convolve(x, [1.0, 2, 3], mode), v)[0],
                                   np.convolve(v, [1.0, 2, 3], mode), rtol=1e-15)
    m = X["m34"]
    for call in (lambda x: np.roll(x, (1, -1), axis=(0, 1)), lambda x: np.rot90(x, 3),
                 lambda x: np.quantile(x, [0.1, 0.7], axis=0, keepdims=True),
                 lambda x: np.percentile(x, 30.0), lambda x: np.trapezoid(x, axis=0),
                 lambda x: np.split(x, [1, 3], axis=1)[2], lambda x: np.triu(x, -1)):
        np.testing.assert_allclose(ad.pullback(call, m)[0], call(m), rtol=1e-15)
    # d/dx0 of linspace(x0, x1, 3).sum() = 1 + 1/2 + 0 (analytic)
    assert ad.gradient(lambda x: np.sum(np.linspace(x[0], x[1], 3)), v)[0] == 1.5


REFUSED = [
    # (call of a traced vector of 4, exception, words the message must contain)
    (lambda x: np.r_[x, 1.0], TypeError, ["numpy.r_", "np.concatenate"]),
    (lambda x: np.c_[x, x], TypeError, ["numpy.c_", "np.column_stack"]),
    (lambda x: np.exp(np.float64(1.0)) * float(x[0]), TypeError, ["float()", "np.exp"]),
    (lambda x: np.cross(x, x), ValueError, ["numpy.cross", "2 or 3"]),
    (lambda x: np.convolve(x, [1.0], "middle"), ValueError, ["numpy.convolve", "'valid'"]),
    (lambda x: np.interp(x, [0.0, 1.0], [1.0, 2.0], period=2.0), ad.NoRuleError,
     ["numpy.interp", "period"]),
    (lambda x: np.linspace(x[0], x[1], 4, axis=-1), ad.NoRuleError, ["numpy.linspace", "axis"]),
    (lambda x: np.linalg.det([[x[0], 1.0], [2.0, x[1]]]), TypeError, ["np.stack"]),
    (lambda x: np.quantile(x, 0.5, method="nearest"), ValueError, ["numpy.quantile", "linear"]),
    (lambda x: np.quantile(x, 1.5), ValueError, ["numpy.quantile", "[0, 1]"]),
    (lambda x: np.split(x, 3), ValueError, ["equal division"]),
    (lambda x: np.flip(x, 2), np.exceptions.AxisError, ["numpy.flip", "axis 2"]),
    (lambda x: np.linalg.pinv(np.outer(x, x)), ValueError, ["numpy.linalg.pinv", "full rank"]),
    (lambda x: np.linalg.eigh(np.outer(x, x), UPLO="X"), ValueError, ["UPLO", "'L' or 'U'"]),
    (lambda x: np.fft.fft(x, norm="half"), ValueError, ["norm", "ortho"]),
]


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("call, exc, words", REFUSED, ids=[", ".join(r[2]) for r in REFUSED])
def test_edge_form_refused_with_a_clear_message(call, exc, words, mode):
    message = refusal_message(call, X["v4"], mode, exc)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


def test_math_module_function_of_a_traced_value_is_refused():
    import math
    with pytest.raises(TypeError, match="math.exp"):
        ad.gradient(lambda x: math.exp(x[0]), X["v4"])
