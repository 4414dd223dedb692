"""ad.check_rule on every rule the core registers, real and complex inputs."""

import numpy as np
import pytest
import scipy.special as sp

from topopt import ad
from topopt.ad import core, elementwise
from topopt.ad.registry import REGISTRY, function_name
from topopt.ad import scatter_add
from topopt.ad.products import eigh, eigvalsh


def _r(rng, *shape, cplx=False, low=None):
    x = rng.standard_normal(shape)
    if low is not None:
        x = low + np.abs(x)
    if cplx:
        x = x + 1j * rng.standard_normal(shape)
    return x


# fun -> list of (label, make(rng, cplx) -> (args, kwargs), complex allowed)
CASES = {
    np.exp: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.expm1: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.exp2: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.log: [("pos", lambda r, c: ((_r(r, 5, cplx=c, low=0.5),), {}), True)],
    np.log1p: [("pos", lambda r, c: ((_r(r, 5, cplx=c, low=0.5),), {}), True)],
    np.log10: [("pos", lambda r, c: ((_r(r, 5, cplx=c, low=0.5),), {}), True)],
    np.log2: [("pos", lambda r, c: ((_r(r, 5, cplx=c, low=0.5),), {}), True)],
    np.sqrt: [("pos", lambda r, c: ((_r(r, 5, cplx=c, low=0.5),), {}), True)],
    np.cbrt: [("pos", lambda r, c: ((_r(r, 5, low=0.5),), {}), False)],
    np.deg2rad: [("vec", lambda r, c: ((_r(r, 5),), {}), False)],
    np.radians: [("vec", lambda r, c: ((_r(r, 5),), {}), False)],
    np.rad2deg: [("vec", lambda r, c: ((_r(r, 5),), {}), False)],
    np.degrees: [("vec", lambda r, c: ((_r(r, 5),), {}), False)],
    np.square: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.reciprocal: [("pos", lambda r, c: ((_r(r, 5, cplx=c, low=0.5),), {}), True)],
    np.sin: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.cos: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.tan: [("vec", lambda r, c: ((0.3 * _r(r, 5, cplx=c),), {}), True)],
    np.arctan: [("vec", lambda r, c: ((0.5 * _r(r, 5, cplx=c),), {}), True)],
    np.sinh: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.cosh: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.tanh: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.arcsin: [("vec", lambda r, c: ((0.3 * _r(r, 5, cplx=c),), {}), True)],
    np.arccos: [("vec", lambda r, c: ((0.3 * _r(r, 5, cplx=c),), {}), True)],
    np.arcsinh: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.arccosh: [("above 1", lambda r, c: ((_r(r, 5, cplx=c, low=1.5),), {}), True)],
    np.arctanh: [("vec", lambda r, c: ((0.3 * _r(r, 5, cplx=c),), {}), True)],
    np.fabs: [("vec", lambda r, c: ((_r(r, 5),), {}), False)],
    sp.expit: [("vec", lambda r, c: ((_r(r, 5),), {}), False)],
    sp.erf: [("vec", lambda r, c: ((_r(r, 5),), {}), False)],
    sp.ndtr: [("vec", lambda r, c: ((_r(r, 5),), {}), False)],
    sp.log_ndtr: [("vec", lambda r, c: ((3 * _r(r, 5),), {}), False)],
    sp.ndtri: [("prob", lambda r, c: ((sp.expit(_r(r, 5)),), {}), False)],
    np.negative: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.positive: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.conjugate: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.real: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.imag: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.absolute: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True)],
    np.add: [("bcast", lambda r, c: ((_r(r, 3, 4, cplx=c), _r(r, 4, cplx=c)), {}), True)],
    np.subtract: [("bcast", lambda r, c: ((_r(r, 3, 1, cplx=c), _r(r, 4, cplx=c)), {}), True)],
    np.multiply: [("bcast", lambda r, c: ((_r(r, 3, 4, cplx=c), _r(r, 1, 4, cplx=c)), {}), True),
                  ("scalar", lambda r, c: ((_r(r, 3, cplx=c), 1.7), {}), True)],
    np.true_divide: [("bcast", lambda r, c: ((_r(r, 3, 4, cplx=c), _r(r, 4, cplx=c, low=1.0)), {}),
                      True)],
    np.power: [("pos", lambda r, c: ((_r(r, 4, cplx=c, low=0.5), _r(r, 4, cplx=c)), {}), True),
               ("int exponent", lambda r, c: ((_r(r, 4, cplx=c), 3), {}), True)],
    np.maximum: [("vec", lambda r, c: ((_r(r, 6), _r(r, 6)), {}), False)],
    np.minimum: [("bcast", lambda r, c: ((_r(r, 2, 6), _r(r, 6)), {}), False)],
    np.arctan2: [("bcast", lambda r, c: ((_r(r, 2, 6), _r(r, 6) + 2.0), {}), False)],
    np.hypot: [("vec", lambda r, c: ((_r(r, 6), _r(r, 6)), {}), False)],
    np.remainder: [("bcast", lambda r, c: ((_r(r, 2, 6), _r(r, 6, low=0.5)), {}), False)],
    np.fmod: [("signs", lambda r, c: ((_r(r, 6), np.array([1.5, -1.2, 0.7, 2.0, -0.9, 1.1])), {}),
               False)],
    np.where: [("mask", lambda r, c: ((_r(r, 6) > 0, _r(r, 6, cplx=c), _r(r, 1, cplx=c)), {}),
                True)],
    np.clip: [("bounds", lambda r, c: ((_r(r, 8), -0.5, 0.5), {}), False),
              ("array bounds", lambda r, c: ((_r(r, 8), -0.3 - np.abs(_r(r, 8)) * 0.1,
                                              0.4 + np.abs(_r(r, 8)) * 0.1), {}), False)],
    np.matmul: [("mat-vec", lambda r, c: ((_r(r, 3, 4, cplx=c), _r(r, 4, cplx=c)), {}), True),
                ("vec-mat", lambda r, c: ((_r(r, 3, cplx=c), _r(r, 3, 4, cplx=c)), {}), True),
                ("mat-mat", lambda r, c: ((_r(r, 2, 3, cplx=c), _r(r, 3, 4, cplx=c)), {}), True),
                ("vec-vec", lambda r, c: ((_r(r, 3, cplx=c), _r(r, 3, cplx=c)), {}), True),
                ("batched", lambda r, c: ((_r(r, 2, 3, 4, cplx=c), _r(r, 4, 5, cplx=c)), {}), True)],
    np.dot: [("mat-vec", lambda r, c: ((_r(r, 3, 4, cplx=c), _r(r, 4, cplx=c)), {}), True),
             ("scalar", lambda r, c: ((2.5, _r(r, 4, cplx=c)), {}), True)],
    np.vdot: [("vec", lambda r, c: ((_r(r, 4, cplx=c), _r(r, 4, cplx=c)), {}), True)],
    np.outer: [("vec", lambda r, c: ((_r(r, 3, cplx=c), _r(r, 4, cplx=c)), {}), True)],
    np.linalg.solve: [
        ("vec", lambda r, c: ((_r(r, 4, 4, cplx=c) + 4 * np.eye(4), _r(r, 4, cplx=c)), {}), True),
        ("mat", lambda r, c: ((_r(r, 3, 3, cplx=c) + 4 * np.eye(3), _r(r, 3, 2, cplx=c)), {}), True)],
    np.linalg.norm: [("vec", lambda r, c: ((_r(r, 5, cplx=c),), {}), True),
                     ("fro axis", lambda r, c: ((_r(r, 3, 4, cplx=c),), {"axis": 1}), True),
                     ("ord 3", lambda r, c: ((_r(r, 5, cplx=c), 3), {}), True),
                     ("ord inf", lambda r, c: ((_r(r, 5),), {"ord": np.inf}), False)],
    np.sum: [("all", lambda r, c: ((_r(r, 3, 4, cplx=c),), {}), True),
             ("axis keepdims", lambda r, c: ((_r(r, 3, 4, cplx=c),), {"axis": 0, "keepdims": True}),
              True),
             ("axes", lambda r, c: ((_r(r, 2, 3, 4, cplx=c),), {"axis": (0, 2)}), True)],
    np.mean: [("axis", lambda r, c: ((_r(r, 3, 4, cplx=c),), {"axis": -1}), True)],
    np.max: [("axis", lambda r, c: ((_r(r, 3, 4),), {"axis": 1}), False)],
    np.min: [("all", lambda r, c: ((_r(r, 3, 4),), {}), False)],
    np.amax: [("all", lambda r, c: ((_r(r, 5),), {}), False)],
    np.amin: [("axis", lambda r, c: ((_r(r, 3, 4),), {"axis": 0, "keepdims": True}), False)],
    np.reshape: [("2d", lambda r, c: ((_r(r, 3, 4, cplx=c), (4, 3)), {}), True)],
    np.ravel: [("2d", lambda r, c: ((_r(r, 3, 4, cplx=c),), {}), True)],
    np.squeeze: [("2d", lambda r, c: ((_r(r, 3, 1, cplx=c),), {}), True)],
    np.expand_dims: [("1d", lambda r, c: ((_r(r, 3, cplx=c), 0), {}), True)],
    np.atleast_1d: [("0d", lambda r, c: ((_r(r, cplx=c),), {}), True)],
    np.atleast_2d: [("1d", lambda r, c: ((_r(r, 4, cplx=c),), {}), True)],
    np.atleast_3d: [("2d", lambda r, c: ((_r(r, 2, 3, cplx=c),), {}), True)],
    np.transpose: [("axes", lambda r, c: ((_r(r, 2, 3, 4, cplx=c), (2, 0, 1)), {}), True),
                   ("T", lambda r, c: ((_r(r, 2, 3, cplx=c),), {}), True)],
    np.swapaxes: [("3d", lambda r, c: ((_r(r, 2, 3, 4, cplx=c), 0, 2), {}), True)],
    np.broadcast_to: [("row", lambda r, c: ((_r(r, 1, 4, cplx=c), (3, 4)), {}), True)],
    np.concatenate: [("axis1", lambda r, c: (([_r(r, 2, 3, cplx=c), _r(r, 2, 1, cplx=c)], 1), {}),
                      True)],
    np.stack: [("axis0", lambda r, c: (([_r(r, 3, cplx=c), _r(r, 3, cplx=c)],), {}), True)],
    core.getitem: [("fancy", lambda r, c: ((_r(r, 6, cplx=c), np.array([0, 2, 2, 5])), {}), True),
                   ("slice", lambda r, c: ((_r(r, 4, 5, cplx=c), (slice(1, 3), None, 2)), {}), True),
                   ("mask", lambda r, c: ((_r(r, 6, cplx=c), np.arange(6) % 2 == 0), {}), True),
                   ("2d fancy", lambda r, c: ((_r(r, 6, cplx=c), np.array([[0, 1], [1, 5]])), {}),
                    True)],
    scatter_add: [("fancy", lambda r, c: ((_r(r, 6, cplx=c), np.array([0, 2, 2]), _r(r, 3, cplx=c)),
                                          {}), True),
                  ("2d", lambda r, c: ((_r(r, 3, 4, cplx=c), (np.array([0, 0]), np.array([1, 1])),
                                        _r(r, 2, cplx=c)), {}), True)],
    eigh: [("sym", lambda r, c: ((np.diag([1.0, 2.5, 4.0, 7.0]) + 0.3 * _r(r, 4, 4),), {}), False),
           ("batched", lambda r, c: ((np.diag([1.0, 3.0, 6.0]) + 0.3 * _r(r, 2, 3, 3),), {}),
            False)],
    eigvalsh: [("sym", lambda r, c: ((np.diag([1.0, 2.5, 4.0, 7.0]) + 0.3 * _r(r, 4, 4),), {}),
                 False),
               ("batched", lambda r, c: ((np.diag([1.0, 3.0, 6.0]) + 0.3 * _r(r, 2, 3, 3),), {}),
                False)],
    core.astype: [("f->c", lambda r, c: ((_r(r, 4), np.dtype(complex)), {}), False)],
}

