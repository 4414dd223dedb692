"""The voxel path through the library's rules, problem class and optimizer.

References: the scikit-fem path (`fem.elasticity` on ``grid.to_mesh()``,
CHOLMOD or SuperLU) for values, sensitivities and MMA designs; central
differences (`ad.check_rule`, `ad.taylor_test`) for the rules.
"""

import sys
import os

import numpy as np
import pytest

from topopt import ad, fem
from topopt.formulations.compliance import ComplianceProblem
from topopt.grid import Grid, GridModel, GridSystem, grid_elasticity, grid_heat

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from topopt_problems import cantilever3d  # noqa: E402

TIGHT = {"rtol": 1e-12}
DIRECT = "cholmod" if "cholmod" in fem.available_solvers() else "superlu"


def _cantilever_2d(voxel: bool, nelx: int = 60, nely: int = 20):
    """A 2-D cantilever: the edge x = 0 clamped, a unit downward load at the bottom right."""
    if voxel:
        model = grid_elasticity(Grid((nelx, nely)))
    else:
        model = fem.elasticity(fem.rectangle(nelx, nely))
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0))
    return model, model.point_load((nelx, 0), (0, -1))


def _pair(case: str, filter: str):
    """(voxel problem, mesh problem, perm) of a case."""
    if case == "3d":
        grid, gmodel, gf = cantilever3d.setup(24, 12, 12, voxel=True)
        _, model, f = cantilever3d.setup(24, 12, 12)
    else:
        (gmodel, gf), (model, f) = _cantilever_2d(True), _cantilever_2d(False)
        grid = gmodel.grid
    voxel = ComplianceProblem(gmodel, gf, 0.4, 1.5, filter=filter, solver="voxel",
                              solver_options=TIGHT)
    mesh = ComplianceProblem(model, f, 0.4, 1.5, filter=filter, solver=DIRECT)
    return voxel, mesh, grid.to_mesh()[1]


@pytest.mark.parametrize("filter", ["density", "helmholtz"])
@pytest.mark.parametrize("case", ["2d", "3d"])
def test_compliance_and_every_sensitivity_match_the_mesh_path(case, filter):
    voxel, mesh, perm = _pair(case, filter)
    x = np.random.default_rng(3).uniform(0.05, 1.0, voxel.n)
    xm = np.empty_like(x)
    xm[perm] = x
    cv, gv = ad.value_and_gradient(voxel.compliance, x)
    cm, gm = ad.value_and_gradient(mesh.compliance, xm)
    assert abs(cv - cm) <= 1e-10 * abs(cm)
    # relative to the largest: an element's own digits are lost to cancellation in
    # u_e^T K0 u_e where u_e is large and its strain small (the cantilever's tip), on
    # both paths alike (1e-6 per element against a long-double reference, 60 x 20)
    assert np.max(np.abs(gv - gm[perm])) <= 1e-10 * np.max(np.abs(gm))


@pytest.mark.parametrize("case", ["2d", "3d"])
def test_mixed_precision_gives_the_compliance_and_sensitivities_of_double(case):
    """precision="mixed" (the V-cycle in float32) at the default rtol 1e-8 on 3- and 4-level
    hierarchies (float32 coarse cells): compliance and every sensitivity of "double" to 1e-8
    (measured 1e-13 and 6e-15, the same CG iterations)."""
    if case == "3d":                                   # levels 24x12x12, 6x3x3, 2x1x1
        model, f, options = *cantilever3d.setup(24, 12, 12, voxel=True)[1:], {"coarse_size": 100}
    else:                                              # levels 64x32, 16x8, 8x4, 4x2
        (model, f), options = _cantilever_2d(True, 64, 32), {"coarse_size": 50}
    out = {}
    for precision in ("double", "mixed"):
        problem = ComplianceProblem(model, f, 0.4, 1.5, solver="voxel",
                                    solver_options=dict(options, precision=precision))
        x = np.random.default_rng(3).uniform(0.05, 1.0, problem.n)
        out[precision] = ad.value_and_gradient(problem.compliance, x)
        out[precision + " its"] = list(problem.system._iterative.log)
    (cd, gd), (cm, gm) = out["double"], out["mixed"]
    assert abs(cm - cd) <= 1e-8 * abs(cd)
    assert np.max(np.abs(gm - gd)) <= 1e-8 * np.max(np.abs(gd))
    assert len(out["mixed its"]) == 1 and out["mixed its"][0] <= 1.2 * out["double its"][0]


