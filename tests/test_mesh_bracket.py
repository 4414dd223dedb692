"""Issue 26 item 7: a domain from a mesh file (`topopt.fem.read_mesh`, problems/mesh_bracket.py).

The reader's refusals, one row each; what it repairs (orientation, unused
nodes, a constant z) and what it keeps (node and element order); the
committed gmsh mesh against the script's geometry; the density filter on
its triangles; the compliance and its gradient against the independent
scikit-fem solve of scripts/crosscheck/meshfile_crosscheck.py; every AD mode and the
Taylor rate of the objective; a short run.
"""

import importlib.util
import os
import sys

import numpy as np
import pytest
import skfem

from topopt import ad, fem
from topopt.formulations.compliance import ComplianceProblem

meshio = pytest.importorskip("meshio")
from topopt_problems import mesh_bracket as mb  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SQUARE = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]
TRIS = [[0, 1, 2], [0, 2, 3]]
CUBE = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]]
TETS = [[0, 1, 2, 3], [1, 2, 3, 4]]


def write(tmp_path, points, cells, name="m.msh", **kwargs):
    """A mesh file written by meshio (gmsh 2.2 ASCII unless the name says otherwise)."""
    path = str(tmp_path / name)
    if name.endswith(".msh"):
        kwargs = dict(file_format="gmsh22", binary=False) | kwargs
    meshio.write(path, meshio.Mesh(np.asarray(points, float), cells), **kwargs)
    return path


def _garbage(tmp_path, name):
    (tmp_path / name).write_text("not a mesh\n")
    return str(tmp_path / name)


# (files to write, error, message): each refusal names the defect
REFUSALS = [
    (lambda d: str(d / "none.msh"), FileNotFoundError, r"no mesh file at .*none\.msh$"),
    (lambda d: str(d), FileNotFoundError, r"no mesh file at .* \(a folder\)"),
    (lambda d: _garbage(d, "bad.msh"), ValueError, r"meshio cannot read .*bad\.msh as a mesh: "
                                                   r".*Couldn't read file"),
    (lambda d: _garbage(d, "bad.xyz"), ValueError, "meshio cannot read .*Could not deduce"),
    (lambda d: write(d, SQUARE, [("line", [[0, 1], [1, 2]])]), ValueError,
     r"has no triangles or tetrahedra \(cells: \['line'\]\)"),
    (lambda d: write(d, SQUARE, [("quad", [[0, 1, 2, 3]])]), ValueError,
     r"has quad cells: read_mesh reads linear triangle elements only"),
    (lambda d: write(d, SQUARE + [[2, 0, 0], [2, 1, 0]], [("triangle", [[1, 4, 5]]),
                                                          ("quad", [[0, 1, 2, 3]])]),
     ValueError, r"has mixed cells quad and triangle"),
    (lambda d: write(d, SQUARE + [[0.5, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0]],
                     [("triangle6", [[0, 1, 3, 4, 5, 6]])]), ValueError, "has triangle6 cells"),
    (lambda d: write(d, CUBE + [[1, 0, 1], [0, 1, 1], [1, 1, 0]],
                     [("tetra", TETS), ("pyramid", [[0, 1, 7, 2, 3]])]), ValueError,
     r"has mixed cells pyramid and tetra"),
    (lambda d: write(d, [[0, 0, 0], [1, 0, 0], [1, 1, 0.5]], [("triangle", [[0, 1, 2]])]),
     ValueError, r"do not lie in a plane z = const \(z spans 0.5\): a surface in 3-D"),
    (lambda d: write(d, SQUARE + [[1, 1, 0]], [("triangle", [[0, 1, 2], [0, 4, 3]])]),
     ValueError, r"nodes 2 and 4 of the file lie at one point \(1 such pair\(s\)\): .* crack"),
    (lambda d: write(d, [[0, 0, 0], [1, 0, 0], [2, 0, 0], [1, 1, 0]],
                     [("triangle", [[0, 1, 3], [0, 1, 2]])]), ValueError,
     r"m\.msh: mesh element 1 is degenerate"),
    (lambda d: write(d, SQUARE, [("triangle", TRIS + [[2, 0, 3]])]), ValueError,
     r"m\.msh: mesh repeats an element: element 2 has the nodes of element 1"),
]


