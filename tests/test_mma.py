"""Our MMA (`topopt.optimize.mma`): known optima, NLopt's iterates, its dual, its reductions.

The reference figures: Svanberg's cantilever beam (1987, Int. J. Numer. Meth.
Eng. 24:359, section 6.1: f = 1.340 at x = (6.016, 5.309, 4.494, 3.502,
2.153)), checked here against scipy's SLSQP solved to 1e-14; the MBB beam
60 x 20 (top88's setup, 233.71 after 100 evaluations in
``tests/test_infeasible_start.py``); NLopt's ``LD_MMA`` run beside ours.
"""

import functools
import threading
import tracemalloc

import nlopt
import numpy as np
import pytest
import scipy.optimize

from topopt.formulations.compliance import ComplianceProblem
from topopt.optimize import MMA, OPTIMIZERS, SerialReduce, minimize
from topopt.optimize.mma_dual import _Approximation
from topopt.optimize.options import Options

from topopt_problems import mbb_beam

# Svanberg's cantilever: five hollow square segments, C1 = 0.0624
SV_C1, SV_W = 0.0624, np.array([61.0, 37.0, 19.0, 7.0, 1.0])
SV_X, SV_F = np.array([6.016, 5.309, 4.494, 3.502, 2.153]), 1.340


def svanberg(x, need_grad=True):
    values = np.array([SV_C1 * np.sum(x), np.sum(SV_W / x ** 3) - 1.0])
    grads = np.stack([np.full(5, SV_C1), -3.0 * SV_W / x ** 4]) if need_grad else None
    return values, grads


def test_svanberg_cantilever_matches_slsqp_and_the_paper():
    ref = scipy.optimize.minimize(lambda x: svanberg(x)[0][0], np.full(5, 5.0),
                                  jac=lambda x: svanberg(x)[1][0], method="SLSQP",
                                  bounds=[(1.0, 10.0)] * 5, options={"ftol": 1e-14},
                                  constraints=[{"type": "ineq", "fun": lambda x: -svanberg(x)[0][1],
                                                "jac": lambda x: -svanberg(x)[1][1]}])
    assert ref.success
    np.testing.assert_allclose(ref.x, SV_X, atol=6e-4)     # the paper's 3 decimals
    assert ref.fun == pytest.approx(SV_F, abs=5e-4)
    res = MMA(1.0, 10.0, maxeval=200, ftol_rel=1e-12, constraint_tol=1e-10).minimize(
        svanberg, np.full(5, 5.0))
    assert res.status == "ftol_reached" and res.evaluations < 60
    np.testing.assert_allclose(res.x, ref.x, rtol=1e-5)      # measured 1.8e-6
    assert res.fun == pytest.approx(ref.fun, rel=1e-9)
    assert res.values[1] <= 1e-10


# min sum(c / x) s.t. A x <= b (three constraints), 1e-3 <= x <= 1
RNG = np.random.default_rng(3)
N = 30
C, A = RNG.uniform(0.5, 3.0, N), RNG.uniform(0.0, 1.0, (3, N))
B = 0.35 * A.sum(axis=1)


def several(x):
    return np.concatenate([[np.sum(C / x)], A @ x - B])


def _slsqp_several():
    return scipy.optimize.minimize(
        lambda x: np.sum(C / x), np.full(N, 0.3), jac=lambda x: -C / x ** 2, method="SLSQP",
        bounds=[(1e-3, 1.0)] * N, options={"ftol": 1e-10, "maxiter": 500},
        constraints=[{"type": "ineq", "fun": lambda x: B - A @ x, "jac": lambda x: -A}])


def _objectives(res):
    return np.array([h["objective"] for h in res.history])


def test_several_constraints_reach_the_optimum_along_nlopts_iterates():
    ref = _slsqp_several()
    assert ref.success
    kw = dict(bounds=(1e-3, 1.0), maxeval=80, ftol_rel=1e-10, verbose=False)
    ours = minimize(several, np.full(N, 0.3), optimizer="mma", **kw)
    theirs = minimize(several, np.full(N, 0.3), **kw)
    assert ours.fun == pytest.approx(ref.fun, rel=1e-8)
    np.testing.assert_allclose(ours.x, ref.x, atol=1e-5)
    assert max(ours.constraints) <= 1e-10
    # measured: the first 22 evaluations agree to 1e-6 (ours then stops, ftol_reached;
    # NLopt's SLSQP dual leaves its constraints at +7e-7 and wanders on to 80)
    f, g = _objectives(ours), _objectives(theirs)
    np.testing.assert_allclose(f[:15], g[:15], rtol=1e-6)


