"""The edge forms of issue 23 (the `ad` part), each in every mode.

Python sequences (constants, nested lists, tuples, lists holding traced
values) wherever numpy reads an array, integer/boolean casts and ``dtype=``
arguments (no derivative, numpy's own value), ``np.full_like`` with a traced
fill value, and the ndarray methods of a traced value. Each row of `ROWS`
is checked by `ad.check_modes` in the four modes against central
differences of the same call on plain arrays, whose value is numpy's own;
`tests/test_ad_callforms.py` walks the registry over these rows too.
"""

import warnings

import numpy as np
import pytest

from edge_rows import check_in_every_mode, row, row_id
from refusals import refusal_message
from topopt import ad
from topopt.ad import core, methods
from topopt.ad.registry import REGISTRY, function_name

# entries at least 0.1 away from an integer, so that the finite differences
# of a piecewise constant cast see no jump
X = {
    "v4": np.array([0.3, 1.7, -2.4, 3.9]),
    "p4": np.array([0.3, 1.7, 2.4, 3.9]),
    "c4": np.array([0.3 + 0.4j, 1.7 - 0.2j, -2.4 + 1.1j, 3.9 - 0.7j]),
    "m34": np.array([[0.3, -1.2, 0.7, 2.1], [1.1, 0.4, -0.9, 0.2], [-0.5, 1.6, 0.8, -1.3]]),
    "m22": np.array([[2.3, 0.4], [-0.6, 1.8]]),
}
C4 = [1.0, 2.0, -3.0, 0.5]
MASK = np.array([True, False, True, False])
A4 = [[4.0, 1.0, 0.0, 0.0], [1.0, 3.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.5], [0.0, 0.0, 0.0, 5.0]]
I64 = np.int64