@pytest.mark.parametrize("make, error, message", REFUSALS)
def test_read_mesh_refuses_with_the_defect_named(tmp_path, make, error, message):
    with pytest.raises(error, match=message):
        fem.read_mesh(make(tmp_path))


@pytest.mark.parametrize("args, message", [
    ((3.0,), "path must be a file name (str or os.PathLike), got float"),
    (("m.msh", 1), "file_format must be meshio's name of a format or None, got int"),
])
def test_read_mesh_argument_types(args, message):
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fem.read_mesh(*args)


def test_read_mesh_without_meshio_names_the_io_extra(tmp_path, monkeypatch):
    path = write(tmp_path, SQUARE, [("triangle", TRIS)])
    monkeypatch.setitem(sys.modules, "meshio", None)           # import meshio fails
    with pytest.raises(ImportError, match=r"read_mesh needs meshio \(pip install 'topopt\[io\]'\)"):
        fem.read_mesh(path)


def test_triangles_reoriented_unused_nodes_removed_order_kept(tmp_path):
    """gmsh's circle centre (unused) goes, the clockwise triangle is renumbered, the rest
    keeps the file's order; lines are dropped, a constant z = 2 too."""
    points = [[9, 9, 2], [0, 0, 2], [1, 0, 2], [1, 1, 2], [0, 1, 2]]
    path = write(tmp_path, points, [("line", [[1, 2]]), ("triangle", [[1, 2, 3]]),
                                    ("triangle", [[1, 4, 3]])])       # the second clockwise
    mesh = fem.read_mesh(path)
    assert isinstance(mesh, skfem.MeshTri1)
    np.testing.assert_array_equal(mesh.p, np.array(points)[1:, :2].T)
    assert mesh.t.T.tolist() == [[0, 1, 2], [0, 2, 3]]
    np.testing.assert_allclose(fem.element_volumes(mesh), [0.5, 0.5], rtol=1e-14)


@pytest.mark.parametrize("name", ["t.msh", "t.vtu", "t.vtk", "t.mesh"])
def test_tetrahedra_in_any_meshio_format(tmp_path, name):
    """Two tetrahedra, the second numbered with negative volume; boundary triangles dropped."""
    path = write(tmp_path, CUBE, [("triangle", [[0, 1, 2]]), ("tetra", [[0, 1, 2, 3],
                                                                       [1, 2, 4, 3]])], name)
    mesh = fem.read_mesh(path)
    assert isinstance(mesh, skfem.MeshTet1) and mesh.t.shape == (4, 2)
    edges = mesh.p[:, mesh.t[1:]] - mesh.p[:, mesh.t[:1]]
    assert np.all(np.linalg.det(np.moveaxis(edges, -1, 0)) > 0)
    # volumes 1/6 and |det[(-1, 1, 0), (-1, 0, 1), (0, 1, 1)]| / 6 = 1/3
    np.testing.assert_allclose(fem.element_volumes(mesh), [1 / 6, 1 / 3], rtol=1e-14)


# ---------------------------------------------------------------- the committed mesh

def test_committed_mesh_has_the_scripts_holes():
    """problems/meshes/bracket.msh (gmsh 4.15.2, h = 3) against mesh_bracket's geometry:
    nodes on every hole's circle, no element inside a hole, the part's area."""
    mesh = fem.read_mesh(mb.MESH)
    assert (mesh.t.shape[1], mesh.p.shape[1]) == (2043, 1112)
    assert os.path.getsize(mb.MESH) < 100 * 1024
    c = fem.element_centroids(mesh).T
    for hole in (*mb.BOLTS, mb.PIN, mb.CUTOUT):
        n = int(np.sum(mb.on_circle(mesh.p, hole)))
        assert abs(n - 2 * np.pi * hole[2] / 3.0) <= 3, (hole, n)       # h = 3 along it
        assert np.all(mb.distance(c, hole) > hole[2] - 1e-9)
    # 2400 (base) + 4800 (web) + 200 pi (the lug's outer half) - 217 pi (the holes);
    # the holes' polygons are inscribed: the mesh is a little larger
    area = fem.element_volumes(mesh).sum()
    assert 0 < area - (7200 - 17 * np.pi) < 0.005 * area