PARAMS = [
    pytest.param(fun, make, cplx, seed,
                 id=f"{function_name(fun)}-{label}-{'c' if cplx else 'r'}-{seed}")
    for fun, cases in CASES.items()
    for label, make, complex_ok in cases
    for cplx in ([False, True] if complex_ok else [False])
    for seed in (0, 1)
]


@pytest.mark.parametrize("fun, make, cplx, seed", PARAMS)
def test_rule(fun, make, cplx, seed):
    rng = np.random.default_rng(100 + seed)
    args, kwargs = make(rng, cplx)
    report = ad.check_rule(fun, *args, seed=seed, rtol=1e-6, **kwargs)
    assert report, "no differentiable argument was checked"


CORE_RULE_MODULES = ("topopt.ad.elementwise", "topopt.ad.products", "topopt.ad.reductions",
                     "topopt.ad.shapes")


def test_every_registered_rule_is_checked():
    # rules of the core rule modules (the other rule modules test their own rules,
    # and tests/test_ad_callforms.py checks every registered rule in every mode)
    registered = {f for f in REGISTRY.functions("rrule")
                  if any(rule.__module__ in CORE_RULE_MODULES and rule.__name__ != "unary_rrule"
                         for _, rule in REGISTRY.entries("rrule", f))} | set(elementwise.UNARY) | {
        getattr(sp, name) for name in elementwise.SPECIAL_UNARY}
    assert len(registered) >= 50
    assert registered <= set(CASES), f"rules without a check: {registered - set(CASES)}"


def test_check_rule_catches_a_wrong_rule():
    @ad.primitive
    def twice(x):
        return 2 * np.asarray(x)

    @ad.rrule(twice)
    def twice_rrule(x):
        def twice_pullback(ybar):
            return (3 * ybar,)        # wrong on purpose
        return twice(x), twice_pullback

    try:
        with pytest.raises(ad.RuleCheckError, match="relative error"):
            ad.check_rule(twice, np.ones(3))
    finally:
        ad.remove_rule(twice)


def test_check_rule_catches_a_wrong_forward_rule():
    @ad.primitive
    def sq(x):
        return np.asarray(x) ** 2

    @ad.rrule(sq)
    def sq_rrule(x):
        return sq(x), lambda ybar: (2 * ybar * x,)

    @ad.frule(sq)
    def sq_frule(primals, tangents):
        return sq(primals[0]), primals[0] * tangents[0]     # missing factor 2

    try:
        with pytest.raises(ad.RuleCheckError, match="forward rule"):
            ad.check_rule(sq, np.ones(3))
    finally:
        ad.remove_rule(sq)
