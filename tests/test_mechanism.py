"""Issue 14, item 1: springs in the stiffness matrix, the compliant mechanism and the inverter."""

import json
import os

import numpy as np
import pytest

from topopt import ad, fem
from topopt.formulations.mechanism import MechanismProblem, ideal_output, port_springs
from topopt.io.result import RunResult

from topopt_problems import inverter


def heat_bar(nelx: int, k: float):
    """A 1-element-high heat bar, T = 0 on its left edge, springs to ground at its right end."""
    model = fem.heat(fem.rectangle(nelx, 1))
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0))
    model.spring(lambda x: np.isclose(x[0], nelx), None, k)
    return model


@pytest.mark.parametrize("nelx, k", [(1, 0.5), (4, 0.1), (10, 2.0), (7, 1e-3)])
def test_springs_in_parallel_with_a_bar(nelx, k):
    """T at the loaded end is q / (G + 2k): the bar's conductance G = 1 / nelx (exact for
    bilinear elements: the 1-D solution is linear) beside the two end springs."""
    model = heat_bar(nelx, k)
    q = model.point_load(lambda x: np.isclose(x[0], nelx), [0.5])          # total flux 1
    T = model.solve(np.ones(model.n_el), q)
    end = model.dofs(nodes=lambda x: np.isclose(x[0], nelx))
    np.testing.assert_allclose(T[end], 1.0 / (1.0 / nelx + 2 * k), rtol=1e-12)


def test_springs_add_up_and_rebuild_the_system():
    model = heat_bar(3, 0.25)
    S1 = model.system("superlu")
    model.spring(lambda x: np.isclose(x[0], 3) & np.isclose(x[1], 0), None, 0.5)
    K0 = model.K0
    assert K0.nnz == 2 and sorted(K0.diagonal()[K0.diagonal() > 0]) == [0.25, 0.75]
    S2 = model.system("superlu")
    assert S2 is not S1 and S2.K0 is not None
    assert fem.heat(fem.rectangle(2, 1)).K0 is None


@pytest.mark.parametrize("k, error", [(0.0, "k must be > 0"), (-1.0, "k must be > 0"),
                                      (np.nan, "k must be"), ("1", "k must be")])
def test_spring_stiffness_is_checked(k, error):
    model = fem.elasticity(fem.rectangle(2, 2))
    with pytest.raises((ValueError, TypeError), match=error):
        model.spring((0, 0), 1, k)
    assert model.K0 is None


def test_spring_components_are_checked():
    model = fem.elasticity(fem.rectangle(2, 2))
    with pytest.raises(ValueError, match="components must lie in"):
        model.spring((0, 0), 2, 1.0)
    with pytest.raises(ValueError, match="nearest mesh node"):
        model.spring((9, 9), 1, 1.0)


# ----------------------------------------------------------------- the mechanism

def small(nelx=6, nely=12, hold=0.02, filter="density", **kw):
    mesh, model, f, l_out = inverter.setup(nelx, nely)
    return MechanismProblem(model, f, l_out, 0.3, 1.5, filter=filter, hold=hold, **kw)


def test_ideal_output_bounds_every_design():
    """|u_out| < f / (2 sqrt(k_in k_out)) for any design (the two-port bound, ideal_output)."""
    for k_in, k_out in [(0.1, 0.1), (1.0, 0.01), (0.02, 0.5)]:
        mesh, model, f, l_out = inverter.setup(6, 12, k_in, k_out)
        p = MechanismProblem(model, f, l_out, 0.3, 1.5)
        assert p.u_scale == pytest.approx(1.0 / (2 * np.sqrt(k_in * k_out)), rel=1e-14)
        rng = np.random.default_rng(0)
        for _ in range(10):
            x = rng.uniform(0.0, 1.0, p.n)
            assert abs(float(p.output(x))) < p.u_scale


@pytest.mark.parametrize("args, error", [
    ((0.0, 0.1, 0.1), "f_in"), ((1.0, 0.0, 0.1), "k_in"), ((1.0, 0.1, -2.0), "k_out")])
def test_ideal_output_rejects_bad_input(args, error):
    with pytest.raises(ValueError, match=error):
        ideal_output(*args)


def test_port_springs_reads_the_model():
    mesh, model, f, l_out = inverter.setup(4, 8, 0.3, 0.7)
    assert port_springs(model, f) == pytest.approx(0.3)
    assert port_springs(model, l_out) == pytest.approx(0.7)
    assert port_springs(fem.elasticity(mesh), f) == 0.0


