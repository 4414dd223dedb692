"""Pictures (`topopt.plot`), tested by what they draw, not by pixels.

A design has a colour bar, a triangle at each fixed node and an arrow at each
loaded node (its tip or tail on the node, along the force); a mirrored half
model shows the whole structure without its symmetry condition; a 3-D design
is the iso-surface of ``design.stl`` with the axis limits at its bounding box
and the drawn box filling the frame; a history plots the objective in the
user's unit, names each constraint, and its legend lies outside the axes.
"""

import importlib
import json
import os
import stat

import numpy as np
import pytest
import skfem

from topopt import fem
from topopt import plot
from topopt.fem.mesh import element_centroids
from topopt.plot.design3d import _projected_box
from topopt.formulations.compliance import ComplianceProblem
from topopt.io.folder import plot_record


def markers_drawn(ax):
    """The points of the support markers (lines with gid "supports")."""
    pts = [np.column_stack(line.get_data()) for line in ax.lines
           if line.get_gid() == "supports"]
    return np.concatenate(pts) if pts else np.zeros((0, 2))


def arrows_drawn(ax):
    """``(tail, tip)`` of each load arrow."""
    return [tuple(np.asarray(p._posA_posB, dtype=float)) for p in ax.patches
            if p.get_gid() == "load"]


def same_rows(a, b):
    a = np.asarray(a, dtype=float).round(9)
    b = np.asarray(b, dtype=float).round(9)
    return sorted(map(tuple, a)) == sorted(map(tuple, b))


def cantilever(nelx=4, nely=2):
    model = fem.elasticity(fem.rectangle(nelx, nely)).fix(nodes=lambda p: np.isclose(p[0], 0))
    return model, model.point_load((nelx, 0), (0, -1))


def half_mbb(nelx=6, nely=2):
    from topopt_problems.mbb_beam import setup
    _, model, f = setup(nelx, nely)
    return model, f


# --------------------------------------------------------------------------
# boundary_markers


def test_boundary_markers_are_the_fixed_dofs_and_the_loads():
    """Rows: a node's coordinates, then 1 per fixed component / its nodal force."""
    model, f = half_mbb(6, 2)
    supports, loads = plot.boundary_markers(model, f)
    # symmetry: u_x = 0 on x = 0 (3 nodes); roller: u_y = 0 at (6, 0)
    assert same_rows(supports, [[0, 0, 1, 0], [0, 1, 1, 0], [0, 2, 1, 0], [6, 0, 0, 1]])
    assert same_rows(loads, [[0, 2, 0, -1]])


def test_boundary_markers_of_two_load_cases_and_of_a_heat_model():
    model, f = cantilever(4, 2)
    g = model.point_load((4, 2), (1, 0))
    _, loads = plot.boundary_markers(model, np.column_stack([f, g]))
    assert same_rows(loads, [[4, 0, 0, -1], [4, 2, 1, 0]])
    heat = fem.heat(fem.rectangle(2, 2)).fix(nodes=(0, 0))
    supports, loads = plot.boundary_markers(heat, heat.point_load((2, 2), (3.0,)))
    assert same_rows(supports, [[0, 0, 1]]) and same_rows(loads, [[2, 2, 3]])


@pytest.mark.parametrize("f, match", [
    (np.zeros(5), r"f has shape \(5,\)"),
    (np.zeros(30, dtype=complex), "expected real"),
])
def test_boundary_markers_refuse(f, match):
    model, _ = cantilever(4, 2)
    with pytest.raises(ValueError, match=match):
        plot.boundary_markers(model, f)


# --------------------------------------------------------------------------
# 2-D designs


# (model builder, mirror, expected support points, expected load (node, force))
DESIGNS = {
    "cantilever": (cantilever, False, [(0, 0), (0, 1), (0, 2)], [((4, 0), (0, -1))]),
    "half MBB": (half_mbb, False, [(0, 0), (0, 1), (0, 2), (6, 0)], [((0, 2), (0, -1))]),
    # the whole beam: rollers at both ends, the symmetry line not drawn, one load
    "MBB mirrored": (half_mbb, True, [(6, 0), (-6, 0)], [((0, 2), (0, -1))]),
}


@pytest.mark.parametrize("name", DESIGNS)
def test_design_has_colorbar_supports_and_loads(name):
    build, mirror, points, loads = DESIGNS[name]
    model, f = build()
    s, l = plot.boundary_markers(model, f)
    fig = plot.design_figure(model.mesh, np.linspace(0, 1, model.n_el), mirror=mirror,
                             supports=s, loads=l, label="density x_phys")
    ax, cax = fig.axes
    assert cax.get_label() == "<colorbar>"
    assert "density x_phys" in (cax.get_xlabel(), cax.get_ylabel())
    assert same_rows(markers_drawn(ax), points)
    arrows = arrows_drawn(ax)
    assert len(arrows) == len(loads)
    for (tail, tip), (node, force) in zip(arrows, loads):
        d = np.subtract(tip, tail)
        assert np.allclose(tip, node) or np.allclose(tail, node)
        assert np.allclose(d / np.linalg.norm(d), force)
    x0, x1 = (-6.0 if mirror else 0.0), model.mesh.p[0].max()
    assert ax.images[0].get_extent() == pytest.approx([x0, x1, 0, model.mesh.p[1].max()])
    lo, hi = np.array([ax.get_xlim(), ax.get_ylim()]).T
    ends = np.concatenate([np.array(a) for a in arrows] + [np.array(points)])
    assert np.all(ends >= lo) and np.all(ends <= hi)    # markers and arrows inside the frame


