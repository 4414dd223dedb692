"""Outputs of grid designs (`topopt.io.voxels`): design.vti, the blocked STL, the float32 npz.

Sources: the VTI is read back by a parser written here from the VTK XML
format (meshio reads no ImageData; `vtk` too when importable), its arrays
compared with the grid's fields reordered by numpy (VTK: x fastest); the
blocked surface with today's `iso_surface` on ``grid.to_mesh()`` (the same
vertices, triangles and enclosed volume to 1e-12), closed (every edge used
by exactly two triangles); the grid markers with `boundary_markers` of the
scikit-fem model on the same mesh.
"""

import os
import re

import numpy as np
import pytest

from topopt import fem
from topopt.grid import Grid
from topopt.io import (RunResult, enclosed_volume, grid_iso_surface, iso_surface, load_design,
                       save_design, signed_volume, surface_faces, write_grid_stl, write_results,
                       write_stl, write_vti, DesignFileError)
from topopt.plot.markers import boundary_markers

pytest.importorskip("skimage")
meshio = pytest.importorskip("meshio")

GRIDS = [((3, 2), 1.0), ((5, 4), 0.5), ((4, 3, 2), 1.0), ((2, 5, 3), 0.25), ((1, 1, 1), 2.0)]
GRIDS_3D = [g for g in GRIDS if len(g[0]) == 3] + [((7, 5, 4), 1.0), ((6, 6, 6), 0.5)]


def read_vti(path):
    """(attributes of ImageData, {(kind, name): (n, comps) float32 array}) of a raw .vti."""
    raw = open(path, "rb").read()
    head, _, data = raw.partition(b'<AppendedData encoding="raw">')
    data = data[data.index(b"_") + 1:]
    head = head.decode()
    assert 'type="ImageData"' in head and 'header_type="UInt64"' in head
    image = dict(re.findall(r'(\w+)="([^"]*)"', re.search(r"<ImageData ([^>]*)>", head)[1]))
    arrays = {}
    for kind in ("PointData", "CellData"):
        block = re.search(rf"<{kind}>(.*?)</{kind}>", head, re.S)[1]
        for attrs in re.findall(r"<DataArray ([^>]*)/>", block):
            a = dict(re.findall(r'(\w+)="([^"]*)"', attrs))
            assert a["type"] == "Float32" and a["format"] == "appended"
            off = int(a["offset"])
            n = int(np.frombuffer(data[off:off + 8], "<u8")[0])
            v = np.frombuffer(data[off + 8:off + 8 + n], "<f4")
            arrays[kind, a["Name"]] = v.reshape(-1, int(a["NumberOfComponents"]))
    return image, arrays


def vtk_order(v, shape):
    """`v` (C order over `shape`, x slowest) in VTK's order (x fastest), (n, c)."""
    a = np.asarray(v).reshape(tuple(shape) + (-1,))
    return np.transpose(a, tuple(range(len(shape)))[::-1] + (len(shape),)).reshape(-1, a.shape[-1])


