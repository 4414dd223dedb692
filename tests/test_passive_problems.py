"""Issue 14, item 3: passive solid and void elements in every problem class.

One table over the problem classes (`ComplianceProblem`, `EigenProblem`,
`MinimumVolumeStress`, `SelfWeightProblem`), each built on the same 8 x 4
cantilever with a passive void block (the 2 x 2 hole in the middle) and a
passive solid block (the loaded right column). For each: ``x_phys`` holds the
fixed values exactly (top99 sect. 5.3), the responses MMA sees have right
gradients in the free variables (Taylor rate >= 1.9), a short run returns the
full element vector with the fixed values, and a `Passive` of another mesh is
refused naming ``passive``.
"""

import numpy as np
import pytest

from topopt import ad, fem
from topopt.design.passive import Passive
from topopt.formulations.eigen import EigenProblem
from topopt.optimize import load_checkpoint
from topopt.formulations.compliance import ComplianceProblem
from topopt.formulations.selfweight import SelfWeightProblem
from topopt.formulations.stress import MinimumVolumeStress

NELX, NELY = 8, 4


def cantilever(nelx=NELX, nely=NELY):
    model = fem.elasticity(fem.rectangle(nelx, nely)).fix(nodes=lambda x: np.isclose(x[0], 0))
    return model, model.point_load((nelx, 0.0), (0.0, -1.0))


def hole_and_column(mesh) -> Passive:
    """Void: the 2 x 2 block around (4, 2); solid: the loaded column x > 7."""
    return Passive.from_mesh(
        mesh, solid=lambda c: c[0] > NELX - 1,
        void=lambda c: (np.abs(c[0] - NELX / 2) < 1) & (np.abs(c[1] - NELY / 2) < 1))


def _eigen_responses(p, z):
    """MMA's variables are ``z = [x, beta]`` (the bound formulation)."""
    if p.lam_ref is None:
        p.lam_ref = float(p.eigenvalues(np.full(p.n, 0.5))[0])
    return p.responses(z)


def _stress_responses(p, x):
    return p.responses(x, 4.0)


def _compliance_responses(p, x):
    if p.c0 is None:
        p.c0 = float(p.compliance(np.full(p.n, 0.5)))
    return p.responses(x, 4.0)


#: name -> (build(model, f, passive), responses(problem, x), x_phys kwargs, run -> x)
CASES = {
    "compliance": (
        lambda m, f, passive: ComplianceProblem(m, f, 0.5, 1.5, passive=passive),
        _compliance_responses, {"beta": 4.0},
        lambda p, **kw: p.run(maxeval=6, verbose=False, **kw)["x"]),
    "eigen": (
        lambda m, f, passive: EigenProblem(m, 0.5, 1.5, n_modes=2, passive=passive),
        _eigen_responses, {"rmin": 2.0},
        lambda p, **kw: p.run(maxeval=6, verbose=False, **kw)["x"]),
    "stress": (
        lambda m, f, passive: MinimumVolumeStress(m, f, sigma_allow=5.0, rmin=1.5,
                                                  passive=passive),
        _stress_responses, {"beta": 4.0},
        lambda p, **kw: p.run([None], block_maxeval=6, **kw).x),
    "selfweight": (
        lambda m, f, passive: SelfWeightProblem(m, f, (0.0, -0.05), 0.5, 1.5, passive=passive),
        _compliance_responses, {"beta": 4.0},
        lambda p, **kw: p.run(maxeval=6, verbose=False, **kw)["x"]),
}


def build(name, passive="hole"):
    model, f = cantilever()
    if isinstance(passive, str) and passive == "hole":
        passive = hole_and_column(model.mesh)
    return CASES[name][0](model, f, passive), passive


def assert_fixed(v, passive):
    """The passive entries of an element vector are exactly 1 (solid) and 0 (void)."""
    assert v.shape == (passive.n_el,)
    assert np.all(v[passive.solid] == 1.0) and np.all(v[passive.void] == 0.0)


def test_the_table_mesh_has_both_blocks():
    passive = hole_and_column(fem.rectangle(NELX, NELY))
    assert passive.solid.size == NELY and passive.void.size == 4
    assert passive.n_free == NELX * NELY - NELY - 4


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_x_phys_holds_the_fixed_values(name, seed):
    problem, passive = build(name)
    assert problem.n == passive.n_free and problem.passive is passive
    x = np.random.default_rng(seed).uniform(0.0, 1.0, passive.n_free)
    for kw in ({}, CASES[name][2]):
        got = np.asarray(problem.x_phys(x, **kw))
        assert_fixed(got, passive)
        # the free entries are the chain's: the full vector (fixed values in it) gives the same
        np.testing.assert_array_equal(np.asarray(problem.x_phys(passive(x), **kw)), got)
        assert 0.0 < got[passive.free].min() < got[passive.free].max() < 1.0


