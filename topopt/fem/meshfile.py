"""Meshes from files: gmsh's ``.msh`` (and any format meshio reads) as a scikit-fem mesh.

`read_mesh` reads a file through meshio (the ``io`` extra) and returns linear
triangles (`skfem.MeshTri1`) or tetrahedra (`skfem.MeshTet1`) that a `Model`
and the filters accept: the cells of the highest dimension are the elements,
those of lower dimension (gmsh's boundary lines and points, the facets of
physical groups) are dropped, nodes in no element are removed, elements are
numbered counterclockwise (positive area or volume), and whatever a
`topopt.fem.mesh.check_mesh` would refuse later, or a mesh would get wrong
silently (coincident nodes: a crack), is an error naming the file.
"""

from __future__ import annotations

import contextlib
import io
import os

import numpy as np
import skfem

from .._validate import check_type
from .._validate import check_finite_values
from .mesh import _check_extent, check_mesh

__all__ = ["read_mesh", "COINCIDENT_TOL"]

#: Two used nodes closer than this times the mesh's bounding-box diagonal coincide.
COINCIDENT_TOL = 1e-10

_EXTRA = "pip install 'topopt[io]'"
# the element types read_mesh makes, by topological dimension
_SIMPLEX = {2: ("triangle", skfem.MeshTri1), 3: ("tetra", skfem.MeshTet1)}
# the topological dimension of meshio's cell types by their names' prefixes (triangle6,
# quad9, tetra10, hexahedron27, VTK_LAGRANGE_TETRAHEDRON, ...)
_DIMENSION = (("vertex", 0), ("line", 1), ("vtk_lagrange_curve", 1), ("triangle", 2),
              ("quad", 2), ("polygon", 2), ("vtk_lagrange_triangle", 2),
              ("vtk_lagrange_quadrilateral", 2), ("tetra", 3), ("hexahedron", 3), ("wedge", 3),
              ("pyramid", 3), ("vtk_lagrange_", 3))


