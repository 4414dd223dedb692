"""Issue 14, item 3: passive solid/void elements and several load cases (top99 Sec. 5).

The `embed` primitive (rule tests in every mode), `Passive` input checks, the
chain of a compliance problem with passive elements (the filter sees the fixed
values, x_phys holds them exactly, Taylor test), and the two top99 extension
scripts: the cantilever with a hole and the two-load-case cantilever.
"""

import json
import os

import numpy as np
import pytest

from topopt import ad, fem
from topopt.design.passive import Passive, embed
from topopt.formulations.compliance import ComplianceProblem

from topopt_problems import cantilever_hole, cantilever_two_loads

#: (n_el, solid, void): no passive element, solid only, void only, both (mask and indices)
PASSIVES = [
    (5, None, None),
    (6, [0, 5], None),
    (6, None, np.array([False, True, True, False, False, False])),
    (8, np.array([7]), [0, 3]),
]


@pytest.mark.parametrize("n_el, solid, void", PASSIVES)
def test_embed_rule(n_el, solid, void):
    passive = Passive(n_el, solid=solid, void=void)
    x = np.linspace(0.1, 0.9, passive.n_free)
    report = ad.check_rule(embed, passive, x)
    assert report["arg 1 reverse"] < 1e-8 and report["arg 1 forward"] < 1e-8


@pytest.mark.parametrize("n_el, solid, void", PASSIVES)
def test_embed_and_fix_in_every_mode(n_el, solid, void):
    """Reverse, forward, hvp and reverse-over-reverse through embed and fix
    (a nonlinear function after them, so second derivatives see the rule)."""
    passive = Passive(n_el, solid=solid, void=void)
    rng = np.random.default_rng(1)
    x = rng.uniform(0.1, 0.9, passive.n_free)
    assert max(ad.check_modes(lambda x: np.sin(passive(x)) * passive(x), x).values()) < 1e-7
    y = rng.uniform(0.1, 0.9, n_el)
    assert max(ad.check_modes(lambda y: passive.fix(y) ** 3, y).values()) < 1e-7


