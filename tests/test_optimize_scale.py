"""The driver's lean per-design helpers give the numbers of the plain formulas, bit for bit.

At millions of variables `minimize` forms the history's ``grey`` and
``change``, the cache key and Svanberg's ``rho_init`` with at most one
temporary of n floats (`scripts/benchmarks/benchmark_mma_scale.py`); each is checked
here against the expression it replaced (the source of the numbers), with
``==``, not a tolerance.
"""

import hashlib

import numpy as np
import pytest

from topopt.design.measures import variable_grey_level
from topopt.optimize import Options, minimize
from topopt.optimize.evaluator import _key
from topopt.optimize.run import _BLOCK, _Grey, _max_change

N = 3 * _BLOCK + 17          # several blocks and a ragged last one
RNG = np.random.default_rng(25)
BOUNDS = [
    ("scalar", 0.0, 1.0),
    ("arrays", RNG.uniform(-1.0, 0.0, N), RNG.uniform(0.5, 2.0, N)),
    ("one infinite", np.r_[np.zeros(N - 1), -np.inf], np.ones(N)),
    ("one fixed", np.zeros(N), np.r_[np.ones(N - 1), 0.0]),
]


def _design(lb, ub):
    lo, hi = np.broadcast_to(lb, (N,)), np.broadcast_to(ub, (N,))
    lo = np.where(np.isfinite(lo), lo, -3.0)
    return lo + RNG.uniform(0.0, 1.0, N) * (hi - lo)


@pytest.mark.parametrize("name, lb, ub", BOUNDS, ids=[b[0] for b in BOUNDS])
def test_grey_is_variable_grey_level_bit_for_bit(name, lb, ub):
    _, opts = Options.check(np.full(N, 0.5 if name != "one fixed" else 0.0),
                            bounds=(lb, ub), verbose=False)
    x = _design(lb, ub)
    assert _Grey(opts.lb, opts.ub).of(x) == variable_grey_level(x, opts.lb, opts.ub)


def test_grey_outside_bounds_raises_as_variable_grey_level():
    x = np.full(N, 0.5)
    x[N - 3] = 1.5
    with pytest.raises(ValueError, match=rf"x\[{N - 3}\] = 1.5 lies outside its bounds"):
        _Grey(np.zeros(N), np.ones(N)).of(x)
    x[N - 3] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        _Grey(np.zeros(N), np.ones(N)).of(x)


def test_change_and_cache_key_are_the_plain_formulas():
    x, y = RNG.uniform(size=N), RNG.uniform(size=N)
    assert _max_change(x, y) == float(np.max(np.abs(x - y)))
    assert _key(x) == hashlib.blake2b(x.tobytes(), digest_size=16).digest()
    assert _key(x[::2]) == hashlib.blake2b(x[::2].tobytes(), digest_size=16).digest()


def test_scalar_bounds_are_views_without_memory_per_variable():
    _, opts = Options.check(np.full(N, 0.5), bounds=(0.0, 1.0))
    assert opts.lb.strides == (0,) and not opts.lb.flags.writeable
    assert opts.ub.shape == (N,) and float(opts.ub[N - 1]) == 1.0


@pytest.mark.parametrize("bounds", [(1e-3, 1.0), (np.full(N, 1e-3), np.ones(N))],
                         ids=["scalar", "arrays"])
def test_history_grey_and_iterates_do_not_depend_on_the_bounds_form(bounds):
    """Scalar bounds (views, NLopt's scalar setters) and the same bounds as arrays: one run."""
    c = 1.0 + np.arange(N) % 7

    def fun(x):
        return np.stack([np.sum(c / x) / N, np.mean(x) - 0.3])
    runs = [minimize(fun, np.full(N, 0.3), bounds=b, maxeval=4, verbose=False)
            for b in ((1e-3, 1.0), bounds)]
    assert [h["objective"] for h in runs[0].history] == [h["objective"] for h in runs[1].history]
    assert np.array_equal(runs[0].x, runs[1].x)
    assert runs[1].history[0]["grey"] == variable_grey_level(np.full(N, 0.3),
                                                             np.full(N, 1e-3), np.ones(N))
