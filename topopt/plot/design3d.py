"""The 3-D design figure: the shaded iso-surface of a grid design.

`design_figure_3d` (`save_design_3d`): the shaded iso-surface
``x_phys = 0.5`` of a 3-D grid design (`topopt.io.iso_surface`, the surface
of ``design.stl``), equal axes, the frame set to the surface's bounding box.
A `topopt.grid.Grid` design is drawn the same way (`topopt.io.grid_iso_surface`)
when its surface has at most `MAX_SURFACE_TRIANGLES`, else as three orthogonal
mean-density projections; the title says which.
"""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LightSource
from matplotlib.figure import Figure

from .._validate import check_range, real
from .canvas import _element_values, _grid_of, _save, grid_indices
from .markers import ARROW, LOAD_COLOR, SUPPORT_COLOR, _marker_array

__all__ = ["design_figure_3d", "save_design_3d"]

#: A grid design's picture is its iso-surface up to about this many triangles (drawing
#: costs about 1 kB and 30 us a triangle), else three mean-density projections.
MAX_SURFACE_TRIANGLES = 150_000


def _to_view(a: np.ndarray) -> np.ndarray:
    """Mesh (x, y, z) -> plot (x, z, y): the mesh's y axis up."""
    return a[..., [0, 2, 1]]


def design_figure_3d(mesh, x, title: str = "", level: float = 0.5, supports=None,
                     loads=None, elev: float = 22.0, azim: float = -58.0) -> Figure:
    """The iso-surface ``x = level`` of a 3-D grid design, shaded, in equal axes.

    The surface is `topopt.io.iso_surface` (that of ``design.stl``: the
    elements with ``x >= level``, closed); the axis limits are its bounding
    box, so the design fills the frame. The mesh's y axis points up.
    `supports` (blue dots) and `loads` (red arrows, the longest a tenth of
    the box) are `boundary_markers`' arrays. The surface needs scikit-image
    (the ``io`` extra): without it the elements ``x >= level`` are drawn as
    voxels, and a design without such an element as the domain's edges, each
    said in the title. `mesh` may be a 3-D `topopt.grid.Grid` (`x` in its
    element numbering): a surface of more than `MAX_SURFACE_TRIANGLES` (or
    no scikit-image) gives three mean-density projections instead.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> fig = design_figure_3d(fem.box(4, 2, 2), np.ones(16))
    >>> ax = fig.axes[0]                  # plot z is the mesh's y
    >>> [tuple(map(float, lim())) for lim in (ax.get_xlim, ax.get_ylim, ax.get_zlim)]
    [(0.0, 4.0), (0.0, 2.0), (0.0, 2.0)]
    """
    x = _element_values(mesh, x, 3, "design_figure_3d", "design_figure")
    level = check_range("level", level, 0.0, 1.0, lo_open=True, hi_open=True,
                        what="the density of the surface")
    elev, azim = real("elev", elev), real("azim", azim)
    grid = _grid_of(mesh)
    why = _projection_reason(grid, x, level) if grid is not None else None
    if why:
        return _projection_figure(grid, x, f"{title} ({why})" if title else why, supports,
                                  loads)
    fig = Figure(figsize=(8, 8))
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1), projection="3d")
    artists, lo, hi, note = _draw_solid(ax, mesh, x, level)
    title = f"{title} ({note})" if note and title else title or note
    ends = [lo, hi]
    if supports is not None and len(supports):
        s = _to_view(_marker_array("supports", supports, 3)[:, :3])
        artists.append(ax.scatter(*s.T, s=6, c=SUPPORT_COLOR, depthshade=False,
                                  gid="supports"))
    if loads is not None and len(loads):
        loads = _marker_array("loads", loads, 3)
        if loads.shape[1] == 6:
            p, d = _to_view(loads[:, :3]), _to_view(loads[:, 3:])
            d *= ARROW * np.max(hi - lo) / np.abs(d).max()
            artists.append(ax.quiver(*p.T, *d.T, color=LOAD_COLOR, lw=1.5,
                                     arrow_length_ratio=0.3, gid="loads"))
            ends += [p.min(axis=0), (p + d).min(axis=0), p.max(axis=0), (p + d).max(axis=0)]
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_zlim(lo[2], hi[2])
    ax.view_init(elev=elev, azim=azim)
    ax.set_axis_off()
    for art in artists:             # a 3-D axes clips to a square; the frame is set below
        art.set_clip_on(False)
    _fill_frame(fig, ax, hi - lo, np.array(ends), title)
    return fig


