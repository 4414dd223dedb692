"""The supports (triangles) and loads (arrows) drawn on a design figure.

`boundary_markers` reads them from a model as point arrays; the 2-D figure
draws them with the rest of a problem's setup (`topopt.plot.Markers`, drawn
by `topopt.plot.symbols`: supports by `_draw_supports`, load arrows placed
by `_load_arrows`), the 3-D figure draws the same arrays.
"""

from __future__ import annotations

import numpy as np
from matplotlib.transforms import offset_copy

from .._validate import check_int, check_real_array

__all__ = ["boundary_markers"]


SUPPORT_COLOR, LOAD_COLOR = "tab:blue", "tab:red"
MARKER_SIZE = 7.0            # points
ARROW = 0.1                  # longest load arrow / larger side of the drawn domain
PAD = 0.04                   # margin for the support markers / larger side


def boundary_markers(model, f=None, max_points: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """The supports and loads of `model` as point arrays for the design plots.

    Parameters
    ----------
    model : topopt.fem.Model or a grid model
        Its fixed dofs (``model.fixed``) give the supports. A model with a
        `topopt.grid.Grid` ``model.grid`` (component-major: dof ``c * n_nodes + node``)
        is read from its dofs alone: only the marked nodes get coordinates.
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
    from ..grid import Grid
    if not hasattr(model, "fixed") or not (hasattr(model, "basis") or hasattr(model, "grid")):
        raise TypeError(f"model must be a topopt.fem.Model or topopt.grid.GridModel, got "
                        f"{type(model).__name__}")
    if isinstance(getattr(model, "grid", None), Grid):
        return _grid_markers(model, f, max_points)
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


def _grid_markers(model, f, max_points: int):
    """`boundary_markers` of a grid model: by dof arithmetic, coordinates of marked nodes."""
    grid, c = model.grid, int(model.components)
    if int(model.ndof) != grid.n_nodes * c:
        raise ValueError(f"model.ndof = {model.ndof}; a grid of {grid.n_nodes} nodes with {c} "
                         f"components has {grid.n_nodes * c}")
    fixed = np.unique(np.asarray(model.fixed, dtype=np.int64))
    n = grid.n_nodes                                  # dof = component * n + node
    nodes, row = np.unique(fixed % n, return_inverse=True)
    mask = np.zeros((len(nodes), c))
    mask[row, fixed // n] = 1.0
    supports = np.column_stack([grid.node_coordinates(nodes).T, mask])
    rows = [np.zeros((0, grid.dim + c))]
    if f is None:
        return supports, rows[0]
    f = np.asarray(f)
    if np.iscomplexobj(f) or f.ndim not in (1, 2) or f.shape[0] != model.ndof:
        raise ValueError(f"f has shape {f.shape} and dtype {f.dtype}; expected real "
                         f"({model.ndof},) or ({model.ndof}, n_loads)")
    max_points = check_int("max_points", max_points, 1)
    cols = f[:, None] if f.ndim == 1 else f
    for k in range(cols.shape[1]):
        hit = np.unique(np.flatnonzero(cols[:, k]) % n)
        if len(hit) <= max_points:
            v = cols[hit[:, None] + n * np.arange(c), k]
            rows.append(np.column_stack([grid.node_coordinates(hit).T, v]))
    return supports, np.concatenate(rows).astype(float)


def _marker_array(name: str, a, dim: int) -> np.ndarray:
    a = check_real_array("a", a, allow_bool=True)
    if a.size == 0:                              # none (``[]`` read back from result.json)
        return a.reshape(0, dim + 1)
    if a.ndim != 2 or a.shape[1] not in (dim + 1, 2 * dim) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} has shape {a.shape}; expected finite (n, {dim + 1}) or "
                         f"(n, {2 * dim}) rows: {dim} coordinates, then the components "
                         "(see boundary_markers)")
    return a


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