SEQUENCES = [
    # ------------------------------------------------ constant sequences
    row(np.multiply, "x * list", lambda x: x * C4, "v4"),
    row(np.multiply, "list * x", lambda x: C4 * x, "v4"),
    row(np.multiply, "x * tuple", lambda x: x * tuple(C4), "c4"),
    row(np.multiply, "matrix * nested list", lambda x: x * [C4, C4[::-1], C4], "m34"),
    row(np.true_divide, "x / list", lambda x: x / C4, "v4"),
    row(np.true_divide, "list / x", lambda x: C4 / x, "v4"),
    row(np.subtract, "list - x", lambda x: C4 - x, "v4"),
    row(np.add, "x + column list", lambda x: x + [[1.0], [2.0], [3.0]], "m34"),
    row(np.power, "x ** list", lambda x: x ** [1.0, 2.0, 3.0, 0.5], "p4"),
    row(np.power, "list ** x", lambda x: [1.5, 2.0, 3.0, 0.5] ** x, "v4"),
    row(np.maximum, "list", lambda x: np.maximum(x, C4), "v4"),
    row(np.minimum, "list first", lambda x: np.minimum(C4, x), "v4"),
    row(np.where, "list operand", lambda x: np.where(MASK, x, C4), "v4"),
    row(np.clip, "list bounds", lambda x: np.clip(x, [0.0, 1.0, -3.0, 3.0], [1.0, 2.0, 0.0, 3.5]),
        "v4"),
    row(np.clip, "min= list", lambda x: np.clip(x, min=[0.0, 1.0, -3.0, 3.0]), "v4"),
    row(np.matmul, "x @ list", lambda x: x @ C4, "v4"),
    row(np.matmul, "list @ matrix", lambda x: [1.0, 2.0, 3.0] @ x, "m34"),
    row(np.matmul, "matrix @ list", lambda x: x @ C4, "m34"),
    row(np.dot, "list second", lambda x: np.dot(x, C4), "v4"),
    row(np.dot, "list first", lambda x: np.dot(C4, x), "c4"),
    row(np.dot, "x.dot(list)", lambda x: x.dot(C4), "v4"),
    row(np.vdot, "list", lambda x: np.vdot(x, C4), "c4"),
    row(np.outer, "list", lambda x: np.outer(x, [1.0, 2.0]), "v4"),
    row(np.einsum, "list operand", lambda x: np.einsum("i,i->", x, C4), "v4"),
    row(np.einsum, "list first, interleaved", lambda x: np.einsum(C4, [0], x, [0], [0]), "v4"),
    row(np.tensordot, "list", lambda x: np.tensordot(x, C4, 1), "v4"),
    row(np.linalg.solve, "list matrix", lambda x: np.linalg.solve(A4, x), "v4"),
    row(np.concatenate, "list piece", lambda x: np.concatenate([x, [1.0, 2.0]]), "v4"),
    row(np.stack, "list piece", lambda x: np.stack([x, C4]), "v4"),
    row(np.hstack, "tuple piece", lambda x: np.hstack([x, (1.0, 2.0)]), "v4"),
    row(np.vstack, "list piece", lambda x: np.vstack([x, C4]), "v4"),
    row(np.column_stack, "list piece", lambda x: np.column_stack([x, C4]), "v4"),
    row(np.dstack, "list piece", lambda x: np.dstack([x, C4]), "v4"),
    row(np.diff, "prepend= list", lambda x: np.diff(x, prepend=[1.0]), "v4"),
    row(np.diff, "append= list", lambda x: np.diff(x, append=[1.0, 2.0]), "v4"),
    row(ad.scatter_add, "v list", lambda x: ad.scatter_add(x, np.array([0, 2]), [1.0, 2.0]),
        "v4"),
    # ------------------------------------ sequences holding traced values
    row(np.multiply, "x * [x0, 1, 2, 3]", lambda x: x * [x[0], 1, 2, 3], "v4"),
    row(np.multiply, "x * (x0, .., x2, ..)", lambda x: x * (x[0], 1.0, x[2], 3.0), "c4"),
    row(np.multiply, "matrix * [x.., ..]", lambda x: x * [x[0, 0], 1.0, 2.0, x[2, 3]], "m34"),
    row(np.add, "x + [x0, ..]", lambda x: x + [x[0], 1, 2, 3], "v4"),
    row(np.add, "[x0, ..] + x", lambda x: [x[0], 1.0, 2.0, 3.0] + x, "v4"),
    row(np.subtract, "[x0, ..] - x", lambda x: [x[0], 1, 2, 3] - x, "v4"),
    row(np.true_divide, "x / [x1, ..]", lambda x: x / [x[1], 1, 2, 3], "v4"),
    row(np.power, "x ** [x1, ..]", lambda x: x ** [x[1], 1, 2, 3], "p4"),
    row(np.maximum, "[x1, ..]", lambda x: np.maximum(x, [x[1], 0.0, 0.0, 5.0]), "v4"),
    row(np.where, "[x1, ..]", lambda x: np.where(MASK, x, [x[1], 1.0, x[3], 2.0]), "v4"),
    row(np.clip, "[x1, ..] lower bound", lambda x: np.clip(x, [x[1], 0.0, -5.0, 0.0], 3.0), "v4"),
    row(np.clip, "min=[x1, ..]", lambda x: np.clip(x, min=[x[1], 0.0, -5.0, 0.0], max=3.0),
        "v4"),
    row(np.matmul, "x @ [x0, ..]", lambda x: x @ [x[0], 1, 2, 3], "v4"),
    row(np.matmul, "nested [[x0, 1], [2, x1]] @ x", lambda x: [[x[0], 1.0], [2.0, x[1]]]
        @ x[:2], "v4"),
    row(np.dot, "[x0, ..]", lambda x: np.dot(x, [x[0], 1, 2, 3]), "v4"),
    row(np.vdot, "[x0, ..] first", lambda x: np.vdot([x[0], 1, 2, 3], x), "c4"),
    row(np.outer, "[x0, 1]", lambda x: np.outer(x, [x[0], 1.0]), "v4"),
    row(np.einsum, "[x0, ..]", lambda x: np.einsum("i,i->", x, [x[0], 1, 2, 3]), "v4"),
    row(np.einsum, "interleaved [x0, ..]", lambda x: np.einsum(x, [0], [x[0], 1.0, 2.0, 3.0],
                                                              [0]), "v4"),
    row(np.tensordot, "[x0, ..]", lambda x: np.tensordot(x, [x[0], 1, 2, 3], 1), "v4"),
    row(np.linalg.solve, "rhs [x0, ..]", lambda x: np.linalg.solve(x, [x[0, 1], 1.0]), "m22"),
    row(np.hstack, "[x, [x0, 1]]", lambda x: np.hstack([x, [x[0], 1.0]]), "v4"),
    row(np.hstack, "[x, (x0, 2)]", lambda x: np.hstack([x, (x[0], 2.0)]), "c4"),
    row(np.concatenate, "[x, [x0, 1]]", lambda x: np.concatenate([x, [x[0], 1.0]]), "v4"),
    row(np.concatenate, "axis=None [[x0, 1], x]", lambda x: np.concatenate([[x[0], 1.0], x],
                                                                          axis=None), "v4"),
    row(np.vstack, "[x, [x0, ..]]", lambda x: np.vstack([x, [x[0], 1.0, 2.0, 3.0]]), "v4"),
    row(np.stack, "[x, [.., x3, ..]]", lambda x: np.stack([x, [1.0, x[3], 2.0, x[0]]]), "v4"),
    row(np.column_stack, "[x, [x0, ..]]", lambda x: np.column_stack([x, [x[0], 1, 2, 3]]), "v4"),
    row(np.dstack, "[x, [x0, ..]]", lambda x: np.dstack([x, [x[0], 1, 2, 3]]), "v4"),
    row(np.diff, "prepend=[x1]", lambda x: np.diff(x, prepend=[x[1]]), "v4"),
    row(np.diff, "append=[x0, 2]", lambda x: np.diff(x, append=[x[0], 2.0]), "v4"),
    row(np.average, "weights= list", lambda x: np.average(x, weights=C4[::-1]), "v4"),
    row(np.pad, "list constant_values", lambda x: np.pad(x, 1, constant_values=[1.0, 2.0]), "v4"),
    row(np.atleast_1d, "(x, [x0, 1])", lambda x: np.atleast_1d(x, [x[0], 1.0]), "v4"),
    row(ad.scatter_add, "v [x1, 1]", lambda x: ad.scatter_add(x, np.array([0, 2]), [x[1], 1.0]),
        "v4"),
]

