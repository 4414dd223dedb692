"""The 2-D design figure: an element field with its supports, loads and mirror.

`design_figure` (`save_design`): a 2-D element field (black = 1) with a
colour bar, the supports (triangles) and loads (arrows) of `boundary_markers`,
and the whole structure of a half-symmetric model (``mirror=True``).
The 3-D iso-surface is `topopt.plot.design3d`, the convergence history
`topopt.plot.history` (`topopt.plot` exports them all).
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
from .markers import ARROW, PAD
from .setup import _as_markers
from .symbols import draw_axes, draw_markers, _marker_extent

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


def _limits(bbox, xlim, ylim, extent, markers: bool):
    """Axis limits: the window asked for, else the domain with its markers (`extent`:
    every point they reach)."""
    if xlim is not None or ylim is not None:
        return (tuple(xlim) if xlim is not None else bbox[:2],
                tuple(ylim) if ylim is not None else bbox[2:])
    x0, x1, y0, y1 = bbox
    pad = PAD * max(x1 - x0, y1 - y0) if markers else 0.0
    lo, hi = np.array([x0 - pad, y0 - pad]), np.array([x1 + pad, y1 + pad])
    if len(extent):
        lo = np.minimum(lo, extent.min(axis=0) - pad / 2)
        hi = np.maximum(hi, extent.max(axis=0) + pad / 2)
    return (lo[0], hi[0]), (lo[1], hi[1])


def _window(bbox, xlim, ylim):
    """The part of the domain `bbox` inside a window ``xlim``, ``ylim`` (the axes' extent)."""
    x0, x1, y0, y1 = bbox
    if xlim is not None:
        x0, x1 = max(x0, min(xlim)), min(x1, max(xlim))
    if ylim is not None:
        y0, y1 = max(y0, min(ylim)), min(y1, max(ylim))
    return x0, x1, y0, y1


def _layout(fig, ax, art, colorbar: bool, label: str, phases, entries) -> None:
    """The figure's size from the axes' extent; the colour bar (right of tall designs,
    below wide ones) and the legend of the labelled markers (`entries`) below."""
    width, height = np.ptp(ax.get_xlim()), np.ptp(ax.get_ylim())
    wide = width > 1.5 * height                     # colour bar below, else on the right
    if wide:
        fig.set_size_inches(8, min(7.2 * height / width, 9) + (1.6 if colorbar else 0.7))
    else:
        tall = min(6.0, 8 * height / width)
        fig.set_size_inches(tall * width / height + (1.5 if colorbar else 0.4), tall + 0.7)
    if colorbar:
        _colorbar(fig, ax, art, label, wide, phases)
    if entries:
        fig.legend(*zip(*entries), loc="outside lower center", ncols=min(len(entries), 4),
                   frameon=False, fontsize=9, handlelength=1.6, columnspacing=1.2)
        fig.set_size_inches(fig.get_size_inches() + (0, 0.3))


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
                  label: str = "x_phys", supports=None, loads=None, phases=None,
                  markers=None, units: str = "", axes: bool = True) -> Figure:
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
    markers : topopt.plot.Markers or its record, optional
        The whole setup (`topopt.plot.setup.KINDS`: loads, masses, heat
        sources, ports, springs, focal points, regions ...), drawn with the
        `supports` and `loads`; a labelled marker gets a legend entry below.
    units : str
        The lengths' unit on the axes (``"nm"``); none by default.
    axes : bool
        Draw the x and y axes with ticks at the domain's ends (its lengths).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.plot import boundary_markers
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
    setup = _as_markers(markers, supports, loads, dim=2)
    fig = Figure(layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    art, bbox = _field_artist(ax, mesh, x, cmap, vmin, vmax, mirror, xlim, ylim)
    if mirror:
        setup = setup.mirrored(float(mesh.p[0].min()), 1e-9 * max(np.ptp(mesh.p[0]), 1.0))
    shown = _window(bbox, xlim, ylim)
    length = ARROW * max(shown[1] - shown[0], shown[3] - shown[2])
    (ax_x, ax_y) = _limits(bbox, xlim, ylim, _marker_extent(setup, bbox, length), bool(len(setup)))
    ax.set_xlim(*ax_x)
    ax.set_ylim(*ax_y)
    ax.set_aspect("equal")
    if axes:
        draw_axes(ax, shown, units)
    else:
        ax.set_axis_off()
    entries = draw_markers(ax, setup, bbox, length)
    _layout(fig, ax, art, colorbar, label, phases, entries)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def save_design(mesh, x, path: str, title: str = "", **kwargs) -> str:
    """Write a PNG of the design `x` (`design_figure`, its keywords); returns the path."""
    return _save(design_figure(mesh, x, title, **kwargs), path)
