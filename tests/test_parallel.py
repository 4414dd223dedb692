"""Issue 15, item 4: sampling and sweeps on workers give the serial result to the last bit.

Monte Carlo and importance sampling (`rel.sampling_estimate`, ``executor=``)
on a ``ProcessPoolExecutor(2)`` and on a Dask ``LocalCluster`` of 2 worker
processes (skipped when ``distributed`` is not installed) are compared with
``==`` (not approx) against the serial run with the same seed, for analytic
limit states and for finite-element ones built on the workers from a
`topopt.parallel.Builder` (a model holding a factorization does not pickle):
the reliable bracket's quadratic compliance and a bracket whose four
quadrants have lognormal moduli (one FE solve per sample). Then `sweep`,
`multistart`, `spawn_seeds`, the per-process cache, and bad input.
"""

import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from topopt import reliability as rel
from topopt.parallel import Builder, multistart, spawn_seeds, sweep

from topopt_problems.reliable_bracket import moduli_limit_state

N_EL = 10                                   # bracket: N_EL x N_EL elements
SIGMA_E = 0.3                               # log-std of each quadrant's modulus


# --- limit states (module level: a worker imports them) -------------------------------
def linear(theta, p):
    """Batched ``F = theta . p``: exact ``pf = Phi(-z / |p|)``."""
    return theta @ p


def two_modes(theta, p):
    """Unbatched ``F = p theta_1^2 + 0.1 theta_2``: two failure regions."""
    return p * theta[0] ** 2 + 0.1 * theta[1]


def bracket_quadratic(n):
    """The reliable bracket's limit state: compliance, quadratic in the load ``theta``."""
    from topopt_problems.reliable_bracket import ReliableBracket
    return ReliableBracket(n).limit_state


def build_square(offset):
    """A model ``p -> (p - offset)^2`` (for sweeps)."""
    return lambda p: (p - offset) ** 2


def build_token(_):
    """A model reporting its process and the identity of this build."""
    token = object()
    return lambda p: (os.getpid(), id(token), p)


def local_search(x0):
    """A 'local search' of ``(x - 2)^2 (x + 1)^2 + 0.5 x``: a few Newton-free steps."""
    x = float(x0)
    f = lambda t: (t - 2) ** 2 * (t + 1) ** 2 + 0.5 * t               # noqa: E731
    for _ in range(200):
        g = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6
        x -= 0.01 * g
    return f(x), x


# --- executors --------------------------------------------------------------------
@pytest.fixture(scope="module")
def pool():
    with ProcessPoolExecutor(2) as ex:
        yield ex


@pytest.fixture(scope="module")
def dask_executor():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client.get_executor()


@pytest.fixture(params=["process_pool", "dask"])
def executor(request):
    return request.getfixturevalue("pool" if request.param == "process_pool"
                                   else "dask_executor")


def assert_identical(a, b):
    """Every number of two `ReliabilityResult` s equal (==) and the per-sample terms too."""
    for name in ("ln_pf", "ln_pf_std", "pf", "pf_std", "n_failures", "n_samples"):
        assert getattr(a, name) == getattr(b, name), name
    assert np.array_equal(a.log_terms, b.log_terms)
    assert (a.mpp is None) == (b.mpp is None)
    if a.mpp is not None:
        assert np.array_equal(a.mpp, b.mpp)


# name, limit state (or builder), design, z, method, options
FE_X = np.full(N_EL * N_EL, 0.5)
CASES = [
    ("linear-mc", linear, np.array([3.0, 4.0]), 10.0, "mc",
     dict(n_samples=20000, batch=True, m=2, chunk=1500)),
    ("linear-is", linear, np.array([3.0, 4.0]), 15.0, "is",
     dict(n_samples=20000, batch=True, m=2, chunk=3000)),
    ("two-modes-mc", two_modes, 1.0, 4.0, "mc", dict(n_samples=3000, m=2)),
    ("two-modes-is", two_modes, 1.0, 9.0, "is",            # a mixture of two centres
     dict(n_samples=3000, m=2, center=np.array([[3.0, 0.0], [-3.0, 0.0]]), chunk=250)),
    ("bracket-quadratic-mc", Builder(bracket_quadratic, N_EL), FE_X, 1.1, "mc",
     dict(n_samples=5000)),
    ("bracket-quadratic-is", Builder(bracket_quadratic, N_EL), FE_X, 1.6, "is",
     dict(n_samples=5000)),
    ("bracket-moduli-mc", Builder(moduli_limit_state, N_EL, SIGMA_E), FE_X, 1.3, "mc",
     dict(n_samples=300)),
    ("bracket-moduli-is", Builder(moduli_limit_state, N_EL, SIGMA_E), FE_X, 1.3, "is",
     dict(n_samples=200)),
]


