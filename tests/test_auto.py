"""``solver="auto"`` (`topopt.fem.solvers.auto`): the backend by dimension, size and mesh."""

import numpy as np
import pytest
import skfem

from topopt import fem
from topopt.fem.solvers import auto
from topopt.formulations.compliance import ComplianceProblem

from topopt_problems import cantilever3d, mbb_beam

DIRECT = fem.available_solvers()[0]          # CHOLMOD with the fast extra, else SuperLU


def test_large_3d_lattices_get_multigrid_cg():
    n = auto.ITERATIVE_MIN_DOFS[3]
    small = cantilever3d.setup(4, 2, 2)[1].system("auto")
    assert small.free.size < n and small.solver == DIRECT
    big = cantilever3d.setup(24, 12, 12)[1].system("auto")
    assert big.free.size >= n and big.solver == "mg-cg"


def test_2d_stays_direct():
    """2-D: a factorization over a whole run, 600 x 200 included (topopt.fem.solvers.auto)."""
    _, model, _ = mbb_beam.setup(300, 100)
    S = model.system("auto")
    assert S.free.size > auto.ITERATIVE_MIN_DOFS[3] and S.solver == DIRECT


def test_unstructured_3d_stays_direct():
    """No lattice: geometric multigrid does not apply, whatever the size."""
    mesh = skfem.MeshTet.init_tensor(*(np.linspace(0, 1, 14),) * 3)
    model = fem.elasticity(mesh).fix(nodes=lambda x: np.isclose(x[0], 0.0))
    assert model.ndof > auto.ITERATIVE_MIN_DOFS[3]
    assert model.system("auto").solver == DIRECT


def test_a_constant_part_or_a_complex_matrix_stays_direct():
    p = fem.box(24, 12, 12)
    model = fem.elasticity(p)
    geometry = (model.mesh.p, model.basis.nodal_dofs)
    assert auto.auto_solver(["umfpack", "superlu"], False, geometry, 24, 10 ** 6) == "umfpack"
    assert fem.solvers.pick_solver("auto", True, True, geometry, 24, 10 ** 6) == "mg-cg"
    assert fem.solvers.pick_solver("auto", True, True, geometry, 24, 10 ** 6,
                                   constant=True) == DIRECT          # springs: K0


def test_the_run_says_which_solver(capsys):
    mesh, model, f = cantilever3d.setup(4, 2, 2)
    problem = ComplianceProblem(model, f, 0.3, 1.5)
    problem.run(maxeval=2, verbose=True)
    err = capsys.readouterr().err
    assert f"solver {DIRECT} ({problem.system.free.size} free dofs, 3-D, picked by " \
           "solver='auto')" in err.splitlines()[0]


@pytest.mark.parametrize("solver", ["superlu", "mg-cg"])
def test_a_named_solver_is_kept(solver):
    model = cantilever3d.setup(24, 12, 12)[1]
    S = model.system(solver)
    assert S.solver == solver and "picked" not in auto.describe(S)
