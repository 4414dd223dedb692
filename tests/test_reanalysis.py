"""Reanalysis (`topopt.fem.solvers.reanalysis`): CG preconditioned by an earlier design's factor."""

import numpy as np
import pytest

from topopt import ad, fem
from topopt.fem.solvers import auto, reanalysis
from topopt.fem.solvers.reanalysis import direct_options
from topopt.design.filters import DensityFilter
from topopt.design.interpolation import simp
from topopt.formulations.compliance import ComplianceProblem

from topopt_problems import cantilever3d, mbb_beam

EMIN = 1e-9
TIGHT = {"reanalysis": True, "rtol": 1e-12, "maxiter": 50}


def clamped(mesh, heat=False):
    model = (fem.heat(mesh) if heat else fem.elasticity(mesh)).fix(
        nodes=lambda x: np.isclose(x[0], 0.0))
    dim = mesh.p.shape[0]
    corner = mesh.p.max(axis=1) * np.r_[1.0, 0.0, 0.5][:dim]
    if heat:
        return model, np.full(model.ndof, 1.0 / model.ndof)
    return model, model.point_load(corner, np.r_[0.0, -1.0, 0.0][:dim])


CASES = {   # name: (mesh, heat, load columns)
    "quad": (lambda: fem.rectangle(24, 12), False, 1),
    "hex": (lambda: fem.box(8, 4, 4), False, 1),
    "heat": (lambda: fem.rectangle(20, 20), True, 1),
    "two loads": (lambda: fem.rectangle(16, 8), False, 2),
}


def case(name, solver="superlu", options=TIGHT):
    make, heat, loads = CASES[name]
    mesh = make()
    model, f = clamped(mesh, heat)
    if loads == 2:
        f = np.stack([f, np.roll(f, 3)], axis=1)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.2, 1.0, model.n_el)
    return model, model.system(solver, dict(options)), f, x, rng