def test_arrow_points_away_from_a_load_on_the_far_edge():
    """A load whose arrow would cross the design starts at the node (cantilever tip)."""
    model, f = cantilever(4, 2)
    fig = plot.design_figure(model.mesh, np.ones(8), loads=plot.boundary_markers(model, f)[1])
    (tail, tip), = arrows_drawn(fig.axes[0])
    assert np.allclose(tail, (4, 0)) and tip[1] < 0


def test_mirrored_polygons_and_no_colorbar():
    """An unstructured mesh mirrored: the polygons and their reflection."""
    mesh = skfem.MeshTri.init_tensor(np.array([0, 1, 3.0]), np.array([0, 1.0]))
    x = np.arange(mesh.t.shape[1], dtype=float) / 4
    fig = plot.design_figure(mesh, x, mirror=True, colorbar=False)
    assert len(fig.axes) == 1
    coll, = fig.axes[0].collections
    polys = [p.vertices for p in coll.get_paths()]
    assert len(polys) == 2 * mesh.t.shape[1]
    assert min(p[:, 0].min() for p in polys) == pytest.approx(-3.0)
    np.testing.assert_allclose(coll.get_array(), np.concatenate([x, x]))


@pytest.mark.parametrize("kwargs, match", [
    (dict(supports=np.zeros((2, 7))), "supports has shape"),
    (dict(loads=np.full((1, 4), np.nan)), "loads has shape"),
    (dict(x=np.ones(3)), r"x has shape \(3,\)"),
])
def test_design_figure_refuses(kwargs, match):
    model, _ = cantilever(4, 2)
    kwargs = {"x": np.ones(8), **kwargs}
    with pytest.raises(ValueError, match=match):
        plot.design_figure(model.mesh, **kwargs)


# --------------------------------------------------------------------------
# 3-D designs


def test_3d_design_is_the_iso_surface_filling_the_frame():
    """Axis limits = the iso-surface's bounding box (mesh y up); equal axes; the box
    as drawn fills the figure's width or height to 10 %, inside the figure."""
    pytest.importorskip("skimage")
    from topopt.io.designs import iso_surface
    mesh = fem.box(8, 4, 2)
    c = element_centroids(mesh)
    x = ((c[:, 1] < 1) | (c[:, 0] < 1)).astype(float)          # an L: base and wall
    fig = plot.design_figure_3d(mesh, x, title="L")
    ax = fig.axes[0]
    verts, _ = iso_surface(mesh, x, 0.5, refine=2)
    lo, hi = verts.min(axis=0)[[0, 2, 1]], verts.max(axis=0)[[0, 2, 1]]
    limits = np.array([ax.get_xlim(), ax.get_ylim(), ax.get_zlim()])
    np.testing.assert_allclose(limits, np.column_stack([lo, hi]), atol=1e-12)
    aspect = np.asarray(ax.get_box_aspect())
    np.testing.assert_allclose(aspect / aspect[0], (hi - lo) / (hi - lo)[0], rtol=1e-9)
    corners = np.array([[a, b, d] for a in limits[0] for b in limits[1] for d in limits[2]])
    box = _projected_box(fig, ax, corners)
    width, height = fig.bbox.width, fig.bbox.height
    assert box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height
    assert (box[2] - box[0]) / width > 0.9 or (box[3] - box[1]) / height > 0.8


def test_3d_supports_and_loads_drawn():
    pytest.importorskip("skimage")
    from topopt_problems.cantilever3d import setup
    mesh, model, f = setup(4, 2, 2)
    s, l = plot.boundary_markers(model, f)
    fig = plot.design_figure_3d(mesh, np.ones(16), supports=s, loads=l)
    ax = fig.axes[0]
    gids = {a.get_gid() for a in ax.collections}
    assert {"supports", "loads"} <= gids
    quiver, = [a for a in ax.collections if a.get_gid() == "loads"]
    assert len(quiver.get_segments()) >= len(l)            # a shaft per load (and heads)


def test_3d_without_solid_draws_the_domain_and_says_so():
    """Early in a run no element may reach 0.5: the domain's 12 edges, a note."""
    fig = plot.design_figure_3d(fem.box(4, 2, 2), np.full(16, 0.3), title="early")
    ax = fig.axes[0]
    assert len(ax.lines) == 12 and "no element has x_phys >= 0.5" in fig._suptitle.get_text()
    limits = np.array([ax.get_xlim(), ax.get_ylim(), ax.get_zlim()])
    np.testing.assert_allclose(limits, [[0, 4], [0, 2], [0, 2]])


