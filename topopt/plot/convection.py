"""A 2-D forced-convection design: the temperature over the design with the flow's streamlines.

`temperature_figure` (`save_temperature`) draws the temperature of a
`topopt.flow.Convection` model (its values at the mesh vertices,
Gouraud-shaded), the design's ``rho = 1/2`` contour (the wall between fluid
and solid), the streamlines of the Taylor-Hood velocity in the fluid and,
optionally, the outline of the heated region.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .canvas import _save
from .flow import _canvas, _finish, _streamlines, _vertex_average

__all__ = ["temperature_figure", "save_temperature"]


def temperature_figure(space, w, T, x_phys, title: str = "", region=None,
                       density: float = 1.0) -> Figure:
    """The figure of a temperature over a 2-D flow design.

    Parameters
    ----------
    space : topopt.flow.TaylorHood
        On a triangle mesh.
    w : (space.n,) array
        The flow state ``[u, p]``.
    T : array
        The temperature dofs of a `topopt.flow.Convection` on the same mesh
        (P1 or P2: its first values are those at the vertices).
    x_phys : (n_elements,) array
        The design (1 fluid, 0 solid).
    title : str
    region : tuple of float, optional
        ``(x0, y0, x1, y1)``, a rectangle drawn dashed (the heated region).
    density : float
        ``streamplot``'s line density.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt.flow import TaylorHood
    >>> from topopt.plot.convection import temperature_figure
    >>> space = TaylorHood(skfem.MeshTri().refined(2))
    >>> u = space.interpolate_velocity(lambda x: np.array([1 + 0 * x[0], 0 * x[1]]))
    >>> w = space.join(u, np.zeros(space.np_))
    >>> fig = temperature_figure(space, w, space.mesh.p[0], np.ones(32), "T = x")
    >>> fig.axes[0].get_title()
    'T = x'
    """
    mesh = space.mesh
    nv = mesh.p.shape[1]
    T = np.asarray(T, dtype=float)
    if T.ndim != 1 or T.size < nv:
        raise ValueError(f"T must hold at least the {nv} vertex values, got shape {T.shape}")
    uv, tri, box, fig, ax = _canvas(space, w, "temperature_figure")
    art = ax.tripcolor(tri, T[:nv], shading="gouraud", cmap="inferno")
    rho_v = _vertex_average(mesh, np.asarray(x_phys, dtype=float))
    ax.tricontour(tri, rho_v, levels=[0.5], colors="cyan", linewidths=1.2)
    _streamlines(ax, tri, uv, rho_v, box, density, 0.5, 0.6)
    if region is not None:
        x0, y0, x1, y1 = region
        ax.plot([x0, x1, x1, x0, x0], [y0, y0, y1, y1, y0], "--", color="0.8", lw=1.0)
    return _finish(fig, ax, art, box, title, "temperature T")


def save_temperature(space, w, T, x_phys, path: str, title: str = "", **kwargs) -> str:
    """Write `temperature_figure` as a PNG at `path` (atomically); returns `path`."""
    return _save(temperature_figure(space, w, T, x_phys, title, **kwargs), path)