def _threshold(limit_state, design, z):
    """`z`; for a FE limit state (a `Builder`) `z` times the nominal compliance."""
    if not isinstance(limit_state, Builder):
        return z
    ls = limit_state.build()
    return z * float(ls(np.zeros(ls.dimension(ls.params(design)) or 2), design))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sampling_on_workers_is_the_serial_result(case, executor):
    name, ls, design, z, method, opts = case
    z = _threshold(ls, design, z)
    serial = rel.sampling_estimate(ls, design, z, method, seed=3, **opts)
    workers = rel.sampling_estimate(ls, design, z, method, seed=3, executor=executor, **opts)
    assert_identical(workers, serial)
    assert 0 < serial.n_failures < serial.n_samples            # a real estimate
    assert np.isfinite(serial.ln_pf_std)


def test_any_number_of_workers_gives_the_same_bits():
    """1 and 3 worker processes (the fixtures use 2) on the FE limit state."""
    ls = Builder(moduli_limit_state, N_EL, SIGMA_E)
    z = _threshold(ls, FE_X, 1.3)
    serial = rel.sampling_estimate(ls, FE_X, z, "mc", n_samples=200, seed=5, chunk=9)
    for workers in (1, 3):
        with ProcessPoolExecutor(workers) as ex:
            assert_identical(rel.sampling_estimate(ls, FE_X, z, "mc", n_samples=200, seed=5,
                                                   chunk=9, executor=ex), serial)


def test_failure_counts_match_an_independent_count(pool):
    """Workers evaluate the right samples: the MC count is the count of ``theta . p >= z``
    over the same standard normals drawn here (``default_rng(seed)``)."""
    p, z, n = np.array([3.0, 4.0]), 10.0, 20000
    r = rel.sampling_estimate(linear, p, z, "mc", n_samples=n, seed=8, batch=True, m=2,
                              chunk=999, executor=pool)
    theta = np.random.default_rng(8).standard_normal((n, 2))
    assert r.n_failures == int(np.sum(theta @ p >= z))
    # and the estimate is right: Phi(-2) = 0.02275 within 4 standard errors
    assert abs(r.pf - 0.0227501319) < 4 * r.pf_std


def test_unbatched_result_does_not_depend_on_the_chunk(pool):
    """A per-sample limit state: any task size gives the same bits."""
    runs = [rel.sampling_estimate(two_modes, 1.0, 4.0, "mc", n_samples=2000, m=2, seed=1,
                                  chunk=c, executor=pool) for c in (1, 7, 2000)]
    runs.append(rel.sampling_estimate(two_modes, 1.0, 4.0, "mc", n_samples=2000, m=2,
                                      seed=1, executor=pool))
    for r in runs[1:]:
        assert_identical(r, runs[0])


def test_builder_is_built_once_per_worker_process(pool):
    out = sweep(Builder(build_token, "once"), list(range(40)), executor=pool, chunksize=1)
    assert [p for _, _, p in out] == list(range(40))
    tokens = {}
    for pid, token, _ in out:
        tokens.setdefault(pid, set()).add(token)
    assert all(len(t) == 1 for t in tokens.values())
    assert os.getpid() not in tokens                          # it ran on the workers


@pytest.mark.parametrize("chunksize", [None, 1, 3, 50])
def test_sweep_on_workers_matches_serial(pool, chunksize):
    params = list(np.linspace(-1.0, 2.0, 23))
    serial = sweep(Builder(build_square, 0.25), params)
    assert serial == [(p - 0.25) ** 2 for p in params]
    assert sweep(Builder(build_square, 0.25), params, executor=pool,
                 chunksize=chunksize) == serial