@pytest.mark.parametrize("shape,h", GRIDS)
def test_vti_contents(tmp_path, shape, h):
    grid = Grid(shape, h)
    rng = np.random.default_rng(len(shape) * 10 + shape[0])
    x, u = rng.random(grid.n_el), rng.standard_normal((grid.n_nodes, grid.dim))
    path = write_vti(str(tmp_path / "d.vti"), grid, {"x": x, "x_phys": x ** 2},
                     {"displacement": u})
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    image, arrays = read_vti(path)
    assert image["WholeExtent"].split() == [str(v) for n in (shape + (0,))[:3] for v in (0, n)]
    assert [float(s) for s in image["Spacing"].split()] == [h] * 3
    assert image["Origin"] == "0 0 0"
    np.testing.assert_array_equal(arrays["CellData", "x"][:, 0],
                                  vtk_order(x, shape)[:, 0].astype(np.float32))
    np.testing.assert_array_equal(arrays["CellData", "x_phys"][:, 0],
                                  vtk_order(x ** 2, shape)[:, 0].astype(np.float32))
    expect = vtk_order(u, grid.nodes_shape).astype(np.float32)
    disp = arrays["PointData", "displacement"]
    assert disp.shape == (grid.n_nodes, 3)
    np.testing.assert_array_equal(disp[:, :grid.dim], expect)
    assert not disp[:, grid.dim:].any()                 # 2-D vectors: zero z component
    # VTK's point p = i + (nx+1) (j + (ny+1) k) lies at h (i, j, k): the grid node there
    kji = np.unravel_index(np.arange(grid.n_nodes), grid.nodes_shape[::-1])
    np.testing.assert_array_equal(vtk_order(grid.node_coordinates().T, grid.nodes_shape),
                                  h * np.stack(kji[::-1], axis=1))
    try:                                                 # not a dependency: when installed
        import vtk
    except ImportError:
        return
    if True:
        r = vtk.vtkXMLImageDataReader()
        r.SetFileName(path)
        r.Update()
        assert r.GetOutput().GetNumberOfCells() == grid.n_el


def test_vti_refusals(tmp_path):
    grid = Grid((2, 2))
    with pytest.raises(ValueError, match=r"CellData 'x' has shape \(3,\); expected \(4,\)"):
        write_vti(str(tmp_path / "a.vti"), grid, {"x": np.ones(3)})
    with pytest.raises(ValueError, match="non-finite"):
        write_vti(str(tmp_path / "a.vti"), grid, {"x": np.array([1, np.nan, 0, 0])})
    with pytest.raises(TypeError, match="grid must be a topopt.grid.Grid"):
        write_vti(str(tmp_path / "a.vti"), fem.rectangle(2, 2), {"x": np.ones(4)})
    assert not os.listdir(tmp_path)                     # nothing half-written


