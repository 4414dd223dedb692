"""FlowProblem (topopt.formulations.flow): responses in every mode, Taylor rate, a Newton
failure mid-run, the double pipe's and the diffuser's numbers."""

import json
import os
import sys

import numpy as np
import pytest
import skfem

from topopt import ad, fem
from topopt.flow import navier_stokes, parabolic_inlet, stokes
from topopt.formulations.flow import FlowProblem
from topopt.optimize.checkpoint import load_checkpoint
from topopt.optimize import Stage

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "problems"))
import diffuser  # noqa: E402
import double_pipe  # noqa: E402


def channel(kind="stokes", n=4, cells="tri", **kw):
    """A unit square, parabolic inflow on the left, the same outflow on the right, on
    P2/P1 triangles or Q2/Q1 squares (`cells` "quad")."""
    mesh = (skfem.MeshTri if cells == "tri" else skfem.MeshQuad).init_tensor(
        np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1))
    make = stokes if kind == "stokes" else lambda m, **k: navier_stokes(m, mu=0.05, **k)
    walls = [(lambda x: x[0] > -1, 0.0),
             (lambda x: x[0] < 1e-9, parabolic_inlet([0, 0.5], 0.5)),
             (lambda x: x[0] > 1 - 1e-9, parabolic_inlet([1, 0.5], 0.5))]
    return make(mesh, alpha_max=100.0, q=0.1, dirichlet=walls, **kw)


def design(problem, seed=0):
    return np.random.default_rng(seed).uniform(0.3, 0.9, problem.n)


def test_open_channel_is_poiseuille():
    """rho = 1 everywhere, alpha_min = 0: the parabolic profile of width 1 and peak 1 all
    along, J = 1/2 int |du/dy|^2 = 1/2 * 16 / 3 (closed form), in either convention x2."""
    mesh = skfem.MeshTri.init_tensor(np.linspace(0, 1, 5), np.linspace(0, 1, 5))
    walls = [(lambda x: x[0] > -1, 0.0),
             (lambda x: x[0] < 1e-9, parabolic_inlet([0, 0.5], 1.0)),
             (lambda x: x[0] > 1 - 1e-9, parabolic_inlet([1, 0.5], 1.0))]
    for convention, factor in (("borrvall-petersson", 0.5), ("dolfin-adjoint", 1.0)):
        p = FlowProblem(stokes(mesh, dirichlet=walls), 0.5, convention=convention)
        assert float(p.objective(np.ones(p.n))) == pytest.approx(factor * 16 / 3, rel=1e-10)


@pytest.mark.parametrize("kind,cells", [("stokes", "tri"), ("navier-stokes", "tri"),
                                        ("stokes", "quad"), ("navier-stokes", "quad")])
@pytest.mark.parametrize("q", [0.01, 0.1])
def test_responses_in_every_mode(kind, cells, q):
    problem = FlowProblem(channel(kind, cells=cells), 0.5, rmin=0.4, newton={"rtol": 1e-13})
    problem.c0 = 1.0
    report = ad.check_modes(lambda x: problem.responses(x, q=q), design(problem), rtol=1e-6)
    assert set(report) == {f"{m}/arg 0" for m in ("reverse", "forward", "hvp", "nested")}


def test_pressure_drop_in_every_mode():
    problem = FlowProblem(channel("navier-stokes"), 0.5, objective="pressure_drop",
                          inlet=lambda x: x[0] < 1e-9, outlet=lambda x: x[0] > 1 - 1e-9,
                          newton={"rtol": 1e-13})
    problem.c0 = 1.0
    ad.check_modes(lambda x: problem.responses(x)[0], design(problem, 1), rtol=1e-6)


@pytest.mark.parametrize("cells", double_pipe.CELLS)
@pytest.mark.parametrize("q", [0.01, 0.1])
def test_double_pipe_objective_taylor_rate(q, cells):
    _, model = double_pipe.setup(1.5, 6, cells)
    problem = FlowProblem(model, 1 / 3)
    x = design(problem, 2)
    dx = np.random.default_rng(3).standard_normal(problem.n)
    assert ad.taylor_test(lambda x: problem.objective(x, q), x, dx) >= 1.9


@pytest.mark.parametrize("q", [0.01, 0.1])
def test_diffuser_objective_taylor_rate(q):
    _, model = diffuser.setup(6)
    problem = FlowProblem(model, 0.5)
    x = design(problem, 4)
    dx = np.random.default_rng(5).standard_normal(problem.n)
    assert ad.taylor_test(lambda x: problem.objective(x, q), x, dx) >= 1.9


def test_diffuser_inflow_equals_outflow():
    # closed form: a parabola of peak U over a width w carries 2/3 U w, so the inlet
    # (peak 1 over the height 1) and the outlet (peak 3 over 1/3) both carry 2/3
    y = np.linspace(0.0, 1.0, 30001)
    ins = diffuser.parabolic_inlet([0.0, diffuser.INLET[0]], *diffuser.INLET[1:])
    outs = diffuser.parabolic_inlet([1.0, diffuser.OUTLET[0]], *diffuser.OUTLET[1:])
    flux_in = np.trapezoid(ins(np.stack([0 * y, y]))[0], y)
    flux_out = np.trapezoid(outs(np.stack([1 + 0 * y, y]))[0], y)
    assert flux_in == pytest.approx(2 / 3, rel=1e-8)
    assert flux_out == pytest.approx(2 / 3, rel=1e-6)


def test_newton_failure_keeps_the_last_design_and_resumes(tmp_path):
    model = channel("navier-stokes")
    problem = FlowProblem(model, 0.5, newton={"maxiter": 8})
    designs = []
    residual = type(model).residual

    def failing(self, w, rho, t=1.0):
        r = residual(self, w, rho, t)
        value = np.asarray(ad.value(rho))
        if not any(np.array_equal(value, d) for d in designs):
            designs.append(value.copy())
        return r * np.nan if len(designs) >= 6 else r
    model.residual = failing.__get__(model)
    ck = str(tmp_path / "ck.npz")
    stages = [Stage(10, {"q": 0.1})]
    with pytest.raises(fem.NewtonError) as info:
        problem.run(stages=stages, checkpoint=ck, verbose=False)
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "resume" in notes and ck in notes and "FlowProblem" in notes
    saved = load_checkpoint(ck)
    assert saved["evaluations"] == 5                  # the designs solved before the failure
    assert saved["history"][-1]["objective"] > 0
    # the checkpoint's design is one that was solved (the last good one), and it resumes
    assert any(np.array_equal(saved["x"], d) for d in designs[:5])
    del model.residual
    result = problem.run(stages=stages, checkpoint=ck, resume=ck, verbose=False)
    assert result.evaluations == 10 and result["newton_iterations_per_solve"] > 0


def test_bad_arguments_are_refused():
    model = channel()
    with pytest.raises(TypeError, match="FlowModel"):
        FlowProblem(fem.elasticity(fem.rectangle(2, 2)), 0.5)
    with pytest.raises(ValueError, match="volfrac"):
        FlowProblem(model, 1.5)
    with pytest.raises(ValueError, match="inlet and outlet"):
        FlowProblem(model, 0.5, objective="pressure_drop")
    with pytest.raises(ValueError, match="objective"):
        FlowProblem(model, 0.5, objective="drag")
