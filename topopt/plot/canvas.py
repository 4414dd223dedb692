"""What every figure shares: the grid of a mesh, the design values checked, the PNG write.

A `topopt.grid.Grid` stands for its mesh: `grid_indices` numbers its
elements without one, and a 2-D grid is drawn by the mesh figures as
`_as_drawn` gives it (its bounding box as ``p``). Every PNG is written
atomically and readable by others (0644), its title kept as its ``Title``
text (`_png_title`).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .._files import atomic_path
from .._validate import check_real_array
from ..fem.mesh import element_centroids

__all__ = ["grid_indices"]


class _GridFrame:
    """A 2-D grid as `topopt.plot.design_figure` reads a mesh: ``p`` its two opposite
    corners (the bounding box), the element image by `grid_indices`; no node arrays."""

    def __init__(self, grid):
        self.grid = grid
        self.p = np.array([[0.0, n * grid.h] for n in grid.shape])     # (dim, 2)


def _grid_of(mesh):
    """The `topopt.grid.Grid` of a Grid or of its `_GridFrame`, else None."""
    from ..grid import Grid
    grid = mesh.grid if isinstance(mesh, _GridFrame) else mesh
    return grid if isinstance(grid, Grid) else None


def _as_drawn(mesh):
    """What the figures are given for `mesh`: a 2-D Grid's `_GridFrame`, else `mesh`."""
    grid = _grid_of(mesh)
    return _GridFrame(grid) if grid is not None and grid.dim == 2 else mesh


def _dim(mesh) -> int:
    """The dimension of a mesh, a Grid or a `_GridFrame`."""
    grid = _grid_of(mesh)
    return grid.dim if grid is not None else int(mesh.p.shape[0])


def grid_indices(mesh) -> tuple[np.ndarray, ...] | None:
    """Integer grid position of each element of a structured mesh (or a Grid), else None.

    Examples
    --------
    >>> from topopt.fem import rectangle
    >>> ix, iy = grid_indices(rectangle(3, 2))
    >>> int(ix.max()), int(iy.max())
    (2, 1)
    """
    grid = _grid_of(mesh)
    if grid is not None:                    # C order: element e at unravel_index(e, shape)
        return np.unravel_index(np.arange(grid.n_el), grid.shape)
    c = element_centroids(mesh)
    out = []
    for axis in range(c.shape[1]):
        levels, idx = np.unique(np.round(c[:, axis], 9), return_inverse=True)
        out.append(idx)
        if levels.size > 1 and not np.allclose(np.diff(levels), levels[1] - levels[0]):
            return None
    shape = tuple(int(i.max()) + 1 for i in out)
    return tuple(out) if np.prod(shape) == c.shape[0] else None


def _element_values(mesh, x, dim: int, name: str, other: str) -> np.ndarray:
    """`x` as one float per element of a `dim`-D mesh, or the error naming the fix."""
    x = check_real_array("x", x, allow_bool=True)
    grid = _grid_of(mesh)
    if _dim(mesh) != dim:
        raise ValueError(f"{name} draws {dim}-D meshes; use {other}")
    n_el = grid.n_el if grid is not None else mesh.t.shape[1]
    if x.shape != (n_el,):
        raise ValueError(f"x has shape {x.shape}; expected ({n_el},), one value "
                         "per element")
    return x


def _save(fig: Figure, path: str) -> str:
    """Write `fig` as a PNG (120 dpi) whose ``Title`` text is the figure's title."""
    suptitle = getattr(fig, "_suptitle", None)
    titles = [suptitle.get_text()] if suptitle is not None else []
    titles += [ax.get_title() for ax in fig.axes]
    title = next((t for t in titles if t), "")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, metadata={"Title": title} if title else None)
    return path


def _png_title(path: str) -> str:
    """The ``Title`` text of a PNG written by `_save` ("" without one)."""
    from PIL import Image
    with Image.open(path) as im:
        return str(im.text.get("Title", "")) if hasattr(im, "text") else ""
