"""Every call form of every rule, in every mode (issue 11, item 1).

A table of (numpy function, call form, inputs): positional and keyword
arguments, negative and tuple axes, keepdims, order=, where=, initial=,
dtype=, numpy 2's clip(min=, max=), every ord/axis of linalg.norm, Box
methods, fancy indices with negatives and repeats... Each row is checked by
`ad.check_modes` in the four modes (reverse dot-product test, forward jvp,
hvp, reverse-over-reverse) against central differences of the call on plain
arrays -- the reference is numpy itself, so a dropped keyword shows up as a
wrong primal. Adding a call form is one line in `ROWS`.
"""

import importlib

import numpy as np
import pytest
import scipy.sparse as sps
import scipy.special as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from oracles import draws
from refusals import check_refusal
from topopt import ad
from topopt.ad import core
from topopt.ad.registry import REGISTRY, function_name
from topopt.ad.products import eigh

_n, _c = draws(20261201)           # real and complex draws of one fixed stream


# named inputs (fixed once; the rows only read them)
X = {
    "s": 0.7, "sc": 0.4 - 0.3j,
    "v3": _n(3), "v4": _n(4), "v4c": _c(4), "v5": _n(5), "v5c": _c(5), "v6": _n(6),
    "p5": 0.5 + np.abs(_n(5)), "p5c": 0.5 + np.abs(_n(5)) + 0.5j * _n(5),
    "u5": sp.expit(_n(5)), "m34": _n(3, 4), "m34c": _c(3, 4), "m43": _n(4, 3),
    "m42": _n(4, 2), "m24": _n(2, 4), "m31": _n(3, 1), "m14": _n(1, 4), "m44": _n(4, 4),
    "m14p": 0.5 + np.abs(_n(1, 4)),
    "m34p": 0.5 + np.abs(_n(3, 4)), "t234": _n(2, 3, 4), "t234c": _c(2, 3, 4),
    "t2345": _n(2, 3, 4, 5)[..., :2], "t131": _n(1, 3, 1),
    "a4": _n(4, 4) + 4 * np.eye(4), "a4c": _c(4, 4) + 4 * np.eye(4),
    "sym4": np.diag([1.0, 2.5, 4.0, 7.0]) + 0.3 * _n(4, 4),
    "lo8": -0.3 - 0.1 * np.abs(_n(8)), "hi8": 0.4 + 0.1 * np.abs(_n(8)), "v8": _n(8),
}
M34_POS = X["m34"] > 0                       # a where= mask (not traced)
IDX = np.array([-1, 0, -1, 3, 2, 0])         # negative and repeated fancy indices


def _attr(module, name):
    """`name` of the rule module `topopt.ad.<module>`, None while it does not exist."""
    try:
        return getattr(importlib.import_module(f"topopt.ad.{module}"), name)
    except (ImportError, AttributeError):
        return None


def row(fun, label, call, inputs):
    """One table row: `call(*X[inputs])` exercises `fun` in the form `label`."""
    return fun, label, call, tuple(inputs.split(","))


UNARY_REAL = [np.exp, np.expm1, np.exp2, np.sin, np.cos, np.sinh, np.cosh, np.tanh,
              np.square, np.arctan]
UNARY_POS = [np.log, np.log1p, np.log10, np.log2, np.sqrt, np.reciprocal]
SPECIAL = [(sp.expit, "v5"), (sp.erf, "v5"), (sp.ndtr, "v5"), (sp.log_ndtr, "v5"),
           (sp.ndtri, "u5")]

