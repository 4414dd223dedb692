"""Saved designs (`topopt.io`): design.npz, design.vtu, design.stl and load_design.

Every problem script is run on a tiny mesh with a small budget; its folder
must hold the design files, readable by others (0644), the VTU must give back
``x_phys`` and the state field, and `load_design` plus the problem's analysis
must reproduce the compliance in ``result.json``. The STL of a 3-D design must
be a closed surface whose enclosed volume is that of the elements with
``x_phys >= 0.5`` (to 5 %).
"""

import importlib
import json
import os
import stat

import numpy as np
import pytest

from topopt import fem
from topopt.interpolation import simp
from topopt.io import enclosed_volume, iso_surface, load_design, save_design
from topopt.objectives import compliance

meshio = pytest.importorskip("meshio")
pytest.importorskip("skimage")

# (script, keyword arguments of its run(), compliance problem?, state field, is 3-D)
RUNS = {
    "mbb_beam": (dict(nelx=12, nely=4, maxeval=8), True, "displacement", False),
    "cantilever": (dict(nelx=12, nely=6, maxeval=8), True, "displacement", False),
    "cantilever3d": (dict(nelx=12, nely=4, nelz=4, maxeval=20), True, "displacement", True),
    "em_focus": (dict(h=8.0, maxeval=1), False, "u_abs", False),
    "reliable_bracket": (dict(n=8, maxeval=3, samples=1000), False, "displacement", False),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    done = {}
    for name, (kwargs, *_rest) in RUNS.items():
        out = str(tmp_path_factory.mktemp(name))
        module = importlib.import_module(f"problems.{name}")
        done[name] = (module, module.run(out=out, **kwargs), out)
    return done


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("name", RUNS)
def test_design_files_written_0644(runs, name):
    _, _, out = runs[name]
    wanted = ["design.npz", "design.vtu", "result.json", "design.png"]
    wanted += ["design.stl"] if RUNS[name][3] else []
    for f in wanted:
        assert _mode(os.path.join(out, f)) == 0o644, f
    assert ("design.stl" in os.listdir(out)) == RUNS[name][3]


@pytest.mark.parametrize("name", RUNS)
def test_vtu_gives_back_x_phys_and_state(runs, name):
    _, result, out = runs[name]
    state = RUNS[name][2]
    vtu = meshio.read(os.path.join(out, "design.vtu"))
    saved = load_design(out)
    x_phys = vtu.cell_data["x_phys"][0]
    np.testing.assert_allclose(x_phys, saved["x_phys"], rtol=0, atol=1e-12)
    if name == "em_focus":           # whole mesh: the design region holds result.x_phys
        design = saved["cell_data"]["design"].astype(bool)
        np.testing.assert_allclose(x_phys[design], result.x_phys, rtol=0, atol=1e-12)
        assert not np.any(x_phys[~design])
    else:
        np.testing.assert_allclose(x_phys, result.x_phys, rtol=0, atol=1e-12)
        np.testing.assert_allclose(vtu.cell_data["x"][0], result.x, rtol=0, atol=1e-12)
    field = vtu.point_data[state]
    ref = saved["point_data"][state]
    assert np.abs(ref).max() > 0
    np.testing.assert_allclose(field[:, :ref.shape[1]] if ref.ndim == 2 else field, ref,
                               rtol=1e-12, atol=0)
    if ref.ndim == 2 and ref.shape[1] == 2:             # VTK vectors: zero third component
        assert not np.any(field[:, 2])
    np.testing.assert_allclose(vtu.points[:, :saved["mesh"].p.shape[0]], saved["mesh"].p.T)


@pytest.mark.parametrize("name", [n for n in RUNS if RUNS[n][1]])
def test_load_design_reproduces_compliance(runs, name):
    """load_design + the script's setup and top88 analysis: c = f^T K(simp(x_phys))^-1 f."""
    module, result, out = runs[name]
    saved = load_design(out)
    setup = saved["setup"]
    assert setup["problem"] == name
    sizes = {k: setup[k] for k in ("nelx", "nely", "nelz") if k in setup}
    _, model, f = module.setup(*sizes.values())[:3]
    assert np.array_equal(model.mesh.p, saved["mesh"].p)
    assert np.array_equal(model.mesh.t, saved["mesh"].t)
    E = simp(saved["x_phys"], setup["penal"], 1e-9)
    c = float(compliance(fem.solve(model.system(), E, f), f))
    reported = json.load(open(os.path.join(out, "result.json")))["result"]["compliance"]
    assert c == pytest.approx(reported, rel=1e-8)
    # the state saved is that design's displacement: f^T u = c
    u = saved["point_data"]["displacement"]
    nodal = model.basis.nodal_dofs
    fu = float(sum(f[nodal[k]] @ u[:, k] for k in range(nodal.shape[0])))
    assert fu == pytest.approx(reported, rel=1e-8)


# meshio's STL reader multiplies the file's uint32 triangle count (its check of
# ASCII versus binary); harmless overflow warning in meshio 5
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_stl_closed_and_its_volume(runs):
    _, _, out = runs["cantilever3d"]
    saved = load_design(out)
    stl = meshio.read(os.path.join(out, "design.stl"))
    faces = stl.cells_dict["triangle"]
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]),
                    axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert set(counts.tolist()) == {2}, "every edge in exactly two triangles"
    solid = float(np.sum(saved["x_phys"] >= 0.5)) * 1.0          # unit hexahedra
    assert solid > 0
    assert enclosed_volume(stl.points, faces) == pytest.approx(solid, rel=0.05)
    lo, hi = saved["mesh"].p.min(axis=1), saved["mesh"].p.max(axis=1)
    assert np.all(stl.points >= lo - 1e-9) and np.all(stl.points <= hi + 1e-9)


