"""What every figure shares: the grid of a mesh, the design values checked, the PNG write.

Every PNG is written atomically and readable by others (0644).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .._files import atomic_path
from ..fem.mesh import element_centroids

__all__ = ["grid_indices"]


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


def _element_values(mesh, x, dim: int, name: str, other: str) -> np.ndarray:
    """`x` as one float per element of a `dim`-D mesh, or the error naming the fix."""
    x = np.asarray(x, dtype=float)
    if mesh.p.shape[0] != dim:
        raise ValueError(f"{name} draws {dim}-D meshes; use {other}")
    if x.shape != (mesh.t.shape[1],):
        raise ValueError(f"x has shape {x.shape}; expected ({mesh.t.shape[1]},), one value "
                         "per element")
    return x


def _save(fig: Figure, path: str) -> str:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    return path
