"""The 2-D design figure: an element field with its supports, loads and mirror.

`design_figure` (`save_design`): a 2-D element field (black = 1) with a
colour bar, the supports (triangles) and loads (arrows) of `boundary_markers`,
and the whole structure of a half-symmetric model (``mirror=True``).
The 3-D iso-surface is `design3d`, the convergence history `history`; their
names are re-exported here for code that imports them from
``topopt.plot.figures``.
"""

from __future__ import annotations

import difflib

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from .._validate import check_ordered, real
from ..fem.mesh import element_centroids
from .canvas import _element_values, _save, grid_indices
from .markers import ARROW, PAD, _draw_loads, _draw_supports, _load_arrows, _marker_array, _mirrored

# the names this module held before the split, for code that imports them from here
from .design3d import design_figure_3d, save_design_3d  # noqa: E402,F401
from .history import history_figure, save_history  # noqa: E402,F401
from .markers import boundary_markers  # noqa: E402,F401

__all__ = ["design_figure", "save_design"]


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


def _phase_colours(phases, x):
    """``(cmap, vmin, vmax)`` of one colour per phase; `x` must hold phase indices."""
    from matplotlib.colors import ListedColormap, to_rgba
    if isinstance(phases, (str, bytes)) or not all(
            isinstance(p, (tuple, list)) and len(p) == 2 and isinstance(p[0], str)
            for p in phases) or not 1 <= len(phases) <= 16:
        raise TypeError("phases must be 1 to 16 (label, colour) pairs, one per phase")
    colours = [to_rgba(c) for _, c in phases]          # ValueError names a bad colour
    if not np.all((x == np.round(x)) & (x >= 0) & (x < len(phases))):
        raise ValueError(f"with phases, x must hold phase indices 0 .. {len(phases) - 1}")
    return ListedColormap(colours), -0.5, len(phases) - 0.5


def _colorbar(fig, ax, art, label: str, wide: bool, phases) -> None:
    bar = fig.colorbar(art, ax=ax, label=label, location="bottom" if wide else "right",
                       shrink=0.5 if wide else 0.8, aspect=30 if wide else 20)
    if phases:
        bar.set_ticks(range(len(phases)), labels=[name for name, _ in phases])


def _colour_range(cmap, vmin, vmax) -> tuple:
    """`vmin` < `vmax` (each real, or None: autoscaled) of a known colormap `cmap`."""
    if isinstance(cmap, str) and cmap not in matplotlib.colormaps:
        close = difflib.get_close_matches(cmap, list(matplotlib.colormaps), n=1)
        raise ValueError(f"cmap {cmap!r} is not a matplotlib colormap"
                         + (f" (did you mean {close[0]!r}?)" if close else ""))
    vmin, vmax = (None if v is None else real(n, v) for n, v in (("vmin", vmin), ("vmax", vmax)))
    if vmin is not None and vmax is not None:
        check_ordered("vmin", vmin, "vmax", vmax, strict=True)
    return vmin, vmax


def design_figure(mesh, x, title: str = "", cmap: str = "gray_r", vmin=0.0, vmax=1.0,
                  mirror: bool = False, xlim=None, ylim=None, colorbar: bool = True,
                  label: str = "x_phys", supports=None, loads=None, phases=None) -> Figure:
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
    phases : sequence of (str, colour), optional
        One colour per phase of a multi-material design: `x` holds each
        element's phase index (`topopt.design.phase_index`), the colour bar
        the labels (`cmap`, `vmin`, `vmax` are then unused).

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
    if phases is not None:
        cmap, vmin, vmax = _phase_colours(phases, x)
    vmin, vmax = _colour_range(cmap, vmin, vmax)
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
        _colorbar(fig, ax, art, label, wide, phases)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def save_design(mesh, x, path: str, title: str = "", **kwargs) -> str:
    """Write a PNG of the design `x` (`design_figure`, its keywords); returns the path."""
    return _save(design_figure(mesh, x, title, **kwargs), path)