ROWS = (
    # ---------------------------------------------------- unary elementwise
    [row(f, "real", f, "v5") for f in UNARY_REAL]
    + [row(f, "complex", f, "v5c") for f in UNARY_REAL if f is not np.arctan]
    + [row(np.arctan, "complex", np.arctan, "sc")]
    + [row(f, "positive", f, "p5") for f in UNARY_POS]
    + [row(f, "complex", f, "p5c") for f in UNARY_POS]
    + [row(f, "real", f, a) for f, a in SPECIAL]
    + [
        row(np.tan, "real", lambda x: np.tan(0.3 * x), "v5"),
        row(np.exp, "dtype=complex", lambda x: np.exp(x, dtype=complex), "v5"),
        row(np.sin, "where=True, casting", lambda x: np.sin(x, where=True, casting="same_kind"),
            "v5"),
        row(np.exp, "scalar", np.exp, "s"),
        row(np.negative, "np.negative", np.negative, "v5c"),
        row(np.negative, "-x", lambda x: -x, "m34"),
        row(np.positive, "np.positive", np.positive, "v5c"),
        row(np.conjugate, "np.conj", np.conj, "v5c"),
        row(np.conjugate, "x.conj()", lambda x: x.conj(), "m34c"),
        row(np.conjugate, "x.conjugate() real", lambda x: x.conjugate(), "v5"),
        row(np.real, "np.real", np.real, "v5c"),
        row(np.real, "x.real", lambda x: x.real * x.imag, "m34c"),
        row(np.real, "val=", lambda x: np.real(val=x), "v5c"),
        row(np.imag, "np.imag", np.imag, "v5c"),
        row(np.absolute, "np.abs", np.abs, "v5"),
        row(np.absolute, "abs() complex", abs, "v5c"),
        # ------------------------------------------------ binary elementwise
        row(np.add, "broadcast", np.add, "m34,v4"),
        row(np.add, "scalar + x", lambda x: 2.0 + x, "v5"),
        row(np.add, "complex", lambda a, b: a + b, "m34c,v4c"),
        row(np.subtract, "broadcast", np.subtract, "m31,v4"),
        row(np.subtract, "scalar - x", lambda x: 2.0 - x, "v5c"),
        row(np.multiply, "broadcast", np.multiply, "m34,m14"),
        row(np.multiply, "complex", lambda a, b: a * b, "v4c,m34c"),
        row(np.multiply, "dtype=complex", lambda a, b: np.multiply(a, b, dtype=complex),
            "v4,m34"),
        row(np.true_divide, "broadcast", np.divide, "m34,m14p"),
        row(np.true_divide, "1 / x", lambda x: 1 / x, "p5"),
        row(np.true_divide, "complex", lambda a, b: a / b, "v5c,p5c"),
        row(np.power, "x ** 3", lambda x: x ** 3, "v5c"),
        row(np.power, "x ** y", np.power, "p5,v5"),
        row(np.power, "2 ** x", lambda x: 2.0 ** x, "v5"),
        row(np.power, "complex", np.power, "p5c,v5c"),
        row(np.maximum, "arrays", np.maximum, "v5,p5"),
        row(np.maximum, "scalar", lambda x: np.maximum(x, 0.1), "v8"),
        row(np.minimum, "broadcast", np.minimum, "m34,v4"),
        row(np.where, "arrays", lambda a, b: np.where(M34_POS, a, b), "m34,m34"),
        row(np.where, "scalar, complex", lambda a: np.where(M34_POS, a, 0.0), "m34c"),
        row(np.where, "broadcast", lambda a, b: np.where(M34_POS, a, b), "v4,m31"),
        row(np.clip, "positional", lambda x: np.clip(x, -0.5, 0.5), "v8"),
        row(np.clip, "min=, max= (numpy 2)", lambda x: np.clip(x, min=-0.5, max=0.5), "v8"),
        row(np.clip, "a_min=, a_max=", lambda x: np.clip(x, a_min=-0.5, a_max=0.5), "v8"),
        row(np.clip, "max= only", lambda x: np.clip(x, max=0.5), "v8"),
        row(np.clip, "traced bounds", np.clip, "v8,lo8,hi8"),
        row(np.clip, "traced min=, max=", lambda x, lo, hi: np.clip(x, min=lo, max=hi),
            "v8,lo8,hi8"),
        row(np.clip, "x.clip(lo, hi)", lambda x: x.clip(-0.5, 0.5), "v8"),
        row(np.clip, "x.clip(max=)", lambda x: x.clip(max=0.3), "v8"),
        # ------------------------------------------------------- products
        row(np.matmul, "mat @ mat", lambda a, b: a @ b, "m34,m43"),
        row(np.matmul, "mat @ vec", lambda a, b: a @ b, "m34c,v4c"),
        row(np.matmul, "vec @ mat", np.matmul, "v3,m34"),
        row(np.matmul, "vec @ vec", np.matmul, "v4c,v4c"),
        row(np.matmul, "batched", np.matmul, "t234,m42"),
        row(np.dot, "mat-vec", np.dot, "m34,v4"),
        row(np.dot, "x.dot(y)", lambda a: a.dot(X["m43"]), "m34c"),
        row(np.dot, "scalar", lambda x: np.dot(2.5, x), "v5"),
        row(np.dot, "vec-vec", np.dot, "v4,v4c"),
        row(np.vdot, "complex", np.vdot, "v4c,v4c"),
        row(np.vdot, "matrices", np.vdot, "m34,m34c"),
        row(np.outer, "vectors", np.outer, "v3,v4c"),
        row(np.outer, "flattens", np.outer, "m31,m24"),
        row(np.linalg.solve, "vector rhs", np.linalg.solve, "a4,v4"),
        row(np.linalg.solve, "matrix rhs, complex", np.linalg.solve, "a4c,m42"),
        row(eigh, "eigenvalues", lambda a: eigh(a)[0], "sym4"),
        row(eigh, "eigenvectors (sign-free)", lambda a: eigh(a)[1] ** 2, "sym4"),
        # ----------------------------------------------------- reductions
        row(np.sum, "all", np.sum, "m34c"),
        row(np.sum, "axis positional", lambda x: np.sum(x, 0), "m34"),
        row(np.sum, "axis=-1", lambda x: np.sum(x, axis=-1), "t234c"),
        row(np.sum, "axis tuple, keepdims", lambda x: np.sum(x, (0, -1), keepdims=True), "t234"),
        row(np.sum, "a=, axis=", lambda x: np.sum(a=x, axis=1), "m34"),
        row(np.sum, "initial=", lambda x: np.sum(x, axis=0, initial=1.5), "m34"),
        row(np.sum, "where=", lambda x: np.sum(x, where=M34_POS), "m34"),
        row(np.sum, "where= axis keepdims", lambda x: np.sum(x, 1, keepdims=True, where=M34_POS),
            "m34c"),
        row(np.sum, "dtype=complex", lambda x: np.sum(x, dtype=complex), "m34"),
        row(np.sum, "dtype positional", lambda x: np.sum(x, 0, np.float64), "m34"),
        row(np.sum, "x.sum(0)", lambda x: x.sum(0), "m34"),
        row(np.sum, "x.sum(axis, keepdims)", lambda x: x.sum(axis=-2, keepdims=True), "t234"),
        row(np.sum, "x.sum(where=, initial=)", lambda x: x.sum(where=M34_POS, initial=0.5),
            "m34"),
        row(np.mean, "all", np.mean, "m34c"),
        row(np.mean, "axis positional", lambda x: np.mean(x, -1), "t234"),
        row(np.mean, "tuple keepdims", lambda x: np.mean(x, axis=(0, 2), keepdims=True), "t234"),
        row(np.mean, "where=", lambda x: np.mean(x, axis=0, where=M34_POS | (np.arange(3) == 0)[
            :, None]), "m34"),
        row(np.mean, "dtype=complex", lambda x: np.mean(x, 1, complex), "m34"),
        row(np.mean, "x.mean((0, 1))", lambda x: x.mean((0, 1)), "t234"),
        row(np.max, "all", np.max, "m34"),
        row(np.max, "axis positional", lambda x: np.max(x, 0), "m34"),
        row(np.max, "initial=", lambda x: np.max(x, axis=1, initial=0.3), "m34"),
        row(np.max, "where=, initial=", lambda x: np.max(x, 0, where=M34_POS, initial=-5.0),
            "m34"),
        row(np.max, "x.max(-1, keepdims)", lambda x: x.max(-1, keepdims=True), "t234"),
        row(np.min, "tuple axis", lambda x: np.min(x, axis=(0, 2)), "t234"),
        row(np.min, "initial=", lambda x: np.min(x, initial=-0.2), "v8"),
        row(np.min, "x.min(axis=0)", lambda x: x.min(axis=0), "m34"),
        row(np.amax, "keepdims", lambda x: np.amax(x, -1, keepdims=True), "m34"),
        row(np.amax, "where=, initial=", lambda x: np.amax(x, where=M34_POS, initial=-5.0),
            "m34"),
        row(np.amin, "axis positional", lambda x: np.amin(x, 1), "m34"),
        # ------------------------------------------------------- shapes
        row(np.reshape, "shape", lambda x: np.reshape(x, (4, 3)), "m34c"),
        row(np.reshape, "order='F'", lambda x: np.reshape(x, (2, 6), order="F"), "m34"),
        row(np.reshape, "order positional", lambda x: np.reshape(x, (6, 2), "F"), "m34"),
        row(np.reshape, "order='A' (Fortran view)", lambda x: np.reshape(x.T, (2, 6), order="A"),
            "m34"),
        row(np.reshape, "shape=, -1", lambda x: np.reshape(x, shape=(-1, 2)), "t234"),
        row(np.reshape, "x.reshape(4, 3)", lambda x: x.reshape(4, 3), "m34"),
        row(np.reshape, "x.reshape((2, 6), order='F')", lambda x: x.reshape((2, 6), order="F"),
            "m34"),
        row(np.reshape, "x.reshape(-1)", lambda x: x.reshape(-1), "t234c"),
        row(np.ravel, "C", np.ravel, "m34c"),
        row(np.ravel, "order='F'", lambda x: np.ravel(x, order="F"), "t234"),
        row(np.ravel, "order='A' (Fortran view)", lambda x: np.ravel(x.T, "A"), "m34"),
        row(np.ravel, "order='K' (Fortran view)", lambda x: np.ravel(x.T, order="K"), "m34"),
        row(np.ravel, "order='K' (strided views)", lambda x: np.ravel(x[:, ::2], "K")
            + np.ravel(x.T[::2], "K"), "m34"),
        row(np.ravel, "x.ravel('F')", lambda x: x.ravel("F"), "m34"),
        row(np.ravel, "x.flatten(order='F')", lambda x: x.flatten(order="F"), "m34"),
        row(np.ravel, "x.flatten()", lambda x: x.flatten(), "m34c"),
        row(np.squeeze, "all", np.squeeze, "t131"),
        row(np.squeeze, "axis=-1", lambda x: np.squeeze(x, axis=-1), "t131"),
        row(np.squeeze, "x.squeeze(0)", lambda x: x.squeeze(0), "t131"),
        row(np.expand_dims, "axis positional", lambda x: np.expand_dims(x, 0), "m34"),
        row(np.expand_dims, "axis=-1", lambda x: np.expand_dims(x, axis=-1), "v4c"),
        row(np.expand_dims, "axis tuple", lambda x: np.expand_dims(x, (0, 2)), "v4"),
        row(np.atleast_1d, "scalar", np.atleast_1d, "s"),
        row(np.atleast_1d, "two arrays", lambda a, b: np.atleast_1d(a, b), "s,v4"),
        row(np.transpose, "reverse", np.transpose, "t234c"),
        row(np.transpose, "axes positional", lambda x: np.transpose(x, (2, 0, 1)), "t234"),
        row(np.transpose, "negative axes", lambda x: np.transpose(x, (-1, 0, -2)), "t234"),
        row(np.transpose, "axes=", lambda x: np.transpose(x, axes=[-1, -3, -2]), "t234"),
        row(np.transpose, "x.T", lambda x: x.T, "m34c"),
        row(np.transpose, "x.transpose(1, 0)", lambda x: x.transpose(1, 0), "m34"),
        row(np.transpose, "x.transpose(-1, 0, 1)", lambda x: x.transpose(-1, 0, 1), "t234"),
        row(np.transpose, "x.transpose((1, -1, 0))", lambda x: x.transpose((1, -1, 0)), "t234"),
        row(np.swapaxes, "positional", lambda x: np.swapaxes(x, 0, 2), "t234"),
        row(np.swapaxes, "negative keywords", lambda x: np.swapaxes(x, axis1=-1, axis2=0),
            "t234c"),
        row(np.swapaxes, "x.swapaxes(0, -1)", lambda x: x.swapaxes(0, -1), "m34"),
        row(np.broadcast_to, "positional", lambda x: np.broadcast_to(x, (3, 4)), "v4"),
        row(np.broadcast_to, "shape=", lambda x: np.broadcast_to(x, shape=(2, 3, 4)), "m31"),
        row(np.concatenate, "axis 0", lambda a, b: np.concatenate([a, b]), "m34,m24"),
        row(np.concatenate, "axis=-1 tuple", lambda a, b: np.concatenate((a, b.T), axis=-1),
            "m34,m43"),
        row(np.concatenate, "axis=None", lambda a, b: np.concatenate([a, b], axis=None),
            "m34c,v4"),
        row(np.concatenate, "dtype=complex", lambda a, b: np.concatenate([a, b], dtype=complex),
            "v4,v5"),
        row(np.concatenate, "one array of rows", np.concatenate, "t234"),
        row(np.concatenate, "with a constant", lambda a: np.concatenate([a, X["v3"]]), "v5c"),
        row(np.stack, "axis 0", lambda a, b: np.stack([a, b]), "v4,v4c"),
        row(np.stack, "axis=-1", lambda a, b: np.stack((a, b), axis=-1), "m34,m34"),
        row(np.stack, "axis positional, dtype", lambda a, b: np.stack([a, b], 1, dtype=complex),
            "v4,v4"),
        # ---------------------------------------------------- indexing
        row(core.getitem, "slice", lambda x: x[1:3], "v6"),
        row(core.getitem, "negative step", lambda x: x[::-2, -1], "m34c"),
        row(core.getitem, "int, negative", lambda x: x[-1, 2], "m34"),
        row(core.getitem, "fancy negative repeated", lambda x: x[IDX], "v6"),
        row(core.getitem, "fancy 2-d negative", lambda x: x[IDX.reshape(2, 3)], "v5c"),
        row(core.getitem, "fancy rows", lambda x: x[np.array([-1, 0, -1])], "m34"),
        row(core.getitem, "tuple of arrays", lambda x: x[np.array([0, -1, 0]),
                                                          np.array([-1, 1, -1])], "m34"),
        row(core.getitem, "list index", lambda x: x[[0, -1, 0]], "v5"),
        row(core.getitem, "bool mask", lambda x: x[M34_POS], "m34"),
        row(core.getitem, "ellipsis, None", lambda x: x[..., None, -1], "t234"),
        row(ad.scatter_add, "negative repeated", lambda x, v: ad.scatter_add(x, IDX, v),
            "v5,v6"),
        row(ad.scatter_add, "2-d", lambda x, v: ad.scatter_add(
            x, (np.array([0, -1, 0]), np.array([-1, 1, -1])), v), "m34c,v3"),
        row(core.astype, "complex", lambda x: x.astype(complex), "m34"),
        row(core.astype, "float64, casting='safe'", lambda x: x.astype("f8", casting="safe"),
            "v5"),
    ]
)

