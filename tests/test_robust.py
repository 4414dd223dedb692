"""Issue 14, item 6: robust projection (eroded / intermediate / dilated) and the robust inverter."""

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topopt import ad
from topopt.design.interpolation import project
from topopt.formulations.mechanism import MechanismProblem, robust_run
from topopt.robust.projection import (DESIGNS, ETAS, DilatedVolume, RobustFormulation,
                                      bound_formulation, robust_designs, robust_stages)

from topopt_problems import inverter, robust_inverter


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=20), st.floats(0.5, 64.0))
def test_eroded_below_intermediate_below_dilated(x, beta):
    """eta_e > eta_i > eta_d and project decreasing in eta: x_e <= x_i <= x_d pointwise."""
    x = np.array(x)
    eroded, intermediate, dilated = robust_designs(x, beta)
    assert np.all(eroded <= intermediate + 1e-15) and np.all(intermediate <= dilated + 1e-15)
    for design, eta in zip((eroded, intermediate, dilated), ETAS):
        np.testing.assert_array_equal(design, project(x, beta, eta))


@pytest.mark.parametrize("beta", [1.0, 8.0, 32.0])
def test_modes_of_the_robust_designs(beta):
    x = np.random.default_rng(0).uniform(0.1, 0.9, 7)
    report = ad.check_modes(lambda x: robust_designs(x, beta), x)
    assert max(report.values()) < 1e-6


@pytest.mark.parametrize("etas, error", [((0.5, 0.5, 0.25), "eroded > intermediate"),
                                         ((0.75, 0.5), "three thresholds"),
                                         ((1.0, 0.5, 0.25), r"etas\[0\]")])
def test_thresholds_are_checked(etas, error):
    with pytest.raises(ValueError, match=error):
        robust_designs(np.full(3, 0.5), 4.0, etas)


@pytest.mark.parametrize("z, values, constraints, want", [
    (0.5, [0.2, 0.7], [], [0.5, -0.3, 0.2]),
    (-1.0, [-2.0], [0.1, -0.3], [-1.0, -1.0, 0.1, -0.3]),
    (0.0, [1.0, 2.0, 3.0], [0.0], [0.0, 1.0, 2.0, 3.0, 0.0]),
])
def test_bound_formulation(z, values, constraints, want):
    np.testing.assert_allclose(bound_formulation(z, values, constraints), want)


def test_bound_formulation_needs_a_value():
    with pytest.raises(ValueError, match="at least one value"):
        bound_formulation(0.0, [])


@pytest.mark.parametrize("betas, evaluations, every, blocks", [
    ([1, 2], 40, 20, 4), ([1, 2, 4], 50, 20, 9), ([8], 7, 20, 1), ([1], 60, 1, 60)])
def test_robust_stages(betas, evaluations, every, blocks):
    stages = robust_stages(betas, evaluations, every)
    assert len(stages) == blocks
    assert [s.params["block"] for s in stages] == list(range(blocks))
    for beta in betas:
        assert sum(s.maxeval for s in stages if s.params["beta"] == beta) == evaluations


@pytest.mark.parametrize("args, error", [(([], 10, 5), "betas"), (([1], 0, 5), "evaluations"),
                                         (([1], 10, 0), "every"), (([0.0], 10, 5), "beta")])
def test_robust_stages_rejects_bad_input(args, error):
    with pytest.raises(ValueError, match=error):
        robust_stages(*args)


def test_dilated_volume_limit_follows_the_intermediate_design():
    """V* = volfrac v_d / v_i at each block's first call, constant within the block."""
    g = DilatedVolume(0.3, max_cut=0.5)
    x_d, x_i = np.full(4, 0.45), np.full(4, 0.36)
    assert float(g(x_d, x_i, block=0)) == pytest.approx(0.36 / 0.3 - 1)     # V* = 0.375
    assert g.limit == pytest.approx(0.375)
    assert float(g(np.full(4, 0.5), np.full(4, 0.1), block=0)) == pytest.approx(0.5 / 0.375 - 1)
    g(np.full(4, 0.4), np.full(4, 0.4), block=1)
    assert g.limits == [(0, pytest.approx(0.375)), (1, pytest.approx(0.3))]
    grad = ad.gradient(lambda x: g(x, x_i, block=1), x_d)               # V* not differentiated
    np.testing.assert_allclose(grad, np.full(4, 0.25 / 0.3))


def test_dilated_volume_cut_is_bounded_per_block():
    g = DilatedVolume(0.3, max_cut=0.02)
    assert float(g(np.full(3, 0.5), np.full(3, 0.4), block=0)) == pytest.approx(1 / 0.98 - 1)


def robust_problem(nelx=6, nely=12):
    mesh, model, f, l_out = inverter.setup(nelx, nely)
    problem = MechanismProblem(model, f, l_out, 0.3, 1.5)
    robust = RobustFormulation(problem.x_phys, problem.analysis, 0.3, problem.weights)
    return problem, robust