@pytest.mark.parametrize("case", ["2d", "3d"])
def test_mma_design_after_10_iterations_matches_the_mesh_path(case):
    voxel, mesh, perm = _pair(case, "density")
    rv, rm = voxel.run(maxeval=10), mesh.run(maxeval=10)
    assert rv["evaluations"] == rm["evaluations"] == 10
    assert abs(rv["compliance"] - rm["compliance"]) <= 1e-8 * rm["compliance"]
    gap = np.max(np.abs(rv.x - np.asarray(rm.x)[perm]))
    if case == "3d":
        assert gap <= 1e-8
    else:
        # MMA's tenth design of this beam moves by 1.9e-8 between two direct solvers of
        # the same mesh (CHOLMOD, SuperLU: rounding, amplified by the iterations): the
        # voxel path must stay within 1e-8 of the mesh path's own spread
        other = ComplianceProblem(mesh.model, mesh.f, 0.4, 1.5, solver="superlu")
        spread = np.max(np.abs(np.asarray(other.run(maxeval=10).x) - rm.x))
        assert spread > 0 and gap <= spread + 1e-8


@pytest.mark.parametrize("filter", ["density", "helmholtz"])
def test_taylor_rate_of_the_voxel_cantilever(filter):
    grid, model, f = cantilever3d.setup(16, 8, 8, voxel=True)
    p = ComplianceProblem(model, f, 0.3, 1.5, filter=filter, solver="voxel",
                          solver_options=TIGHT)
    rng = np.random.default_rng(5)
    x, dx = rng.uniform(0.2, 0.8, p.n), rng.standard_normal(p.n)
    assert ad.taylor_test(p.compliance, x, dx) >= 1.9


def _system(shape=(6, 3, 2)):
    grid = Grid(shape)
    model = grid_elasticity(grid).fix(nodes=lambda x: x[0] == 0).spring(
        lambda x: (x[0] == shape[0]) & (x[1] == 0), 1, k=0.5)
    return model, model.system("voxel", TIGHT)


def test_solve_rules_in_every_mode():
    model, S = _system()
    rng = np.random.default_rng(1)
    E = rng.uniform(0.2, 1.0, model.n_el)
    f = np.stack([model.point_load((6, 3, 2), (0, -1, 0)), rng.standard_normal(model.ndof)],
                 axis=1)
    ad.check_rule(fem.solve, S, E, f)                  # reverse and forward, two loads
    ad.check_rule(fem.solve, S, E, f[:, 0])
    v, w = rng.standard_normal(model.ndof), rng.standard_normal(model.ndof)
    ad.check_rule(fem.matvec, S, E, v)
    ad.check_rule(fem.products, S, v, w)
    c = lambda E: np.sum(f * fem.solve(S, 1e-3 + E ** 3, f))          # noqa: E731
    dE = rng.standard_normal(model.n_el)
    hv = ad.hvp(c, E, dE)
    fd = (ad.gradient(c, E + 1e-6 * dE) - ad.gradient(c, E - 1e-6 * dE)) / 2e-6
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-8 * np.abs(hv).max())
    # nested: the gradient of a directional derivative (forward over reverse)
    g = lambda E: ad.gradient(c, E) @ dE                                # noqa: E731
    np.testing.assert_allclose(ad.gradient(g, E), hv, rtol=1e-8, atol=1e-10 * abs(hv).max())