# every ord and axis form numpy takes for a matrix (and a batch of them)
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]
ROWS += [row(np.linalg.norm, f"matrix ord={o!r} axis={a} keepdims={k}",
             lambda x, o=o, a=a, k=k: np.linalg.norm(x, o, a, k) if a is not None or k
             else np.linalg.norm(x, ord=o), inp)
         for o in MATRIX_ORDS
         for a, inp in [(None, "m34"), ((0, 1), "m34c"), ((1, 0), "m34"), ((-1, -3), "t234"),
                        ((2, 1), "t234c")]
         for k in (False, True)]
ROWS += [row(np.linalg.norm, f"vector ord={o!r} axis={a} keepdims={k}",
             lambda x, o=o, a=a, k=k: np.linalg.norm(x, ord=o, axis=a, keepdims=k), inp)
         for o in [None, 2, 1, 3, -1, np.inf, -np.inf]
         for a, inp in [(None, "v5"), (0, "v5c"), (-1, "m34"), ((1,), "m34c"), (-2, "t234")]
         for k in (False, True)]
ROWS += [row(np.linalg.norm, f"vector ord=0.5 axis={a}", lambda x, a=a: np.linalg.norm(x, 0.5, a),
             inp) for a, inp in [(None, "p5"), (-1, "m34p")]]
