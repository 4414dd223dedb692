"""Issue 6 on the FE model: pf estimates against importance sampling, penalty Taylor
tests, and the reliability-based design against the deterministic one."""

import importlib.util
import os

import numpy as np
import pytest
import scipy.optimize

from topopt import ad, reliability as rel
from topopt.problem import ComplianceProblem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location(
    "reliable_bracket", os.path.join(ROOT, "problems", "reliable_bracket.py"))
rb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rb)


@pytest.fixture(scope="module")
def bracket():
    prob = rb.ReliableBracket(16)
    x = ComplianceProblem(prob.model, prob.f0, 0.3, 1.5).run(maxeval=60, verbose=False)["x"]
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