def test_voxel_and_assembled_systems_of_one_grid_model_agree():
    model, S = _system()
    E = np.random.default_rng(2).uniform(0.1, 1.0, model.n_el)
    f = model.point_load((6, 3, 2), (0, -1, 0))
    np.testing.assert_allclose(fem.solve(S, E, f), fem.solve(model.system(DIRECT), E, f),
                               rtol=1e-10, atol=1e-12)


def test_heat_model_matches_scikit_fem():
    grid = Grid((10, 6))
    gm = grid_heat(grid, k0=2.0).fix(nodes=lambda x: (x[0] == 0) & (x[1] <= 2))
    mesh, perm = grid.to_mesh()
    mm = fem.heat(mesh, k0=2.0).fix(nodes=lambda x: (x[0] == 0) & (x[1] <= 2))
    E = np.random.default_rng(4).uniform(0.1, 1.0, grid.n_el)
    Em = np.empty_like(E)
    Em[perm] = E
    cg = np.sum(gm.solve(E, np.ones(gm.ndof), "voxel"))
    cm = np.sum(mm.solve(Em, np.ones(mm.ndof)))
    assert abs(cg - cm) <= 1e-8 * abs(cm)


BAD = [  # call, error, message
    (lambda: Grid((0, 2)), ValueError, "positive integers"),
    (lambda: Grid((2, 2, 2, 2)), ValueError, "2 or 3"),
    (lambda: Grid((2, 2), h=-1.0), ValueError, "h must be"),
    (lambda: GridModel("grid", np.eye(8), 2), TypeError, "topopt.grid.Grid"),
    (lambda: grid_elasticity(Grid((2, 2))).fix(nodes=lambda x: x[0] > 5), ValueError,
     "no grid node"),
    (lambda: grid_elasticity(Grid((2, 2))).point_load((2.7, 0.0), (0, 1)), ValueError,
     "within half an element"),
    (lambda: grid_elasticity(Grid((2, 2))).fix(nodes=(0, 0), components=2), ValueError,
     r"components must lie in \[0, 2\)"),
    (lambda: grid_elasticity(Grid((2, 2))).point_load((0, 0), (1, 2, 3)), ValueError,
     "component"),
    (lambda: grid_elasticity(Grid((2, 2))).fix(nodes=lambda x: x[0] >= 0).system(), ValueError,
     "every one of"),
    (lambda: grid_elasticity(Grid((2, 2))).system("voxel", {"coarse": "fine"}), ValueError,
     "coarse"),
    (lambda: grid_elasticity(Grid((2, 2))).system("voxel", {"first_factor": 3}), ValueError,
     "first_factor"),
    (lambda: grid_elasticity(Grid((2, 2))).system("voxel", {"precision": "single"}),
     ValueError, r"precision 'single': precision must be one of \('double', 'mixed'\)"),
    (lambda: grid_elasticity(Grid((2, 2))).system("voxel", {"tolerance": 1e-3}), TypeError,
     "tolerance"),
    (lambda: grid_elasticity(Grid((2, 2))).system("voxel", "fast"), TypeError, "dict"),
    (lambda: _system()[1].factorize(np.ones(3)), ValueError, "one entry per grid element"),
    (lambda: _system()[1].factorize(-np.ones(36)), ValueError, "a >= 0"),
    (lambda: _system()[1].factorize(np.full(36, np.nan)), ValueError, "finite"),
]


@pytest.mark.parametrize("call, error, message", BAD)
def test_bad_input_is_refused_with_its_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_auto_picks_the_voxel_path_above_its_threshold(monkeypatch, capsys):
    from topopt.fem.solvers import auto
    monkeypatch.setitem(auto.VOXEL_MIN_DOFS, 3, 1000)
    r = cantilever3d.run(12, 6, 6, maxeval=2, verbose=True)
    assert r["solver"] == "voxel"
    assert "picked by solver='auto': a structured grid" in capsys.readouterr().err
    monkeypatch.setitem(auto.VOXEL_MIN_DOFS, 3, 10**9)
    assert cantilever3d.run(12, 6, 6, maxeval=2)["solver"] != "voxel"