ROWS += [row(np.linalg.norm, "flattened (ord None, 3-d)", np.linalg.norm, "t234c"),
         row(np.linalg.norm, "x=, ord=", lambda x: np.linalg.norm(x=x, ord="nuc"), "m44")]

# rules of helper A2 (prod, cumsum, ...): rows are checked once the rule is registered
ROWS += [
    row(np.prod, "axis", lambda x: np.prod(x, axis=-1), "m34"),
    row(np.prod, "x.prod(0)", lambda x: x.prod(0), "m34"),
    row(np.cumsum, "axis positional", lambda x: np.cumsum(x, 1), "m34c"),
    row(np.cumsum, "x.cumsum()", lambda x: x.cumsum(), "m34"),
    row(np.cumprod, "axis=-1", lambda x: np.cumprod(x, axis=-1), "m34"),
    row(np.diff, "default", np.diff, "m34"),
    row(np.diff, "n=2 axis=0", lambda x: np.diff(x, n=2, axis=0), "m44"),
    row(np.var, "axis, ddof", lambda x: np.var(x, axis=0, ddof=1), "m34"),
    row(np.var, "x.var()", lambda x: x.var(), "m34c"),
    row(np.std, "keepdims", lambda x: np.std(x, -1, keepdims=True), "m34"),
    row(np.sort, "axis", lambda x: np.sort(x, axis=0), "m34"),
    row(np.trace, "offset", lambda x: np.trace(x, 1), "m34"),
    row(np.moveaxis, "negative", lambda x: np.moveaxis(x, -1, 0), "t234"),
    row(np.hstack, "pair", lambda a, b: np.hstack([a, b]), "m34,m34"),
    row(np.vstack, "pair", lambda a, b: np.vstack((a, b)), "m34,m24"),
    row(np.column_stack, "vectors", lambda a, b: np.column_stack([a, b]), "v4,v4c"),
    row(np.tile, "reps", lambda x: np.tile(x, (2, 1)), "m34"),
    row(np.repeat, "axis", lambda x: np.repeat(x, 2, axis=-1), "m34"),
    row(np.repeat, "x.repeat(2)", lambda x: x.repeat(2), "v4"),
    row(np.einsum, "ij,jk", lambda a, b: np.einsum("ij,jk->ik", a, b), "m34,m43"),
    row(np.tensordot, "axes=1", lambda a, b: np.tensordot(a, b, axes=1), "m34,m43"),
    row(np.linalg.inv, "matrix", np.linalg.inv, "a4"),
    row(np.linalg.det, "matrix", np.linalg.det, "a4"),
    row(np.linalg.slogdet, "logdet", lambda a: np.linalg.slogdet(a)[1], "a4"),
    row(np.dstack, "pair", lambda a, b: np.dstack([a, b]), "m34,m34c"),
    row(sp.erfc, "real", sp.erfc, "v5"),
    row(sp.erfinv, "real", sp.erfinv, "u5"),
    row(sp.erfcinv, "real", sp.erfcinv, "u5"),
    row(sp.erfcx, "real", sp.erfcx, "v5"),
    row(_attr("scipy_rules", "_logsumexp"), "ad.logsumexp axis",
        lambda x: ad.logsumexp(x, axis=0), "m34"),
    row(_attr("scipy_rules", "_logsumexp"), "ad.logsumexp b=, keepdims",
        lambda x, b: ad.logsumexp(x, axis=-1, b=b, keepdims=True), "m34,m34p"),
    row(_attr("scipy_rules", "_spsolve"), "ad.spsolve sparse A",
        lambda b: ad.spsolve(sps.csc_matrix(X["a4"]), b), "v4"),
]


