"""Designs you can keep: ``design.npz``, ``design.vtu`` (ParaView) and ``design.stl``.

`save_design` writes, in a results folder, ``design.npz``: ``x``, ``x_phys``,
the mesh (``points``, ``cells``, its scikit-fem class in ``mesh_type`` and
meshio cell type in ``cell_type``), the setup as JSON text in ``setup``, and
the state fields (``point_<name>``); always written (numpy only), read back
with `load_design` (which rebuilds the mesh; nothing is unpickled).
``design.vtu`` through meshio (the ``io`` extra): cell data ``x`` and
``x_phys``, point data for the state; 2-D points and vectors get a zero third
component, as VTK expects. ``design.stl`` for 3-D hexahedral grids (``io``
extra: meshio and scikit-image): the surface of the elements ``x_phys >= 0.5``
by marching cubes on the refined element grid padded with zeros, so it is
closed (`iso_surface`); for tetrahedra (meshio alone) the boundary faces of
the tetrahedra ``x_phys >= 0.5``. A `topopt.grid.Grid` given as the mesh is written by
`topopt.io.voxels` instead (a float32 npz, ``design.vti``, a blocked STL).

Without the extra, `save_design` still writes ``design.npz`` and says in one
line which files need ``pip install 'topopt[io]'``; `write_vtu` and
`write_stl` called directly raise an ImportError naming the extra. Every file
is written atomically and readable by others (0644).
"""

from __future__ import annotations

import json
import os

import numpy as np
from .._validate import check_int, check_mapping, check_range, check_real_array
import skfem

from .._files import atomic_path, atomic_write_bytes
from .design_file import (DesignFileError, _density_range, _field_rows, _finite, _read_npz,
                          _real_array, _require, signed_volume)

__all__ = ["save_design", "load_design", "write_vtu", "write_stl", "iso_surface",
           "enclosed_volume", "MESH_TYPES"]


# scikit-fem mesh class -> meshio cell type (first-order meshes only)
MESH_TYPES = {"MeshTri1": "triangle", "MeshQuad1": "quad", "MeshTet1": "tetra",
              "MeshHex1": "hexahedron"}

# the names of design.npz that are not cell data
_NOT_CELL = {"points", "cells", "mesh_type", "cell_type", "setup"}


def _mesh_type(mesh) -> str:
    name = type(mesh).__name__
    if name not in MESH_TYPES:
        raise TypeError(f"mesh is a {name}; expected one of {sorted(MESH_TYPES)}")
    return name


def _check_fields(mesh, x, x_phys, point_data, cell_data=None):
    n_el = mesh.t.shape[1]
    arrays = {}
    bad = [k for k in {**(cell_data or {}), **(point_data or {})}
           if k in _NOT_CELL | {"x", "x_phys"} or k.startswith("point_")]
    if bad:
        raise ValueError(f"cell_data/point_data may not be named {sorted(bad)} (reserved: "
                         "x, x_phys, points, cells, mesh_type, cell_type, setup, point_*)")
    for name, v in (("x", x), ("x_phys", x_phys), *(cell_data or {}).items()):
        if np.iscomplexobj(v):
            raise ValueError(f"{name} is complex; save its real and imaginary parts")
        v = check_real_array(name, v, allow_bool=True)
        if v.shape != (n_el,):
            what = name if name in ("x", "x_phys") else f"cell_data[{name!r}]"
            raise ValueError(f"{what} has shape {v.shape}; expected ({n_el},), one per element")
        _finite(name, v)
        if name in ("x", "x_phys"):
            _density_range(name, v, ValueError)
        arrays[name] = v
    points = {}
    for name, v in (point_data or {}).items():
        v = _field_rows(f"point_data[{name!r}]", v, mesh.p.shape[1], "mesh point")
        points[name] = v
    return arrays, points