def test_supports_load_and_bosses_by_geometry():
    mesh, model, f, passive = mb.setup()
    bolt_nodes = mb.on_circle(mesh.p, mb.BOLTS[0]) | mb.on_circle(mesh.p, mb.BOLTS[1])
    assert model.fixed.size == 2 * bolt_nodes.sum() == 2 * 26
    loaded = np.flatnonzero(np.any(model.nodal_values(f) != 0, axis=1))
    assert np.all(mb.on_circle(mesh.p[:, loaded], mb.PIN)) and loaded.size == 9
    assert np.all(mesh.p[1, loaded] <= mb.PIN[1] + 1e-9)
    np.testing.assert_allclose(model.nodal_values(f).sum(axis=0), [0.0, -1.0], atol=1e-15)
    assert passive.solid.size == 191 and passive.void.size == 0


def test_density_filter_on_the_triangles_is_top88s():
    """H_ei = max(0, rmin - |c_e - c_i|) over all centroid pairs, rows normalised."""
    mesh = fem.read_mesh(mb.MESH)
    F = ComplianceProblem(*mb.setup()[1:3], 0.35, 6.0).filter.matrix.toarray()
    c = fem.element_centroids(mesh)
    H = np.maximum(0.0, 6.0 - np.linalg.norm(c[:, None] - c[None], axis=2))
    np.testing.assert_allclose(F, H / H.sum(axis=1, keepdims=True), rtol=0, atol=1e-15)


# ---------------------------------------------------------------- cross-check, derivatives

def _crosscheck():
    spec = importlib.util.spec_from_file_location(
        "meshfile_crosscheck", os.path.join(ROOT, "scripts", "crosscheck", "meshfile_crosscheck.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compliance_and_gradient_match_an_independent_scikit_fem_solve():
    """scripts/crosscheck/meshfile_crosscheck.py: printed 4.5e-13 / 1.1e-12 (uniform), 1.9e-13 /
    4.3e-13 (seed 0) relative differences of compliance / gradient."""
    rows = _crosscheck().compare(seeds=(0,))
    assert [r["design"] for r in rows] == ["uniform", "random seed 0"]
    assert rows[0]["c"] == pytest.approx(295.730858008, rel=1e-10)      # its printed value
    for r in rows:
        assert r["rel_c"] < 1e-10 and r["rel_g"] < 1e-10, r


@pytest.fixture(scope="module")
def problem():
    mesh, model, f, passive = mb.setup()
    return ComplianceProblem(model, f, 0.35, 6.0, passive=passive)


def test_objective_every_mode_and_taylor(problem):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.2, 0.8, problem.n)
    objective = lambda x: problem.compliance(x, beta=4.0)            # noqa: E731
    report = ad.check_modes(objective, x, rtol=1e-5)
    assert set(report) == {f"{m}/arg 0" for m in ("reverse", "forward", "hvp", "nested")}
    assert max(report.values()) < 1e-5
    assert ad.taylor_test(objective, x, rng.standard_normal(problem.n)) >= 1.9


def test_short_run_lowers_the_compliance_at_the_volume(tmp_path):
    result = mb.run(maxeval=40, out=str(tmp_path / "out"))
    history = result["history"]
    assert result.evaluations == 40
    assert history[-1]["objective"] < 0.5 * history[0]["objective"]
    assert result["volume"] == pytest.approx(0.35, abs=5e-3)
    np.testing.assert_array_equal(result["x_phys"][mb.setup()[3].solid], 1.0)
    assert [s.params.get("beta") for s in mb.stages(40)] == list(mb.BETAS)
    assert [s.maxeval for s in mb.stages(3)] == [1, 1, 1]      # the first stages when short