@pytest.mark.parametrize("options, status", [
    (dict(ftol_rel=1e-4), "ftol_reached"),
    (dict(ftol_rel=0.0, xtol_abs=1e-2), "xtol_reached"),
    (dict(ftol_rel=0.0, maxeval=25), "maxeval_reached"),
    (dict(ftol_rel=0.0, maxeval=30, mma_params={"inner_gradients": 0}), "maxeval_reached"),
    (dict(ftol_rel=0.0, maxeval=30, mma_params={"always_improve": 0}), "maxeval_reached"),
    (dict(ftol_rel=0.0, maxeval=30, initial_step=0.05), "maxeval_reached"),
])
def test_statuses_and_evaluations_as_nlopts(options, status):
    """NLopt's stopping tests, stopping at the same evaluation (measured: 13, 13, 25, 30)."""
    options = {"maxeval": 200, **options}
    ours = minimize(several, np.full(N, 0.3), bounds=(1e-3, 1.0), verbose=False,
                    optimizer="mma", **options)
    theirs = minimize(several, np.full(N, 0.3), bounds=(1e-3, 1.0), verbose=False, **options)
    assert ours.status == theirs.status == status
    assert ours.evaluations == theirs.evaluations
    np.testing.assert_allclose(_objectives(ours), _objectives(theirs), rtol=1e-6)


def test_an_infeasible_start_uses_elastic_variables():
    """From ``x = (1, 1)`` (``sum(x) = 2 > 1.2``): the optimum ``x ~ sqrt(c)``."""
    c = np.array([1.0, 4.0])
    res = minimize(lambda x: np.stack([np.sum(c / x), np.sum(x) - 1.2]), np.ones(2),
                   bounds=(0.01, 1.0), maxeval=80, ftol_rel=1e-12, verbose=False,
                   optimizer="mma")
    assert res.history[0]["max_constraint"] == pytest.approx(0.8)
    np.testing.assert_allclose(res.x, [0.4, 0.8], atol=1e-4)


def test_unknown_optimizer_names_the_accepted_ones():
    assert OPTIMIZERS == ("nlopt", "mma")
    with pytest.raises(ValueError, match=r"optimizer 'NLopt'.*\('nlopt', 'mma'\)"):
        Options.check(np.ones(2), optimizer="NLopt")
    with pytest.raises(ValueError, match="optimizer"):
        minimize(lambda x: np.sum(x), np.ones(2), optimizer="ccsaq", verbose=False)