#: How far a saved ``x`` / ``x_phys`` may lie outside [0, 1] (rounding of filters;
#: `topopt.design.permittivity` accepts the same).
def save_design(out: str, mesh, x, x_phys, setup: dict, point_data: dict | None = None,
                cell_data: dict | None = None, stl: bool | None = None) -> list[str]:
    """Write ``design.npz``, ``design.vtu`` and (3-D) ``design.stl`` to the folder `out`.

    Parameters
    ----------
    out : str
        Results folder (created).
    mesh : skfem.Mesh or topopt.grid.Grid
        First-order triangles, quadrilaterals, tetrahedra, hexahedra; a grid: `save_grid_design`.
    x, x_phys : (n_el,) arrays
        Design variables and physical densities.
    setup : dict
        The problem's name and parameters (JSON-serialisable).
    point_data : dict, optional
        State fields, one row per mesh point (``{"displacement": (n, dim)}``).
    cell_data : dict, optional
        More real fields, one value per element (``|E|``, a second design).
    stl : bool, optional
        Write ``design.stl``; default: for 3-D meshes (hexahedral grids, tetrahedra).

    Returns
    -------
    list of str
        The paths written. A missing ``io`` extra skips the VTU/STL, and a
        design without an element ``x_phys >= 0.5`` (or a mesh that is no
        grid) the STL, each with one printed line; a ``design.vtu`` or
        ``design.stl`` of an earlier run is removed first.
    """
    from ..grid import Grid
    if isinstance(mesh, Grid):          # design.vti, a blocked STL: topopt.io.voxels
        from .voxels import save_grid_design
        return save_grid_design(out, mesh, x, x_phys, setup, point_data, cell_data, stl)
    mesh_type = _mesh_type(mesh)
    arrays, points = _check_fields(mesh, x, x_phys, point_data, cell_data)
    if not isinstance(setup, dict):
        raise TypeError(f"setup must be a dict (the problem's name and parameters), got "
                        f"{type(setup).__name__}")
    try:
        setup_text = json.dumps(setup, default=float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"setup must be JSON-serialisable (numbers, text, lists, dicts): {e}") \
            from None
    if stl is not None and not isinstance(stl, (bool, np.bool_)):
        raise TypeError(f"stl must be True, False or None (default: 3-D grids), got {stl!r}")
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"out: {out} is a file; expected a folder (the results folder)")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "design.npz")
    payload = dict(arrays, points=mesh.p.T, cells=mesh.t.T, mesh_type=np.array(mesh_type),
                   cell_type=np.array(MESH_TYPES[mesh_type]), setup=np.array(setup_text),
                   **{f"point_{k}": v for k, v in points.items()})
    atomic_write_bytes(path, lambda fh: np.savez(fh, **payload))
    written = [path]
    for stale in ("design.vtu", "design.vti", "design.stl"):    # never beside another npz
        if os.path.exists(os.path.join(out, stale)):
            os.unlink(os.path.join(out, stale))
    try:
        written.append(write_vtu(os.path.join(out, "design.vtu"), mesh,
                                 cell_data=arrays, point_data=points))
        if stl if stl is not None else mesh_type in ("MeshHex1", "MeshTet1"):
            try:
                written.append(write_stl(os.path.join(out, "design.stl"), mesh,
                                         arrays["x_phys"]))
            except (ValueError, TypeError) as e:   # empty design, mesh not a grid
                print(f"design.stl not written: {e}")
    except ImportError as e:
        print(f"design.npz written; {e}")
    return written


def _write_meshio(path: str, mio, file_format: str, **kwargs) -> str:
    """meshio.write to a temporary file beside `path`, mode 0644, then rename."""
    meshio = _require("meshio", f"writing {os.path.basename(path)}")
    with atomic_path(path) as tmp:
        meshio.write(tmp, mio, file_format=file_format, **kwargs)
    return path


def write_vtu(path: str, mesh, cell_data: dict, point_data: dict | None = None) -> str:
    """Write `mesh` with its cell and point data as a VTK unstructured grid (meshio)."""
    _require("meshio", "writing design.vtu")
    from skfem.io.meshio import to_meshio
    _mesh_type(mesh)
    cells = _data("cell_data", cell_data, mesh.t.shape[1], "element")
    points = _data("point_data", point_data, mesh.p.shape[1], "node")
    mio = to_meshio(mesh, point_data={k: _pad3(v) for k, v in points.items()},
                    cell_data={k: [v] for k, v in cells.items()}, encode_cell_data=False)
    mio.points = _pad3(np.asarray(mio.points, dtype=float))
    return _write_meshio(path, mio, "vtu")


def _data(name: str, data: dict | None, n: int, what: str) -> dict:
    """The arrays of `data` (a dict of real arrays with `n` rows, one per `what`), checked."""
    out = {}
    for key, v in check_mapping(name, data).items():
        if np.iscomplexobj(v):
            raise TypeError(f"{name}[{key!r}] is complex; save its real and imaginary parts")
        v = check_real_array(f"{name}[{key!r}]", v, allow_bool=True)
        if v.ndim not in (1, 2) or v.shape[0] != n:
            raise ValueError(f"{name}[{key!r}] has shape {v.shape}; expected ({n},) or "
                             f"({n}, k), one row per {what}")
        out[key] = v
    return out


