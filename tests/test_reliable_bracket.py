"""Issue 6 on the FE model: pf estimates against importance sampling, penalty Taylor
tests, and the reliability-based design against the deterministic one."""

import json

import numpy as np
import pytest
import scipy.optimize

from topopt import ad, reliability as rel
from topopt.optimize import load_checkpoint, minimize
from topopt.formulations.compliance import ComplianceProblem

from script_runs import interrupt_after, interrupted_evaluations, run_script, script

from topopt_problems import reliable_bracket as rb


@pytest.fixture(scope="module")
def bracket():
    prob = rb.ReliableBracket(16)
    x = ComplianceProblem(prob.model, prob.f0, 0.3, 1.5).run(maxeval=60, verbose=False).x
    return prob, x


def allow_for(prob, x, ln_pf_target):
    """c_allow giving a FORM estimate ln pf = target (a root find, cheap)."""
    def gap(c):
        prob.c_allow = c
        return float(prob.ln_pf(x, "form")) - ln_pf_target
    c0 = float(prob.coefficients(x)[0])
    return scipy.optimize.brentq(gap, 1.05 * c0, 100 * c0, xtol=1e-10 * c0)


@pytest.mark.parametrize("pf", [1e-2, 1e-4, 1e-6])
def test_sorm_and_ldt_prefactor_agree_with_importance_sampling(bracket, pf):
    prob, x = bracket
    prob.c_allow = allow_for(prob, x, np.log(pf))
    IS = prob.importance_sampling(x, 10**5, seed=3)
    assert 1e-6 / 3 < IS.pf < 3e-2
    sorm = float(prob.ln_pf(x, "sorm"))
    prefactor = float(prob.ln_pf(x, "ldt-prefactor"))
    assert abs(sorm - IS.ln_pf) <= 0.15
    assert abs(sorm - IS.ln_pf) <= 3 * IS.ln_pf_std + 0.005
    assert abs(prefactor - IS.ln_pf) <= 0.15
    if pf >= 1e-4:       # plain Monte Carlo still resolves it: IS is unbiased
        mc = prob.monte_carlo(x, 2 * 10**6, seed=4)
        assert abs(mc.ln_pf - IS.ln_pf) <= 3 * np.hypot(mc.ln_pf_std, IS.ln_pf_std)


@pytest.mark.parametrize("method", ["ldt", "form", "sorm"])
def test_taylor_failure_penalty_on_the_fe_model(method):
    prob = rb.ReliableBracket(8)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.3, 0.7, prob.compliance.n)
    prob.c_allow = allow_for(prob, x, np.log(1e-4))          # ln pf ~ -9.2 > ln pa
    penalty = lambda x: rel.failure_penalty(prob.ln_pf(x, method), np.log(1e-6), 10.0)
    assert float(penalty(x)) > 0                 # the penalty is active
    assert ad.taylor_test(penalty, x, rng.standard_normal(x.size)) >= 1.9


def test_reliability_based_design_meets_pa_where_deterministic_does_not():
    result = rb.run(n=24, volfrac=0.3, allow=3.0, maxeval=120, samples=2 * 10**5)
    r, d = result["reliability_based"], result["deterministic"]
    assert r["volume"] == pytest.approx(d["volume"], abs=2e-3)
    assert r["meets_pa"] and not d["meets_pa"]
    assert d["pf_mc"] > 5 * rb.PA
    assert r["ln_pf_sorm"] == pytest.approx(r["ln_pf_mc"], abs=0.15)


def test_bad_input():
    with pytest.raises(ValueError, match="volfrac"):
        rb.run(n=8, volfrac=1.5)
    with pytest.raises(ValueError, match="allow"):
        rb.run(n=8, allow=0.5)
    with pytest.raises(ValueError, match="method"):
        rb.ReliableBracket(8, method="exact")


def test_bad_mesh_size():
    with pytest.raises(ValueError, match="even integer"):
        rb.setup(5)


def test_interrupted_in_each_phase_exits_130_and_resumes(tmp_path):
    """SIGINT in the deterministic phase, then (resumed) in the reliability-based one:
    each exits 130 naming its phase's checkpoint; resuming that finishes the run."""
    out = tmp_path / "rb"
    ck, det_ck = out / "checkpoint.npz", out / "checkpoint.deterministic.npz"
    cmd = script("reliable_bracket", "--n", 12, "--samples", 1000, "--out", out)
    code, _, stderr = interrupt_after([*cmd, "--maxeval", 10**4], "SIGINT", 3)
    assert code == 130, stderr
    n_det = interrupted_evaluations(stderr, det_ck)
    saved = json.load(open(out / "result.json"))
    assert (saved["phase"], saved["status"], saved["signal"], saved["evaluations"]) == \
        ("deterministic", "interrupted", "SIGINT", n_det)
    # the deterministic phase continues to m evaluations, then the reliability-based
    # one starts and is interrupted in turn
    m = max(40, n_det + 20)
    code, _, stderr = interrupt_after([*cmd, "--maxeval", m, "--resume", det_ck], "SIGINT", 3)
    assert code == 130, stderr
    n_rel = interrupted_evaluations(stderr, ck)
    assert load_checkpoint(det_ck)["evaluations"] == m
    saved = json.load(open(out / "result.json"))
    assert (saved["phase"], saved["status"], saved["evaluations"]) == \
        ("reliability", "interrupted", n_rel)
    assert saved["deterministic_evaluations"] == m
    history = load_checkpoint(ck)["history"]
    done = run_script([*cmd, "--maxeval", m, "--resume", ck, "--quiet"])
    assert done.returncode == 0, done.stderr
    final = json.load(open(out / "result.json"))
    assert final["status"] != "interrupted" and final["phase"] == "reliability"
    assert final["deterministic"]["nominal_compliance"] == \
        pytest.approx(saved["deterministic"]["nominal_compliance"], rel=1e-12)
    assert load_checkpoint(ck)["history"][:n_rel] == history


def test_resume_of_the_reliability_phase_needs_its_deterministic_sibling(tmp_path, capsys):
    lone = tmp_path / "lone.npz"            # a valid checkpoint, no deterministic sibling
    minimize(lambda x: np.sum((x - 0.3) ** 2), np.full(64, 0.5), maxeval=2,
             checkpoint=lone, verbose=False)
    with pytest.raises(SystemExit) as info:
        rb.main(["--n", "8", "--out", str(tmp_path / "o"), "--resume", str(lone)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"error: resume: {lone} continues the reliability phase, whose " \
        f"deterministic design {tmp_path / 'lone.deterministic.npz'} is missing" in err