def _designs(grid):
    """A table of designs on `grid`: random thresholds, one element, a bar, all solid."""
    rng = np.random.default_rng(grid.n_el)
    one = np.zeros(grid.n_el)
    one[grid.n_el // 2] = 1.0
    bar = (grid.element_centers()[:, 1] < grid.h).astype(float)
    return {"random": rng.random(grid.n_el), "sparse": (rng.random(grid.n_el) > 0.7) * 0.9,
            "one": one, "bar": bar, "full": np.ones(grid.n_el)}


def _edges_twice(faces):
    e = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    _, counts = np.unique(e, axis=0, return_counts=True)
    return set(counts.tolist()) == {2}


def _triangle_set(verts, faces, h):
    """Each triangle as its sorted vertex coordinates in units of h / 8 (exact integers)."""
    t = np.round(verts[faces] / h * 8).astype(np.int64)            # (m, 3, 3)
    return {tuple(map(tuple, sorted(map(tuple, tri)))) for tri in t}


@pytest.mark.parametrize("shape,h", GRIDS_3D)
@pytest.mark.parametrize("slab", [50, 700, 2**22])
def test_blocked_surface_is_todays(shape, h, slab):
    grid = Grid(shape, h)
    scale = 1.0                      # _voxels takes an axis of one element's extent from h
    mesh, perm = Grid(shape, h / scale).to_mesh()
    for name, x in _designs(grid).items():
        on_mesh = np.empty(grid.n_el)
        on_mesh[perm] = x                              # mesh element perm[e] = grid element e
        v0, f0 = iso_surface(mesh, on_mesh)
        v0 = v0 * scale
        v1, f1 = grid_iso_surface(grid, x, slab_voxels=slab)
        assert len(v1) == len(v0) and len(f1) == len(f0), name
        np.testing.assert_allclose(np.unique(v1, axis=0), np.unique(v0, axis=0), rtol=0,
                                   atol=1e-12 * h)
        assert _triangle_set(v1, f1, h) == _triangle_set(v0, f0, h), name
        assert abs(enclosed_volume(v1, f1) - enclosed_volume(v0, f0)) <= 1e-12 * grid.n_el
        assert _edges_twice(f1), name                  # closed: seams merged
        # the estimate the pictures use: 2 refine**2 triangles per exposed face, to 10 %
        n2 = len(grid_iso_surface(grid, x, refine=2)[1])
        assert abs(n2 - 8 * surface_faces(grid, x)) <= 0.15 * n2, name


@pytest.mark.parametrize("shape,h", [g for g in GRIDS_3D if min(g[0]) > 1][:3])
def test_blocked_stl_is_todays(tmp_path, shape, h):
    grid = Grid(shape, h)
    mesh, perm = grid.to_mesh()
    x = _designs(grid)["random"]
    on_mesh = np.empty(grid.n_el)
    on_mesh[perm] = x
    a = meshio.read(write_stl(str(tmp_path / "a.stl"), mesh, on_mesh))
    b = meshio.read(write_grid_stl(str(tmp_path / "b.stl"), grid, x, slab_voxels=100))
    assert os.path.getsize(tmp_path / "b.stl") == 84 + 50 * len(a.cells[0].data)
    np.testing.assert_allclose(np.unique(b.points, axis=0), np.unique(a.points, axis=0),
                               atol=1e-6 * h)
    faces = b.cells[0].data                             # meshio merges the STL's points
    assert _edges_twice(faces)
    assert signed_volume(b.points, faces) == pytest.approx(signed_volume(a.points, a.cells[0]
                                                                         .data), rel=1e-6)


def test_surface_refusals():
    grid = Grid((2, 2, 2))
    with pytest.raises(ValueError, match="no element has x_phys >= 0.5"):
        grid_iso_surface(grid, np.zeros(8))
    with pytest.raises(TypeError, match="needs a 3-D grid"):
        grid_iso_surface(Grid((2, 2)), np.ones(4))
    with pytest.raises(ValueError, match=r"expected \(8,\)"):
        grid_iso_surface(grid, np.ones(7))
    with pytest.raises(ValueError, match="level"):
        grid_iso_surface(grid, np.ones(8), level=1.0)


@pytest.mark.parametrize("shape,h", GRIDS)
def test_npz_round_trip(tmp_path, shape, h, capsys):
    grid = Grid(shape, h)
    rng = np.random.default_rng(3)
    x = rng.random(grid.n_el)
    u = rng.random((grid.n_nodes, grid.dim))
    written = save_design(str(tmp_path), grid, x, x ** 3, {"problem": "demo", "n": 3},
                          point_data={"displacement": u}, cell_data={"E": 2 * x})
    names = sorted(os.path.basename(p) for p in written)
    assert names == (["design.npz", "design.stl", "design.vti"] if len(shape) == 3 else
                     ["design.npz", "design.vti"]) or "design.stl not written" in \
        capsys.readouterr().out
    with np.load(tmp_path / "design.npz") as data:
        assert sorted(data.files) == ["E", "grid_h", "grid_shape", "setup", "x", "x_phys"]
        assert data["x"].dtype == np.float32
    d = load_design(str(tmp_path), mesh=grid, problem="demo")
    assert d["mesh"] == grid and d["setup"] == {"problem": "demo", "n": 3}
    np.testing.assert_array_equal(d["x"], x.astype(np.float32).astype(float))
    np.testing.assert_array_equal(d["x_phys"], (x ** 3).astype(np.float32).astype(float))
    np.testing.assert_array_equal(d["cell_data"]["E"], (2 * x).astype(np.float32))
    assert d["point_data"] == {}
    with pytest.raises(DesignFileError, match="its grid is"):
        load_design(str(tmp_path), mesh=Grid(shape, 2 * h))
    with pytest.raises(DesignFileError, match="not a grid"):
        load_design(str(tmp_path), mesh=grid.to_mesh()[0])
    with pytest.raises(DesignFileError, match="expected 'other'"):
        load_design(str(tmp_path), problem="other")


def test_npz_refusals(tmp_path):
    grid = Grid((2, 2))
    with pytest.raises(ValueError, match=r"x has shape \(3,\)"):
        save_design(str(tmp_path), grid, np.ones(3), np.ones(4), {})
    with pytest.raises(ValueError, match="x_phys must lie in"):
        save_design(str(tmp_path), grid, np.ones(4), 2 * np.ones(4), {})
    with pytest.raises(ValueError, match="may not be named"):
        save_design(str(tmp_path), grid, np.ones(4), np.ones(4), {}, cell_data={"grid_h": 1})
    np.savez(tmp_path / "design.npz", x=np.ones(4), x_phys=np.ones(4), grid_shape=np.array(
        [2, 0]), grid_h=np.array(1.0), setup=np.array("{}"))
    with pytest.raises(DesignFileError, match="grid_shape"):
        load_design(str(tmp_path))


def _grid_model(grid, where, comps):
    """The real `GridModel` (component-major dofs) clamped where `where` holds."""
    from topopt.grid import grid_elasticity
    return grid_elasticity(grid).fix(nodes=where)


@pytest.mark.parametrize("shape", [(4, 2), (3, 2, 2)])
def test_grid_markers_are_the_mesh_markers(shape):
    grid = Grid(shape)
    mesh, _ = grid.to_mesh()
    dim = grid.dim
    where = lambda p: p[0] == 0                             # noqa: E731
    model = fem.elasticity(mesh).fix(nodes=where)
    corner = tuple(float(n) for n in shape)
    f = model.point_load(corner, (0, -1) + (0,) * (dim - 2))
    gm = _grid_model(grid, where, dim)
    node = grid.node_index(shape)
    fg = np.zeros(gm.ndof)
    fg[grid.n_nodes + node] = -1.0                          # component 1 of the corner
    for got, want in zip(boundary_markers(gm, fg), boundary_markers(model, f)):
        np.testing.assert_array_equal(got[np.lexsort(got.T[::-1])],
                                      want[np.lexsort(want.T[::-1])])
    assert boundary_markers(gm)[1].shape == (0, 2 * dim)
    with pytest.raises(ValueError, match="f has shape"):
        boundary_markers(gm, np.ones(3))


@pytest.mark.parametrize("shape", [(6, 3), (4, 2, 2)])
def test_write_results_with_a_grid(tmp_path, shape, monkeypatch):
    grid = Grid(shape)
    x = np.random.default_rng(0).random(grid.n_el)
    result = RunResult("success", None, 1, None, None, {"compliance": 1.0}, x=x, x_phys=x,
                       history=[{"objective": 1.0, "constraints": [0.0]}])
    write_results(str(tmp_path), grid, result, {"problem": "demo"}, "demo",
                  mirror=len(shape) == 2, pictures={"other": (x, "other")} if len(shape) == 2
                  else None)
    files = set(os.listdir(tmp_path))
    assert {"design.png", "history.png", "result.json", "design.npz", "design.vti"} <= files
    assert "design.vtu" not in files and ("design.stl" in files) == (len(shape) == 3)
    import topopt.plot.design3d as d3
    from topopt.plot.design3d import design_figure_3d
    if len(shape) == 3:
        assert "iso-surface" in design_figure_3d(grid, x, "t")._suptitle.get_text()
        monkeypatch.setattr(d3, "MAX_SURFACE_TRIANGLES", 10)
        fig = design_figure_3d(grid, x, "t")
        assert "mean-density projections" in fig._suptitle.get_text()
        img = fig.axes[0].images[0].get_array()             # the mean along z, y up
        np.testing.assert_allclose(img, x.reshape(shape).mean(axis=2).T)