@pytest.mark.parametrize("filter", ["density", "helmholtz"])
@pytest.mark.parametrize("hold", [0.0, 0.02])
def test_taylor_full_chain(filter, hold):
    """x -> filter -> SIMP -> solve (two columns) -> u_out / u_scale and each constraint."""
    p = small(hold=hold, filter=filter)
    rng = np.random.default_rng(1)
    x = rng.uniform(0.2, 0.8, p.n)
    dx = rng.standard_normal(p.n)
    for i in [0, 2, 3] if hold else [0]:                  # the volume (1) is linear in x
        assert ad.taylor_test(lambda x, i=i: p.responses(x)[i], x, dx) >= 1.9
    g = ad.gradient(lambda x: p.responses(x)[1], x)        # v / volfrac - 1, v = w^T F x / sum w
    w = p.weights / p.weights.sum() / p.volfrac
    want = p.filter.matrix.T @ w if filter == "density" else ad.gradient(
        lambda x: np.sum(w * p.filter(x)), x)
    np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-14)


def test_modes_of_the_responses():
    """Reverse, forward, Hessian-vector and nested derivatives of all four responses."""
    p = small(4, 8)
    x = np.random.default_rng(2).uniform(0.2, 0.8, p.n)
    report = ad.check_modes(lambda x: p.responses(x), x, rtol=1e-5)
    assert set(report) == {"reverse/arg 0", "forward/arg 0", "hvp/arg 0", "nested/arg 0"}


def test_a_design_cut_loose_violates_the_ports_by_hold():
    """Void everywhere: each port sees its spring alone, c k = 1, constraint = hold."""
    p = small(hold=0.05, Emin=1e-12)
    _, _, port_in, port_out = p.responses(np.zeros(p.n))
    assert port_in == pytest.approx(0.05, abs=1e-8) and port_out == pytest.approx(0.05, abs=1e-8)


@pytest.mark.parametrize("kwargs, error", [
    (dict(hold=-0.1), "hold"), (dict(u_scale=0.0), "u_scale"), (dict(volfrac=1.0), "volfrac")])
def test_bad_parameters_raise_before_any_solve(kwargs, error):
    mesh, model, f, l_out = inverter.setup(4, 8)
    with pytest.raises(ValueError, match=error):
        MechanismProblem(model, f, l_out, **(dict(volfrac=0.3, rmin=1.5) | kwargs))
    assert not any(S.counts["factorizations"] for S in model._systems.values())


def test_bad_vectors_and_missing_springs():
    mesh, model, f, l_out = inverter.setup(4, 8)
    with pytest.raises(ValueError, match="l_out must be"):
        MechanismProblem(model, f, np.zeros_like(l_out), 0.3, 1.5)
    with pytest.raises(ValueError, match="f has shape"):
        MechanismProblem(model, f[:-1], l_out, 0.3, 1.5)
    bare = fem.elasticity(mesh).fix(nodes=lambda x: np.isclose(x[0], 4))
    with pytest.raises(ValueError, match="hold=0.02 needs springs"):
        MechanismProblem(bare, f, l_out, 0.3, 1.5)
    assert MechanismProblem(bare, f, l_out, 0.3, 1.5, hold=0.0).u_scale is None


# ----------------------------------------------------------------- the inverter

def test_plain_formulation_cuts_the_ports_and_the_held_one_inverts():
    """The reason for `hold`: without it NLopt's MMA stops at u_out = 0 (ports cut loose)."""
    plain = small(20, 40, hold=0.0, u_scale=5.0).run(maxeval=30, verbose=False)
    assert abs(plain["u_out"]) < 1e-6
    held = small(20, 40).run(maxeval=150, verbose=False)
    assert held["u_out"] < -0.5                   # output against the push
    assert held["volume"] == pytest.approx(0.3, abs=2e-3)


def test_inverter_script_writes_u_out(tmp_path):
    out = str(tmp_path / "inverter")
    result = inverter.run(20, 40, rmin=1.5, maxeval=150, out=out)
    assert isinstance(result, RunResult)
    for name in ("design.png", "history.png", "result.json", "design.npz"):
        assert os.path.getsize(os.path.join(out, name)) > 0
    saved = json.load(open(os.path.join(out, "result.json")))["result"]
    assert saved["u_out"] == pytest.approx(result["u_out"]) and saved["u_out"] < 0
    assert saved["abs_u_out"] == pytest.approx(-saved["u_out"])
    assert saved["fe_solves"] == result.evaluations      # one factorization per evaluation