@pytest.mark.parametrize("beta", [1.0, 8.0])
def test_taylor_robust_chain(beta):
    """x -> filter -> three projections -> SIMP -> solves -> bound and port constraints."""
    problem, robust = robust_problem()
    rng = np.random.default_rng(3)
    xz = np.append(rng.uniform(0.3, 0.7, problem.n), 0.1)
    dx = np.append(rng.standard_normal(problem.n), 0.5)
    values = robust(xz, beta, block=0)
    assert len(values) == 1 + 3 + 1 + 3 * 2                   # z, bounds, volume, ports
    for i in [1, 2, 3, *range(5, len(values))]:               # 0 and the volume are ~linear
        assert ad.taylor_test(lambda xz, i=i: robust(xz, beta, block=0)[i], xz, dx) >= 1.9


@pytest.mark.parametrize("solver", ["superlu", "cholmod", "umfpack"])
def test_three_solves_in_one_pass_keep_their_factors(solver):
    """Each solve's adjoint uses its own factor: CHOLMOD and UMFPACK refill one cvxopt
    matrix per design, and the eroded/intermediate gradients used to be the dilated
    design's (Taylor rate 1.0; fixed in topopt/fem/direct.py)."""
    mesh, model, f, l_out = inverter.setup(6, 12)
    problem = MechanismProblem(model, f, l_out, 0.3, 1.5, solver=solver)
    robust = RobustFormulation(problem.x_phys, problem.analysis, 0.3, problem.weights)
    x = np.random.default_rng(5).uniform(0.3, 0.7, problem.n)
    for k in range(3):                  # one pass of three solves vs one pass per solve
        g = ad.gradient(lambda x, k=k: sum(robust.parts(x, 2.0)[0]) + robust.parts(x, 2.0)[0][k],
                        x)
        want = sum(ad.gradient(lambda x, j=j: problem.analysis(robust.designs(x, 2.0)[j])[0], x)
                   for j in range(3)) + ad.gradient(
            lambda x: problem.analysis(robust.designs(x, 2.0)[k])[0], x)
        np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-14)


def test_modes_of_the_robust_chain():
    """Reverse, forward, Hessian-vector and nested derivatives of all eleven responses."""
    problem, robust = robust_problem(4, 8)
    xz = np.append(np.random.default_rng(6).uniform(0.3, 0.7, problem.n), 0.05)
    robust(xz, 2.0, block=0)                        # the volume limit of block 0, then fixed
    report = ad.check_modes(lambda xz: robust(xz, 2.0, block=0), xz, rtol=1e-5)
    assert set(report) == {"reverse/arg 0", "forward/arg 0", "hvp/arg 0", "nested/arg 0"}


def test_robust_responses_match_the_deterministic_ones():
    """The intermediate design at large beta and the bound constraints, term by term."""
    problem, robust = robust_problem()
    x = np.random.default_rng(4).uniform(0.2, 0.8, problem.n)
    values, constraints, designs = robust.parts(x, 4.0)
    for value, design in zip(values, designs):
        assert value == pytest.approx(float(problem.analysis(design)[0]), rel=1e-14)
    out = robust(np.append(x, 0.05), 4.0, block=0)
    assert out[0] == 0.05
    np.testing.assert_allclose(out[1:4], [v - 0.05 for v in values], rtol=1e-13)
    np.testing.assert_allclose(out[5:], constraints, rtol=1e-14)


def test_robust_run_blueprints_all_invert(tmp_path):
    """Small robust inverter: every blueprint (recomputed from x_tilde >= eta) inverts."""
    out = str(tmp_path / "robust")
    result = robust_inverter.run(20, 40, rmin=1.5, per_beta=40, out=out)
    for name in ("design.png", "eroded.png", "dilated.png", "history.png", "result.json"):
        assert os.path.getsize(os.path.join(out, name)) > 0
    saved = json.load(open(os.path.join(out, "result.json")))["result"]
    assert saved["blueprints_invert"] is True
    for name in DESIGNS:
        assert saved["blueprints"][name]["u_out"] < 0
    v = saved["blueprints"]
    assert v["eroded"]["volume"] < v["intermediate"]["volume"] < v["dilated"]["volume"]
    assert result["volume"] == pytest.approx(0.3, abs=0.01)
    assert len(result.history) == result.evaluations <= 5 * 40


def test_robust_run_validates_before_solving():
    mesh, model, f, l_out = inverter.setup(4, 8)
    problem = MechanismProblem(model, f, l_out, 0.3, 1.5)
    with pytest.raises(ValueError, match="every"):
        robust_run(problem, every=0, verbose=False)
    assert problem.system.counts["factorizations"] == 0


def test_robust_script_interrupts_and_resumes(tmp_path):
    """SIGINT after 5 evaluations: exit 130 with the resume line; --resume finishes the budget."""
    from script_runs import interrupt_after, interrupted_evaluations, run_script, script
    out = tmp_path / "run"
    ck = out / "checkpoint.npz"
    args = ["--nelx", 10, "--nely", 20, "--rmin", 1.5, "--per_beta", 10, "--out", out]
    status, _, stderr = interrupt_after(script("robust_inverter", *args), "SIGINT")
    assert status == 130 and interrupted_evaluations(stderr, ck) == 5
    done = run_script(script("robust_inverter", *args, "--resume", ck, "--quiet"))
    assert done.returncode == 0, done.stderr
    saved = json.load(open(out / "result.json"))
    assert saved["evaluations"] == 5 * 10 and saved["status"] == "maxeval_reached"