# the collectives of topopt.ad.collectives on the one-rank communicator (their MPI forms:
# tests/test_collectives.py under mpirun)
ROWS += [row(_attr("collectives", "_allsum"), "SELF", lambda x: ad.allsum(x, ad.SELF), "v5"),
         row(_attr("collectives", "_allsum"), "SELF, complex", lambda x: ad.allsum(x, ad.SELF),
             "v5c"),
         row(_attr("collectives", "_allmax"), "SELF", lambda x: ad.allmax(x, ad.SELF), "v5")]


def _id(r):
    return f"{function_name(r[0]) if r[0] is not None else 'absent'}[{r[1]}]"


@pytest.mark.parametrize("fun, label, call, inputs", ROWS, ids=[_id(r) for r in ROWS])
def test_call_form_in_every_mode(fun, label, call, inputs):
    if fun is None or not REGISTRY.entries("rrule", fun):
        pytest.skip(f"{function_name(fun)} has no rule registered (yet)")
    args = [X[name] for name in inputs]
    report = ad.check_modes(call, *args, seed=3, rtol=1e-6)
    differentiable = sum(1 for a in args if ad.api.differentiable(a))
    assert len(report) == 4 * differentiable


def _registered():
    """numpy/scipy functions and topopt.ad primitives with a reverse rule of topopt.ad."""
    return {f for f in REGISTRY.functions("rrule")
            if (getattr(f, "__module__", None) or "numpy").split(".")[0] in ("numpy", "scipy")
            or f.__module__.startswith("topopt.ad")}