def test_3d_without_scikit_image_draws_voxels(monkeypatch):
    """The ``io`` extra missing: voxels of the elements x >= 0.5, their bounding box."""
    import topopt.io.designs
    from topopt.io.design_file import EXTRA

    def missing(module, what):
        raise ImportError(f"{what} needs {module} ({EXTRA})")
    monkeypatch.setattr(topopt.io.designs, "_require", missing)
    mesh = fem.box(4, 2, 2)
    x = (element_centroids(mesh)[:, 0] < 2).astype(float)      # the half x < 2
    fig = plot.design_figure_3d(mesh, x, title="v")
    ax = fig.axes[0]
    assert "voxels" in fig._suptitle.get_text() and "topopt[io]" in fig._suptitle.get_text()
    limits = np.array([ax.get_xlim(), ax.get_ylim(), ax.get_zlim()])
    np.testing.assert_allclose(limits, [[0, 2], [0, 2], [0, 2]])


# --------------------------------------------------------------------------
# histories


HISTORY = [{"objective": 1.0 / k, "constraints": [0.1 / k - 0.05, -0.2], "stage": k // 4}
           for k in range(1, 9)]


def test_history_in_user_units_named_constraints_legend_outside():
    fig = plot.history_figure(HISTORY, title="t", objective_label="compliance c",
                              constraint_names=["volume V / 0.5 - 1", "g2 name"],
                              objective_scale=250.0)
    ax, ax2 = fig.axes
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [250.0 / k for k in range(1, 9)])
    assert ax.get_ylabel() == "compliance c" and ax.get_xlabel() == "evaluation"
    assert [line.get_label() for line in ax2.lines[:2]] == ["volume V / 0.5 - 1", "g2 name"]
    legend, = fig.legends
    assert [t.get_text() for t in legend.texts] == ["compliance c", "volume V / 0.5 - 1",
                                                     "g2 name", "stage change"]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    assert not box.overlaps(ax.get_window_extent(renderer))  # covers no data
    assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1)