def read_mesh(path, file_format: str | None = None) -> skfem.Mesh:
    """Read a mesh file (gmsh ``.msh``, ``.vtu``, ``.xdmf``, ... via meshio) for a `Model`.

    Parameters
    ----------
    path : str or os.PathLike
        The file. Its elements are the cells of the highest dimension: linear
        triangles (a 2-D part, all nodes in one plane ``z = const``) or
        linear tetrahedra. Lower-dimensional cells (boundary lines, points,
        the facets of physical groups) are dropped.
    file_format : str, optional
        meshio's name of the format (``"gmsh"``, ``"vtu"``, ...) when the
        extension does not tell it.

    Returns
    -------
    skfem.MeshTri1 or skfem.MeshTet1
        Nodes in no element are removed (gmsh writes the geometry's points:
        circle centres), the others keep their order; each element is
        numbered with positive area (volume), its nodes otherwise in the
        file's order. Coordinates in the file's units: choose ``rmin`` and
        the loads in them.

    Raises
    ------
    ImportError
        meshio is missing (the ``io`` extra).
    FileNotFoundError
        No file at `path`.
    ValueError
        meshio cannot read it; no triangles or tetrahedra (quadrilaterals,
        second-order cells, only lines); elements of two kinds of the same
        dimension (triangles and quadrilaterals); triangles not in a plane (a
        surface in 3-D); two used nodes at one point (the elements on either
        side do not share them: a crack); an element of zero area or volume,
        or repeated (`topopt.fem.mesh.check_mesh`).

    Examples
    --------
    A unit square of two triangles, written by meshio with an unused node and
    one clockwise triangle:

    >>> import os, tempfile, meshio, numpy as np
    >>> from topopt.fem import read_mesh
    >>> points = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [5, 5, 0]]
    >>> cells = [("triangle", [[0, 1, 2], [0, 2, 3]]), ("line", [[0, 1]])]
    >>> path = os.path.join(tempfile.mkdtemp(), "square.msh")
    >>> meshio.write(path, meshio.Mesh(points, cells), file_format="gmsh22", binary=False)
    >>> mesh = read_mesh(path)
    >>> type(mesh).__name__, mesh.p.shape, mesh.t.T.tolist()
    ('MeshTri1', (2, 4), [[0, 1, 2], [0, 2, 3]])
    >>> read_mesh(path + ".missing")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: no mesh file at .../square.msh.missing
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file name (str or os.PathLike), got "
                        f"{type(path).__name__}")
    if file_format is not None:
        check_type("file_format", file_format, str, "meshio's name of a format or None")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no mesh file at {path}" + (
            " (a folder)" if os.path.isdir(path) else ""))
    _check_gmsh_nodes(path)
    return _to_skfem(_read(path, file_format), path)


def _check_gmsh_nodes(path: str) -> None:
    """`ValueError` for an element of an ASCII gmsh file (2.2 or 4.1) that names a node tag
    its ``$Nodes`` do not list: meshio would map it to another node without a word."""
    with open(path, "rb") as fh:
        if fh.read(11) != b"$MeshFormat":
            return
        fh.readline()
        head = fh.readline().split()
        if len(head) < 2 or head[1] != b"0" or head[0][:1] not in (b"2", b"4"):
            return                                    # binary or another version: meshio
        try:
            _check_gmsh_sections(path, (line.split() for line in fh), head[0][:1] == b"4")
        except (StopIteration, RuntimeError, ValueError, IndexError) as err:
            if str(err).startswith(path):
                raise
            return                                    # malformed: meshio says how


def _check_gmsh_sections(path: str, lines, version4: bool) -> None:
    """The check of `_check_gmsh_nodes` on the split `lines` after the format line."""
    tags = set()
    for line in lines:
        if line[:1] == [b"$Nodes"]:
            tags = _gmsh_node_tags(lines, version4)
        elif line[:1] == [b"$Elements"]:
            for element, nodes in _gmsh_elements(lines, version4):
                missing = [n for n in nodes if n not in tags]
                if missing:
                    raise ValueError(f"{path}: element {element.decode()} names node "
                                     f"{missing[0].decode()}, which the file's $Nodes do not "
                                     f"list ({len(tags)} nodes)")
            return


def _gmsh_node_tags(lines, version4: bool) -> set:
    """The node tags of a ``$Nodes`` section (as bytes)."""
    head = next(lines)
    if not version4:
        return {next(lines)[0] for _ in range(int(head[0]))}
    tags = set()
    for _ in range(int(head[0])):                     # entity blocks: tags, then coordinates
        n = int(next(lines)[3])
        tags.update(next(lines)[0] for _ in range(n))
        for _ in range(n):
            next(lines)
    return tags


def _gmsh_elements(lines, version4: bool):
    """``(tag, node tags)`` of each element of an ``$Elements`` section (as bytes)."""
    head = next(lines)
    if not version4:
        for _ in range(int(head[0])):
            line = next(lines)
            yield line[0], line[3 + int(line[2]):]
        return
    for _ in range(int(head[0])):
        for _ in range(int(next(lines)[3])):
            line = next(lines)
            yield line[0], line[1:]


def _read(path: str, file_format: str | None):
    """meshio's mesh of `path`; its failures (it prints them and exits) as `ValueError`."""
    try:
        import meshio
    except ImportError as e:
        raise ImportError(f"read_mesh needs meshio ({_EXTRA})") from e
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            return meshio.read(path, file_format=file_format)
    except (Exception, SystemExit) as e:
        told = " ".join(said.getvalue().split()) or f"{type(e).__name__}: {e}"
        raise ValueError(f"meshio cannot read {path} as a mesh: {told}") from None


def _dimension(cell_type: str) -> int:
    """The topological dimension of a meshio cell type (0 for one not known)."""
    name = cell_type.lower()
    return next((d for prefix, d in _DIMENSION if name.startswith(prefix)), 0)


