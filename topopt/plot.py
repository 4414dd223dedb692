"""Pictures of designs and convergence histories (matplotlib, no pyplot state)."""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from .fem.mesh import element_centroids

__all__ = ["grid_indices", "design_figure", "save_design", "save_history", "save_design_3d"]


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


def design_figure(mesh, x, title: str = "", cmap: str = "gray_r", vmin=0.0, vmax=1.0,
                  mirror: bool = False, xlim=None, ylim=None, colorbar: bool = False) -> Figure:
    """A figure of the element field `x` on a 2-D mesh (black = 1).

    Structured meshes are drawn as an image, others as polygons. `mirror`
    reflects the picture about its left edge (the full MBB beam from half);
    `xlim`, `ylim` zoom to a window.
    """
    x = np.asarray(x, dtype=float)
    if mesh.p.shape[0] != 2:
        raise ValueError("design_figure draws 2-D meshes; use save_design_3d")
    width = np.ptp(xlim) if xlim is not None else np.ptp(mesh.p[0]) * (2 if mirror else 1)
    height = np.ptp(ylim) if ylim is not None else np.ptp(mesh.p[1])
    fig = Figure(figsize=(8, min(8 * height / width, 10) + 0.6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    idx = grid_indices(mesh)
    x0, x1 = mesh.p[0].min(), mesh.p[0].max()
    y0, y1 = mesh.p[1].min(), mesh.p[1].max()
    if idx is not None:
        img = np.zeros((idx[1].max() + 1, idx[0].max() + 1))
        img[idx[1], idx[0]] = x
        if mirror:
            img = np.hstack([img[:, ::-1], img])
            x0 = x0 - (x1 - x0)
        art = ax.imshow(img, origin="lower", cmap=cmap, vmin=vmin, vmax=vmax,
                        extent=(x0, x1, y0, y1), interpolation="nearest")
    else:
        polys = mesh.p[:, mesh.t].transpose(2, 1, 0)
        if xlim is not None or ylim is not None:
            c = element_centroids(mesh)
            keep = np.ones(c.shape[0], dtype=bool)
            for axis, lim in ((0, xlim), (1, ylim)):
                if lim is not None:
                    pad = 0.05 * np.ptp(lim)
                    keep &= (c[:, axis] > lim[0] - pad) & (c[:, axis] < lim[1] + pad)
            polys, x = polys[keep], x[keep]
        art = PolyCollection(polys, array=x, cmap=cmap, edgecolors="face")
        art.set_clim(vmin, vmax)
        ax.add_collection(art)
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
    if xlim is not None:
        ax.set_xlim(*xlim)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if colorbar:
        fig.colorbar(art, ax=ax, shrink=0.8)
    ax.set_aspect("equal")
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def _save(fig: Figure, path: str) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


def save_design(mesh, x, path: str, title: str = "", **kwargs) -> str:
    """Write a PNG of the design `x`; returns the path."""
    return _save(design_figure(mesh, x, title, **kwargs), path)


def save_history(history: Sequence[dict], path: str, title: str = "",
                 objective_label: str = "objective",
                 constraint_names: Sequence[str] | None = None) -> str:
    """Write a PNG of objective and constraint values per evaluation.

    `constraint_names` label the constraints (``g1``, ``g2``, ... by default).
    """
    fig = Figure(figsize=(7, 4.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    n = np.arange(1, len(history) + 1)
    f = np.array([h["objective"] for h in history], dtype=float)
    ax.plot(n, f, "k-", lw=1.5, label=objective_label)
    ax.set_xlabel("evaluation")
    ax.set_ylabel(objective_label)
    if np.all(f > 0) and f.max() / f.min() > 20:
        ax.set_yscale("log")
    cons = [h.get("constraints") or [] for h in history]
    if any(cons):
        ax2 = ax.twinx()
        g = np.array([c if c else [np.nan] for c in cons], dtype=float)
        names = list(constraint_names or [])
        if names and len(names) != g.shape[1]:
            raise ValueError(f"constraint_names has {len(names)} names for {g.shape[1]} "
                             "constraints")
        for j in range(g.shape[1]):
            ax2.plot(n, g[:, j], "--", lw=1, label=names[j] if names else f"g{j + 1}")
        ax2.axhline(0, color="0.7", lw=0.8)
        ax2.set_ylabel("constraints (feasible <= 0)")
        ax2.legend(loc="upper center", fontsize=8)
    stages = [h.get("stage", 0) for h in history]
    for k in range(1, len(stages)):
        if stages[k] != stages[k - 1]:
            ax.axvline(k + 0.5, color="0.6", lw=0.8, ls=":")
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def save_design_3d(mesh, x, path: str, threshold: float = 0.5, title: str = "") -> str:
    """Write a PNG of the elements of a structured hex mesh with ``x > threshold``."""
    idx = grid_indices(mesh)
    if idx is None or len(idx) != 3:
        raise ValueError("save_design_3d needs a structured 3-D (hexahedral) mesh")
    shape = tuple(int(i.max()) + 1 for i in idx)
    filled = np.zeros(shape, dtype=bool)
    filled[idx] = np.asarray(x) > threshold
    fig = Figure(figsize=(8, 5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(projection="3d")
    ax.voxels(filled, facecolors="0.55", edgecolors="0.25", linewidth=0.1)
    ax.set_box_aspect(shape)
    ax.view_init(elev=25, azim=-60)
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)