@pytest.mark.parametrize("kwargs, match", [
    (dict(constraint_names=["one"]), "1 names for 2 constraints"),
    (dict(objective_scale=0.0), "objective_scale must be finite and non-zero"),
    (dict(objective_scale=np.inf), "objective_scale must be finite and non-zero"),
])
def test_history_refuses(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plot.history_figure(HISTORY, **kwargs)


def test_history_without_constraints_refuses_names():
    with pytest.raises(ValueError, match="no constraints"):
        plot.history_figure([{"objective": 1.0}], constraint_names=["g"])


def test_pngs_are_written_0644_under_a_private_umask(tmp_path):
    model, f = cantilever(4, 2)
    old = os.umask(0o077)
    try:
        paths = [plot.save_design(model.mesh, np.ones(8), str(tmp_path / "d.png")),
                 plot.save_history(HISTORY, str(tmp_path / "h.png"))]
    finally:
        os.umask(old)
    for p in paths:
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o644
    assert sorted(os.listdir(tmp_path)) == ["d.png", "h.png"]      # no temporary left


# --------------------------------------------------------------------------
# what a compliance run records for the pictures


def test_compliance_run_records_units_names_and_markers(tmp_path):
    """result.json: objective_scale * (c / c0) is c, with c0 the compliance of the
    uniform start; the volume constraint named; the model's supports and loads."""
    from topopt_problems import mbb_beam
    mbb_beam.run(nelx=12, nely=4, maxeval=5, out=str(tmp_path))
    saved = json.load(open(tmp_path / "result.json"))
    _, model, f = mbb_beam.setup(12, 4)
    c0 = float(ComplianceProblem(model, f, 0.5, 2.4).compliance(np.full(48, 0.5)))
    settings = saved["plot"]
    assert settings["objective_scale"] * saved["objective_history"][0] == pytest.approx(c0)
    assert settings["objective_label"] == "compliance c"
    assert settings["constraint_names"] == ["volume V / 0.5 - 1"]
    assert settings["mirror"] is True
    supports, loads = plot.boundary_markers(model, f)
    np.testing.assert_array_equal(settings["supports"], supports)
    np.testing.assert_array_equal(settings["loads"], loads)
    assert len(saved["constraint_history"]) == len(saved["objective_history"]) == 5


def test_plot_record_refuses_a_zero_scale():
    with pytest.raises(ValueError, match="objective_scale"):
        plot_record(HISTORY, "c", 0.0)


def test_write_results_refuses_mirror_in_3d(tmp_path):
    """A 3-D design is never mirrored: refused before anything is written."""
    from topopt.io.folder import write_results
    from topopt.io.result import RunResult
    mesh = fem.box(2, 1, 1)
    result = RunResult("success", None, 1, None, None, {"compliance": 1.0},
                       x=np.ones(2), x_phys=np.ones(2), history=[{"objective": 1.0}])
    with pytest.raises(ValueError, match="mirror=True draws a 2-D half model"):
        write_results(str(tmp_path / "out"), mesh, result, {}, "t", mirror=True)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("width", [plot.MAX_CONSTRAINT_LINES, plot.MAX_CONSTRAINT_LINES + 1, 149])
def test_history_of_many_constraints_draws_their_maximum(width):
    """Up to MAX_CONSTRAINT_LINES a line per constraint, beyond one line: the maximum."""
    rng = np.random.default_rng(width)
    g = rng.normal(size=(6, width))
    history = [{"objective": 1.0, "constraints": list(row)} for row in g]
    fig = plot.history_figure(history)
    ax2 = fig.axes[1]
    curves = [line for line in ax2.lines if line.get_linestyle() == "--"]
    labels = [t.get_text() for t in fig.legends[0].texts]
    if width <= plot.MAX_CONSTRAINT_LINES:
        assert len(curves) == width and labels[1:] == [f"g{j + 1}" for j in range(width)]
        np.testing.assert_array_equal(curves[-1].get_ydata(), g[:, -1])
    else:
        assert len(curves) == 1 and labels[1:] == [f"max of {width} constraints"]
        np.testing.assert_array_equal(curves[0].get_ydata(), g.max(axis=1))


# --------------------------------------------------------------------------
# the whole setup of every problem (topopt.plot.Markers), drawn where it acts

def drawn(ax, gid):
    """Every point the artists with `gid` draw: line data, arrow ends, segment ends,
    rectangle corners, scatter offsets (``(n, 2)``)."""
    from matplotlib.collections import LineCollection, PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch, Rectangle
    pts = [np.zeros((0, 2))]
    for art in [*ax.lines, *ax.patches, *ax.collections]:
        if art.get_gid() != gid:
            continue
        if isinstance(art, Line2D):
            pts.append(np.column_stack(art.get_data()).astype(float))
        elif isinstance(art, FancyArrowPatch):
            pts.append(np.asarray(art._posA_posB, dtype=float))
        elif isinstance(art, Rectangle):
            (x, y), w, h = art.get_xy(), art.get_width(), art.get_height()
            pts.append(np.array([[x, y], [x + w, y + h]]))
        elif isinstance(art, LineCollection):
            pts += [np.asarray(s, dtype=float) for s in art.get_segments()]
        elif isinstance(art, PathCollection):
            pts.append(np.asarray(art.get_offsets(), dtype=float))
    return np.concatenate(pts)


def near(points, target, tol):
    return len(points) and np.min(np.linalg.norm(points - np.asarray(target, float), axis=1)) <= tol


def _structural(name, *args):
    """``(mesh, Markers.of(model, f))`` of a problem whose picture is its model's."""
    import importlib
    out = importlib.import_module(f"topopt_problems.{name}").setup(*args)
    return out[0], plot.Markers.of(out[1], out[2])


def _focus(name):
    import importlib
    from types import SimpleNamespace
    from topopt.formulations.focus_output import focus_markers
    module = importlib.import_module(f"topopt_problems.{name}")
    mesh, design, center = module.cell(8.0) if hasattr(module, "cell") else \
        importlib.import_module("topopt_problems.em_focus").cell(8.0)
    prob = SimpleNamespace(mesh=mesh, design=design, center=center, setup=module.SETUP)
    return mesh, focus_markers(prob)


def _case(name):
    """``(mesh, markers, design_figure keywords, [(gid, point, tol)], legend labels)``: a
    problem's setup at a small size, as its script draws it, and where each marker acts."""
    import topopt_problems.arch as arch
    import topopt_problems.buckling_column as column
    import topopt_problems.cantilever_hole as hole
    import topopt_problems.cantilever_two_loads as two
    import topopt_problems.dynamic_beam as dynamic
    import topopt_problems.eigen_beam as eigen
    import topopt_problems.heat_sink as sink
    import topopt_problems.inverter as inverter
    import topopt_problems.mesh_bracket as bracket
    import topopt_problems.robust_inverter as robust_inverter
    import topopt_problems.thermo_beam as thermo
    import topopt_problems.transient_heat as transient
    if name == "mbb_beam":                                   # the half model drawn whole
        mesh, m = _structural(name, 6, 2)
        return mesh, m, {"mirror": True}, [("supports", (6, 0), 0), ("supports", (-6, 0), 0),
                                            ("load", (0, 2), 0)], []
    if name == "printable_cantilever":                       # the build direction beside it
        import topopt_problems.printable_cantilever as printable
        mesh, model, f = printable.setup(20, 8)
        return mesh, printable.markers(model, f, 20, 8, "+y"), {}, [
            ("load", (20, 4), 0), ("direction", (21.2, 3), 1e-9), ("direction", (21.2, 5), 1e-9)], \
            ["build direction +y"]
    if name in ("cantilever", "robust_cantilever"):
        if name == "robust_cantilever":
            from topopt_problems.robust_cantilever import MU, setup
            mesh, model, B = setup(8, 4)
            m = plot.Markers.of(model, B @ MU)
            tip = (8, 2)
        else:
            mesh, m = _structural(name, 8, 4)
            tip = (8, 0)
        return mesh, m, {}, [("supports", (0, 0), 0), ("supports", (0, 4), 0),
                             ("load", tip, 0)], []
    if name == "multimaterial_beam":
        from topopt_problems.multimaterial_beam import setup
        mesh, model, f = setup(6, 2)
        return mesh, plot.Markers.of(model, f), {"mirror": True}, [
            ("supports", (-6, 0), 0), ("load", (0, 2), 0)], []
    if name == "reliable_bracket":                           # distributed over the top patch
        mesh, m = _structural(name, 10)
        return mesh, m, {}, [("supports", (0, 0), 0), ("supports", (10, 0), 0),
                             ("load", (4, 10), 0), ("load", (6, 10), 0)], []
    if name == "l_bracket":                                  # a shear load: its resultant
        from topopt_problems.l_bracket import SIDE
        mesh, m = _structural(name, 40)                      # 3 loaded nodes: 35, 37.5, 40
        return mesh, m, {}, [("supports", (0, SIDE), 0), ("load", (SIDE, 0.375 * SIDE), 1e-9)], []
    if name == "cantilever_hole":
        mesh, model, f, passive = hole.setup(45, 30)
        (cx, cy), r = hole.hole(45, 30)
        return mesh, hole.markers(model, f, passive), {}, [
            ("load", (45, 0), 0), ("region", (cx - r, cy), 1.0), ("region", (cx + r, cy), 1.0),
            ("region", (cx, cy + r), 1.0)], ["passive void (hole)"]
    if name == "cantilever_two_loads":
        mesh, model, f = two.setup(4, 4)
        return mesh, two.markers(model, f), {}, [("load", (4, 0), 0), ("load", (4, 4), 0)], \
            ["load case 1", "load case 2"]
    if name == "cantilever3d":
        from topopt_problems.cantilever3d import setup
        mesh, model, f = setup(4, 2, 2)
        return mesh, plot.Markers.of(model, f), {}, [], []
    if name in ("em_focus", "em_robust"):
        mesh, m = _focus(name)
        return mesh, m, {"units": "nm", "xlim": (-110, 110), "ylim": (190, 410)}, [
            ("focus", (0, 300), 2.0), ("region", (0, 400), 3.0), ("region", (0, 310), 3.0),
            ("body_load", (-88, 403.4), 1.0)], ["focal point x0", "design region",
                                                 "incident wave, λ = 532 nm"]
    if name == "heat_sink":
        mesh, model, f = sink.setup(20, 20)
        return mesh, sink.markers(model, 20, 20), {}, [
            ("supports", (0, 10), 0), ("body_load", (0, 0), 0), ("body_load", (20, 20), 0)], \
            ["sink T = 0", "uniform heat source q = 0.01"]
    if name in ("inverter", "robust_inverter"):
        module = inverter if name == "inverter" else robust_inverter
        mesh, model, f, _ = module.setup(10, 20)
        return mesh, module.markers(model, f, 20), {"mirror": True}, [
            ("load", (0, 0), 0), ("port", (0, 20), 0), ("spring", (0, 0), 0),
            ("spring", (0, 20), 0), ("supports", (10, 0), 0), ("supports", (-10, 0), 0)], \
            ["input force f_in", "springs k_in, k_out", "output port (u_out minimized)"]
    if name == "eigen_beam":
        mesh, model, M0 = eigen.setup(16, 4)
        return mesh, eigen.markers(model, M0, 0.2), {}, [
            ("mass", (8, 2), 1e-9), ("supports", (0, 2), 0), ("supports", (16, 2), 0)], \
            ["non-structural mass (0.2 x structural)"]
    if name == "arch":
        mesh, model, f, _ = arch.setup(10, 8, 0.3, 4.0)
        return mesh, arch.markers(model, f, 10, 8), {"mirror": True}, [
            ("load", (0, 0), 0), ("supports", (10, 0), 0), ("supports", (-10, 0), 0),
            ("body_load", (8.5, 7.36), 1e-9), ("body_load", (-8.5, 7.36), 1e-9)], \
            ["point load P", "self-weight ρg"]
    if name == "dynamic_beam":
        mesh, model, f = dynamic.setup(8, 4)
        m = plot.Markers.of(model, f, labels={"load": "harmonic load f cos(ωt)"})  # as the script
        return mesh, m, {}, [("load", (8, 2), 0)], \
            ["harmonic load f cos(ωt)"]
    if name == "thermo_beam":
        mesh, model, thermal, f, q = thermo.setup(6, 4)
        return mesh, thermo.markers(model, thermal, f, q), {"mirror": True}, [
            ("load", (0, 0), 0), ("heat", (0, 0), 0), ("supports", (6, 4), 0),
            ("supports", (-6, 4), 0)], ["clamped, T = 0", "load P", "heat source Q"]
    if name == "transient_heat":
        model, Q, *_ = transient.setup(30, 45, 4, 0.1)
        heaters = [model.mesh.p[:, Q[:, j] > 0].mean(axis=1) for j in range(3)]
        return model.mesh, transient.markers(model, Q), {"units": "m"}, [
            ("heat", c, 1e-12) for c in heaters] + [("supports", (0, 0), 0)], \
            ["cold edge T = 0", "heaters (6000, 750, 1000 W)"]
    if name == "buckling_column":
        mesh, model, f, passive = column.setup(24, 12)
        return mesh, column.markers(model, f, passive), {}, [
            ("load", (24, 6), 0), ("load", (24, 5), 0), ("load", (24, 7), 0),
            ("region", (24, 6), 1.3), ("supports", (0, 0), 0)], \
            ["axial load (unit resultant)", "passive solid seat"]
    if name == "mesh_bracket":
        mesh, model, f, passive = bracket.setup()
        (bx, by, br), (px, py, pr) = bracket.BOLTS[0], bracket.PIN
        return mesh, bracket.markers(model, f, passive), {}, [
            ("supports", (bx - br, by), 1.5), ("load", (px, py - pr), 1.5),
            ("region", (bx - br - bracket.BOSS, by), 2.5)], \
            ["bolted holes", "pin load", "passive solid bosses"]
    if name in ("double_pipe", "diffuser", "pipe_bend", "heat_sink_flow"):
        return _flow_case(name)
    if name == "pipe_bend3d":            # no 3-D markers (supports, loads): its openings
        mesh, _ = importlib.import_module("topopt_problems.pipe_bend3d").setup(6)  # in flow.png
        return mesh, None, {}, [], []
    raise KeyError(name)


def _flow_case(name):
    """`_case` of the 2-D flow problems: their ports (and heated block), as `run_flow` draws."""
    module = importlib.import_module(f"topopt_problems.{name}")
    if name == "double_pipe":
        mesh, _ = module.setup(1.5, 6)
        return mesh, module.markers(1.5), {}, [
            ("port", p, 0) for p in ((0, 0.25), (0, 0.75), (1.5, 0.25), (1.5, 0.75))], \
            ["inlets and outlets, parabolic, peak 1"]
    if name == "diffuser":
        mesh, _ = module.setup(6)
        return mesh, module.markers(), {}, [("port", (0, 0.5), 0), ("port", (1, 0.5), 0)], \
            ["inlet (peak 1) and outlet (peak 3), parabolic"]
    if name == "pipe_bend":
        mesh, _ = module.setup(100, 5)
        return mesh, module.markers(), {}, [("port", (0, 0.8), 0), ("port", (0.8, 0), 0)], \
            ["inlet, parabolic, peak 1", "outlet, u_x = 0"]
    mesh, *_ = module.setup(4)                                       # heat_sink_flow
    return mesh, module.markers(mesh), {}, [("port", (0, 0.5), 0), ("region", (0.5, 0.5), 0.5),
                                            ("region", (1.5, 0.5), 0.5)], \
        ["parabolic inflow, peak 1, T = 0", "heated block, Q = 1 per area"]


import topopt_problems as _problems  # noqa: E402


@pytest.mark.parametrize("name", _problems.__all__)
def test_every_problem_draws_its_whole_setup(name):
    """Each gallery problem's markers are drawn where they act, with their legend."""
    mesh, markers, kwargs, where, labels = _case(name)
    if markers is None:                                    # a 3-D flow: nothing to mark
        assert mesh.p.shape[0] == 3 and plot.design_figure_3d(mesh, np.ones(mesh.t.shape[1]))
        return
    if mesh.p.shape[0] == 3:
        supports, loads = _arrays(markers)
        fig = plot.design_figure_3d(mesh, np.ones(mesh.t.shape[1]), supports=supports,
                                    loads=loads)
        gids = {a.get_gid() for a in fig.axes[0].collections}
        assert {"supports", "loads"} <= gids
        return
    fig = design_figure_of(mesh, markers, **kwargs)
    ax = fig.axes[0]
    for gid, point, tol in where:
        assert near(drawn(ax, gid), point, tol + 1e-9), (gid, point)
    legend = fig.legends[0] if fig.legends else None
    texts = [t.get_text() for t in legend.get_texts()] if legend else []
    assert texts == labels
    x0, x1 = mesh.p[0].min(), mesh.p[0].max()
    if kwargs.get("mirror"):
        x0 = 2 * x0 - x1
    if "xlim" not in kwargs:                               # the axes give the lengths
        assert np.allclose(sorted(ax.get_xticks())[::len(ax.get_xticks()) - 1], [x0, x1])
        assert np.allclose(sorted(ax.get_yticks())[::len(ax.get_yticks()) - 1],
                           [mesh.p[1].min(), mesh.p[1].max()])
    unit = kwargs.get("units")
    assert ax.get_xlabel() == (f"x ({unit})" if unit else "x")


def design_figure_of(mesh, markers, **kwargs):
    return plot.design_figure(mesh, np.full(mesh.t.shape[1], 0.5), markers=markers, **kwargs)


def _arrays(markers):
    """Supports and loads of a 3-D `Markers` as `boundary_markers` arrays."""
    s = [np.column_stack([m["points"], m["vectors"]]) for m in markers if m["kind"] == "support"]
    f = [np.column_stack([m["points"], m["vectors"]]) for m in markers if m["kind"] == "load"]
    return np.concatenate(s), np.concatenate(f)


@pytest.mark.parametrize("args, match", [
    (("mas", [(0, 0)]), "did you mean 'mass'"),
    (("mass", [(0, 0, 0)]), r"expected \(n, 2\)"),
    (("mass", np.zeros((0, 2))), "n >= 1"),
    (("load", [(0, 0)]), "needs vectors"),
    (("load", [(0, 0)], [(1, 0, 0)]), "expected 2"),
    (("mass", [(0, 0)], [(1, 0)]), "takes no vectors"),
    (("region", [(0, 0), (1, 0), (1, 1)]), "pairs"),
    (("focus", [(np.nan, 0)]), "finite"),
    (("load", [(0, 0), (1, 0)], [(0, 1)]), "one row per point"),
])
def test_markers_refuse(args, match):
    with pytest.raises(ValueError, match=match):
        plot.Markers().add(*args)


def test_markers_of_refuses_labels_of_other_cases():
    model, f = cantilever()
    with pytest.raises(ValueError, match="names 2 load cases; f has 1"):
        plot.Markers.of(model, f, labels={"load": ["a", "b"]})
    with pytest.raises(ValueError, match="unknown kinds"):
        plot.Markers.of(model, f, labels={"loads": "a"})


def test_markers_round_trip_and_mirror():
    """A record reads back the same markers; mirrored, a half model's markers are the
    whole structure's: the symmetry condition dropped, a load on the line drawn once,
    a spring off the line at both sides with its direction reflected."""
    model, f = half_mbb()
    m = plot.Markers.of(model, f, labels={"load": "P"}).add("spring", [(2, 0)], [(1, 0)])
    back = plot.Markers.from_record(json.loads(json.dumps(m.record())))
    assert back.kinds() == m.kinds() == ["support", "load", "spring"]
    assert all(np.array_equal(a["points"], b["points"]) for a, b in zip(m, back))
    whole = m.mirrored(0.0, 1e-9)
    assert same_rows(whole.items[0]["points"], [(6, 0), (-6, 0)])          # roller only
    assert same_rows(whole.items[1]["points"], [(0, 2)]) and whole.items[1]["label"] == "P"
    assert same_rows(np.column_stack([whole.items[2]["points"], whole.items[2]["vectors"]]),
                     [(2, 0, 1, 0), (-2, 0, -1, 0)])


def test_region_is_the_outline_of_its_elements():
    """The 2 x 2 block of a 4 x 4 grid: 8 edges of length 1 around the square (1..3)^2,
    drawn as one closed dashed polyline."""
    mesh = fem.rectangle(4, 4)
    c = element_centroids(mesh)
    block = (np.abs(c[:, 0] - 2) < 1) & (np.abs(c[:, 1] - 2) < 1)
    m = plot.Markers().region(mesh, block, "passive")
    seg = m.items[0]["points"].reshape(-1, 2, 2)
    assert len(seg) == 8 and np.allclose(np.linalg.norm(seg[:, 1] - seg[:, 0], axis=1), 1)
    assert np.all((seg >= 1) & (seg <= 3)) and np.all(np.any((seg == 1) | (seg == 3), axis=2))
    ax = plot.design_figure(mesh, np.ones(16), markers=m).axes[0]
    (line,) = [a for a in ax.collections if a.get_gid() == "region"]
    (path,) = line.get_segments()
    assert len(path) == 9 and np.allclose(path[0], path[-1])


def test_axes_give_the_lengths_in_units():
    mesh = fem.rectangle(6, 3)
    ax = plot.design_figure(mesh, np.ones(18), units="mm").axes[0]
    assert list(ax.get_xticks()) == [0, 6] and list(ax.get_yticks()) == [0, 3]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x (mm)", "y (mm)")
    assert not plot.design_figure(mesh, np.ones(18), axes=False).axes[0].axison


def test_write_results_draws_the_markers_once_and_show_draws_them(tmp_path, monkeypatch):
    """`write_results(markers=, units=)` draws design.png once, with the markers and the
    unit, under the run's title; keeps them in result.json, and `topopt show` draws them
    from there."""
    from PIL import Image
    from topopt.cli.command import show_image
    from topopt.io.designs import load_design
    from topopt.io.folder import write_results
    from topopt.io.result import RunResult
    model, f = cantilever()
    r = RunResult("success", None, 1, None, None, {"compliance": 2.5}, x=np.ones(8),
                  x_phys=np.ones(8), history=[{"objective": 1.0}])
    m = plot.Markers.of(model, f).add("mass", [(2.0, 1.0)], label="mass")
    drawn = []
    real = plot.figures.save_design
    monkeypatch.setattr(plot.figures, "save_design",
                        lambda *a, **kw: drawn.append((a[2], kw)) or real(*a, **kw))
    write_results(str(tmp_path), model.mesh, r, {"problem": "demo"}, title="demo", markers=m,
                  units="m")
    (path, kw), = drawn                                  # one picture, drawn once
    assert os.path.basename(path) == "design.png" and kw["units"] == "m"
    assert plot.Markers.from_record(kw["markers"]).kinds() == ["support", "load", "mass"]
    assert Image.open(tmp_path / "design.png").text["Title"] == "demo: c = 2.5"
    record = json.load(open(tmp_path / "result.json"))
    assert [k["kind"] for k in record["plot"]["markers"]] == ["support", "load", "mass"]
    assert record["plot"]["units"] == "m" and "supports" not in record["plot"]
    drawn.clear()
    show_image(load_design(str(tmp_path)), record)
    (_, seen), = drawn
    assert plot.Markers.from_record(seen["markers"]).kinds() == ["support", "load", "mass"]
    assert seen["units"] == "m"


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(markers=[{"kind": "mass"}]), TypeError, "markers must be a topopt.plot.Markers"),
    (dict(markers="support"), TypeError, "markers must be a topopt.plot.Markers"),
    (dict(units=1), TypeError, "units must be a str"),
    (dict(markers=plot.Markers(), supports=np.zeros((1, 4))), ValueError, "give markers alone"),
    (dict(markers=plot.Markers(3)), ValueError, "markers are 3-D; the mesh is 2-D"),
])
def test_write_results_refuses_markers(tmp_path, kwargs, error, match):
    """A wrong `markers` or `units` names the argument; nothing is written."""
    from topopt.io.folder import write_results
    from topopt.io.result import RunResult
    model, _ = cantilever()
    r = RunResult("success", None, 1, None, None, {"compliance": 2.5}, x=np.ones(8),
                  x_phys=np.ones(8), history=[{"objective": 1.0}])
    with pytest.raises(error, match=match):
        write_results(str(tmp_path / "out"), model.mesh, r, {}, title="t", **kwargs)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kwargs", [dict(markers=plot.Markers(3)), dict(units="mm")])