def test_every_registered_rule_has_call_form_rows():
    from test_ad_edges import ROWS as EDGE_ROWS     # the edge forms of issue 23
    from test_ad_edges2 import ROWS as EDGE2_ROWS   # and its second round
    from test_ad_edges3 import ROWS as EDGE3_ROWS   # and its third (issue 35)
    covered = {r[0] for r in ROWS + EDGE_ROWS + EDGE2_ROWS + EDGE3_ROWS if r[0] is not None}
    missing = {function_name(f) for f in _registered() - covered}
    assert not missing, f"rules without call-form rows in ROWS: {sorted(missing)}"
    assert len(covered & _registered()) >= 60


def test_every_call_form_has_rows():
    # the edge forms of issue 23 (sequences, casts, full_like, methods) sit in
    # test_ad_edges.ROWS, checked there in every mode
    from test_ad_edges import ROWS as EDGE_ROWS
    from test_ad_edges2 import ROWS as EDGE2_ROWS
    from test_ad_edges3 import ROWS as EDGE3_ROWS
    covered = {r[0] for r in ROWS + EDGE_ROWS + EDGE2_ROWS + EDGE3_ROWS if r[0] is not None}
    missing = sorted(function_name(f) for f in set(REGISTRY.forms) - covered)
    assert not missing, f"call forms without rows: {missing}"


# (call, canonical data, canonical options) -- what a rule receives
A, LO, HI = object(), object(), object()
CANONICAL = [
    (lambda: (np.sum, (A, 0), {}), (A,), {"axis": 0}),
    (lambda: (np.sum, (), {"a": A, "axis": -1, "keepdims": False}), (A,), {"axis": -1,
                                                                          "keepdims": False}),
    (lambda: (np.sum, (A, None, None, None), {"where": True}), (A,), {"where": True}),
    (lambda: (np.max, (A,), {"out": None, "axis": (0, 1)}), (A,), {"axis": (0, 1)}),
    (lambda: (np.clip, (A,), {"min": LO, "max": HI}), (A, LO, HI), {}),
    (lambda: (np.clip, (A,), {"max": HI}), (A, None, HI), {}),
    (lambda: (np.reshape, (A, (2, 3), "C"), {}), (A,), {"shape": (2, 3)}),
    (lambda: (np.reshape, (A, (2, 3)), {"order": "F"}), (A,), {"shape": (2, 3), "order": "F"}),
    (lambda: (np.transpose, (A, None), {}), (A,), {}),
    (lambda: (np.linalg.norm, (A, 2, (0, 1), False), {}), (A,), {"ord": 2, "axis": (0, 1)}),
]


@pytest.mark.parametrize("call, data, options", CANONICAL)
def test_canonical_form_of_a_call(call, data, options):
    from topopt.ad.callforms import canonical
    fun, args, kwargs = call()
    got_data, got_options = canonical(fun, args, kwargs)
    assert len(got_data) == len(data) and all(g is d for g, d in zip(got_data, data))
    assert got_options == options


# varargs functions (no signature to bind) whose rules check every keyword themselves;
# each has a row in UNSUPPORTED
CHECKS_KEYWORDS_ITSELF = {np.einsum}


def _library_primitives():
    """The library's own primitives whose rules bind their keywords themselves."""
    from topopt.design import interpolation, multimaterial
    from topopt import reliability
    return {interpolation.project: (0.5, 8.0, 0.5), interpolation.simp: (0.5, 3.0),
            interpolation.ramp: (0.5, 3.0), reliability.ln_pf: None,
            multimaterial.ordered_simp: (0.3, (0.5, 1.0), (0.4, 1.0))}


@pytest.mark.parametrize("name", ["project", "simp", "ramp", "ordered_simp"])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_library_primitives_reject_unknown_keywords(name, mode):
    from topopt.design import interpolation, multimaterial
    fun = getattr(interpolation if hasattr(interpolation, name) else multimaterial, name)
    args = next(a for f, a in _library_primitives().items() if f is fun)
    call = lambda x: fun(x, *args[1:], bogus=1.0)           # noqa: E731
    with pytest.raises(TypeError, match="bogus"):
        if mode == "reverse":
            ad.gradient(lambda x: np.sum(call(x)), np.full(3, args[0]))
        else:
            ad.jvp(call, (np.full(3, args[0]),), (np.ones(3),))


def test_no_rule_swallows_keywords_unchecked():
    # a rule taking **kwargs must sit behind a call form, which rejects the
    # keywords the rule does not declare before the rule runs (ln_pf checks its
    # options in reliability's own tests)
    import inspect

    library = set(_library_primitives())
    loose = [f"{function_name(fun)}: {rule.__name__}"
             for kind in ("rrule", "frule") for fun in REGISTRY.functions(kind)
             for _, rule in REGISTRY.entries(kind, fun)
             if any(p.kind is inspect.Parameter.VAR_KEYWORD
                    for p in inspect.signature(rule).parameters.values())
             and REGISTRY.form(fun) is None and fun not in CHECKS_KEYWORDS_ITSELF
             and fun not in library]
    assert not loose, f"rules that would swallow unknown keywords: {loose}"