CASTS = [
    # integer and boolean casts: no derivative, numpy's value
    row(core.astype, "astype(int64) * 1 + x", lambda x: x.astype(I64) * 1.0 + x, "v4"),
    row(core.astype, "astype(int) * x", lambda x: x.astype(int) * x, "m34"),
    row(core.astype, "astype(bool) * x", lambda x: x.astype(bool) * x, "v4"),
    row(core.astype, "astype('i4') * x", lambda x: x.astype("i4") * x, "v4"),
    row(core.astype, "astype(uint8, copy=False) * x", lambda x: x.astype(np.uint8, copy=False)
        * x, "p4"),
    row(np.sum, "dtype=int64 + x", lambda x: np.sum(x, dtype=I64) * 1.0 + x, "v4"),
    row(np.sum, "x.sum(dtype=int) * x", lambda x: x.sum(dtype=I64) * x, "v4"),
    row(np.sum, "dtype positional, axis", lambda x: np.sum(x, 0, I64)[None, :] * x, "m34"),
    row(np.mean, "dtype=int64 + x", lambda x: np.mean(x, dtype=I64) * 1.0 + x, "p4"),
    row(np.mean, "x.mean(1, int) * x", lambda x: x.mean(1, int)[:, None] * x, "m34"),
    row(np.prod, "dtype=int64", lambda x: np.prod(x, dtype=I64) * x, "p4"),
    row(np.cumsum, "dtype=int64", lambda x: np.cumsum(x, dtype=I64) * x, "v4"),
    row(np.cumprod, "dtype=int64", lambda x: np.cumprod(x, dtype=I64) * x, "p4"),
    row(np.var, "dtype=int64", lambda x: np.var(x, dtype=I64) * x, "v4"),
    row(np.trace, "dtype=bool", lambda x: np.trace(x, dtype=bool) * x, "m34"),
    row(np.trace, "x.trace(dtype=int)", lambda x: x.trace(dtype=int) * x, "m34"),
    row(np.add, "dtype=int64, casting='unsafe'", lambda x: np.add(x, 1, dtype=I64,
                                                                  casting="unsafe") * x, "v4"),
    row(np.concatenate, "dtype=int64, casting='unsafe'", lambda x: np.concatenate(
        [x, x], dtype=I64, casting="unsafe")[:4] * x, "v4"),
    row(np.stack, "dtype=int64, casting='unsafe'", lambda x: np.stack(
        [x, x], dtype=I64, casting="unsafe")[0] * x, "v4"),
    row(np.einsum, "dtype=int64, casting='unsafe'", lambda x: np.einsum(
        "i,i->i", x, x, dtype=I64, casting="unsafe") * x, "v4"),
    row(np.full_like, "dtype=int", lambda x: np.full_like(x, x[0], dtype=int) * x, "v4"),
    # float and complex dtypes keep the derivative
    row(np.astype, "np.astype(x, int) * x", lambda x: np.astype(x, int) * x, "v4"),
    row(np.astype, "np.astype(x, complex)", lambda x: np.astype(x, complex, copy=False) * 1j,
        "v4"),
    row(core.astype, "astype(complex)", lambda x: x.astype(complex) * (1 + 2j), "v4"),
    row(np.sum, "dtype=complex", lambda x: np.sum(x, dtype=complex) * (1 + 1j) * x, "v4"),
    row(np.multiply, "list, dtype=complex", lambda x: np.multiply(x, C4, dtype=complex), "v4"),
]