def _pad3(v: np.ndarray) -> np.ndarray:
    """2-D points and vectors with a zero third component, as VTK (and ParaView) expect."""
    return np.column_stack([v, np.zeros(len(v))]) if v.ndim == 2 and v.shape[1] == 2 else v


def _voxels(mesh, values):
    """`values` on the grid of a structured hexahedral mesh: (grid, spacing, origin)."""
    if type(mesh).__name__ != "MeshHex1":
        raise TypeError(f"an STL needs a grid of hexahedra; mesh is a {type(mesh).__name__}")
    centres = mesh.p[:, mesh.t].mean(axis=1)                 # (3, n_el)
    axes = [np.unique(np.round(c, 10)) for c in centres]
    shape = tuple(len(a) for a in axes)
    spacing = []
    for k, a in enumerate(axes):                 # one element thick: its own extent
        d = np.diff(a) if len(a) > 1 else np.array([np.ptp(mesh.p[k])])
        if not np.allclose(d, d[0], rtol=1e-8):
            raise ValueError("an STL needs a uniform grid of hexahedra; the mesh is not one")
        spacing.append(float(d[0]))
    if np.prod(shape) != mesh.t.shape[1]:
        raise ValueError("an STL needs a structured grid of hexahedra; the mesh is not one")
    idx = tuple(np.searchsorted(a, np.round(c, 10)) for a, c in zip(axes, centres))
    grid = np.zeros(shape)
    grid[idx] = values
    return grid, np.array(spacing), np.array([a[0] for a in axes])


def iso_surface(mesh, x_phys, level: float = 0.5, refine: int = 4,
                max_voxels: int = 2 * 10**7):
    """Closed surface of the elements with ``x_phys >= level``: (vertices, triangles).

    The triangles face outward: counter-clockwise seen from outside, so the
    right-hand normals point out of the material and the `signed_volume` is
    positive (what slicers and ParaView expect of an STL).

    Marching cubes (scikit-image) at 0.5 on the indicator ``x_phys >= level``
    of the element grid, padded with a layer of zeros so that material at the
    boundary is closed off. On the element grid itself marching cubes cuts
    every edge and corner (a bar one element thick loses a quarter of its
    volume), so each element is split ``refine**3`` times first: the surface
    then follows the element faces, its chamfers ``h / (2 refine)`` wide
    (enclosed volume within ~2 % of ``sum(x_phys >= level) * h**3`` at
    ``refine=4`` on a connected design). `refine` drops, down to 1, while the
    refined grid would exceed `max_voxels`.

    On tetrahedra (``MeshTet1``) the surface is the boundary of the union of
    the tetrahedra with ``x_phys >= level``: their faces that no other such
    tetrahedron shares (faceted; `refine` is not used, scikit-image not needed).
    It encloses exactly the volume of those tetrahedra.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> mesh = skfem.MeshTet.init_tensor(*[np.linspace(0, 1, 3)] * 3)
    >>> x = (mesh.p[0, mesh.t].mean(axis=0) < 0.5).astype(float)   # the half x < 1/2
    >>> verts, faces = iso_surface(mesh, x)
    >>> round(enclosed_volume(verts, faces), 12)
    0.5
    """
    level = check_range("level", level, 0.0, 1.0, lo_open=True, hi_open=True,
                        what="the density of the surface")
    check_int("refine", refine, 1, what="samples per element and axis")
    check_int("max_voxels", max_voxels, 1, what="refined voxels of the whole grid")
    x_phys = check_real_array("x_phys", x_phys, allow_bool=True)
    _mesh_type(mesh)
    if x_phys.shape != (mesh.t.shape[1],):
        raise ValueError(f"x_phys has shape {x_phys.shape}; expected ({mesh.t.shape[1]},), "
                         "one per element")
    if type(mesh).__name__ == "MeshTet1":
        return _tet_surface(mesh, x_phys >= level, level)
    measure = _require("skimage.measure", "the STL iso-surface")
    grid, spacing, origin = _voxels(mesh, x_phys)
    solid = np.pad(grid >= level, 1)
    if not solid.any():
        raise ValueError(f"no element has x_phys >= {level}; the iso-surface is empty")
    while refine > 1 and solid.size * refine**3 > max_voxels:
        refine -= 1
    for axis in range(3):
        solid = np.repeat(solid, refine, axis=axis)
    verts, faces, _, _ = measure.marching_cubes(solid.astype(np.float32), level=0.5,
                                                spacing=tuple(spacing / refine))
    # sub-voxel centres sit at (i + 1/2) h / refine, the first layer is padding
    verts = verts + origin - spacing / 2 - spacing + spacing / (2 * refine)
    # marching cubes winds its triangles towards the larger values (the material):
    # reversed, every normal (right-hand rule) points out of the solid
    faces = np.ascontiguousarray(faces[:, ::-1])
    if signed_volume(verts, faces) <= 0:        # cannot happen for a closed surface
        raise RuntimeError("the iso-surface does not face outward; please report this")
    return verts, faces