# ------------------------------------------- the defects of issue 11, item 1
# Each one gave a silently wrong value or derivative (or an unrelated crash)
# in some mode before the call forms were normalised.

DEFECTS = [
    ("reshape order='F'", lambda x: np.reshape(x, (4, 3), order="F"), "m34"),
    ("ravel order='F'", lambda x: np.ravel(x, order="F"), "m34"),
    ("flatten(order='F')", lambda x: x.flatten(order="F"), "m34"),
    ("transpose negative axes", lambda x: np.transpose(x, (-1, 0, 1)), "t234"),
    ("sum where=", lambda x: np.sum(x, where=M34_POS), "m34"),
    ("sum initial=", lambda x: np.sum(x, initial=2.0), "m34"),
    ("max initial=", lambda x: np.max(x, axis=0, initial=0.5), "m34"),
    ("mean where=", lambda x: np.mean(x, where=M34_POS), "m34"),
    ("jvp of sum with positional axis", lambda x: np.sum(x, 0), "m34"),
    ("jvp of max with positional axis", lambda x: np.max(x, 1), "m34"),
    ("norm axis=(0, 1) ord=2", lambda x: np.linalg.norm(x, 2, axis=(0, 1)), "m34"),
    ("norm axis=(0, 1) ord=inf", lambda x: np.linalg.norm(x, np.inf, (0, 1)), "m34"),
    ("norm(X, 2)", lambda x: np.linalg.norm(x, 2), "m34"),
    ("norm(X, 1)", lambda x: np.linalg.norm(x, 1), "m34"),
    ("clip(min=, max=)", lambda x: np.clip(x, min=-0.5, max=0.5), "v8"),
    ("negative fancy indices", lambda x: x[np.array([-1, 0, -1, 3])], "v5"),
]


@pytest.mark.parametrize("label, call, inputs", DEFECTS, ids=[d[0] for d in DEFECTS])
def test_issue11_defect_is_fixed(label, call, inputs):
    ad.check_modes(call, X[inputs], seed=5)


# --------------------------------------------------- unsupported call forms

BUF = np.empty(3)


def _sum_traced_initial(x):
    return np.sum(x, initial=x[0])


UNSUPPORTED = [
    # (call, exception, words the message must contain)
    (lambda x: np.sum(x, axis=1, out=BUF), TypeError, ["numpy.sum", "out="]),
    (lambda x: x.sum(1, None, BUF), TypeError, ["numpy.sum", "out="]),
    (lambda x: np.exp(x, out=np.empty((3, 4))), TypeError, ["numpy.exp", "out="]),
    (lambda x: np.dot(x, x.T, out=np.empty((3, 3))), TypeError, ["numpy.dot", "out="]),
    (lambda x: np.exp(x, where=M34_POS), ad.NoRuleError, ["numpy.exp", "where="]),
    (lambda x: np.add(x, 1, casting="unsafe"), ad.NoRuleError, ["numpy.add", "casting="]),
    (lambda x: np.exp(x + 1j, dtype=float), TypeError, ["numpy.exp", "dtype=float64",
                                                         "complex128"]),
    (lambda x: np.matmul(x, x.T, axes=[(0, 1), (0, 1), (0, 1)]), ad.NoRuleError,
     ["numpy.matmul", "axes="]),
    (lambda x: np.clip(x, 0, 1, casting="unsafe"), ad.NoRuleError, ["numpy.clip", "casting="]),
    (lambda x: np.clip(x, 0, a_min=0), TypeError, ["clip", "a_min"]),
    (lambda x: np.clip(x, a_min=0, min=0), TypeError, ["clip", "a_min"]),
    (lambda x: np.sum(x, bogus=1), TypeError, ["sum", "bogus"]),
    (lambda x: np.linalg.norm(x[0], 0), ad.NoRuleError, ["numpy.linalg.norm", "ord=0"]),
    (lambda x: np.broadcast_to(x, (2, 3, 4), subok=True), ad.NoRuleError,
     ["numpy.broadcast_to", "subok="]),
    (lambda x: np.concatenate([x, x], casting="no"), ad.NoRuleError,
     ["numpy.concatenate", "casting="]),
    (_sum_traced_initial, ad.NoRuleError, ["numpy.sum", "initial", "traced"]),
    (lambda x: np.max(x, where=M34_POS), ValueError, ["numpy.max", "where=", "initial="]),
    (lambda x: np.ravel(x[::-1], order="K"), ad.NoRuleError, ["numpy.ravel", "order='K'"]),
    (lambda x: np.ravel(np.reshape(x, (2, 3, 2)).transpose(1, 0, 2), "K"), ad.NoRuleError,
     ["numpy.ravel", "order='K'"]),
    (lambda x: x.astype(np.float32, casting="safe"), TypeError, ["float32", "'safe'"]),
    (lambda x: np.cumprod(x, out=BUF), (TypeError, ad.NoRuleError), ["cumprod"]),
    (lambda x: np.einsum("ij->i", x, bogus=1), ad.NoRuleError, ["numpy.einsum", "bogus"]),
]


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("call, exc, words", UNSUPPORTED,
                         ids=[", ".join(u[2]) for u in UNSUPPORTED])