@pytest.mark.parametrize("shape,h", [((3, 2, 2), 1.0), ((4, 3, 2), 0.5), ((2, 2, 5), 2.0)])
def test_iso_surface_of_a_full_block(shape, h):
    """A full box: the surface spans the box exactly; volume nx ny nz h^3 less the chamfers.

    Chamfers of width h / (2 refine) on the 12 edges: volume lost per unit edge
    length (h / 2r)^2 / 2, less the 8 corners; bounded here, not tuned.
    """
    mesh = fem.box(*shape, h=h)
    verts, faces = iso_surface(mesh, np.ones(mesh.t.shape[1]), refine=4)
    np.testing.assert_allclose(verts.min(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(verts.max(axis=0), np.array(shape) * h, atol=1e-12)
    full = np.prod(shape) * h**3
    edges = 4 * sum(shape) * h
    chamfer = edges * (h / 8) ** 2 / 2
    assert full - chamfer <= enclosed_volume(verts, faces) < full


def test_load_design_round_trip_and_as_x0(tmp_path):
    mesh = fem.rectangle(4, 3)
    x = np.linspace(0, 1, 12)
    written = save_design(str(tmp_path), mesh, x, x**2, {"problem": "t", "volfrac": 0.5},
                          point_data={"temperature": np.arange(20.0)})
    assert [os.path.basename(p) for p in written] == ["design.npz", "design.vtu"]
    saved = load_design(str(tmp_path / "design.npz"))
    assert type(saved["mesh"]).__name__ == "MeshQuad1"
    assert np.array_equal(saved["mesh"].t, mesh.t) and np.array_equal(saved["mesh"].p, mesh.p)
    assert np.array_equal(saved["x"], x) and np.array_equal(saved["x_phys"], x**2)
    assert saved["setup"] == {"problem": "t", "volfrac": 0.5}
    assert np.array_equal(saved["point_data"]["temperature"], np.arange(20.0))
    # used as x0 of a run on the same mesh
    from problems import mbb_beam
    result = mbb_beam.run(nelx=4, nely=3, maxeval=2, x0=saved["x"], verbose=False)
    assert result.evaluations == 2


@pytest.mark.parametrize("kwargs,match", [
    (dict(x=np.ones(5)), "x has shape"),
    (dict(x_phys=np.ones(13)), "x_phys has shape"),
    (dict(point_data={"u": np.ones(3)}), r"point_data\['u'\]"),
    (dict(cell_data={"setup": np.ones(12)}), "may not be named"),
    (dict(cell_data={"x": np.ones(12)}), "may not be named"),
    (dict(point_data={"point_u": np.ones(20)}), "may not be named"),
    (dict(point_data={"u": np.ones(20, dtype=complex)}), "real numbers"),
    (dict(cell_data={"E": np.ones(12, dtype=complex)}), "E is complex"),
])
def test_save_design_refuses(tmp_path, kwargs, match):
    args = dict(x=np.ones(12), x_phys=np.ones(12), setup={}) | kwargs
    with pytest.raises(ValueError, match=match):
        save_design(str(tmp_path), fem.rectangle(4, 3), **args)
    assert not os.listdir(tmp_path)


def test_refusals_of_iso_surface_and_load_design(tmp_path):
    mesh = fem.box(2, 2, 2)
    with pytest.raises(ValueError, match="level"):
        iso_surface(mesh, np.ones(8), level=1.0)
    with pytest.raises(ValueError, match="refine"):
        iso_surface(mesh, np.ones(8), refine=0)
    with pytest.raises(ValueError, match="empty"):
        iso_surface(mesh, np.zeros(8))
    with pytest.raises(TypeError, match="hexahedra"):
        iso_surface(fem.rectangle(2, 2), np.ones(4))
    np.savez(tmp_path / "other.npz", x=np.ones(3))
    with pytest.raises(ValueError, match="not a topopt design"):
        load_design(tmp_path / "other.npz")


def test_empty_3d_design_skips_the_stl(tmp_path, capsys):
    """No element with x_phys >= 0.5: npz and vtu, no STL (an earlier one removed), one line."""
    mesh = fem.box(2, 2, 2)
    save_design(str(tmp_path), mesh, np.ones(8), np.ones(8), {})
    assert os.path.exists(tmp_path / "design.stl")
    capsys.readouterr()
    written = save_design(str(tmp_path), mesh, np.ones(8), np.full(8, 0.4), {})
    assert [os.path.basename(p) for p in written] == ["design.npz", "design.vtu"]
    assert not os.path.exists(tmp_path / "design.stl")
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and line.startswith("design.stl not written: no element")


def test_without_meshio_npz_still_written(tmp_path, monkeypatch, capsys):
    """A missing io extra: design.npz written, one line naming the extra, no crash."""
    import sys
    monkeypatch.setitem(sys.modules, "meshio", None)            # import raises ImportError
    written = save_design(str(tmp_path), fem.box(2, 2, 2), np.ones(8), np.ones(8), {})
    assert [os.path.basename(p) for p in written] == ["design.npz"]
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and "pip install 'topopt[io]'" in line
    from topopt.io import write_vtu
    with pytest.raises(ImportError, match=r"topopt\[io\]"):
        write_vtu(str(tmp_path / "d.vtu"), fem.box(2, 2, 2), {"x": np.ones(8)})
