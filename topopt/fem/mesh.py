"""Structured meshes; any scikit-fem mesh (triangles, tetrahedra, meshio files) works too."""

from __future__ import annotations

import numpy as np
import skfem

from .._validate import check_finite_values, check_int, check_positive, check_type
from .budget import check_grid


def _counts(**counts) -> tuple[int, ...]:
    """Element counts along the axes: integers >= 1."""
    return tuple(check_int(name, n, 1, what="elements along an axis")
                 for name, n in counts.items())


def _size(h) -> float:
    return check_positive("h", h, "element size")


def _check_mesh(mesh) -> skfem.Mesh:
    """`mesh` if it is a scikit-fem Mesh; `TypeError` naming ``mesh`` otherwise."""
    return check_type("mesh", mesh, skfem.Mesh, "a scikit-fem Mesh")


def rectangle(nelx: int, nely: int, h: float = 1.0) -> skfem.MeshQuad1:
    """``nelx x nely`` bilinear quadrilaterals of size `h`, corner at the origin.

    Examples
    --------
    >>> from topopt.fem import rectangle
    >>> m = rectangle(6, 2)
    >>> m.t.shape[1], m.p[:, -1].tolist()
    (12, [6.0, 2.0])
    """
    nelx, nely = _counts(nelx=nelx, nely=nely)
    check_grid((nelx, nely), f"fem.rectangle({nelx}, {nely})")     # before allocating
    h = _size(h)
    return skfem.MeshQuad.init_tensor(h * np.arange(nelx + 1.0), h * np.arange(nely + 1.0))


def box(nelx: int, nely: int, nelz: int, h: float = 1.0) -> skfem.MeshHex1:
    """``nelx x nely x nelz`` trilinear hexahedra of size `h`, corner at the origin.

    Examples
    --------
    >>> from topopt.fem import box
    >>> box(4, 2, 2).t.shape
    (8, 16)
    """
    nelx, nely, nelz = _counts(nelx=nelx, nely=nely, nelz=nelz)
    check_grid((nelx, nely, nelz), f"fem.box({nelx}, {nely}, {nelz})")    # before allocating
    h = _size(h)
    return skfem.MeshHex.init_tensor(*(h * np.arange(n + 1.0) for n in (nelx, nely, nelz)))


def element_centroids(mesh: skfem.Mesh) -> np.ndarray:
    """Centroids of the elements, shape ``(n_elements, dim)``.

    Examples
    --------
    >>> from topopt.fem import element_centroids, rectangle
    >>> element_centroids(rectangle(2, 1))
    array([[0.5, 0.5],
           [1.5, 0.5]])
    """
    return _check_mesh(mesh).p[:, mesh.t].mean(axis=1).T


def element_volumes(mesh: skfem.Mesh) -> np.ndarray:
    """Area (2-D) or volume (3-D) of each element, integrated by scikit-fem.

    Examples
    --------
    >>> from topopt.fem import element_volumes, rectangle
    >>> element_volumes(rectangle(2, 1, h=0.5))
    array([0.25, 0.25])
    """
    # the integrand is the Jacobian determinant: degree <= 2 per direction on
    # multilinear elements, exact with 2 points per direction (intorder 3)
    basis = skfem.Basis(_check_mesh(mesh), mesh.elem(), intorder=3)
    return skfem.Functional(lambda w: 1.0 + 0.0 * w.x[0]).elemental(basis)


#: Relative size of the smallest accepted corner Jacobian determinant, against the
#: element's bounding-box size to the power dim: below it an element is degenerate.
DEGENERATE_TOL = 1e-12

_LINEAR = (skfem.MeshLine1, skfem.MeshTri1, skfem.MeshQuad1, skfem.MeshTet1, skfem.MeshHex1)


def _translates(mesh: skfem.Mesh) -> bool:
    """Whether every element is a translate of the first (a uniform quad/hex lattice)."""
    if not isinstance(mesh, (skfem.MeshQuad1, skfem.MeshHex1)) or mesh.t.shape[1] < 2:
        return False
    d = mesh.p[:, mesh.t] - mesh.p[:, mesh.t[:1]]                  # (dim, n_nodes, n_el)
    scale = float(np.max(np.abs(d[:, :, 0])))
    return bool(np.all(np.abs(d - d[:, :, :1]) <= 1e-12 * scale))


#: Node coordinates span at most this (and at least its inverse): lengths to the power 3
#: (volumes, Jacobian determinants, squared distances) stay finite and normal in doubles.
MAX_EXTENT = 1e100


def _check_extent(name: str, p: np.ndarray) -> None:
    """`ValueError` unless the finite node coordinates `p` ``(dim, n)`` span a length in
    ``[1 / MAX_EXTENT, MAX_EXTENT]`` (volumes and squared distances would overflow or
    underflow; numpy and scipy would say so without naming the mesh).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.fem.mesh import _check_extent
    >>> _check_extent("mesh.p", np.array([[0.0, 1e200], [0.0, 1.0]]))
    Traceback (most recent call last):
    ...
    ValueError: mesh.p: the node coordinates span 1e+200, outside [1e-100, 1e+100]: lengths \
cubed (volumes, squared distances) would overflow or vanish in double precision; scale the mesh \
(another unit of length)
    """
    if p.size == 0:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        span = float(np.max(np.max(p, axis=1) - np.min(p, axis=1)))
    if not 1.0 / MAX_EXTENT <= span <= MAX_EXTENT:
        raise ValueError(f"{name}: the node coordinates span {span:g}, outside "
                         f"[{1 / MAX_EXTENT:g}, {MAX_EXTENT:g}]: lengths cubed (volumes, squared "
                         "distances) would overflow or vanish in double precision; scale the "
                         "mesh (another unit of length)")