def test_write_results_refuses_markers_of_a_3d_design(tmp_path, kwargs):
    """The iso-surface takes supports and loads only: markers or units are refused."""
    from topopt.io.folder import write_results
    from topopt.io.result import RunResult
    r = RunResult("success", None, 1, None, None, {"compliance": 2.5}, x=np.ones(8),
                  x_phys=np.ones(8), history=[{"objective": 1.0}])
    with pytest.raises(ValueError, match="drawn on a 2-D design; the mesh is 3-D"):
        write_results(str(tmp_path / "out"), fem.box(2, 2, 2), r, {}, title="t", **kwargs)
    assert not (tmp_path / "out").exists()


def test_run_compliance_refuses_markers_before_the_first_solve(tmp_path):
    """run_compliance checks `markers` before the problem runs: no folder, no solve."""
    from topopt.io.folder import run_compliance
    model, f = cantilever()
    problem = ComplianceProblem(model, f, 0.5, 1.5)
    problem.run = lambda **kw: pytest.fail("the problem ran")
    with pytest.raises(TypeError, match="markers must be a topopt.plot.Markers"):
        run_compliance("demo", problem, title="t", sizes={}, out=str(tmp_path / "out"),
                       markers=plot.boundary_markers(model, f))
    assert not (tmp_path / "out").exists()