def _draw_solid(ax, mesh, x, level: float):
    """The shaded iso-surface (or voxels, or the domain's edges): (artists, lo, hi, note)."""
    grid = _grid_of(mesh)
    if not np.any(x >= level):
        lo, hi = (_to_view(np.zeros(3)), _to_view(np.array(grid.shape) * grid.h)) \
            if grid is not None else (_to_view(mesh.p.T.min(axis=0)),
                                      _to_view(mesh.p.T.max(axis=0)))
        corners = np.array([[a, b, c] for a in (0, 1) for b in (0, 1) for c in (0, 1)])
        edges = [(i, j) for i in range(8) for j in range(i + 1, 8)
                 if np.sum(corners[i] != corners[j]) == 1]
        box = lo + corners * (hi - lo)
        lines = [ax.plot(*box[[i, j]].T, color="0.6", lw=0.8)[0] for i, j in edges]
        return lines, lo, hi, f"no element has x_phys >= {level:g}"
    from ..io.designs import iso_surface
    from ..io.voxels import grid_iso_surface
    try:
        verts, faces = (grid_iso_surface(grid, x, level, refine=2) if grid is not None
                        else iso_surface(mesh, x, level, refine=2))
    except ImportError as e:
        return _draw_voxels(ax, mesh, x, level) + (f"voxels; {e}",)
    v = _to_view(verts)
    faces = faces[:, ::-1]          # _to_view swaps y and z, a reflection: keep them outward
    surface = ax.plot_trisurf(v[:, 0], v[:, 1], v[:, 2], triangles=faces, color="0.78",
                              shade=True, lightsource=LightSource(azdeg=300, altdeg=50),
                              linewidth=0, antialiased=False)
    note = f"iso-surface x_phys = {level:g}, {len(faces)} triangles" if grid is not None else ""
    return [surface], v.min(axis=0), v.max(axis=0), note


def _projection_reason(grid, x, level: float):
    """None (the surface is drawn) or why a grid design is drawn as projections."""
    try:
        import skimage.measure  # noqa: F401
    except ImportError:
        return "mean-density projections: the surface needs scikit-image (pip install " \
               "'topopt[io]')"
    from ..io.voxels import surface_faces
    n = 2 * 2**2 * surface_faces(grid, x, level)          # refine=2: 2 per sub-face
    if n > MAX_SURFACE_TRIANGLES:
        return (f"mean-density projections: the surface would have about {n} triangles, "
                f"more than {MAX_SURFACE_TRIANGLES} drawn")
    return None


