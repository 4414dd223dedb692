"""A 2-D flow design: the velocity magnitude over the design, its streamlines and solid outline.

`flow_figure` (`save_flow`) draws a Taylor-Hood state ``w = [u, p]``
(`topopt.flow.TaylorHood`) on its triangle or quadrilateral mesh (each quadrilateral
split into two triangles where matplotlib needs triangles): ``|u|`` at the vertices
(Gouraud-shaded), streamlines in the fluid (matplotlib's ``streamplot`` on a regular
grid of the linear interpolant) and the design's ``rho = 1/2`` contour (the wall
between fluid and solid), the solid shaded grey.
"""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.tri import LinearTriInterpolator, Triangulation

from ..fem.mesh import element_volumes
from .canvas import _save

__all__ = ["flow_figure", "save_flow"]


def _vertex_average(mesh, x) -> np.ndarray:
    """Element values `x` averaged onto the vertices (area weights)."""
    p, t = mesh.p, mesh.t
    a, k = element_volumes(mesh), t.shape[0]
    num = np.bincount(t.ravel(), np.tile(a * x, k), p.shape[1])
    den = np.bincount(t.ravel(), np.tile(a, k), p.shape[1])
    return num / den


def _triangles(mesh) -> np.ndarray:
    """The mesh's triangles ``(n, 3)``; a quadrilateral (vertices in cyclic order) gives
    two, cut along its diagonal from the first vertex."""
    t = mesh.t
    if t.shape[0] == 3:
        return t.T
    return np.concatenate([t[[0, 1, 2]].T, t[[0, 2, 3]].T])


def _canvas(space, w, what: str):
    """The vertex velocities of `w`, the triangulation, the box and an empty figure sized
    to the domain: what `flow_figure` and `temperature_figure` share."""
    mesh = space.mesh
    if space.dim != 2:
        raise ValueError(f"{what} draws 2-D designs; the mesh is {space.dim}-D")
    u, _ = space.split(np.asarray(w, dtype=float))
    uv = u[:mesh.p.shape[1]]                            # P2's first nodes are the vertices
    tri = Triangulation(mesh.p[0], mesh.p[1], _triangles(mesh))
    lo, hi = mesh.p.min(axis=1), mesh.p.max(axis=1)
    extent = hi - lo
    fig = Figure(figsize=(1.5 + 5.0 * extent[0] / extent[1], 5.0))
    FigureCanvasAgg(fig)
    return uv, tri, (lo, hi), fig, fig.add_subplot()


def _streamlines(ax, tri, uv, rho_v, box, density, linewidth, arrowsize):
    """Streamlines of the vertex velocities `uv` where the vertex design `rho_v` >= 1/2,
    on a regular grid of their linear interpolant."""
    (lo, hi), nx = box, 120
    ny = max(int(round(nx * (hi[1] - lo[1]) / (hi[0] - lo[0]))), 20)
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], nx), np.linspace(lo[1], hi[1], ny))
    solid = np.ma.filled(LinearTriInterpolator(tri, rho_v)(gx, gy), 0.0) < 0.5
    ux, uy = (np.ma.masked_where(solid, np.ma.filled(LinearTriInterpolator(tri, uv[:, k])(gx, gy),
                                                     0.0)) for k in (0, 1))
    ax.streamplot(gx, gy, ux, uy, density=density, color="white", linewidth=linewidth,
                  arrowsize=arrowsize)


def _finish(fig, ax, art, box, title: str, label: str):
    (lo, hi) = box
    ax.set_aspect("equal")
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_title(title)
    fig.colorbar(art, ax=ax, label=label, shrink=0.8)
    fig.tight_layout()
    return fig


def flow_figure(space, w, x_phys, title: str = "", density: float = 1.2) -> Figure:
    """The figure of the velocity magnitude, streamlines and design of a 2-D flow.

    Parameters
    ----------
    space : topopt.flow.TaylorHood
        On a triangle or quadrilateral mesh.
    w : (space.n,) array
        The state ``[u, p]``.
    x_phys : (n_elements,) array
        The design (1 fluid, 0 solid).
    title : str
    density : float
        ``streamplot``'s line density.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt.flow import TaylorHood
    >>> from topopt.plot.flow import flow_figure
    >>> space = TaylorHood(skfem.MeshTri().refined(2))
    >>> u = space.interpolate_velocity(lambda x: np.array([-x[1] + 0.5, x[0] - 0.5]))
    >>> fig = flow_figure(space, space.join(u, np.zeros(space.np_)), np.ones(32), "vortex")
    >>> fig.axes[0].get_title()
    'vortex'
    >>> quads = TaylorHood(skfem.MeshQuad().refined(2))         # Q2/Q1: the same picture
    >>> u = quads.interpolate_velocity(lambda x: np.array([-x[1] + 0.5, x[0] - 0.5]))
    >>> fig = flow_figure(quads, quads.join(u, np.zeros(quads.np_)), np.ones(16), "vortex")
    """
    mesh = space.mesh
    uv, tri, box, fig, ax = _canvas(space, w, "flow_figure")
    x_phys = np.asarray(x_phys, dtype=float)
    art = ax.tripcolor(tri, np.hypot(uv[:, 0], uv[:, 1]), shading="gouraud", cmap="viridis")
    rgba = np.zeros((x_phys.size, 4))
    rgba[:, :3] = 0.35
    rgba[:, 3] = 0.9 * np.clip(1.0 - x_phys, 0.0, 1.0)           # solid grey, fluid clear
    ax.add_collection(PolyCollection(np.moveaxis(mesh.p[:, mesh.t], 0, -1).transpose(1, 0, 2),
                                     facecolors=rgba, edgecolors="none",
                                     antialiaseds=False))
    rho_v = _vertex_average(mesh, x_phys)
    ax.tricontour(tri, rho_v, levels=[0.5], colors="white", linewidths=1.0)
    _streamlines(ax, tri, uv, rho_v, box, density, 0.6, 0.7)
    return _finish(fig, ax, art, box, title, "velocity magnitude |u|")


def save_flow(space, w, x_phys, path: str, title: str = "", **kwargs) -> str:
    """Write `flow_figure` as a PNG at `path` (atomically); returns `path`."""
    return _save(flow_figure(space, w, x_phys, title, **kwargs), path)