def test_mma_refuses_a_start_outside_its_bounds():
    with pytest.raises(ValueError, match=r"x0\[1\] = 2.0 is outside \[0.0, 1.0\]"):
        MMA(0.0, 1.0, maxeval=5).minimize(svanberg, np.array([0.5, 2.0, 0.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match="maxeval >= 1"):
        MMA(0.0, 1.0, maxeval=0)


def _mbb(monkeypatch, optimizer: str, maxeval: int, x0=None):
    _, model, f = mbb_beam.setup(60, 20)
    problem = ComplianceProblem(model, f, 0.5, 2.4)
    return problem.run(maxeval=maxeval, verbose=False, optimizer=optimizer,
                       x0=None if x0 is None else np.full(problem.n, x0))


def test_a_formulation_refuses_an_unknown_optimizer_before_solving():
    _, model, f = mbb_beam.setup(6, 2)
    problem = ComplianceProblem(model, f, 0.5, 1.5)
    with pytest.raises(ValueError, match=r"optimizer 'ccsaq'.*\('nlopt', 'mma'\)"):
        problem.run(maxeval=2, verbose=False, optimizer="ccsaq")
    assert problem.solves() == 0


def _to_1pct(res) -> int:
    f = _objectives(res)
    return int(np.flatnonzero(np.abs(f / f[-1] - 1) <= 0.01)[0]) + 1


def test_mbb_beam_as_nlopt(monkeypatch):
    """MBB 60 x 20, 60 evaluations: measured 233.4912 for both, every evaluation
    within 1e-9 of NLopt's, within 1 % of the final from evaluation 27 for both."""
    ours = _mbb(monkeypatch, "mma", 60)
    theirs = _mbb(monkeypatch, "nlopt", 60)
    assert ours.status == theirs.status == "maxeval_reached"
    assert abs(ours["compliance"] / theirs["compliance"] - 1) <= 5e-3
    assert ours["compliance"] == pytest.approx(233.49, rel=1e-3)
    assert _to_1pct(ours) <= 1.2 * _to_1pct(theirs)
    np.testing.assert_allclose(_objectives(ours)[:40], _objectives(theirs)[:40], rtol=1e-6)


def test_mbb_beam_from_an_infeasible_start(monkeypatch):
    """x0 = 0.9 (volume 0.9 > 0.5): 233.71 within 0.5 % after 100 evaluations, as NLopt's."""
    res = _mbb(monkeypatch, "mma", 100, x0=0.9)
    assert abs(res["compliance"] / 233.71 - 1) <= 5e-3
    assert abs(res["volume"] / 0.5 - 1) <= 1e-4


# -- the dual ---------------------------------------------------------------------------
def _approximation(n=400, m=2, seed=0, block=64):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.2, 0.8, n)
    sigma = rng.uniform(0.05, 0.3, n)
    sigma[:3] = 0.0                                   # lb == ub variables
    ap = _Approximation(x, sigma, np.zeros(n), np.ones(n), np.empty(n), SerialReduce(), block)
    ap.dfdx = -rng.uniform(0.5, 2.0, n)
    ap.dfcdx = rng.uniform(-0.5, 1.0, (m, n))
    ap.fval, ap.fcval = 3.0, np.array([0.05, -0.02])[:m]
    ap.rho, ap.rhoc = 0.1, np.array([0.2, 0.05])[:m]
    return ap


def test_dual_gradient_and_hessian_by_finite_differences():
    ap = _approximation()
    y, h = np.array([0.7, 0.4]), 1e-6
    p = ap.evaluate(y)
    for k in range(2):
        e = np.eye(2)[k] * h
        hi, lo = ap.evaluate(y + e), ap.evaluate(y - e)
        assert (hi.W - lo.W) / (2 * h) == pytest.approx(p.gcval[k], rel=1e-6, abs=1e-9)
        np.testing.assert_allclose((hi.gcval - lo.gcval) / (2 * h), p.H[:, k],
                                   rtol=1e-4, atol=1e-7)
    assert np.all(np.linalg.eigvalsh(p.H) <= 0)       # concave


def test_dual_newton_matches_scipy():
    ap = _approximation()
    tol = {"ftol_rel": 1e-14, "ftol_abs": 0.0, "xtol_rel": 0.0, "xtol_abs": 0.0,
           "maxeval": 100}
    p = ap.solve(np.zeros(2), np.inf, tol)
    passes = ap.passes
    ref = scipy.optimize.minimize(lambda y: -ap.evaluate(y).W, np.zeros(2),
                                  jac=lambda y: -ap.evaluate(y).gcval, method="L-BFGS-B",
                                  bounds=[(0, None)] * 2, options={"ftol": 1e-15, "gtol": 1e-12})
    assert p.W == pytest.approx(-ref.fun, rel=1e-13)
    np.testing.assert_allclose(p.y, ref.x, rtol=1e-6, atol=1e-9)
    assert passes <= 12                               # measured 9 from y = 0
    ap.evaluate(p.y)
    xcur, ap.passes = ap.xcur.copy(), 0
    np.testing.assert_allclose(ap.solve(p.y, np.inf, tol).y, p.y, rtol=1e-12)
    np.testing.assert_allclose(ap.xcur, xcur, atol=1e-12)   # a warm start stays put
    assert ap.passes <= 2


# -- the reductions: two "processes" as threads --------------------------------------------
class _ThreadReduce:
    """`SerialReduce`'s methods over `size` threads: every thread gets the same bits."""

    def __init__(self, slots: list, barrier: threading.Barrier, rank: int):
        self.slots, self.barrier, self.rank = slots, barrier, rank

    def _all(self, local, op):
        self.slots[self.rank] = np.array(local, dtype=float)
        self.barrier.wait()
        out = functools.reduce(op, self.slots)        # the same order on every rank
        self.barrier.wait()
        return out

    def sum(self, local):
        return self._all(local, np.add)

    def max(self, local):
        return self._all(local, np.maximum)


def _separable(reduce, c):
    """``sum(c / x^3)`` and ``mean(x) - 0.3`` of the whole design from each part."""
    n = reduce.sum(np.array([float(c.size)]))[0]

    def fun(x, need_grad):
        values = reduce.sum(np.array([np.sum(c / x ** 3), np.sum(x) / n]))
        values[1] -= 0.3
        grads = np.stack([-3 * c / x ** 4, np.full(x.size, 1 / n)]) if need_grad else None
        return values, grads
    return fun


def test_a_split_design_runs_as_the_serial_one():
    """Two threads, each with half the design and `_ThreadReduce`: the serial iterates
    (to rounding: the sums are added in another order) and identical results on both."""
    c = np.random.default_rng(5).uniform(0.5, 1.5, 1000) / 1000
    opts = dict(maxeval=40, ftol_rel=1e-12, rho_init=1e-3, xtol_abs=1e-9, block=128)
    serial = MMA(1e-3, 1.0, **opts).minimize(_separable(SerialReduce(), c), np.full(1000, 0.3))
    slots, barrier, out = [None, None], threading.Barrier(2, timeout=60), [None, None]

    def rank(r):
        reduce = _ThreadReduce(slots, barrier, r)
        part = c[r * 500:(r + 1) * 500]
        out[r] = MMA(1e-3, 1.0, reduce=reduce, **opts).minimize(_separable(reduce, part),
                                                                  np.full(500, 0.3))
    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    a, b = out
    assert a.status == b.status == serial.status and a.evaluations == b.evaluations
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_allclose(np.concatenate([a.x, b.x]), serial.x, rtol=1e-8)
    assert a.fun == pytest.approx(serial.fun, rel=1e-12)


def test_memory_per_variable():
    """Measured 65.6 B/var (tracemalloc, n = 2e5, blocks of 4096): 33 of its own
    (4 doubles and a sign byte) and the gradients of the center and the trial
    (2 x 16) that `fun` returned; NLopt's LD_MMA holds 97 under `minimize`."""
    n, block = 200_000, 4096
    c = np.random.default_rng(0).uniform(0.5, 1.5, n) / n

    def fun(x, need_grad):                            # blockwise: no n-temporaries of its own
        f, grads = 0.0, np.empty((2, n)) if need_grad else None
        for s in range(0, n, block):
            xb, cb = x[s:s + block], c[s:s + block]
            f += float(np.sum(cb / xb ** 3))
            if need_grad:
                grads[0, s:s + block] = -3 * cb / xb ** 4
        if need_grad:
            grads[1] = 1 / n
        return np.array([f, float(np.mean(x)) - 0.3]), grads
    x0 = np.full(n, 0.3)
    tracemalloc.start()
    try:
        base_bytes = tracemalloc.get_traced_memory()[0]
        MMA(1e-3, 1.0, maxeval=8, rho_init=1e-3, block=block).minimize(fun, x0)
        peak = tracemalloc.get_traced_memory()[1] - base_bytes
    finally:
        tracemalloc.stop()
    assert peak / n <= 72.0


def test_nlopt_stays_the_default(monkeypatch):
    assert Options.check(np.ones(2))[1].optimizer == "nlopt"
    created = []
    original = nlopt.opt

    def spy(*args):
        created.append(args)
        return original(*args)
    monkeypatch.setattr(nlopt, "opt", spy)
    minimize(several, np.full(N, 0.3), bounds=(1e-3, 1.0), maxeval=5, verbose=False)
    assert created and created[0][0] == nlopt.LD_MMA
    created.clear()
    minimize(several, np.full(N, 0.3), bounds=(1e-3, 1.0), maxeval=5, verbose=False,
             optimizer="mma")
    assert created == []


def test_a_stopped_run_resumes_from_its_checkpoint(tmp_path):
    """The callback stops evaluation 10 (NLopt's forced stop, through our MMA); the
    checkpoint resumes it to the optimum of `test_several_constraints...`."""
    ck = str(tmp_path / "run.npz")
    kw = dict(bounds=(1e-3, 1.0), ftol_rel=1e-10, verbose=False, optimizer="mma",
              checkpoint=ck)
    first = minimize(several, np.full(N, 0.3), maxeval=80, **kw,
                     callback=lambda rec, x: rec["evaluation"] == 10)
    assert first.status == "stopped" and first.evaluations == 10
    res = minimize(several, np.full(N, 0.3), maxeval=80, resume=ck, **kw)
    assert res.status == "ftol_reached" and res.evaluations > 10
    assert res.fun == pytest.approx(_slsqp_several().fun, rel=1e-8)