def test_unsupported_call_form_raises_naming_function_and_argument(call, exc, words, mode):
    check_refusal(call, X["m34"], mode, exc, words)


# ---------------------------------------------- random shapes, axes, orders

@st.composite
def _arrays_and_axes(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    axes = draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim,
                         unique_by=lambda a: a % ndim))
    seed = draw(st.integers(0, 2**16))
    x = np.random.default_rng(seed).standard_normal(shape)
    return x, tuple(axes), draw(st.booleans()), draw(st.permutations(range(ndim)))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(_arrays_and_axes(), st.sampled_from([np.sum, np.mean, np.max, np.min]),
       st.sampled_from(["C", "F"]))
def test_random_shapes_axes_and_orders(case, reduce, order):
    x, axes, keepdims, perm = case
    negative = [p - x.ndim if p % 2 else p for p in perm]     # mix of negative axes

    def call(x):
        y = np.transpose(x, negative)
        y = reduce(np.reshape(y, y.shape[::-1], order=order), axes, keepdims=keepdims)
        return y * y

    ad.check_modes(call, x, seed=1)


# ------------------------------------------------------- the checker itself

def _cube_with(pullback=None, frule=None, offset=0.0):
    """A primitive ``x**3`` whose rules are wrong in the given way."""
    @ad.primitive
    def cube(x):
        return np.asarray(x) ** 3

    @ad.rrule(cube)
    def cube_rrule(x):
        def cube_pullback(ybar):
            return ((pullback or (lambda ybar, x: 3 * ybar * x ** 2))(ybar, x),)
        return cube(x) + offset, cube_pullback

    @ad.frule(cube)
    def cube_frule(primals, tangents):
        (x,), (xdot,) = primals, tangents
        return cube(x) + offset, (frule or (lambda x, xdot: 3 * x ** 2 * xdot))(x, xdot)
    return cube


WRONG = [
    # (how the rule is wrong, the modes check_modes must report)
    # (hvp differentiates the program of the gradient: a wrong pullback is
    # differentiated consistently there; the outer pullback of nested is wrong)
    ("pullback factor", dict(pullback=lambda ybar, x: 2 * ybar * x ** 2), {"reverse", "nested"}),
    ("tangent factor", dict(frule=lambda x, xdot: 2 * x ** 2 * xdot), {"forward", "hvp"}),
    ("pullback not differentiable again",
     dict(pullback=lambda ybar, x: 3 * ybar * ad.value(x) ** 2), {"hvp", "nested"}),
    ("primal", dict(offset=1.0), {"reverse", "forward", "hvp", "nested"}),
]


@pytest.mark.parametrize("label, wrong, modes", WRONG, ids=[w[0] for w in WRONG])
def test_check_modes_reports_the_modes_a_wrong_rule_breaks(label, wrong, modes):
    cube = _cube_with(**wrong)
    try:
        with pytest.raises(ad.RuleCheckError) as info:
            ad.check_modes(lambda x: cube(x) * 0.5, X["v5"])
    finally:
        ad.remove_rule(cube)
    reported = {line.split("/")[0].strip() for line in str(info.value).splitlines()[1:]}
    assert reported == modes
    assert "arg 0" in str(info.value)


def test_check_modes_passes_a_right_rule_and_names_the_argument():
    cube = _cube_with()
    try:
        report = ad.check_modes(lambda a, k, b: cube(a) * b ** k, X["v5"], 2, X["p5"])
    finally:
        ad.remove_rule(cube)
    assert set(report) == {f"{m}/arg {i}" for m in ("reverse", "forward", "hvp", "nested")
                           for i in (0, 2)}
    assert max(report.values()) < 1e-8


@pytest.mark.parametrize("fun", [
    lambda x: np.sqrt(np.sum(x * np.arange(1.0, 6.0))),        # y^2 linear in x
    lambda x: np.sqrt(x[0] + 2.0),
], ids=["sqrt of a linear form", "sqrt of one entry"])
def test_check_modes_has_curvature_where_y_squared_is_linear(fun):
    """Its objective of ``y`` is cubic, not quadratic: for ``y = sqrt(a . x)`` a
    quadratic one is linear in `x`, and the hvp and nested checks compared
    rounding noise (relative error ~1 on a right rule)."""
    report = ad.check_modes(fun, X["p5"])
    assert max(report.values()) < 1e-8


@pytest.mark.parametrize("kwargs, word", [({"modes": ("reverse", "bogus")}, "modes"),
                                          ({"modes": ()}, "modes"), ({"rtol": 0.0}, "rtol"),
                                          ({"h": -1e-3}, "h")])
def test_check_modes_rejects_bad_options(kwargs, word):
    with pytest.raises(ValueError, match=word):
        ad.check_modes(np.sin, X["v5"], **kwargs)


def test_check_modes_needs_a_float_argument():
    with pytest.raises(ValueError, match="float or complex argument"):
        ad.check_modes(lambda k: np.arange(3.0) * k, 3)