def _elements(mio, path: str) -> tuple[int, np.ndarray]:
    """The dimension and the node indices ``(n_el, dim + 1)`` of the file's elements."""
    blocks = [(c.type, np.asarray(c.data)) for c in mio.cells if len(c.data)]
    kinds = sorted({k for k, _ in blocks}, key=lambda k: (-_dimension(k), k))
    if not kinds or _dimension(kinds[0]) < 2:
        raise ValueError(f"{path} has no triangles or tetrahedra (cells: "
                         f"{kinds or 'none'}): read_mesh reads linear triangles (2-D) or "
                         "tetrahedra (3-D)")
    dim = _dimension(kinds[0])
    top = [k for k in kinds if _dimension(k) == dim]
    name = _SIMPLEX[dim][0]
    if top != [name]:
        what = "mixed cells " + " and ".join(top) if len(top) > 1 else f"{top[0]} cells"
        raise ValueError(f"{path} has {what}: read_mesh reads linear {name} elements only "
                         f"(one kind; in gmsh: order 1, no recombination), got {top}")
    return dim, np.concatenate([d for k, d in blocks if k == name]).astype(np.int64)


def _coordinates(points: np.ndarray, dim: int, path: str) -> np.ndarray:
    """The nodes ``(dim, n)``: triangles drop a constant ``z``, tetrahedra need three."""
    if points.shape[1] < dim:
        raise ValueError(f"{path}: {dim}-D elements need {dim} coordinates per node, the "
                         f"file has {points.shape[1]}")
    extra = points[:, dim:]
    diagonal = float(np.linalg.norm(np.ptp(points[:, :dim], axis=0)))
    if extra.size and np.max(np.ptp(extra, axis=0)) > COINCIDENT_TOL * diagonal:
        raise ValueError(f"{path}: the triangles do not lie in a plane z = const (z spans "
                         f"{np.ptp(extra):.3g}): a surface in 3-D; read_mesh reads planar "
                         "2-D meshes or tetrahedra")
    return np.ascontiguousarray(points[:, :dim].T, dtype=float)


def _to_skfem(mio, path: str) -> skfem.Mesh:
    dim, cells = _elements(mio, path)
    points = np.asarray(mio.points, dtype=float)
    outside = (cells < 0) | (cells >= len(points))
    if outside.any():
        e, k = np.argwhere(outside)[0]
        raise ValueError(f"{path}: {_SIMPLEX[dim][0]} {e} names node {cells[e, k]}, which the "
                         f"file does not have (nodes 0 .. {len(points) - 1}, from 0; "
                         f"{int(outside.any(axis=1).sum())} such element(s))")
    check_finite_values(f"{path}: the node coordinates", points, "coordinates must be finite",
                        ("node", "coordinate"))
    used = np.unique(cells)
    renumber = np.full(len(points), -1)
    renumber[used] = np.arange(used.size)
    _check_extent(path, points[used].T)
    p = _coordinates(points[used], dim, path)
    t = renumber[cells].T                                   # (dim + 1, n_el)
    _check_coincident(p, used, path)
    t = _oriented(p, t)
    try:
        return check_mesh(_SIMPLEX[dim][1](p, np.ascontiguousarray(t)))
    except ValueError as e:                 # a degenerate or repeated element: name the file
        raise ValueError(f"{path}: {e} (elements numbered as the file's {_SIMPLEX[dim][0]} "
                         "cells, from 0)") from None


def _check_coincident(p: np.ndarray, file_index: np.ndarray, path: str) -> None:
    """`ValueError` naming two nodes at one point (file numbering, from 0)."""
    from scipy.spatial import cKDTree             # here: scipy.spatial stays out of `import topopt`
    diagonal = float(np.linalg.norm(np.ptp(p, axis=1)))
    pairs = cKDTree(p.T).query_pairs(COINCIDENT_TOL * diagonal, output_type="ndarray")
    if len(pairs):
        i, j = sorted(file_index[pairs[0]].tolist())
        raise ValueError(f"{path}: nodes {i} and {j} of the file lie at one point "
                         f"({len(pairs)} such pair(s)): the elements on either side do not "
                         "share a node, the mesh has a crack there; merge them (gmsh: "
                         "Coherence Mesh, or meshing the fused geometry)")


def _oriented(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    """`t` with two nodes swapped in each element of negative area (volume)."""
    edges = p[:, t[1:]] - p[:, t[:1]]                      # (dim, dim, n_el)
    det = np.linalg.det(np.moveaxis(edges, -1, 0))         # signed dim! area (volume)
    flip = det < 0
    t = t.copy()
    t[[1, 2]] = np.where(flip, t[[2, 1]], t[[1, 2]])
    return t