def test_focus_designs_show_the_focal_point(tmp_path, monkeypatch):
    """em_robust's designs side by side (`save_designs`): each panel marks x0 = (0, 300) nm."""
    from types import SimpleNamespace
    from matplotlib.figure import Figure
    from topopt_problems import em_focus
    from topopt.formulations.focus_plots import save_designs
    mesh, design, center = em_focus.cell(8.0)
    prob = SimpleNamespace(mesh=mesh, design=design, center=center, setup=em_focus.SETUP,
                           element_density=lambda x, beta: x)
    figures = {k: dict(enhancement_nominal=10.0, worst_on_grid=5.0, pf_mc=0.01)
               for k in ("nominal", "robust")}
    axes, savefig = [], Figure.savefig
    monkeypatch.setattr(Figure, "savefig",
                        lambda fig, *a, **kw: axes.extend(fig.axes) or savefig(fig, *a, **kw))
    save_designs(str(tmp_path / "designs.png"), prob,
                 {k: np.full(len(design), 0.5) for k in figures}, figures, 32.0)
    assert (tmp_path / "designs.png").stat().st_size > 0 and len(axes) == 2
    for ax in axes:
        assert near(drawn(ax, "focus"), (0, 300), 2.0) and ax.get_xlabel() == "x (nm)"
