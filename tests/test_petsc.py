"""The ``"petsc"`` backend: the rank layout (pure numpy, always run) and the MPI runs.

The MPI tests launch ``mpirun -n 1`` / ``-n 2`` on `tests/mpi_petsc.py` (and a
problem script) in a subprocess and skip cleanly when petsc4py, mpi4py or
``mpirun`` are missing, so the serial install never needs PETSc. The
numbers they assert are the acceptance of issue 17: the CHOLMOD compliance
to 1e-8 relative at solver tolerance 1e-10, the same design after 10 MMA
iterations, Taylor rates >= 1.9 under ``mpirun -n 2``.
"""

import importlib.util
import json
import os
import shutil
import sys

import numpy as np
import pytest
import scipy.sparse as sps

from topopt import fem
from topopt.fem.petsc.layout import element_blocks, partition, rank_payload

from mpi_launch import mpirun  # noqa: E402 (tests/mpi_launch.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_MPI = all(importlib.util.find_spec(m) for m in ("petsc4py", "mpi4py")) \
    and shutil.which("mpirun") is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="petsc4py, mpi4py or mpirun missing "
                               "(pip install 'topopt[mpi]', see docs/notes/mpi.md)")


def _clamped(model):
    return model.fix(nodes=lambda x: np.isclose(x[0], 0.0))


# name: a model whose LinearSystem the layout splits
MODELS = {
    "elasticity 2d": lambda: _clamped(fem.elasticity(fem.rectangle(7, 3))),
    "elasticity 3d": lambda: _clamped(fem.elasticity(fem.box(5, 3, 2))),
    "heat 3d": lambda: _clamped(fem.heat(fem.box(4, 3, 3))),
}


@pytest.mark.parametrize("n_ranks", [1, 2, 3, 5])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_layout_numbers_dofs_node_wise_and_owns_first_touched_nodes(name, n_ranks):
    model = MODELS[name]()
    S = model.system("superlu")
    nodal = model.basis.nodal_dofs
    lay = partition(S.element_dofs, nodal, S.ndof, n_ranks)
    bs = nodal.shape[0]
    assert np.array_equal(np.sort(lay.petsc), np.arange(S.ndof))          # a renumbering
    first = lay.petsc[nodal[0]]
    assert np.all(first % bs == 0)
    assert all(np.array_equal(lay.petsc[nodal[c]], first + c) for c in range(bs))
    assert np.ptp(np.diff(lay.starts)) <= 1 and lay.starts[-1] == S.n_el
    # a node belongs to the lowest rank whose elements touch it
    new_node = lay.petsc[nodal[0]] // bs
    owner = np.searchsorted(lay.node_starts, new_node, side="right") - 1
    node_of_dof = np.empty(S.ndof, dtype=int)
    node_of_dof[nodal] = np.arange(nodal.shape[1])
    lowest = np.full(nodal.shape[1], n_ranks)
    el_rank = np.searchsorted(lay.starts, np.arange(S.n_el), side="right") - 1
    for e in range(S.n_el):
        nodes = node_of_dof[S.element_dofs[e]]
        lowest[nodes] = np.minimum(lowest[nodes], el_rank[e])
    assert np.array_equal(owner, lowest)


@pytest.mark.parametrize("n_ranks", [1, 2, 3])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_rank_payloads_assemble_the_serial_matrix(name, n_ranks):
    """The ranks' COO entries (index -1 dropped, as PETSc does) plus the identity rows at
    fixed dofs give the serial free-dof matrix, permuted, and the payloads cover every row."""
    model = MODELS[name]()
    S = model.system("superlu")
    a = np.random.default_rng(0).uniform(0.1, 1.0, S.n_el)
    lay = partition(S.element_dofs, model.basis.nodal_dofs, S.ndof, n_ranks)
    n = S.ndof
    K = sps.csr_matrix((n, n))
    rows_seen = []
    for r in range(n_ranks):
        pay = rank_payload(lay, r, S.element_dofs, S.fixed, model.mesh.p, S.Ke)
        e = pay["edofs"]
        i = np.repeat(e, e.shape[1], axis=1).ravel()
        j = np.tile(e, (1, e.shape[1])).ravel()
        v = (a[lay.starts[r]:lay.starts[r + 1], None] * S.Ke.ravel()[None, :]).ravel()
        keep = (i >= 0) & (j >= 0)
        K = K + sps.csr_matrix((v[keep], (i[keep], j[keep])), shape=(n, n))
        fr = pay["fixed_rows"]
        K = K + sps.csr_matrix((np.full(fr.size, pay["diag"]), (fr, fr)), shape=(n, n))
        rows_seen.append(np.arange(*pay["rows"]))
        assert pay["coords"].shape == (np.diff(pay["rows"])[0] // lay.bs, model.mesh.p.shape[0])
    assert np.array_equal(np.concatenate(rows_seen), np.arange(n))
    free = lay.petsc[S.free]
    ref = S.matrix(a)
    assert abs(K[free][:, free] - ref).max() <= 1e-14 * abs(ref).max()
    fixed = lay.petsc[S.fixed]
    assert np.allclose(K[fixed][:, fixed].toarray(), np.mean(np.diag(S.Ke)) * np.eye(fixed.size))
    assert K[fixed][:, free].nnz == 0


def test_element_blocks_are_contiguous_and_balanced():
    for n_el, p in [(10, 3), (7, 7), (3, 5), (1000, 64)]:
        b = element_blocks(n_el, p)
        assert b[0] == 0 and b[-1] == n_el and np.all(np.diff(b) >= 0)
        assert np.ptp(np.diff(b)) <= 1


def test_layout_rejects_dofs_that_are_not_nodal():
    model = MODELS["elasticity 2d"]()
    S = model.system("superlu")
    with pytest.raises(ValueError, match="one dof per node and component"):
        partition(S.element_dofs, model.basis.nodal_dofs[:, :-1], S.ndof, 2)


BAD_OPTIONS = [({"rtol": 0.0}, ValueError, "rtol"), ({"rtol": 2.0}, ValueError, "rtol"),
               ({"maxiter": 0}, ValueError, "maxiter"), ({"warm_start": "yes"}, TypeError,
                                                         "warm_start"),
               ({"coarse_size": 10}, TypeError, "coarse_size")]


@pytest.mark.parametrize("options, error, word", BAD_OPTIONS)
def test_petsc_options_are_checked(options, error, word):
    from topopt.fem.petsc.backend import petsc_options
    with pytest.raises(error, match=word):
        petsc_options(options)


def test_missing_petsc4py_names_the_mpi_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "petsc4py", None)
    model = MODELS["elasticity 2d"]()
    with pytest.raises(ImportError, match=r"solver='petsc' needs petsc4py: pip install "
                       r"'topopt\[mpi\]'"):
        model.system("petsc")
    assert "petsc" not in fem.available_solvers(iterative=True)