def check_mesh(mesh, uniform: bool | None = None) -> skfem.Mesh:
    """`mesh` if it is a valid scikit-fem Mesh for a model; a `ValueError` naming the defect.

    Checked once, where a `Model` is made (`topopt.fem.elasticity`, `heat`,
    `WaveModel`) and where a filter is (`topopt.design.filters`): finite node
    coordinates, element node indices in range, no node outside every
    element (its dofs would have no stiffness; on a quadratic mesh the
    vertices only), no element repeated (the same node set in any order: its
    stiffness would count twice; found by a 64-bit hash of the sorted node
    indices, then compared exactly) and, on linear meshes, corner Jacobian
    determinants of one sign and larger than `DEGENERATE_TOL` times the
    element size to the power dim (no degenerate or inverted element;
    elements numbered clockwise throughout are fine, scikit-fem integrates
    ``|det J|``). On a `uniform` lattice of translates (`None`: found out
    here) only the first element's corners are computed. Measured: 15-40 ms
    on a uniform 80 x 40 x 40 box (128 000 hexahedra), 16-45 ms on a plate
    with a hole of 30 720 quadrilaterals.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt.fem.mesh import check_mesh
    >>> line = skfem.MeshLine(np.array([0.0, 1.0, 2.0]), np.array([[0, 1, 1], [1, 2, 0]]))
    >>> check_mesh(line)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: mesh repeats an element: element 2 has the nodes of element 0 (1 repeat(s) ...
    """
    _check_mesh(mesh)
    p, t = np.asarray(mesh.p), np.asarray(mesh.t)
    check_finite_values("mesh.p", p, "node coordinates must be finite", ("coordinate", "node"))
    _check_extent("mesh.p", p)
    n_nodes = p.shape[1]
    if t.size and (t.min() < 0 or t.max() >= n_nodes):
        raise ValueError(f"mesh.t has node indices outside [0, {n_nodes}): "
                         f"[{t.min()}, {t.max()}]")
    # a linear mesh has its nodes as the element's dofs; else mesh.p also holds edge/face nodes
    linear = isinstance(mesh, _LINEAR) and mesh.elem().doflocs.shape[0] == t.shape[0]
    unused = np.flatnonzero(np.bincount(t.ravel(), minlength=n_nodes if linear else 0) == 0)
    if unused.size:
        raise ValueError(f"mesh has {unused.size} node(s) in no element (e.g. node "
                         f"{unused[:5].tolist()}): their dofs would have no stiffness; remove "
                         "them with mesh = mesh.remove_unused_nodes()")
    _check_repeats(t)
    if uniform is None:
        uniform = _translates(mesh)
    if linear:
        _check_jacobians(mesh, p, t[:, :1] if uniform else t)
    return mesh


def _check_repeats(t: np.ndarray) -> None:
    """`ValueError` naming the first element whose node set repeats another's."""
    ts = np.sort(t, axis=0).astype(np.uint64)
    weights = np.random.default_rng(0).integers(1, 2 ** 63, size=ts.shape[0], dtype=np.uint64)
    key = np.sum(ts * weights[:, None], axis=0, dtype=np.uint64)   # a hash; wraps around
    order = np.argsort(key, kind="stable")
    same = np.flatnonzero(key[order[1:]] == key[order[:-1]])
    a, b = order[same], order[same + 1]
    repeat = np.all(ts[:, a] == ts[:, b], axis=0)
    if np.any(repeat):
        first, second = sorted((int(a[repeat][0]), int(b[repeat][0])))
        raise ValueError(f"mesh repeats an element: element {second} has the nodes of element "
                         f"{first} ({int(np.sum(repeat))} repeat(s) in all); its stiffness (mass, "
                         "filter weight) would count twice: remove the repeats")


def _check_jacobians(mesh: skfem.Mesh, p: np.ndarray, t: np.ndarray,
                     chunk: int = 65536) -> None:
    """`ValueError` for the first element whose corner Jacobians vanish or change sign."""
    elem = mesh.elem()
    corners = elem.refdom.p                                   # (dim, n_corners)
    dphi = np.stack([elem.lbasis(corners, i)[1] for i in range(t.shape[0])])  # (n, dim, q)
    dim = p.shape[0]
    for s in range(0, t.shape[1], chunk):
        x = p[:, t[:, s:s + chunk]]                           # (dim, n, m)
        J = np.einsum("aim,ibq->mqab", x, dphi)
        det = np.linalg.det(J) if dim > 1 else J[..., 0, 0]   # (m, q)
        size = np.max(np.ptp(x, axis=1), axis=0) ** dim       # (m,)
        small = np.abs(det) <= DEGENERATE_TOL * size[:, None]
        flips = (np.min(det, axis=1) < 0) & (np.max(det, axis=1) > 0)
        bad = np.flatnonzero(np.any(small, axis=1) | flips)
        if bad.size:
            e = int(bad[0])
            kind = ("degenerate (zero area/volume at a corner)" if np.any(small[e])
                    else "inverted (its Jacobian determinant changes sign: "
                         "corners out of order or a non-convex element)")
            raise ValueError(f"mesh element {s + e} is {kind}; corner Jacobian determinants "
                             f"{np.round(det[e], 12).tolist()}: fix the element's nodes")