def _tet_surface(mesh, solid, level):
    """The outward boundary faces of the tetrahedra `solid` (`iso_surface` on MeshTet1)."""
    if not solid.any():
        raise ValueError(f"no element has x_phys >= {level}; the iso-surface is empty")
    t = mesh.t[:, solid].T                                  # (m, 4)
    faces = t[:, [[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]]].reshape(-1, 3)
    apex = t.reshape(-1)                                    # face k is opposite vertex k
    p = mesh.p.T
    a, b, c = p[faces[:, 0]], p[faces[:, 1]], p[faces[:, 2]]
    inward = np.einsum("ij,ij->i", np.cross(b - a, c - a), p[apex] - a) > 0
    faces[inward] = faces[inward][:, ::-1]                  # normals away from the apex
    _, index, counts = np.unique(np.sort(faces, axis=1), axis=0, return_index=True,
                                 return_counts=True)
    faces = faces[np.sort(index[counts == 1])]
    used, faces = np.unique(faces, return_inverse=True)
    return p[used].copy(), np.ascontiguousarray(faces.reshape(-1, 3))


def write_stl(path: str, mesh, x_phys, level: float = 0.5) -> str:
    """Write the surface of ``x_phys >= level`` (`iso_surface`) as a binary STL (meshio)."""
    meshio = _require("meshio", "writing design.stl")
    verts, faces = iso_surface(mesh, x_phys, level)
    return _write_meshio(path, meshio.Mesh(verts, [("triangle", faces)]), "stl", binary=True)


def enclosed_volume(verts, faces) -> float:
    """Volume enclosed by a closed, outward-facing triangle surface (`signed_volume`).

    Raises ValueError for an inside-out surface (negative signed volume)
    rather than hiding the sign.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.]])
    >>> f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    >>> round(enclosed_volume(v, f), 12)
    0.166666666667
    >>> enclosed_volume(v, f[:, ::-1])
    Traceback (most recent call last):
    ...
    ValueError: the surface faces inward (signed volume -0.166667): its triangles are wound clockwise seen from outside; reverse them (faces[:, ::-1])
    """
    volume = signed_volume(verts, faces)
    if volume < 0:
        raise ValueError(f"the surface faces inward (signed volume {volume:g}): its triangles "
                         "are wound clockwise seen from outside; reverse them (faces[:, ::-1])")
    return volume


_NODES = {"MeshTri1": (3, 2), "MeshQuad1": (4, 2), "MeshTet1": (4, 3), "MeshHex1": (8, 3)}


def _design_mesh(path: str, data: dict):
    """The scikit-fem mesh of the archive, its arrays checked against each other."""
    mesh_type, cell_type = str(data["mesh_type"]), str(data.get("cell_type", ""))
    if data["mesh_type"].ndim or mesh_type not in MESH_TYPES:
        raise DesignFileError(path, f"mesh type {mesh_type!r}; expected one of "
                              f"{sorted(MESH_TYPES)}")
    if cell_type and cell_type != MESH_TYPES[mesh_type]:
        raise DesignFileError(path, f"cell type {cell_type!r} of a {mesh_type}; expected "
                              f"{MESH_TYPES[mesh_type]!r}")
    nodes, dim = _NODES[mesh_type]
    points = _real_array(path, "points", data["points"], 2)
    cells = data["cells"]
    if points.shape[1:] != (dim,):
        raise DesignFileError(path, f"'points' has shape {points.shape}; a {mesh_type} needs "
                              f"(n, {dim})")
    if cells.dtype.kind not in "iu" or cells.ndim != 2 or cells.shape[1] != nodes:
        raise DesignFileError(path, f"'cells' is a {cells.dtype} array of shape {cells.shape};"
                              f" a {mesh_type} needs integers of shape (n, {nodes})")
    if cells.size and (cells.min() < 0 or cells.max() >= len(points)):
        raise DesignFileError(path, f"'cells' names nodes {cells.min()}..{cells.max()}; the "
                              f"mesh has {len(points)} points")
    return getattr(skfem, mesh_type)(np.ascontiguousarray(points.T, dtype=float),
                                     np.ascontiguousarray(cells.T))


