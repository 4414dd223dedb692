"""Nested grids: which element of a coarse tensor grid holds each element of a finer mesh.

Used to carry an element-wise design onto a mesh refined `div` times (a
mesh-convergence check of a pixelated design): the coarse density ``rho``
(one value per coarse design element) is ``rho[parent]`` on the fine
elements ``child``.
"""

from __future__ import annotations

import numpy as np
import skfem

from .._validate import check_int
from .mesh import element_centroids, element_volumes

__all__ = ["nested_elements"]


def _grid_cells(mesh: skfem.Mesh) -> tuple[list, np.ndarray]:
    """The axes of a tensor grid and each element's cell index (dim, n_el)."""
    dim = mesh.p.shape[0]
    axes = [np.unique(mesh.p[d]) for d in range(dim)]
    lo, hi = mesh.p[:, mesh.t].min(axis=1), mesh.p[:, mesh.t].max(axis=1)
    cell = np.stack([np.searchsorted(axes[d], lo[d]) for d in range(dim)])
    ok = mesh.t.shape[0] == 2 ** dim and all(
        np.all(cell[d] + 1 < axes[d].size)
        and np.array_equal(axes[d][np.minimum(cell[d] + 1, axes[d].size - 1)], hi[d])
        for d in range(dim))
    flat = np.ravel_multi_index(tuple(cell), [a.size for a in axes]) if ok else None
    if not ok or np.unique(flat).size != flat.size:
        raise ValueError("coarse must be a tensor-product grid of axis-aligned quadrilaterals "
                         "or hexahedra (skfem.MeshQuad/MeshHex.init_tensor, graded or not)")
    return axes, cell


def _elements(elements, n_el: int) -> np.ndarray:
    if elements is None:
        return np.arange(n_el)
    arr = np.asarray(elements)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise TypeError(f"elements must be a 1-D array of element indices, got {arr.dtype} "
                        f"of shape {arr.shape}")
    arr = arr.astype(int)
    if arr.size and (arr.min() < 0 or arr.max() >= n_el):
        raise ValueError(f"elements must lie in [0, {n_el - 1}] (the coarse mesh's elements)")
    if np.unique(arr).size != arr.size:
        raise ValueError("elements must not repeat an element")
    return arr


def nested_elements(coarse: skfem.Mesh, fine: skfem.Mesh, div: int,
                    elements=None) -> tuple[np.ndarray, np.ndarray]:
    """The elements of `fine` inside `elements` of `coarse`, and which one holds each.

    `coarse` is a tensor grid (axis-aligned quadrilaterals or hexahedra,
    graded or not); `fine` is any mesh of the same dimension in which each of
    `elements` is tiled by exactly ``div**dim`` elements (elsewhere, e.g. in
    the air around a design region, `fine` may be anything). A fine element
    belongs to the coarse cell holding its centroid.

    Parameters
    ----------
    coarse, fine : skfem.Mesh
        The coarse tensor grid and the refined mesh.
    div : int
        Refinement factor per direction, >= 1.
    elements : array_like of int, optional
        Coarse elements to look up (default: all), without repeats.

    Returns
    -------
    child : numpy.ndarray
        Indices of the fine elements inside `elements`, ascending.
    parent : numpy.ndarray
        For each `child`, its coarse element's position in `elements`: a
        density ``rho`` per coarse element is ``rho[parent]`` on `child`.

    Raises
    ------
    ValueError
        If `fine` does not nest in `coarse` with `div`: a coarse element holds
        another number of fine elements than ``div**dim``, or they stick out
        of it or do not cover it. Also for a `coarse` that is not a tensor
        grid and for bad `div` or `elements`.

    Examples
    --------
    >>> from topopt.fem import nested_elements, rectangle
    >>> child, parent = nested_elements(rectangle(2, 1, h=2.0), rectangle(4, 2), 2, [1])
    >>> child.tolist(), parent.tolist()
    ([4, 5, 6, 7], [0, 0, 0, 0])
    """
    for name, mesh in (("coarse", coarse), ("fine", fine)):
        if not isinstance(mesh, skfem.Mesh):
            raise TypeError(f"{name} must be a scikit-fem Mesh, got {type(mesh).__name__}")
    div = check_int("div", div, 1)
    dim = coarse.p.shape[0]
    if fine.p.shape[0] != dim:
        raise ValueError(f"fine must be {dim}-D like coarse, got {fine.p.shape[0]}-D")
    elements = _elements(elements, coarse.t.shape[1])
    axes, cell = _grid_cells(coarse)
    grid = np.full([a.size - 1 for a in axes], -1)
    grid[tuple(cell[:, elements])] = np.arange(elements.size)
    c = element_centroids(fine).T
    k = np.stack([np.searchsorted(axes[d], c[d]) - 1 for d in range(dim)])
    inside = np.all((k >= 0) & (k < np.array(grid.shape)[:, None]), axis=0)
    owner = np.full(c.shape[1], -1)
    owner[inside] = grid[tuple(k[:, inside])]
    child = np.flatnonzero(owner >= 0)
    parent = owner[child]
    _check_nested(coarse, fine, div, elements, child, parent)
    return child, parent


def _check_nested(coarse, fine, div, elements, child, parent) -> None:
    """Each coarse element tiled by ``div**dim`` fine ones lying inside it."""
    dim = coarse.p.shape[0]
    count = np.bincount(parent, minlength=elements.size)
    lo_c = coarse.p[:, coarse.t[:, elements]].min(axis=1)
    hi_c = coarse.p[:, coarse.t[:, elements]].max(axis=1)
    lo_f, hi_f = fine.p[:, fine.t[:, child]].min(axis=1), fine.p[:, fine.t[:, child]].max(axis=1)
    tol = 1e-9 * (hi_c - lo_c).max(axis=0)
    sticks_out = np.any((lo_f < lo_c[:, parent] - tol[parent])
                        | (hi_f > hi_c[:, parent] + tol[parent]), axis=0)
    vol = element_volumes(fine.restrict(child)) if child.size else np.zeros(0)
    covered = np.bincount(parent, vol, minlength=elements.size)
    volume = np.prod(hi_c - lo_c, axis=0)
    bad = np.flatnonzero((count != div ** dim) | ~np.isclose(covered, volume, rtol=1e-9))
    if bad.size or sticks_out.any():
        j = bad[0] if bad.size else parent[np.argmax(sticks_out)]
        raise ValueError(f"the fine mesh does not nest in coarse with div={div}: coarse element "
                         f"{elements[j]} holds {count[j]} fine elements (need div**{dim} = "
                         f"{div ** dim} inside it, covering it)")