def test_sweep_on_dask_matches_serial(dask_executor):
    params = list(range(17))
    assert (sweep(Builder(build_square, 3), params, executor=dask_executor, chunksize=4)
            == [(p - 3) ** 2 for p in params])


def test_multistart_keeps_the_global_minimum(pool):
    """``(x-2)^2 (x+1)^2 + x/2`` has local minima near -1 (f ~ -0.5) and 2 (f ~ 1)."""
    starts = [3.0, 2.5, -2.0, 0.7]
    r = multistart(local_search, starts, executor=pool)
    serial = multistart(local_search, starts)
    assert r == serial
    assert r.index == 2 and r.value < 0 and abs(r.best[1] + 1) < 0.1
    assert all(abs(x - 2) < 0.1 for f, x in (r.results[0], r.results[1]))


def test_spawn_seeds_are_independent_of_the_count():
    a, b = spawn_seeds(11, 4), spawn_seeds(11, 9)
    assert a == b[:4] and len(set(b)) == 9
    assert spawn_seeds(12, 4) != a
    streams = [np.random.default_rng(s).standard_normal(5) for s in a]
    assert not any(np.array_equal(streams[0], s) for s in streams[1:])


class NotAnExecutor:
    def get_executor(self):
        return ThreadPoolExecutor(1)


BAD = [
    (dict(executor=4), TypeError, "executor must be None .* got int"),
    (dict(executor=NotAnExecutor()), TypeError, r"executor .*call its get_executor\(\)"),
    (dict(executor="pool"), TypeError, "executor must be None"),
    (dict(chunk=0), ValueError, r"chunk must be an integer >= 1"),
    (dict(chunk=2.5), TypeError, "chunk must be an integer"),
]


@pytest.mark.parametrize("kwargs,exc,match", BAD)
def test_bad_executor_or_chunk_is_rejected(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        rel.sampling_estimate(linear, np.array([3.0, 4.0]), 10.0, "mc", n_samples=100,
                              batch=True, m=2, **kwargs)


def test_unpicklable_limit_state_is_rejected_before_any_sample(pool):
    calls = []

    def local(theta, p):
        calls.append(1)
        return theta @ p
    with pytest.raises(TypeError, match="limit_state must pickle"):
        rel.sampling_estimate(local, np.array([3.0, 4.0]), 10.0, "mc", n_samples=100,
                              batch=True, m=2, executor=pool)
    assert not calls


@pytest.mark.parametrize("call,exc,match", [
    (lambda: Builder(lambda: 1), TypeError, "builder must pickle"),
    (lambda: Builder(3), TypeError, "builder must be callable"),
    (lambda: sweep(Builder(build_square, 0.0), [1.0], chunksize=0), ValueError,
     "chunksize must be an integer >= 1"),
    (lambda: sweep(Builder(build_square, 0.0), [1.0], chunksize=1.0), TypeError,
     "chunksize must be an integer"),
    (lambda: sweep(Builder(build_square, 0.0), [1.0], executor=object()), TypeError,
     "executor must be None"),
    (lambda: sweep(Builder(np.zeros, 3), [1.0]), TypeError, "must be callable"),
    (lambda: multistart(local_search, []), ValueError, "at least one"),
    (lambda: multistart(Builder(build_square, 0.0), [np.ones(2)]), TypeError, "pass key="),
    (lambda: spawn_seeds(-1, 3), ValueError, "seed must be an integer >= 0"),
    (lambda: spawn_seeds(None, 3), TypeError, "seed must be an integer"),
])
def test_bad_parallel_input_is_rejected(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_unpicklable_sweep_item_is_rejected(pool):
    with pytest.raises(TypeError, match="params must pickle"):
        sweep(Builder(build_square, 0.0), [lambda: 1], executor=pool)


def test_failure_probability_passes_the_executor_on(pool):
    """The public entry point: ``failure_probability(method="mc", executor=...)`` is
    `sampling_estimate` on the workers, the serial result to the bit."""
    ls = Builder(bracket_quadratic, N_EL)
    z = _threshold(ls, FE_X, 1.3)
    serial = rel.failure_probability(ls, FE_X, z, "mc", n_samples=3000, seed=4)
    workers = rel.failure_probability(ls, FE_X, z, "mc", n_samples=3000, seed=4,
                                      executor=pool)
    assert serial.n_failures > 0
    assert_identical(workers, serial)
