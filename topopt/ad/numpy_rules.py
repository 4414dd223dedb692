"""Reverse and forward rules for numpy (and a few scipy.special) functions.

The rules live beside their kind: `elementwise` (ufuncs, where, clip),
`products` (matmul, dot, vdot, outer, solve, eigh), `reductions` (sum, mean,
max/min, norm) and `shapes` (reshape ... stack, indexing, scatter_add,
astype); `callforms` normalises every call before a rule sees it and
`rulekit` holds the shared helpers. Importing this module registers them all
and the functions without a derivative.

Every pullback is written with numpy calls, so on traced cotangents or
residuals it is itself recorded: that is what gives second derivatives.
Complex convention: for ``y = f(z)`` holomorphic, ``zbar = ybar * conj(f'(z))``
and ``zdot -> f'(z) zdot``; the walk takes the real part of a cotangent
that reaches a real argument.
"""

from __future__ import annotations

import numpy as np

from . import elementwise, products, reductions, shapes  # noqa: F401  (register the rules)
from .registry import REGISTRY

__all__: list[str] = []

# ------------------------------------------------------ not differentiable

REGISTRY.mark_nondifferentiable({
    np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
    np.isfinite, np.isnan, np.isinf, np.signbit, np.sign, np.floor, np.ceil,
    np.rint, np.trunc, np.round, np.around, np.heaviside, np.floor_divide,
    np.argmax, np.argmin, np.argsort, np.argpartition, np.nonzero, np.flatnonzero, np.searchsorted,
    np.shape, np.ndim, np.size, np.zeros_like, np.ones_like, np.empty_like,
    np.result_type, np.iscomplexobj, np.isrealobj, np.iscomplex,
    np.isreal, np.any, np.all, np.count_nonzero, np.isclose, np.allclose,
    np.array_equal,
})