FILLS = [
    row(np.full_like, "x0", lambda x: np.full_like(x, x[0]) * np.sin(x), "v4"),
    row(np.full_like, "a row", lambda x: np.full_like(x, x[0]) * x, "m34"),
    row(np.full_like, "[x0, ..] list", lambda x: np.full_like(x, [x[1], 1.0, 2.0, x[0]]) * x,
        "v4"),
    row(np.full_like, "constant (no derivative)", lambda x: np.full_like(x, 2.0) * x, "v4"),
    row(np.full_like, "shape=", lambda x: np.sum(np.full_like(x, x[1], shape=(2, 3))) * x, "v4"),
    row(np.full_like, "dtype=complex", lambda x: np.full_like(x, x[1], dtype=complex) * 1j, "v4"),
    row(np.full_like, "complex fill", lambda x: np.full_like(x, x[1] * 1j) * x, "c4"),
    row(np.full_like, "keywords", lambda x: np.full_like(a=x, fill_value=x[2], order="F"), "m34"),
]

METHODS = [
    row(np.trace, "x.trace()", lambda x: x[:, :3].trace() * x, "m34"),
    row(np.trace, "x.trace(1)", lambda x: x.trace(1), "m34"),
    row(np.take, "np.take", lambda x: np.take(x, np.array([3, 1, -1])), "v4"),
    row(np.take, "x.take(axis=1)", lambda x: x.take(np.array([0, 2]), axis=1), "m34"),
    row(np.take, "mode='wrap'", lambda x: np.take(x, np.array([5, -6]), mode="wrap"), "v4"),
    row(np.take, "mode='clip'", lambda x: x.take(np.array([7, -6]), mode="clip"), "c4"),
    row(np.diagonal, "x.diagonal()", lambda x: x.diagonal(), "m34"),
    row(np.diagonal, "offset=1", lambda x: np.diagonal(x, 1), "m34"),
    row(np.diagonal, "offset=-1 axes swapped", lambda x: np.diagonal(x, -1, 1, 0), "m34"),
    row(np.compress, "np.compress axis=0", lambda x: np.compress(MASK[:3], x, axis=0), "m34"),
    row(np.compress, "x.compress()", lambda x: x.compress(MASK), "v4"),
    row(np.swapaxes, "x.mT", lambda x: x.mT @ x, "m34"),
    row(np.argmax, "x.argmax() * x", lambda x: x.argmax() * x, "v4"),
    row(np.round, "x.round() * x", lambda x: x.round() * x, "v4"),
    row(np.all, "x.all() * x", lambda x: x.all() * x, "v4"),
    row(np.remainder, "x % 1.5", lambda x: x % 1.5, "v4"),
    row(np.remainder, "2.5 % x", lambda x: 2.5 % x, "v4"),
    row(np.remainder, "np.mod(x, [..])", lambda x: np.mod(x, [1.5, -1.0, 2.0, 3.0]), "v4"),
    row(np.fmod, "np.fmod", lambda x: np.fmod(x, 1.5), "v4"),
    row(np.fmod, "traced divisor", lambda x: np.fmod(3.7, x), "v4"),
    row(np.floor_divide, "(x // 1.5) * x", lambda x: (x // 1.5) * x, "v4"),
    row(np.floor_divide, "divmod(x, 1.5)", lambda x: divmod(x, 1.5)[1] * divmod(x, 1.5)[0], "v4"),
    row(np.append, "np.append(x, x0)", lambda x: np.append(x, x[0]), "v4"),
    row(np.append, "list, axis=0", lambda x: np.append(x, [[x[0, 0], 1.0, 2.0, 3.0]], axis=0),
        "m34"),
    row(np.diag, "vector, k=1", lambda x: np.diag(x, 1), "v4"),
    row(np.diag, "matrix, k=-1", lambda x: np.diag(x, k=-1), "m34"),
    row(np.pad, "constant", lambda x: np.pad(x, 2), "v4"),
    row(np.pad, "traced constant_values", lambda x: np.pad(x, 1, constant_values=x[0]), "v4"),
    row(np.pad, "constant pairs", lambda x: np.pad(x, ((1, 0), (0, 2)), constant_values=(1, 2)),
        "m34"),
    row(np.pad, "edge", lambda x: np.pad(x, (1, 2), "edge"), "m34"),
    row(np.pad, "reflect", lambda x: np.pad(x, 2, mode="reflect"), "v4"),
    row(np.pad, "symmetric", lambda x: np.pad(x, ((2, 1), (1, 3)), "symmetric"), "m34"),
    row(np.pad, "wrap", lambda x: np.pad(x, 3, "wrap"), "c4"),
    row(np.average, "no weights", np.average, "v4"),
    row(np.average, "traced weights [x0^2, ..]", lambda x: np.average(
        x, weights=[x[0] ** 2, 1.0, 2.0, 3.0]), "v4"),
    row(np.average, "axis, weights positional", lambda x: np.average(x, 1, C4), "m34"),
    row(np.average, "returned=, keepdims=", lambda x: np.average(
        x, axis=0, weights=[1.0, 2.0, 3.0], returned=True, keepdims=True), "m34"),
    row(np.average, "weights=x**2", lambda x: np.average(x, weights=x ** 2), "m34"),
]

ROWS = SEQUENCES + CASTS + FILLS + METHODS


@pytest.mark.parametrize("fun, label, call, inputs", ROWS, ids=[row_id(r) for r in ROWS])
def test_edge_form_in_every_mode(fun, label, call, inputs):
    check_in_every_mode(call, [X[name] for name in inputs], seed=7)


def test_the_cases_of_issue_23():
    x = np.array([0.3, 1.7, 2.4, 3.9])
    # a cast to an integer type has derivative zero (was 2 per entry)
    g = ad.gradient(lambda x: np.sum(x.astype(I64) * 1.0) + np.sum(x), x)
    np.testing.assert_array_equal(g, np.ones(4))
    # numpy's value: the mean of the integer parts [0, 1, 2, 3] (was 1.5); derivative 0
    y, back = ad.pullback(lambda x: np.mean(x, dtype=I64), x)
    assert y == np.mean(x, dtype=I64) == 1
    # d/dx sum(full_like(x, x0) * sin x) = x0 cos x + e0 sum(sin x)
    g = ad.gradient(lambda x: np.sum(np.full_like(x, x[0]) * np.sin(x)), x)
    want = x[0] * np.cos(x)
    want[0] += np.sum(np.sin(x))
    np.testing.assert_allclose(g, want, rtol=1e-14)
    # x.trace() is numpy's trace
    m = x.reshape(2, 2)
    assert ad.pullback(lambda m: m.trace(), m)[0] == np.trace(m) == 4.2


def test_float32_cast_keeps_its_derivative():
    # float32 rounds: checked to its precision
    ad.check_modes(lambda x: x.astype(np.float32) * x, X["v4"], rtol=1e-4, h=1e-2)


# ----------------------------------------------------------------- refusals

REFUSED = [
    # (call of a traced vector of 4, exception, words the message must contain)
    (lambda x: np.concatenate([x, x], dtype=I64), TypeError, ["Cannot cast", "same_kind"]),
    (lambda x: x.astype(int, casting="same_kind"), TypeError, ["Cannot cast", "same_kind"]),
    (lambda x: np.add(x, 1, dtype=I64), TypeError, ["add", "same_kind"]),
    (lambda x: np.einsum("i->", x, dtype=I64), TypeError, ["int64", "safe"]),
    (lambda x: np.sum(x, dtype=object), TypeError, ["numpy.sum", "dtype=object", "float"]),
    (lambda x: x.astype(object), TypeError, ["astype", "dtype=object"]),
    (lambda x: np.full(4, x[0]), TypeError, ["numpy.full", "np.full_like"]),
    (lambda x: np.full(4, x[0], dtype=float), TypeError, ["numpy.copyto", "np.full_like"]),
    (lambda x: np.full_like(x, [x[0], x[1]]), ValueError, ["full_like", "broadcast", "(2,)"]),
    (lambda x: np.sum([x[0], x[1]]), TypeError, ["numpy.sum", "np.stack"]),
    (lambda x: np.exp([x[0], 1.0]), TypeError, ["list", "np.stack"]),
    (lambda x: x[:3] * [[1.0, 2.0], [3.0]], ValueError, ["inhomogeneous"]),
    (lambda x: np.take(x, [0.5]), TypeError, ["numpy.take", "integers"]),
    (lambda x: np.take(x, [4]), IndexError, ["numpy.take", "out of bounds"]),
    (lambda x: np.diagonal(x), ValueError, ["numpy.diagonal", "2 dimensions"]),
    (lambda x: np.compress([True] * 5, x), IndexError, ["numpy.compress", "out of bounds"]),
    (lambda x: x.mT, ValueError, ["matrix transpose", "ndim < 2"]),
    (lambda x: x.item(), TypeError, ["x.item()", "ad.value(x).item()"]),
    (lambda x: float(x[0]), TypeError, ["float()", "ad.value"]),
    (lambda x: x.to_device("gpu"), ValueError, ["to_device", "cpu"]),
    (lambda x: x.view(np.int64), TypeError, ["x.view", "x.astype"]),
    (lambda x: np.pad(x, 1, "mean"), ad.NoRuleError, ["numpy.pad", "mode='mean'", "'edge'"]),
    (lambda x: np.pad(x, 1, "reflect", reflect_type="odd"), ad.NoRuleError,
     ["numpy.pad", "reflect_type='odd'"]),
    (lambda x: np.pad(x, 1, constant_values=[x[0], x[1]]), ad.NoRuleError,
     ["numpy.pad", "constant_values"]),
    (lambda x: np.average(x, weights=[1.0, 2.0]), TypeError, ["numpy.average",
                                                             "axis must be specified"]),
    (lambda x: np.average(x, weights=np.zeros(4)), ZeroDivisionError, ["numpy.average",
                                                                        "sum to zero"]),
]


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("call, exc, words", REFUSED, ids=[", ".join(r[2]) for r in REFUSED])
def test_edge_form_refused_with_a_clear_message(call, exc, words, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        message = refusal_message(call, X["v4"], mode, exc)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"


# ------------------------------------------------- the ndarray methods

def _public_ndarray_names():
    return sorted(n for n in dir(np.ndarray) if not n.startswith("_"))


def test_every_ndarray_name_is_classified():
    unknown = [n for n in _public_ndarray_names() if n not in methods.NDARRAY]
    assert not unknown, f"ndarray names neither numpy-faithful nor refused on a Box: {unknown}"


# x.<name>(*args) of a traced (3, 4) matrix against numpy's on the plain one
M = X["m34"]
FAITHFUL_CALLS = {
    "all": (), "any": (), "argmax": (), "argmin": (1,), "argpartition": (1,), "argsort": (0,),
    "astype": (np.float32,), "clip": (-0.5, 0.5), "compress": ([True, False, True],),
    "conj": (), "conjugate": (), "copy": (), "cumprod": (1,), "cumsum": (), "diagonal": (1,),
    "dot": (M.T,), "flatten": ("F",), "max": (0,), "mean": (1,), "min": (), "nonzero": (),
    "prod": (0,), "ravel": (), "repeat": (2,), "reshape": (4, 3), "round": (1,),
    "searchsorted": (0.5,), "squeeze": (), "std": (1,), "sum": (None, None, None, True),
    "swapaxes": (0, 1), "take": ([0, 5, -1],), "trace": (1,), "transpose": (), "var": (0,),
    "T": None, "mT": None, "real": None, "imag": None, "shape": None, "ndim": None,
    "size": None, "dtype": None, "itemsize": None, "nbytes": None, "device": None,
    "to_device": ("cpu",), "view": (),
}


INPUT = {"searchsorted": np.sort(X["v4"])}     # a sorted vector; every other name: M


def _on(x, name):
    attr = getattr(x, name)
    args = FAITHFUL_CALLS[name]
    return attr if args is None else attr(*args)


@pytest.mark.parametrize("name", sorted(FAITHFUL_CALLS))
def test_ndarray_method_means_what_numpy_means(name):
    a = INPUT.get(name, M)
    want = _on(a, name)
    got = ad.value(ad.pullback(lambda x: _on(x, name), a)[0])
    got_fwd = ad.value(ad.jvp(lambda x: _on(x, name), (a,), (np.ones_like(a),))[0])
    for g in (got, got_fwd):
        if isinstance(want, tuple) and not isinstance(want, np.dtype):
            assert all(np.array_equal(a, b) for a, b in zip(g, want))
        else:
            assert np.array_equal(np.asarray(g), np.asarray(want)), name
            assert np.shape(g) == np.shape(want)


@pytest.mark.parametrize("name", sorted(methods.REFUSED) + sorted(methods.REFUSED_ATTRIBUTES))
def test_refused_ndarray_name_raises_naming_the_alternative(name):
    def call(x):
        attr = getattr(x, name)
        return attr() if name in methods.REFUSED else attr
    exc = TypeError if name in methods.REFUSED else AttributeError
    message = refusal_message(call, M, "reverse", exc)
    assert f"x.{name}" in message and ("use" in message or "owns no memory" in message)


def test_classification_covers_the_walk():
    # every name is either faithful (checked above) or refused (checked above)
    faithful = set(FAITHFUL_CALLS) | {"item"}   # item: refused by a TypeError of its own
    refused = set(methods.REFUSED) | set(methods.REFUSED_ATTRIBUTES)
    assert faithful | refused >= set(_public_ndarray_names())
    assert not faithful & refused


def test_no_tape_attribute_shadows_an_ndarray_name():
    assert not set(core.Box.__slots__) & set(dir(np.ndarray))
    assert ad.trace_of(ad.pullback(lambda x: x, M)[0]) is None     # returned plain
    seen = []
    ad.gradient(lambda x: seen.append(ad.trace_of(x)) or np.sum(x), M)
    assert seen[0].reverse and seen[0].id > 0


def test_every_always_rewritten_call_form_has_rows():
    from test_ad_edges2 import ROWS as ROWS2    # the second round (composite_rules)
    from test_ad_edges3 import ROWS as ROWS3    # the third (issue 35)
    always = {f for f, form in REGISTRY.forms.items() if form.always}
    covered = {r[0] for r in ROWS + ROWS2 + ROWS3}
    missing = sorted(function_name(f) for f in always - covered)
    assert not missing, f"call forms without rows in test_ad_edges.ROWS: {missing}"


def test_every_declared_lifting_has_a_sequence_row():
    # a function whose arguments numpy reads as arrays by a declaration of its
    # own (sequences of arrays, einsum's operands...) has a row with a list there
    from test_ad_edges2 import ROWS as ROWS2    # np.block's nested lists
    from test_ad_edges3 import CALCULUS, MORE   # gradient's, meshgrid's, select's lists
    covered = {r[0] for r in SEQUENCES + ROWS2 + CALCULUS + MORE}
    declared = set(REGISTRY.lifts) - {core.getitem, core.astype}     # no array data besides x
    missing = sorted(function_name(f) for f in declared - covered)
    assert not missing, f"liftings without a sequence row: {missing}"


INTEGER_FACTORS = [
    # (label, call, its gradient d/dx sum(call(x)): the constant factor)
    ("x * arange", lambda x: x * np.arange(4), lambda x: np.arange(4.0)),
    ("x * int list", lambda x: x * [1, 2, 3, 4], lambda x: np.array([1.0, 2.0, 3.0, 4.0])),
    ("astype(int) * x", lambda x: x.astype(int) * x, lambda x: np.trunc(x)),
    ("asarray(x, dtype=int) * x", lambda x: np.asarray(x, dtype=int) * x, lambda x: np.trunc(x)),
    ("astype(bool) * x", lambda x: x.astype(bool) * x, lambda x: np.ones(4)),
    ("x * True", lambda x: x * True, lambda x: np.ones(4)),
]


@pytest.mark.parametrize("label, call, grad", INTEGER_FACTORS,
                         ids=[c[0] for c in INTEGER_FACTORS])
def test_gradient_by_an_integer_factor_is_float(label, call, grad):
    x = X["v4"]
    g = ad.gradient(lambda x: np.sum(call(x)), x)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, grad(x))
    ad.check_modes(call, x, seed=2)


API_REFUSALS = [
    # a list or an int as the differentiated input: refused, never silently a zero derivative
    (lambda: ad.jvp(np.exp, ([0.1, 0.2],), ([1.0, 0.0],)), ["jvp", "primal 0", "list",
                                                          "np.asarray"]),
    (lambda: ad.jvp(lambda x: x * 2.0, (3,), (1.0,)), ["jvp", "primal 0", "int"]),
    (lambda: ad.gradient(lambda x: np.sum(np.exp(x)), [0.1, 0.2]), ["argument 0", "list"]),
    (lambda: ad.hvp(lambda x: np.sum(np.exp(x)), (0.1, 0.2), (1.0, 0.0)), ["tuple"]),
]


@pytest.mark.parametrize("call, words", API_REFUSALS, ids=[", ".join(r[1]) for r in API_REFUSALS])
def test_a_sequence_as_the_differentiated_input_is_refused(call, words):
    with pytest.raises(TypeError) as info:
        call()
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"