def _check_expected(path: str, mesh, setup: dict, expect_mesh, problem: str | None):
    """The design is one of `problem` on `expect_mesh` (each when given)."""
    if problem is not None and setup.get("problem") != problem:
        raise DesignFileError(path, f"a design of problem {setup.get('problem')!r}; expected "
                              f"{problem!r}")
    if expect_mesh is None:
        return
    if not isinstance(expect_mesh, skfem.Mesh):
        raise TypeError(f"mesh must be a scikit-fem Mesh (the problem's), got "
                        f"{type(expect_mesh).__name__}")
    n_el, n_exp = mesh.t.shape[1], expect_mesh.t.shape[1]
    if type(mesh).__name__ != type(expect_mesh).__name__ or n_el != n_exp:
        raise DesignFileError(path, f"its mesh has {n_el} elements ({type(mesh).__name__}); "
                              f"the problem's has {n_exp} ({type(expect_mesh).__name__})")
    if mesh.p.shape != expect_mesh.p.shape or not np.array_equal(mesh.t, expect_mesh.t) \
            or not np.allclose(mesh.p, expect_mesh.p, rtol=1e-9, atol=1e-12):
        raise DesignFileError(path, f"its mesh of {n_el} elements is not the problem's (other "
                              "nodes or element numbering)")


def load_design(path: str, mesh=None, problem: str | None = None) -> dict:
    """Read a ``design.npz`` (or the folder holding it) written by `save_design`.

    Parameters
    ----------
    path : str
        The file, or a results folder holding ``design.npz``.
    mesh : skfem.Mesh or topopt.grid.Grid, optional
        The mesh the design is loaded for: the file's must be the same (type,
        nodes, elements; a grid design's: `load_grid_design`).
    problem : str, optional
        The problem the design is loaded for: the file's ``setup["problem"]``.

    Returns
    -------
    dict
        ``x``, ``x_phys``, ``mesh`` (the scikit-fem mesh), ``setup`` (dict),
        ``cell_data`` and ``point_data`` (dicts of the other arrays).

    Raises
    ------
    DesignFileError
        (a ValueError) ``not a topopt design: PATH (why)``: not an archive, a
        truncated one, Python objects (never unpickled), a missing or
        malformed array, ``x`` / ``x_phys`` / cell data not one value per
        element, point data not one row per point, or another mesh or
        problem than the one given.
    FileNotFoundError
        If there is no such file.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "design.npz")
    data = _read_npz(path)
    if "grid_shape" in data:
        from .voxels import load_grid_design
        return load_grid_design(path, data, mesh, problem)
    missing = {"x", "x_phys", "points", "cells", "mesh_type", "setup"} - set(data)
    if missing:
        raise DesignFileError(path, f"missing {sorted(missing)}")
    saved = _design_mesh(path, data)
    n_el, n_points = saved.t.shape[1], saved.p.shape[1]
    try:
        setup = json.loads(str(data["setup"]))
    except ValueError as e:
        raise DesignFileError(path, f"'setup' is not JSON text: {e}") from None
    if not isinstance(setup, dict):
        raise DesignFileError(path, f"'setup' is a {type(setup).__name__}; expected a dict")
    cells = {k: v for k, v in data.items() if k not in _NOT_CELL and not k.startswith("point_")}
    for name, v in cells.items():
        if _real_array(path, name, v, 1).shape != (n_el,):
            raise DesignFileError(path, f"{name!r} has {v.size} values for a mesh of {n_el} "
                                  "elements; expected one per element")
    for name in ("x", "x_phys"):
        cells[name] = cells[name].astype(float, copy=False)
        _density_range(name, cells[name], path=path)
    points = {k[len("point_"):]: v for k, v in data.items() if k.startswith("point_")}
    for name, v in points.items():
        if v.dtype.kind not in "biuf" or v.shape[:1] != (n_points,):
            raise DesignFileError(path, f"point data {name!r} is a {v.dtype} array of shape "
                                  f"{v.shape}; expected real numbers, one row per each of the "
                                  f"{n_points} points")
    _check_expected(path, saved, setup, mesh, problem)
    return {"x": cells["x"], "x_phys": cells["x_phys"], "mesh": saved, "setup": setup,
            "cell_data": {k: v for k, v in cells.items() if k not in ("x", "x_phys")},
            "point_data": points}