# ---------------------------------------------------------------- under mpirun

PCS = ("gamg", "mg")         # topopt.fem.petsc.backend.PCS (not imported: petsc4py may be missing)


@pytest.fixture(scope="module", params=PCS)
def runs(tmp_path_factory, request):
    """The cases of `tests/mpi_petsc.py` on 1 rank (compliance, MMA) and on 2 (all), per pc."""
    if not HAVE_MPI:
        pytest.skip("petsc4py, mpi4py or mpirun missing")
    out, pc = {}, request.param
    for n, cases in ((1, ["compliance", "mma"]), (2, [])):
        path = tmp_path_factory.mktemp(f"mpi{n}{pc}") / "out.json"
        mpirun(n, [os.path.join(ROOT, "tests", "mpi_petsc.py"), str(path), pc, *cases])
        out[n] = json.loads(path.read_text())
        assert out[n]["ranks"] == n and out[n]["pc"] == pc
    return out


def _rel(a, b):
    return abs(a - b) / abs(b)


@needs_mpi
@pytest.mark.parametrize("n", [1, 2])
def test_compliance_matches_cholmod_to_1e8(runs, n):
    """24 x 12 x 12 cantilever (22 k dofs), random SIMP design, CG rtol 1e-10."""
    case = runs[n]["compliance"]
    assert case["ndof"] == 3 * 25 * 13 * 13
    assert _rel(case["petsc"], case["cholmod"]) <= 1e-8
    assert 0 < max(case["cg_iterations"]) < 200
    assert case["matrix_diff"] == 0.0          # S.matrix(a) of a petsc system: the serial K


@needs_mpi
@pytest.mark.parametrize("n", [1, 2])
def test_ten_mma_iterations_give_the_cholmod_design(runs, n):
    case = runs[n]["mma"]
    assert case["evaluations"] == [10, 10]
    assert case["x_max_diff"] <= 1e-6
    assert _rel(case["petsc"], case["cholmod"]) <= 1e-8


@needs_mpi
def test_taylor_rates_under_two_ranks(runs):
    assert runs[2]["taylor"]["rate"] >= 1.9
    assert runs[2]["adjoint"]["rate"] >= 1.9
    assert runs[2]["adjoint"]["grad_rel_diff"] <= 1e-6


@needs_mpi
def test_auto_pc_is_mg_on_a_lattice_and_gamg_off_it(runs):
    case = runs[2]["auto"]
    assert case["lattice"]["pc"] == "mg" and case["notched"]["pc"] == "gamg"
    assert max(case["lattice"]["rel"], case["notched"]["rel"]) <= 1e-8


@needs_mpi
def test_element_products_on_the_owning_ranks_equal_the_serial_ones(runs):
    assert runs[2]["products"]["rel"] <= 1e-13


@needs_mpi
def test_helmholtz_filter_on_petsc_matches_superlu(runs):
    case = runs[2]["helmholtz"]
    assert case["distributed"] and case["filter_rel"] <= 1e-8
    assert case["rate"] >= 1.9


@needs_mpi
def test_heat_matches_cholmod_under_two_ranks(runs):
    case = runs[2]["heat"]
    assert _rel(case["petsc"], case["cholmod"]) <= 1e-8
    assert case["rate"] >= 1.9


@needs_mpi
def test_topopt_command_runs_on_two_ranks_and_names_the_solver(tmp_path):
    proc = mpirun(2, ["-c", "import sys; from topopt.cli.command import main; sys.exit(main())",
                       "run", "cantilever3d", "--solver", "petsc", "--nelx", "8", "--nely", "4",
                       "--nelz", "4", "--maxeval", "2", "--out", str(tmp_path / "out")])
    out = proc.stdout + proc.stderr
    assert out.count("solver petsc (") == 1                         # rank 0 prints, once
    assert "pc mg, 2 MPI ranks)" in out
    assert (tmp_path / "out" / "result.json").exists()


@needs_mpi
def test_problem_script_runs_on_two_ranks_and_only_rank_0_writes(tmp_path):
    out = tmp_path / "out"
    proc = mpirun(2, [os.path.join(ROOT, "problems", "cantilever3d.py"), "--solver", "petsc",
                       "--nelx", "12", "--nely", "6", "--nelz", "4", "--maxeval", "3",
                       "--quiet", "--out", str(out)])
    result = json.loads((out / "result.json").read_text())["result"]
    assert result["solver"] == "petsc" and result["evaluations"] == 3
    assert proc.stdout.count("-> " + str(out)) == 1            # one summary line, rank 0's
    assert result["cg_iterations_per_solve"] > 0