@pytest.mark.parametrize("name", CASES)
def test_taylor_of_every_response_in_the_free_variables(name):
    """Each response r (objective and constraints) through exp: exp(r) is curved even where
    r is linear in x (the volume), so a wrong gradient of r shows as rate 1."""
    problem, passive = build(name)
    responses = CASES[name][1]
    rng = np.random.default_rng(3)
    n = passive.n_free + (name == "eigen")       # the bound variable beta
    x = rng.uniform(0.3, 0.7, n)
    dx = rng.standard_normal(n)
    n_resp = len(responses(problem, x))          # sets c0 / lam_ref / the stress scale
    assert n_resp >= 2
    for k in range(n_resp):
        rate = ad.taylor_test(lambda x: np.exp(responses(problem, x)[k]), x, dx)
        assert rate >= 1.9, (name, k, rate)


@pytest.mark.parametrize("name", CASES)
def test_gradient_has_no_entry_for_a_passive_element(name):
    problem, passive = build(name)
    x = np.full(passive.n_free + (name == "eigen"), 0.5)
    g = ad.gradient(lambda x: responses_sum(name, problem, x), x)
    assert g.shape == (passive.n_free + (name == "eigen"),) and np.all(np.isfinite(g)) and np.any(g)


def responses_sum(name, problem, x):
    r = CASES[name][1](problem, x)
    return sum(r[1:], r[0])


@pytest.mark.parametrize("name", CASES)
def test_short_run_returns_the_full_element_vector(name):
    problem, passive = build(name)
    x = CASES[name][3](problem)
    assert_fixed(x, passive)
    assert np.all((x[passive.free] >= 0.0) & (x[passive.free] <= 1.0))
    assert_fixed(np.asarray(problem.x_phys(x)), passive)
    # the result is a design the problem takes back (as x0 or to evaluate)
    np.testing.assert_array_equal(problem.check_design(x), x[passive.free])


@pytest.mark.parametrize("name", CASES)
def test_checkpoint_keeps_the_free_variables_and_resume_expands_them(name, tmp_path):
    problem, passive = build(name)
    path = str(tmp_path / "ck.npz")
    x = CASES[name][3](problem, checkpoint=path)
    ck = load_checkpoint(path)
    n = passive.n_free + (name == "eigen")       # MMA's vector: free variables (and beta)
    assert ck["x"].shape == (n,)
    np.testing.assert_array_equal(passive(ck["x"][:passive.n_free]), x)
    again, _ = build(name)
    assert_fixed(CASES[name][3](again, resume=path), passive)


@pytest.mark.parametrize("name", CASES)
def test_without_passive_every_element_is_free(name):
    problem, passive = build(name, passive=None)
    assert problem.n == problem.passive.n_el == NELX * NELY and not problem.passive.any
    x = np.random.default_rng(0).uniform(0.1, 0.9, problem.n)
    assert not np.all(np.asarray(problem.x_phys(x))[hole_and_column(fem.rectangle(
        NELX, NELY)).void] == 0.0)


@pytest.mark.parametrize("name", CASES)
def test_passive_of_another_mesh_is_refused(name):
    other = Passive(NELX * NELY + 1, void=[0])
    with pytest.raises(ValueError, match=rf"passive is for {NELX * NELY + 1} elements; the "
                                         rf"mesh has {NELX * NELY}"):
        build(name, passive=other)
    with pytest.raises(TypeError, match="passive must be a topopt.design.Passive or None"):
        build(name, passive=np.zeros(NELX * NELY, dtype=bool))


@pytest.mark.parametrize("name", CASES)
def test_design_of_wrong_size_or_with_wrong_fixed_values_is_refused(name):
    problem, passive = build(name)
    with pytest.raises(ValueError, match=rf"has shape \(5,\); expected \({passive.n_free},\)"):
        problem.check_design(np.full(5, 0.5))
    full = np.full(passive.n_el, 0.5)
    with pytest.raises(ValueError, match="at a passive element; expected its fixed value"):
        problem.check_design(full)
    with pytest.raises(ValueError, match="at a passive element"):
        problem.x_phys(full)
