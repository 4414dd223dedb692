"""Pictures of designs and convergence histories (matplotlib, no pyplot state).

* `design_figure` (`save_design`): a 2-D element field (black = 1) with a
  colour bar, the supports (triangles) and loads (arrows) of `boundary_markers`,
  and the whole structure of a half-symmetric model (``mirror=True``).
* `design_figure_3d` (`save_design_3d`): the shaded iso-surface
  ``x_phys = 0.5`` of a 3-D grid design (`topopt.io.iso_surface`, the surface
  of ``design.stl``), equal axes, the frame set to the surface's bounding box.
* `history_figure` (`save_history`): the objective in the user's unit and
  each named constraint per evaluation, with a legend outside the axes.

Every PNG is written atomically and readable by others (0644).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.colors import LightSource
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch
from matplotlib.transforms import offset_copy

from .._files import atomic_path
from .._validate import check_int
from ..fem.mesh import element_centroids

__all__ = ["grid_indices", "boundary_markers", "design_figure", "save_design",
           "design_figure_3d", "save_design_3d", "history_figure", "save_history"]

SUPPORT_COLOR, LOAD_COLOR = "tab:blue", "tab:red"
MARKER_SIZE = 7.0            # points
ARROW = 0.1                  # longest load arrow / larger side of the drawn domain
ZOOM_3D = 1.0
PAD = 0.04                   # margin for the support markers / larger side


def grid_indices(mesh) -> tuple[np.ndarray, ...] | None:
    """Integer grid position of each element of a structured mesh, else None.

    Examples
    --------
    >>> from topopt.fem import rectangle
    >>> ix, iy = grid_indices(rectangle(3, 2))
    >>> int(ix.max()), int(iy.max())
    (2, 1)
    """
    c = element_centroids(mesh)
    out = []
    for axis in range(c.shape[1]):
        levels, idx = np.unique(np.round(c[:, axis], 9), return_inverse=True)
        out.append(idx)
        if levels.size > 1 and not np.allclose(np.diff(levels), levels[1] - levels[0]):
            return None
    shape = tuple(int(i.max()) + 1 for i in out)
    return tuple(out) if np.prod(shape) == c.shape[0] else None


# --------------------------------------------------------------------------
# supports and loads


def boundary_markers(model, f=None, max_points: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """The supports and loads of `model` as point arrays for the design plots.

    Parameters
    ----------
    model : topopt.fem.Model
        Its fixed dofs (``model.fixed``) give the supports.
    f : (ndof,) or (ndof, n_loads) array, optional
        Load vector(s): every node with a non-zero nodal force is a load point
        (each load case's nodes, one row each).
    max_points : int >= 1
        A load case on more nodes than this is distributed (a body load, a
        heat source): it is not drawn as arrows and gives no rows.

    Returns
    -------
    supports : (n, dim + components) array
        A fixed node's coordinates, then 1.0 for each fixed component.
    loads : (m, dim + components) array
        A loaded node's coordinates, then its nodal force.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> model = fem.elasticity(fem.rectangle(2, 1)).fix(nodes=(0, 0))
    >>> s, l = boundary_markers(model, model.point_load((2, 1), (0, -1)))
    >>> s.tolist(), l.tolist()
    ([[0.0, 0.0, 1.0, 1.0]], [[2.0, 1.0, 0.0, -1.0]])
    """
    p = np.asarray(model.mesh.p, dtype=float)
    nodal = np.asarray(model.basis.nodal_dofs)                 # (components, n_points)
    fixed = np.isin(nodal, model.fixed)
    nodes = np.flatnonzero(fixed.any(axis=0))
    supports = np.column_stack([p[:, nodes].T, fixed[:, nodes].T.astype(float)])
    if f is None:
        return supports, np.zeros((0, p.shape[0] + nodal.shape[0]))
    f = np.asarray(f)
    if np.iscomplexobj(f) or f.ndim not in (1, 2) or f.shape[0] != model.ndof:
        raise ValueError(f"f has shape {f.shape} and dtype {f.dtype}; expected real "
                         f"({model.ndof},) or ({model.ndof}, n_loads)")
    max_points = check_int("max_points", max_points, 1)
    cols = f[:, None] if f.ndim == 1 else f
    rows = [np.zeros((0, p.shape[0] + nodal.shape[0]))]
    for k in range(cols.shape[1]):
        v = cols[nodal, k]                                      # (components, n_points)
        hit = np.flatnonzero(np.any(v != 0, axis=0))
        if len(hit) <= max_points:
            rows.append(np.column_stack([p[:, hit].T, v[:, hit].T]))
    return supports, np.concatenate(rows).astype(float)


def _element_values(mesh, x, dim: int, name: str, other: str) -> np.ndarray:
    """`x` as one float per element of a `dim`-D mesh, or the error naming the fix."""
    x = np.asarray(x, dtype=float)
    if mesh.p.shape[0] != dim:
        raise ValueError(f"{name} draws {dim}-D meshes; use {other}")
    if x.shape != (mesh.t.shape[1],):
        raise ValueError(f"x has shape {x.shape}; expected ({mesh.t.shape[1]},), one value "
                         "per element")
    return x


def _marker_array(name: str, a, dim: int) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.size == 0:                              # none (``[]`` read back from result.json)
        return a.reshape(0, dim + 1)
    if a.ndim != 2 or a.shape[1] not in (dim + 1, 2 * dim) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} has shape {a.shape}; expected finite (n, {dim + 1}) or "
                         f"(n, {2 * dim}) rows: {dim} coordinates, then the components "
                         "(see boundary_markers)")
    return a


def _mirrored(supports, loads, x0: float, tol: float):
    """Supports and loads of the whole structure from a half model mirrored about x = x0.

    On the symmetry line a support fixing x alone is the symmetry condition
    (dropped) and a load is drawn once; everything else also at its mirror
    image, with the x component of a load reversed.
    """
    def reflect(a, flip):
        b = a.copy()
        b[:, 0] = 2 * x0 - b[:, 0]
        if flip and b.shape[1] == 4:
            b[:, 2] = -b[:, 2]
        return b

    out = []
    for a, flip in ((supports, False), (loads, True)):
        on = np.abs(a[:, 0] - x0) <= tol
        if not flip and a.shape[1] == 4:
            on_symmetry = on & (a[:, 2] > 0) & (a[:, 3] == 0)
            a, on = a[~on_symmetry], on[~on_symmetry]
        out.append(np.concatenate([a, reflect(a[~on], flip)]))
    return out


def _support_markers(supports, bbox):
    """Marker and offset direction of each support: a triangle pointing at the node.

    A node fixed in every component (pinned, clamped): a filled triangle from
    the nearest side of `bbox` (at a corner, the side with more supports);
    fixed in one component (a roller, a symmetry line): a hollow triangle
    along that component; a fixed scalar (a temperature): a filled square on
    the node.
    """
    x0, x1, y0, y1 = bbox
    x, y, mask = supports[:, 0], supports[:, 1], supports[:, 2:] > 0
    if mask.shape[1] == 1:
        return np.full(len(x), "s"), np.ones(len(x), dtype=bool)
    dist = np.column_stack([x - x0, x1 - x, y - y0, y1 - y])
    tol = 1e-9 * max(x1 - x0, y1 - y0)
    on_side = (dist <= tol).sum(axis=0)             # a corner joins the side of its row
    nearest = dist <= dist.min(axis=1, keepdims=True) + tol
    side = np.argmax(np.where(nearest, on_side, -1), axis=1)
    pinned = mask.all(axis=1)
    only_x = mask[:, 0] & ~mask[:, 1]
    side = np.where(pinned, side, np.where(only_x, np.where(x - x0 <= x1 - x, 0, 1),
                                           np.where(y - y0 <= y1 - y, 2, 3)))
    return np.array([">", "<", "^", "v"])[side], pinned


_OFFSET = {">": (-1, 0), "<": (1, 0), "^": (0, -1), "v": (0, 1), "s": (0, 0)}


def _draw_supports(ax, supports, bbox) -> None:
    markers, filled = _support_markers(supports, bbox)
    for m in np.unique(markers):
        for full in (True, False):
            sel = (markers == m) & (filled == full)
            if not sel.any():
                continue
            dx, dy = _OFFSET[m]
            shift = offset_copy(ax.transData, fig=ax.figure, x=dx * MARKER_SIZE / 2,
                                y=dy * MARKER_SIZE / 2, units="points")
            ax.plot(supports[sel, 0], supports[sel, 1], ls="none", marker=m,
                    ms=MARKER_SIZE, mew=1.0, mec=SUPPORT_COLOR,
                    mfc=SUPPORT_COLOR if full else "white", transform=shift,
                    clip_on=False, gid="supports", zorder=4)


def _load_arrows(loads, bbox, length):
    """``(tail, tip)`` of each load arrow; its tip at the node unless the tail would
    lie in `bbox` (its edges included), then its tail (drawn outward from the node)."""
    v = loads[:, 2:4]
    size = np.linalg.norm(v, axis=1)
    keep = size > 0
    p, v, size = loads[keep, :2], v[keep], size[keep]
    if not keep.any():
        return np.zeros((0, 2)), np.zeros((0, 2))
    d = v / size[:, None] * (length * np.maximum(size / size.max(), 0.25))[:, None]
    tail = p - d
    x0, x1, y0, y1 = bbox
    tol = 1e-9 * max(x1 - x0, y1 - y0)
    inside = ((tail[:, 0] >= x0 - tol) & (tail[:, 0] <= x1 + tol) & (tail[:, 1] >= y0 - tol)
              & (tail[:, 1] <= y1 + tol))
    tail = np.where(inside[:, None], p, tail)
    tip = np.where(inside[:, None], p + d, p)
    return tail, tip


def _draw_loads(ax, tails, tips) -> None:
    for a, b in zip(tails, tips):
        ax.add_patch(FancyArrowPatch(tuple(a), tuple(b), arrowstyle="-|>", mutation_scale=14,
                                     color=LOAD_COLOR, lw=1.8, gid="load", zorder=5,
                                     shrinkA=0, shrinkB=0, clip_on=False))


# --------------------------------------------------------------------------
# 2-D designs


def _field_artist(ax, mesh, x, cmap, vmin, vmax, mirror, xlim, ylim):
    """Draw `x` on `ax` (an image on a grid, else polygons); (artist, bbox drawn)."""
    x0, x1 = float(mesh.p[0].min()), float(mesh.p[0].max())
    y0, y1 = float(mesh.p[1].min()), float(mesh.p[1].max())
    idx = grid_indices(mesh)
    if idx is not None:
        img = np.zeros((idx[1].max() + 1, idx[0].max() + 1))
        img[idx[1], idx[0]] = x
        if mirror:
            img = np.hstack([img[:, ::-1], img])
        left = 2 * x0 - x1 if mirror else x0
        art = ax.imshow(img, origin="lower", cmap=cmap, vmin=vmin, vmax=vmax,
                        extent=(left, x1, y0, y1), interpolation="nearest")
        return art, (left, x1, y0, y1)
    polys = mesh.p[:, mesh.t].transpose(2, 1, 0)
    if xlim is not None or ylim is not None:
        c = element_centroids(mesh)
        keep = np.ones(c.shape[0], dtype=bool)
        for axis, lim in ((0, xlim), (1, ylim)):
            if lim is not None:
                pad = 0.05 * np.ptp(lim)
                keep &= (c[:, axis] > lim[0] - pad) & (c[:, axis] < lim[1] + pad)
        polys, x = polys[keep], x[keep]
    if mirror:
        image = polys.copy()
        image[..., 0] = 2 * x0 - image[..., 0]
        polys, x = np.concatenate([polys, image]), np.concatenate([x, x])
    art = PolyCollection(polys, array=x, cmap=cmap, edgecolors="face")
    art.set_clim(vmin, vmax)
    ax.add_collection(art)
    return art, (2 * x0 - x1 if mirror else x0, x1, y0, y1)


def _limits(bbox, xlim, ylim, arrows, markers: bool):
    """Axis limits: the window asked for, else the domain with its markers and arrows."""
    if xlim is not None or ylim is not None:
        return (tuple(xlim) if xlim is not None else bbox[:2],
                tuple(ylim) if ylim is not None else bbox[2:])
    x0, x1, y0, y1 = bbox
    pad = PAD * max(x1 - x0, y1 - y0) if markers else 0.0
    lo, hi = np.array([x0 - pad, y0 - pad]), np.array([x1 + pad, y1 + pad])
    for ends in arrows:
        if len(ends):
            lo = np.minimum(lo, ends.min(axis=0) - pad / 2)
            hi = np.maximum(hi, ends.max(axis=0) + pad / 2)
    return (lo[0], hi[0]), (lo[1], hi[1])


def design_figure(mesh, x, title: str = "", cmap: str = "gray_r", vmin=0.0, vmax=1.0,
                  mirror: bool = False, xlim=None, ylim=None, colorbar: bool = True,
                  label: str = "x_phys", supports=None, loads=None) -> Figure:
    """A figure of the element field `x` on a 2-D mesh (black = 1) with a colour bar.

    Structured meshes are drawn as an image, others as polygons.

    Parameters
    ----------
    mesh : skfem.Mesh
        A 2-D mesh.
    x : (n_el,) array
        One value per element.
    title, cmap, vmin, vmax
        The title; the colour map and its range.
    mirror : bool
        Reflect the picture about its left edge: the whole structure of a
        half-symmetric model (the MBB beam); the supports and loads are
        mirrored too, the symmetry condition itself is not drawn.
    xlim, ylim : (float, float), optional
        Zoom to a window.
    colorbar : bool
        Draw a colour bar labelled `label` (right of tall designs, below wide ones).
    supports, loads : arrays, optional
        From `boundary_markers`: a triangle pointing at each fixed node
        (filled: every component fixed; hollow: one, the roller's direction),
        an arrow at each loaded node (red, length by nodal force, at least a
        quarter of the longest). Loads of a scalar (heat) model are not drawn.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda p: p[0] == 0)
    >>> s, l = boundary_markers(model, model.point_load((4, 0), (0, -1)))
    >>> fig = design_figure(model.mesh, np.ones(8), supports=s, loads=l)
    >>> fig.axes[1].get_label(), len(fig.axes[0].patches)        # colour bar, one arrow
    ('<colorbar>', 1)
    """
    x = _element_values(mesh, x, 2, "design_figure", "design_figure_3d")
    supports = _marker_array("supports", np.zeros((0, 4)) if supports is None else supports, 2)
    loads = _marker_array("loads", np.zeros((0, 4)) if loads is None else loads, 2)
    fig = Figure(layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    art, bbox = _field_artist(ax, mesh, x, cmap, vmin, vmax, mirror, xlim, ylim)
    if mirror:
        tol = 1e-9 * max(np.ptp(mesh.p[0]), 1.0)
        supports, loads = _mirrored(supports, loads, float(mesh.p[0].min()), tol)
    length = ARROW * max(bbox[1] - bbox[0], bbox[3] - bbox[2])
    arrows = _load_arrows(loads, bbox, length) if loads.shape[1] == 4 and len(loads) else ()
    (ax_x, ax_y) = _limits(bbox, xlim, ylim, arrows, bool(len(supports) or len(arrows)))
    ax.set_xlim(*ax_x)
    ax.set_ylim(*ax_y)
    ax.set_aspect("equal")
    ax.set_axis_off()
    if len(supports):
        _draw_supports(ax, supports, bbox)
    if len(arrows):
        _draw_loads(ax, *arrows)
    width, height = np.ptp(ax_x), np.ptp(ax_y)
    wide = width > 1.5 * height                     # colour bar below, else on the right
    if wide:
        fig.set_size_inches(8, min(7.2 * height / width, 9) + (1.6 if colorbar else 0.7))
    else:
        tall = min(6.0, 8 * height / width)
        fig.set_size_inches(tall * width / height + (1.5 if colorbar else 0.4), tall + 0.7)
    if colorbar:
        fig.colorbar(art, ax=ax, label=label, location="bottom" if wide else "right",
                     shrink=0.5 if wide else 0.8, aspect=30 if wide else 20)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def _save(fig: Figure, path: str) -> str:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    return path


def save_design(mesh, x, path: str, title: str = "", **kwargs) -> str:
    """Write a PNG of the design `x` (`design_figure`, its keywords); returns the path."""
    return _save(design_figure(mesh, x, title, **kwargs), path)


# --------------------------------------------------------------------------
# 3-D designs


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
    said in the title.

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
    if not np.any(x >= level):
        lo, hi = _to_view(mesh.p.T.min(axis=0)), _to_view(mesh.p.T.max(axis=0))
        corners = np.array([[a, b, c] for a in (0, 1) for b in (0, 1) for c in (0, 1)])
        edges = [(i, j) for i in range(8) for j in range(i + 1, 8)
                 if np.sum(corners[i] != corners[j]) == 1]
        box = lo + corners * (hi - lo)
        lines = [ax.plot(*box[[i, j]].T, color="0.6", lw=0.8)[0] for i, j in edges]
        return lines, lo, hi, f"no element has x_phys >= {level:g}"
    from ..io.designs import iso_surface
    try:
        verts, faces = iso_surface(mesh, x, level, refine=2)
    except ImportError as e:
        return _draw_voxels(ax, mesh, x, level) + (f"voxels; {e}",)
    v = _to_view(verts)
    faces = faces[:, ::-1]          # _to_view swaps y and z, a reflection: keep them outward
    surface = ax.plot_trisurf(v[:, 0], v[:, 1], v[:, 2], triangles=faces, color="0.78",
                              shade=True, lightsource=LightSource(azdeg=300, altdeg=50),
                              linewidth=0, antialiased=False)
    return [surface], v.min(axis=0), v.max(axis=0), ""


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
    return _save(design_figure_3d(mesh, x, title, level=threshold, **kwargs), path)


# --------------------------------------------------------------------------
# histories


def history_figure(history: Sequence[dict], title: str = "",
                   objective_label: str = "objective",
                   constraint_names: Sequence[str] | None = None,
                   objective_scale: float = 1.0) -> Figure:
    """Objective (left axis) and constraints (right axis) per evaluation.

    Parameters
    ----------
    history : list of dict
        `topopt.optimize.Result.history` (``objective``, ``constraints``,
        ``stage``).
    objective_label : str
        The left axis's label and legend entry (``"compliance c"``).
    constraint_names : list of str, optional
        One per constraint (``g1``, ``g2``, ... by default).
    objective_scale : float
        The history's objective times this is plotted: the minimized ``c /
        c0`` times ``c0`` is the compliance (`minimize`'s ``objective_scale``).

    The legend (both axes' lines, and the stage changes as dotted lines)
    lies below the axes, outside the data.

    Examples
    --------
    >>> h = [{"objective": 1.0 / k, "constraints": [0.1 / k]} for k in (1, 2, 3)]
    >>> fig = history_figure(h, objective_label="compliance c", objective_scale=200.0,
    ...                      constraint_names=["V / 0.5 - 1"])
    >>> fig.axes[0].lines[0].get_ydata()[-1].round(3), fig.legends[0].texts[1].get_text()
    (np.float64(66.667), 'V / 0.5 - 1')
    """
    scale = float(objective_scale)
    if not np.isfinite(scale) or scale == 0:
        raise ValueError(f"objective_scale must be finite and non-zero, got {objective_scale!r}")
    fig = Figure(figsize=(7, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    n = np.arange(1, len(history) + 1)
    f = scale * np.array([h["objective"] for h in history], dtype=float)
    handles = ax.plot(n, f, "k-", lw=1.5, label=objective_label)
    ax.set_xlabel("evaluation")
    ax.set_ylabel(objective_label)
    if len(f) and np.all(f > 0) and f.max() / f.min() > 20:
        ax.set_yscale("log")
    handles += _constraint_lines(ax, n, history, constraint_names)
    stages = [h.get("stage", 0) for h in history]
    changes = [k for k in range(1, len(stages)) if stages[k] != stages[k - 1]]
    for k in changes:
        ax.axvline(k + 0.5, color="0.5", lw=0.8, ls=":")
    if changes:
        handles.append(Line2D([], [], color="0.5", lw=0.8, ls=":", label="stage change"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 3),
               fontsize=8, frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def _constraint_lines(ax, n, history, constraint_names) -> list:
    cons = [h.get("constraints") or [] for h in history]
    names = list(constraint_names or [])
    if not any(cons):
        if names:
            raise ValueError(f"constraint_names has {len(names)} names; the history has no "
                             "constraints")
        return []
    width = max(len(c) for c in cons)
    g = np.array([list(c) + [np.nan] * (width - len(c)) for c in cons], dtype=float)
    if names and len(names) != width:
        raise ValueError(f"constraint_names has {len(names)} names for {width} constraints")
    ax2 = ax.twinx()
    lines = []
    for j in range(width):
        lines += ax2.plot(n, g[:, j], "--", lw=1.2, color=f"C{j}",
                          label=names[j] if names else f"g{j + 1}")
    ax2.axhline(0, color="0.7", lw=0.8)
    ax2.set_ylabel("constraint g (feasible <= 0)")
    return lines


def save_history(history: Sequence[dict], path: str, title: str = "",
                 objective_label: str = "objective",
                 constraint_names: Sequence[str] | None = None,
                 objective_scale: float = 1.0) -> str:
    """Write a PNG of `history_figure`; returns the path."""
    return _save(history_figure(history, title, objective_label, constraint_names,
                                objective_scale), path)