def _projection_figure(grid, x, title: str, supports=None, loads=None) -> Figure:
    """Three orthogonal projections of a 3-D grid design: the mean of `x` along z, y, x."""
    x3 = x.reshape(grid.shape)
    fig = Figure(layout="constrained", figsize=(13, 4.5))
    FigureCanvasAgg(fig)
    marks = [(a[:, :3], c) for a, c in ((supports, SUPPORT_COLOR), (loads, LOAD_COLOR))
             if a is not None and len(a)]
    for ax, (u, v, w) in zip(fig.subplots(1, 3), ((0, 1, 2), (0, 2, 1), (2, 1, 0))):
        img = x3.mean(axis=w)                                 # axes (min(u,v), max(u,v))
        art = ax.imshow(img.T if u < v else img, origin="lower", cmap="gray_r", vmin=0,
                        vmax=1, interpolation="nearest",
                        extent=(0, grid.shape[u] * grid.h, 0, grid.shape[v] * grid.h))
        for a, color in marks:
            ax.plot(a[:, u], a[:, v], ls="none", marker=".", ms=3, color=color)
        ax.set_xlabel("xyz"[u])
        ax.set_ylabel("xyz"[v])
        ax.set_title(f"mean x_phys along {'xyz'[w]}", fontsize=9)
    fig.colorbar(art, ax=fig.axes, label="mean x_phys", shrink=0.8)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def _draw_voxels(ax, mesh, x, level: float):
    """The elements ``x >= level`` of a uniform grid as voxels: (artists, lo, hi)."""
    idx = grid_indices(mesh)
    if idx is None or len(idx) != 3:
        raise ValueError("design_figure_3d needs a structured 3-D (hexahedral) grid")
    filled = np.zeros(tuple(int(i.max()) + 1 for i in idx), dtype=bool)
    filled[idx] = x >= level
    filled = filled.transpose(0, 2, 1)                        # plot (x, z, y)
    lo, hi = _to_view(mesh.p.T.min(axis=0)), _to_view(mesh.p.T.max(axis=0))
    grid = np.meshgrid(*(np.linspace(a, b, n + 1) for a, b, n in zip(lo, hi, filled.shape)),
                       indexing="ij")
    faces = ax.voxels(*grid, filled, facecolors="0.7", edgecolors="0.4", linewidth=0.1)
    cells = np.argwhere(filled)
    step = (hi - lo) / filled.shape
    return list(faces.values()), lo + cells.min(axis=0) * step, lo + (cells.max(axis=0) + 1) * step


def _projected_box(fig, ax, points):
    """Pixel bounding box ``(x0, y0, x1, y1)`` of 3-D `points` as drawn."""
    from mpl_toolkits.mplot3d import proj3d
    fig.canvas.draw()
    xs, ys, _ = proj3d.proj_transform(*points.T, ax.get_proj())
    xy = ax.transData.transform(np.column_stack([xs, ys]))
    return np.concatenate([xy.min(axis=0), xy.max(axis=0)])


def _fill_frame(fig, ax, size, ends, title: str) -> None:
    """Equal axes, and the figure's shape and the 3-D box's zoom set so that the
    drawn box (corners of `ends`' bounding box) fills the frame with a small margin."""
    lo, hi = ends.min(axis=0), ends.max(axis=0)
    corners = np.array([[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]]
                        for i in (0, 1) for j in (0, 1) for k in (0, 1)])
    ax.set_box_aspect(size)
    top = 0.35 if title else 0.0                              # inches for the title
    box = _projected_box(fig, ax, corners)
    width, height = box[2] - box[0], box[3] - box[1]
    fig.set_size_inches(8, min(max(8 * height / width * 1.08, 2.5), 9) + top)
    box = _projected_box(fig, ax, corners)
    w_px, h_px = fig.bbox.width, fig.bbox.height - top * fig.dpi
    zoom = 0.94 * min(w_px / (box[2] - box[0]), h_px / (box[3] - box[1]))
    ax.set_box_aspect(size, zoom=zoom)
    box = _projected_box(fig, ax, corners)
    shift = (np.array([w_px, h_px]) / 2 - (box[:2] + box[2:]) / 2) / [fig.bbox.width,
                                                                      fig.bbox.height]
    ax.set_position((shift[0], shift[1], 1, 1))
    if title:
        fig.suptitle(title, fontsize=10, y=1 - 0.08 / fig.get_size_inches()[1])


def save_design_3d(mesh, x, path: str, threshold: float = 0.5, title: str = "",
                   **kwargs) -> str:
    """Write a PNG of `design_figure_3d` (``level=threshold``); returns the path."""
    threshold = check_range("threshold", threshold, 0.0, 1.0, lo_open=True, hi_open=True,
                            what="the density of the surface")
    return _save(design_figure_3d(mesh, x, title, level=threshold, **kwargs), path)