@pytest.mark.parametrize("solver", ["superlu", "cholmod"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_reanalysed_solve_equals_the_direct_one(name, solver):
    """A nearby design is solved by CG on the base factor, to the direct solution."""
    if solver == "cholmod":
        pytest.importorskip("cvxopt")
    model, S, f, x, rng = case(name, solver)
    fem.solve(S, simp(x, 3.0, EMIN), f)                              # the base
    x2 = np.clip(x * (1 + 0.05 * rng.standard_normal(x.size)), 0.01, 1)
    u = fem.solve(S, simp(x2, 3.0, EMIN), f)
    ref = model.solve(simp(x2, 3.0, EMIN), f, "superlu")
    assert S.counts["factorizations"] == 1 and S.counts["reanalyses"] == 1
    assert 1 <= S.counts["reanalysis_iterations"] <= 50
    assert np.max(np.abs(u - ref)) <= 1e-9 * np.max(np.abs(ref))


def test_a_design_too_far_is_factorized():
    """CG beyond `maxiter` falls back to a factorization: the solve is still exact."""
    model, S, f, x, rng = case("quad", options={"reanalysis": True, "maxiter": 1})
    fem.solve(S, simp(x, 3.0, EMIN), f)
    x2 = rng.uniform(0.001, 1.0, x.size)
    u = fem.solve(S, simp(x2, 3.0, EMIN), f)
    assert S.counts["reanalysis_failures"] == 1 and S.counts["factorizations"] == 2
    ref = model.solve(simp(x2, 3.0, EMIN), f, "superlu")
    assert np.max(np.abs(u - ref)) <= 1e-12 * np.max(np.abs(ref))
    # the aged base: the next design is factorized at once
    S.reanalysis.previous = S.reanalysis.maxiter
    fem.solve(S, simp(x, 3.0, EMIN), f)
    assert S.counts["factorizations"] == 3 and S.counts["reanalyses"] == 1


@pytest.mark.parametrize("name", ["quad", "hex", "two loads"])
def test_every_mode_of_the_reanalysed_solve(name):
    """Reverse, forward, hvp and nested derivatives of u(x) with reanalysis on."""
    model, S, f, x, _ = case(name)
    flt = DensityFilter(model.basis.mesh, 1.5)
    fem.solve(S, simp(x, 3.0, EMIN), f)
    x2 = np.clip(x + 0.02, 0, 1)
    ad.check_modes(lambda x: fem.solve(S, simp(flt(x), 3.0, EMIN), f)[S.free[::7]], x2)
    assert S.counts["reanalyses"] >= 1


@pytest.mark.parametrize("rtol", [1e-6, 1e-10])
def test_taylor_of_the_compliance_with_reanalysis(rtol):
    """The MBB chain at the default tolerance (1e-6) and a tight one: rate >= 1.9."""
    _, model, f = mbb_beam.setup(30, 10)
    problem = ComplianceProblem(model, f, 0.5, 1.2,
                                solver_options={"reanalysis": True, "rtol": rtol})
    rng = np.random.default_rng(3)
    x = rng.uniform(0.2, 1.0, problem.n)
    problem.compliance(x)                                            # the base
    x2, dx = np.clip(x + 0.01 * rng.standard_normal(x.size), 0, 1), rng.standard_normal(x.size)
    assert ad.taylor_test(problem.compliance, x2, dx) >= 1.9
    assert problem.system.counts["reanalyses"] >= 3


def test_a_run_with_reanalysis_reaches_the_same_compliance():
    """MBB 60 x 20, 100 evaluations: 233.49 (top88: 233.71) with and without reanalysis."""
    out = {}
    for on in (False, True):
        _, model, f = mbb_beam.setup(60, 20)
        problem = ComplianceProblem(model, f, 0.5, 2.4, solver_options={"reanalysis": on})
        out[on] = problem.run(maxeval=100, verbose=False)
    assert abs(out[True]["compliance"] / out[False]["compliance"] - 1) <= 1e-3
    assert abs(out[True]["compliance"] / 233.71 - 1) <= 5e-3
    assert out[True]["fe_solves"] < 100      # designs that reused a factor


def test_modal_analysis_never_reanalyses():
    """Eigenvalues need exact shift-invert solves: `factorize(exact=True)`."""
    model, S, f, x, _ = case("quad")
    fem.solve(S, simp(x, 3.0, EMIN), f)
    F = S.factorize(simp(x * 0.99, 3.0, EMIN), exact=True)
    assert not isinstance(F, reanalysis.ReanalysisFactor)
    assert S.counts["reanalyses"] == 0 and S.counts["factorizations"] == 2


def test_auto_is_on_from_the_measured_size(monkeypatch):
    mesh, model, f = cantilever3d.setup(4, 2, 2)
    assert model.system("cholmod" if fem.solvers.BACKENDS["cholmod"].available()
                        else "superlu").reanalysis is None        # small: off
    monkeypatch.setitem(auto.AUTO_MIN_DOFS, 3, 10)
    _, model, f = cantilever3d.setup(4, 2, 2)
    assert model.system("superlu").reanalysis is not None
    assert model.system("superlu", {"reanalysis": False}).reanalysis is None
    assert model.system("mg-cg").reanalysis is None                # iterative: its own CG


@pytest.mark.parametrize("options, error, message", [
    ({"reanalysis": "yes"}, ValueError, "'auto', True or False"),
    ({"rtol": 0.0}, ValueError, "rtol must be in"),
    ({"maxiter": 0}, ValueError, "maxiter must be an integer >= 1"),
    ({"warm_start": True}, TypeError, "unknown keyword"),
])
def test_bad_direct_solver_options_are_rejected(options, error, message):
    with pytest.raises(error, match=message):
        direct_options(options)
    model, _ = clamped(fem.rectangle(4, 2))
    with pytest.raises(error, match=message):
        model.system("superlu", options)


def test_reanalysis_needs_a_real_symmetric_system():
    K = np.array([[1.0, -1.0], [-1.0, 1.0]])
    with pytest.raises(ValueError, match="real symmetric"):
        fem.LinearSystem(np.array([[0, 1], [1, 2]]), K, ndof=3, fixed=[0], solver="superlu",
                         K0=1j * np.eye(3), symmetric=True,
                         solver_options={"reanalysis": True})