def test_embed_places_values():
    passive = Passive(6, solid=[5], void=np.array([0, 2]))
    np.testing.assert_array_equal(passive(np.array([0.25, 0.5, 0.75])),
                                  [0.0, 0.25, 0.0, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(passive.fix(np.full(6, 0.5)), [0.0, 0.5, 0.0, 0.5, 0.5, 1.0])
    # the pullback is the gather: d(sum w * embed(x))/dx = w[free]
    w = np.arange(6.0)
    np.testing.assert_array_equal(ad.gradient(lambda x: np.sum(w * passive(x)), np.zeros(3)),
                                  w[[1, 3, 4]])


@pytest.mark.parametrize("make, exc, match", [
    (lambda: Passive(4, solid=[1], void=[1]), ValueError, "overlap"),
    (lambda: Passive(2, solid=[0], void=[1]), ValueError, "nothing is left to design"),
    (lambda: Passive(4, solid=np.ones(3, bool)), ValueError, r"solid .* expected \(4,\)"),
    (lambda: Passive(4, void=[4]), ValueError, r"void has element indices outside \[0, 4\)"),
    (lambda: Passive(4, void=[-1]), ValueError, "outside"),
    (lambda: Passive(4, void=[1, 1]), ValueError, "repeats"),
    (lambda: Passive(4, void=[0.5]), TypeError, "void must be a boolean mask"),
    (lambda: Passive(0), ValueError, "n_el must be an integer >= 1"),
    (lambda: Passive(2.0), TypeError, "n_el must be an integer"),
    (lambda: Passive.from_mesh(fem.rectangle(2, 2), void=lambda c: c[0]), TypeError,
     "void must return a boolean array"),
    (lambda: Passive.from_mesh(fem.rectangle(2, 2), solid=1.0), TypeError,
     "solid must be callable"),
    (lambda: Passive.from_mesh(np.zeros(3)), TypeError, "mesh must be a scikit-fem Mesh"),
    (lambda: Passive(3, void=[0])(np.zeros(3)), ValueError, r"x has shape \(3,\); expected "
     r"\(2,\)"),
    (lambda: Passive(3, void=[0]).fix(np.zeros(2)), ValueError, "x_el has shape"),
    (lambda: embed(None, np.zeros(2)), TypeError, "passive must be a topopt.design.Passive"),
    (lambda: Passive(3, void=[0]).expand(np.array([0.5, 0.5, 0.5])), ValueError,
     r"x\[0\] = 0.5 at a passive element; expected its fixed value 0"),
])
def test_bad_input_names_the_parameter(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


# ------------------------------------------------------------ the problem's chain

def hole_problem(nelx=12, nely=8, **kw):
    mesh, model, f, passive = cantilever_hole.setup(nelx, nely)
    return ComplianceProblem(model, f, 0.5, 1.5, passive=passive, **kw), passive


def test_filter_sees_the_fixed_values_and_x_phys_holds_them():
    """top99 Sec. 5.3: x_phys = fix(F embed(x)); passive entries exactly 0/1."""
    mesh = fem.rectangle(6, 4)
    model = fem.elasticity(mesh).fix(nodes=lambda x: np.isclose(x[0], 0.0))
    f = model.point_load((6.0, 0.0), (0.0, -1.0))
    passive = Passive.from_mesh(mesh, solid=lambda c: c[0] > 5, void=lambda c: c[0] < 1)
    problem = ComplianceProblem(model, f, 0.5, 1.5, passive=passive)
    x = np.random.default_rng(0).uniform(0.2, 0.8, passive.n_free)
    full = np.zeros(mesh.t.shape[1])
    full[passive.free], full[passive.solid] = x, 1.0
    want = problem.filter.matrix @ full                  # F of the vector with 1 on solid
    want[passive.solid], want[passive.void] = 1.0, 0.0
    got = problem.x_phys(x)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert np.all(got[passive.solid] == 1.0) and np.all(got[passive.void] == 0.0)
    np.testing.assert_array_equal(problem.x_phys(passive(x)), got)   # the full vector too


@pytest.mark.parametrize("filter, beta", [("density", None), ("helmholtz", 4.0)])
def test_taylor_full_chain_with_passive_hole(filter, beta):
    problem, passive = hole_problem(filter=filter)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.3, 0.7, passive.n_free)
    rate = ad.taylor_test(lambda x: problem.compliance(x, beta), x,
                          rng.standard_normal(passive.n_free))
    assert rate >= 1.9


def test_responses_differentiate_only_the_free_variables():
    problem, passive = hole_problem()
    problem.c0 = 1.0
    x = np.full(passive.n_free, 0.5)
    g = ad.gradient(lambda x: problem.volume(x), x)
    assert g.shape == (passive.n_free,)
    # the volume of the whole domain: free elements filtered, the hole 0
    full = problem.filter.matrix @ passive(x)
    full[passive.void] = 0.0
    assert float(problem.volume(x)) == pytest.approx(full.mean(), rel=1e-14)


def test_run_optimizes_free_variables_and_returns_the_element_vector(tmp_path):
    problem, passive = hole_problem()
    result = problem.run(maxeval=20, verbose=False, checkpoint=str(tmp_path / "ck.npz"))
    assert result["x"].shape == result["x_phys"].shape == (problem.n_el,)
    assert np.all(result["x"][passive.void] == 0.0)
    assert np.all(result["x_phys"][passive.void] == 0.0)
    from topopt.optimize import load_checkpoint
    assert load_checkpoint(str(tmp_path / "ck.npz"))["x"].shape == (passive.n_free,)
    # a full vector is accepted as x0 when its passive entries are the fixed values
    again = problem.run(maxeval=2, verbose=False, x0=result["x"])
    assert again["x"].shape == (problem.n_el,)
    bad = result["x"].copy()
    bad[passive.void[0]] = 0.5
    with pytest.raises(ValueError, match="at a passive element"):
        problem.run(maxeval=2, verbose=False, x0=bad)
    with pytest.raises(ValueError, match="free variables or one value per element"):
        problem.run(maxeval=2, verbose=False, x0=np.full(5, 0.5))


def test_passive_of_another_mesh_raises_before_any_solve():
    mesh, model, f, _ = cantilever_hole.setup(6, 4)
    with pytest.raises(ValueError, match="passive is for 10 elements; the mesh has 24"):
        ComplianceProblem(model, f, 0.5, 1.5, passive=Passive(10, void=[0]))
    with pytest.raises(TypeError, match="passive must be a topopt.design.Passive"):
        ComplianceProblem(model, f, 0.5, 1.5, passive=np.zeros(24, bool))
    assert not any(S.counts["factorizations"] for S in model._systems.values())


# ------------------------------------------------------------ the top99 scripts

def test_hole_is_the_papers_circle():
    """Centre (nelx/3, nely/2), radius nely/3 (top99 Sec. 5.3, 45 x 30)."""
    mesh, model, f, passive = cantilever_hole.setup(45, 30)
    c = fem.element_centroids(mesh)
    d = np.hypot(c[:, 0] - 15.0, c[:, 1] - 15.0)
    np.testing.assert_array_equal(passive.void, np.flatnonzero(d < 10.0))
    assert passive.solid.size == 0
    # the disc's area pi r^2 = 314.2 within the staircase of whole elements
    assert abs(passive.void.size - np.pi * 100.0) < 0.05 * np.pi * 100.0


def test_cantilever_hole_run_keeps_the_hole_empty(tmp_path):
    out = str(tmp_path / "hole")
    result = cantilever_hole.run(24, 16, maxeval=40, out=out)
    passive = cantilever_hole.setup(24, 16)[3]
    assert np.all(result["x_phys"][passive.void] == 0.0)
    assert result["volume"] == pytest.approx(0.5, abs=2e-3)
    saved = json.load(open(os.path.join(out, "result.json")))
    assert saved["setup"]["passive_void"] == passive.void.size
    assert saved["result"]["compliance"] == pytest.approx(result["compliance"])
    assert result["history"][-1]["objective"] < 0.6 * result["history"][0]["objective"]
    design = np.load(os.path.join(out, "design.npz"))
    assert design["x"].shape == (24 * 16,) and np.all(design["x"][passive.void] == 0.0)


def test_two_load_compliance_is_the_sum_of_the_cases():
    mesh, model, f = cantilever_two_loads.setup(10, 10)
    x = np.random.default_rng(2).uniform(0.2, 0.9, 100)
    both = ComplianceProblem(model, f, 0.4, 1.2).compliance(x)
    one, two = (ComplianceProblem(model, f[:, k], 0.4, 1.2).compliance(x) for k in (0, 1))
    assert float(both) == pytest.approx(float(one) + float(two), rel=1e-12)
    problem = ComplianceProblem(model, f, 0.4, 1.2)
    rate = ad.taylor_test(problem.compliance, x, np.random.default_rng(3).standard_normal(100))
    assert rate >= 1.9


def test_two_load_design_is_symmetric_about_mid_height():
    """Mirroring y -> nely - y swaps the two load cases, so the summed compliance and
    the optimum are symmetric; a one-load design is not (top99 Fig. 5)."""
    nelx, nely = 16, 16
    mirror = np.arange(nelx * nely).reshape(nelx, nely)[:, ::-1].ravel()   # column-major
    both = cantilever_two_loads.run(nelx, nely, maxeval=60)["x_phys"]
    assert np.max(np.abs(both - both[mirror])) < 1e-3
    mesh, model, f = cantilever_two_loads.setup(nelx, nely)
    one = ComplianceProblem(model, f[:, 0], 0.4, 1.2).run(maxeval=60, verbose=False)["x_phys"]
    assert np.max(np.abs(one - one[mirror])) > 0.3
