"""Designs on a structured `topopt.grid.Grid`: ``design.vti``, a blocked STL, a float32 npz.

A grid of 8 million elements has no mesh arrays to write (they alone would
be 700 MB), so `save_design` given a `Grid` writes instead

* ``design.npz``: ``x``, ``x_phys`` (and any cell data) as float32,
  ``grid_shape`` and ``grid_h``, the setup as JSON (``np.savez_compressed``:
  at most 4 bytes per element and field); `load_design` gives back the
  `Grid`. The state fields are not kept there (they are in ``design.vti``);
* ``design.vti`` (`write_vti`): a VTK XML ImageData file, which ParaView
  opens as the voxel image it is: origin 0, spacing ``h``, cell data and
  point data as Float32, raw appended binary, written one z-layer at a time;
* ``design.stl`` (`write_grid_stl`): the surface of `iso_surface`
  computed in slabs along x (`grid_iso_surface`), streamed to the file, so
  the peak memory is that of one slab of the refined grid.

The slabs overlap by one sample layer: the cubes of marching cubes are
split between them without overlap, and since each cube's triangles depend
on its own 8 values only, the union is today's surface, triangle for
triangle; the vertices on a seam plane are merged (they have exactly the
same coordinates: the indicator field is 0/1, so every vertex lies at an
edge midpoint, a multiple of 1/2 in sample units, exact in float32).
"""

from __future__ import annotations

import json
import os
from xml.sax.saxutils import quoteattr

import numpy as np

from .._validate import check_int, check_range, check_real_array
from .._files import atomic_write_bytes
from ..grid import Grid
from .design_file import (DesignFileError, _density_range, _field_rows, _read_npz, _real_array,
                          _require, signed_volume)

__all__ = ["write_vti", "grid_iso_surface", "write_grid_stl", "surface_faces",
           "save_grid_design", "load_grid_design", "SLAB_VOXELS"]

#: Refined voxels per marching-cubes slab (float32: 4 MB; its triangles cost ~15x that).
SLAB_VOXELS = 2**20

# the names of a grid design.npz that are not cell data
_NOT_CELL = {"grid_shape", "grid_h", "setup"}


def _check_grid(grid) -> Grid:
    if isinstance(grid, Grid):
        return grid
    raise TypeError(f"grid must be a topopt.grid.Grid, got {type(grid).__name__}")


# --------------------------------------------------------------------------
# design.vti

def _layers(v: np.ndarray, shape3: tuple):
    """The float32 bytes of `v` in VTK order (x fastest), one z-layer at a time.

    The grid numbers C order, x slowest: ``v.reshape(shape3 + (c,))[:, :, k]``
    is layer k as (x, y, c); swapped to (y, x, c), its C order is VTK's.
    """
    a = v.reshape(shape3 + (-1,))
    for k in range(shape3[2]):
        layer = np.swapaxes(a[:, :, k], 0, 1).astype("<f4")
        if layer.shape[-1] == 2:                      # VTK vectors have 3 components
            layer = np.concatenate([layer, np.zeros(layer.shape[:-1] + (1,), "<f4")], -1)
        yield np.ascontiguousarray(layer).tobytes()


def write_vti(path: str, grid, cell_data: dict, point_data: dict | None = None,
              start: int = 0) -> str:
    """Write a VTK XML ImageData file (``.vti``) of a grid's cell and point data.

    Parameters
    ----------
    path : str
        The file (written atomically, 0644).
    grid : topopt.grid.Grid
        Origin 0, spacing ``h``; a 2-D grid is one layer of pixels (z extent 0).
    cell_data : dict
        ``{name: (n_el,) array}`` in the grid's element numbering.
    point_data : dict, optional
        ``{name: (n_nodes,) or (n_nodes, c) array}`` in its node numbering
        (a displacement ``(n_nodes, dim)``; 2 components are written as 3).
    start : int
        The x index of the grid's first element plane in a larger image: a piece
        of a parallel image (`topopt.io.pieces.write_pvti`), origin still 0.

    Returns
    -------
    str
        `path`. Every array is written as Float32 in VTK's order (x fastest),
        so that ParaView shows the grid's x along x.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from topopt.grid import Grid
    >>> path = os.path.join(tempfile.mkdtemp(), "design.vti")
    >>> _ = write_vti(path, Grid((4, 2, 2)), {"x_phys": np.ones(16)})
    >>> b'WholeExtent="0 4 0 2 0 2"' in open(path, "rb").read()
    True
    """
    grid = _check_grid(grid)
    if not isinstance(cell_data, dict) or not isinstance(point_data or {}, dict):
        raise TypeError("cell_data and point_data must be dicts {name: array}")
    fields = []
    for kind, data, rows, what, shape in (           # in the order the header lists them
            ("PointData", point_data or {}, grid.n_nodes, "node", grid.nodes_shape),
            ("CellData", cell_data, grid.n_el, "element", grid.shape)):
        for name, v in data.items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"{kind} names must be non-empty strings, got {name!r}")
            v = _field_rows(f"{kind} {name!r}", v, rows, what, 2)
            comps = 1 if v.ndim == 1 else 3 if v.shape[1] == 2 else v.shape[1]
            fields.append((kind, name, v, comps, (tuple(shape) + (1,))[:3]))
    start = check_int("start", start, 0, what="the first element plane's x index")
    extent = " ".join(f"{a} {a + n}" for a, n in zip((start, 0, 0),
                                                     (tuple(grid.shape) + (0,))[:3]))
    h = repr(float(grid.h))
    lines = ['<?xml version="1.0"?>',
             '<VTKFile type="ImageData" version="1.0" byte_order="LittleEndian" '
             'header_type="UInt64">',
             f'  <ImageData WholeExtent="{extent}" Origin="0 0 0" Spacing="{h} {h} {h}">',
             f'    <Piece Extent="{extent}">']
    offset = 0
    for kind in ("PointData", "CellData"):
        lines.append(f"      <{kind}>")
        for k, name, v, comps, _ in fields:
            if k == kind:
                lines.append(f'        <DataArray type="Float32" Name={quoteattr(name)} '
                             f'NumberOfComponents="{comps}" format="appended" '
                             f'offset="{offset}"/>')
                offset += 8 + 4 * len(v) * comps
        lines.append(f"      </{kind}>")
    lines += ["    </Piece>", "  </ImageData>", '  <AppendedData encoding="raw">', "   _"]
    head = "\n".join(lines).encode()

    def write(fh):
        fh.write(head)
        for _, name, v, comps, shape3 in fields:
            fh.write(np.uint64(4 * len(v) * comps).astype("<u8").tobytes())
            for chunk in _layers(v, shape3):
                fh.write(chunk)
        fh.write(b"\n  </AppendedData>\n</VTKFile>\n")
    atomic_write_bytes(path, write)
    return path


# --------------------------------------------------------------------------
# the blocked iso-surface

def _check_surface_args(grid, x_phys, level, refine):
    grid = _check_grid(grid)
    if grid.dim != 3:
        raise TypeError(f"an STL needs a 3-D grid; the grid {grid.shape} is 2-D")
    x = check_real_array("x_phys", x_phys, allow_bool=True)
    if x.shape != (grid.n_el,):
        raise ValueError(f"x_phys has shape {x.shape}; expected ({grid.n_el},), one per "
                         "element")
    level = check_range("level", level, 0.0, 1.0, lo_open=True, hi_open=True,
                        what="the density of the surface")
    check_int("refine", refine, 1, what="samples per element and axis")
    return grid, x.reshape(grid.shape), level


def _slab_surfaces(grid, x_phys, level, refine, max_voxels, slab_voxels):
    """``(a, b, verts, faces)`` per slab of refined sample layers ``a..b`` along x.

    `verts` in sample units of the padded, refined grid (exact: multiples of
    1/2), faces as marching cubes winds them (towards the material). The
    refine rule is `iso_surface`'s, on the size of the whole refined grid.
    """
    measure = _require("skimage.measure", "the STL iso-surface")
    grid, x3, level = _check_surface_args(grid, x_phys, level, refine)
    check_int("max_voxels", max_voxels, 1, what="refined voxels of the whole grid")
    check_int("slab_voxels", slab_voxels, 1, what="refined voxels per slab")
    padded = np.array(grid.shape) + 2
    while refine > 1 and int(np.prod(padded)) * refine**3 > max_voxels:
        refine -= 1
    n_samples = int(padded[0]) * refine
    plane = int(padded[1] * padded[2]) * refine**2
    step = max(1, int(slab_voxels) // plane - 1)
    any_solid, a = False, 0
    while a < n_samples - 1:
        b = min(a + step, n_samples - 1)
        rows = np.arange(a, b + 1) // refine - 1              # element row of each layer
        inside = (rows >= 0) & (rows < grid.shape[0])
        solid = np.zeros((b - a + 1,) + tuple(padded[1:]), dtype=np.float32)
        solid[inside, 1:-1, 1:-1] = x3[rows[inside]] >= level
        if solid.any() and not solid.all():          # else no cube is cut
            any_solid = True
            solid = np.repeat(np.repeat(solid, refine, axis=1), refine, axis=2)
            verts, faces, _, _ = measure.marching_cubes(solid, level=0.5)
            verts[:, 0] += a
            yield a, b, refine, verts, faces
        a = b
    if not any_solid:
        raise ValueError(f"no element has x_phys >= {level}; the iso-surface is empty")


def _world(grid, refine, verts):
    """Sample units -> coordinates, as `iso_surface` places them: sub-voxel centres at
    ``(i + 1/2) h / refine``, the first element layer being padding."""
    h, s = grid.h, grid.h / refine
    return verts * s + h / 2 - h / 2 - h + h / (2 * refine)


def _key_of(v):
    """An integer per seam vertex from its (y, z): both are multiples of 1/2."""
    return (2 * v[:, 1]).astype(np.int64) * (4 * 10**9) + (2 * v[:, 2]).astype(np.int64)


def grid_iso_surface(grid, x_phys, level: float = 0.5, refine: int = 4,
                     max_voxels: int = 2 * 10**7, slab_voxels: int = SLAB_VOXELS):
    """`iso_surface` of a 3-D grid design, computed in slabs: (vertices, triangles).

    The same closed, outward surface as ``iso_surface(mesh, x)`` on the
    grid's mesh (its vertices and triangles, in another order), with the
    seam vertices merged: every edge is shared by two triangles. Peak
    memory: one slab of `slab_voxels` refined voxels plus the output.

    Parameters
    ----------
    grid : topopt.grid.Grid
        A 3-D grid.
    x_phys : (n_el,) array
        Densities in the grid's element numbering.
    level, refine, max_voxels
        As `iso_surface` (`refine` drops while the whole refined grid would
        exceed `max_voxels`: it bounds the surface's size).
    slab_voxels : int
        Refined voxels per slab.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.grid import Grid
    >>> from topopt.io import enclosed_volume
    >>> v, f = grid_iso_surface(Grid((4, 2, 2)), np.ones(16), slab_voxels=200)
    >>> round(enclosed_volume(v, f), 3)          # the 4 x 2 x 2 box, chamfered h / 8
    15.76
    """
    verts_all, faces_all, n = [], [], 0
    seam_keys, seam_ids, prev_b = None, None, -1
    for a, b, refine, verts, faces in _slab_surfaces(grid, x_phys, level, refine,
                                                     max_voxels, slab_voxels):
        ids = np.empty(len(verts), dtype=np.int64)
        on = verts[:, 0] == a
        if a == prev_b and on.any():
            keys = _key_of(verts[on])
            pos = np.minimum(np.searchsorted(seam_keys, keys), len(seam_keys) - 1)
            if len(seam_keys) == 0 or not np.array_equal(seam_keys[pos], keys):
                raise RuntimeError("slab seam vertices do not match; please report this")
            ids[on] = seam_ids[pos]
        else:
            on[:] = False
        ids[~on] = n + np.arange(int(np.count_nonzero(~on)))
        verts_all.append(verts[~on])
        faces_all.append(ids[faces])
        n += len(verts_all[-1])
        at_b = verts[:, 0] == b
        keys = _key_of(verts[at_b])
        order = np.argsort(keys)
        seam_keys, seam_ids, prev_b = keys[order], ids[at_b][order], b
    verts = _world(grid, refine, np.concatenate(verts_all).astype(float))
    # marching cubes winds towards the material: reversed, the normals point out
    faces = np.ascontiguousarray(np.concatenate(faces_all)[:, ::-1])
    if signed_volume(verts, faces) <= 0:        # cannot happen for a closed surface
        raise RuntimeError("the iso-surface does not face outward; please report this")
    return verts, faces


_STL = np.dtype([("normal", "<f4", (3,)), ("points", "<f4", (3, 3)), ("attr", "<u2")])


def write_grid_stl(path: str, grid, x_phys, level: float = 0.5, refine: int = 4,
                   max_voxels: int = 2 * 10**7, slab_voxels: int = SLAB_VOXELS) -> str:
    """Write the surface of `grid_iso_surface` as a binary STL, one slab at a time.

    The triangles of each slab are written as they come (an STL is a list
    of triangles: no vertex is shared in the file), so the memory is one
    slab's; the count in the header is written last. Normals are the unit
    right-hand normals (outward), as meshio writes them.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from topopt.grid import Grid
    >>> path = write_grid_stl(os.path.join(tempfile.mkdtemp(), "d.stl"), Grid((2, 1, 1)),
    ...                       np.ones(2))
    >>> (os.path.getsize(path) - 84) % 50
    0
    """
    def write(fh):
        fh.write(b"topopt grid iso-surface (binary STL)".ljust(80, b" ") + b"\0\0\0\0")
        count, volume = 0, 0.0
        for _, _, r, verts, faces in _slab_surfaces(grid, x_phys, level, refine,
                                                    max_voxels, slab_voxels):
            pts = _world(grid, r, verts.astype(float))[faces[:, ::-1]]     # (m, 3, 3)
            normal = np.cross(pts[:, 1] - pts[:, 0], pts[:, 2] - pts[:, 0])
            volume += float(np.einsum("ij,ij->", pts[:, 0], np.cross(pts[:, 1], pts[:, 2])))
            rec = np.zeros(len(pts), dtype=_STL)
            rec["normal"] = normal / np.linalg.norm(normal, axis=1, keepdims=True)
            rec["points"] = pts
            fh.write(rec.tobytes())
            count += len(pts)
        if count >= 2**32:
            raise ValueError(f"the surface has {count} triangles; a binary STL holds < 2**32 "
                             "(lower refine or max_voxels)")
        if volume <= 0:
            raise RuntimeError("the iso-surface does not face outward; please report this")
        fh.seek(80)
        fh.write(np.uint32(count).astype("<u4").tobytes())
        fh.seek(0, os.SEEK_END)
    atomic_write_bytes(path, write)
    return path


def surface_faces(grid, x_phys, level: float = 0.5) -> int:
    """Element faces between ``x_phys >= level`` and the rest (or the outside).

    The surface of `grid_iso_surface` at `refine` has about ``2 refine**2``
    triangles per such face (two per sub-face): the figures choose the
    surface or projections by it.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.grid import Grid
    >>> surface_faces(Grid((2, 1, 1)), np.ones(2))      # a 2 x 1 x 1 box
    10
    """
    grid, x3, level = _check_surface_args(grid, x_phys, level, 1)
    count = 0
    for i in range(grid.shape[0] + 1):            # one x-plane at a time: O(plane) memory
        lo = x3[i - 1] >= level if i > 0 else np.zeros(grid.shape[1:], dtype=bool)
        hi = x3[i] >= level if i < grid.shape[0] else np.zeros(grid.shape[1:], dtype=bool)
        count += int(np.count_nonzero(lo != hi))
        if i < grid.shape[0]:
            p = np.pad(hi, 1)
            count += int(np.count_nonzero(p[1:] != p[:-1]) + np.count_nonzero(
                p[:, 1:] != p[:, :-1]))
    return count


# --------------------------------------------------------------------------
# design.npz, design.vti, design.stl of a grid

def _setup_text(setup) -> str:
    if not isinstance(setup, dict):
        raise TypeError(f"setup must be a dict (the problem's name and parameters), got "
                        f"{type(setup).__name__}")
    try:
        return json.dumps(setup, default=float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"setup must be JSON-serialisable (numbers, text, lists, dicts): {e}") \
            from None


def _grid_fields(grid, x, x_phys, point_data, cell_data):
    """The checked cell fields ({name: (n_el,) float}) and point fields of a grid design."""
    bad = [k for k in {**(cell_data or {}), **(point_data or {})}
           if k in _NOT_CELL | {"x", "x_phys"}]
    if bad:
        raise ValueError(f"cell_data/point_data may not be named {sorted(bad)} (reserved: "
                         "x, x_phys, grid_shape, grid_h, setup)")
    cells = {}
    for name, v in (("x", x), ("x_phys", x_phys), *(cell_data or {}).items()):
        what = name if name in ("x", "x_phys") else f"cell_data[{name!r}]"
        v = _field_rows(what, v, grid.n_el, "element", 2)
        if v.ndim != 1:
            raise ValueError(f"{what} has shape {v.shape}; expected ({grid.n_el},), one per "
                             "element")
        if name in ("x", "x_phys"):
            _density_range(name, v, ValueError)
        cells[name] = v
    points = {name: _field_rows(f"point_data[{name!r}]", v, grid.n_nodes, "grid node", 2)
              for name, v in (point_data or {}).items()}
    return cells, points


def save_grid_design(out: str, grid, x, x_phys, setup: dict, point_data: dict | None = None,
                     cell_data: dict | None = None, stl: bool | None = None) -> list[str]:
    """`save_design` of a grid design: ``design.npz``, ``design.vti``, (3-D) ``design.stl``.

    ``design.npz`` holds the cell fields as float32 (a relative rounding of
    at most 6e-8: a reloaded design reproduces its objective to about
    1e-7), ``grid_shape``, ``grid_h`` and ``setup``; the point fields go to
    ``design.vti`` only. ``design.stl`` (default: 3-D grids) needs
    scikit-image (the ``io`` extra); without it, or for a design without an
    element ``x_phys >= 0.5``, one printed line says why it was not written.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from topopt.grid import Grid
    >>> out = tempfile.mkdtemp()
    >>> paths = save_grid_design(out, Grid((3, 2)), np.ones(6), np.ones(6), {"problem": "demo"})
    >>> sorted(os.listdir(out))
    ['design.npz', 'design.vti']
    """
    grid = _check_grid(grid)
    cells, points = _grid_fields(grid, x, x_phys, point_data, cell_data)
    setup_text = _setup_text(setup)
    if stl is not None and not isinstance(stl, (bool, np.bool_)):
        raise TypeError(f"stl must be True, False or None (default: 3-D grids), got {stl!r}")
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"out: {out} is a file; expected a folder (the results folder)")
    os.makedirs(out, exist_ok=True)
    for stale in ("design.vtu", "design.vti", "design.stl"):   # never beside another npz
        if os.path.exists(os.path.join(out, stale)):
            os.unlink(os.path.join(out, stale))
    path = os.path.join(out, "design.npz")
    payload = {k: v.astype(np.float32) for k, v in cells.items()}
    payload.update(grid_shape=np.array(grid.shape, dtype=np.int64),
                   grid_h=np.array(float(grid.h)), setup=np.array(setup_text))
    atomic_write_bytes(path, lambda fh: np.savez_compressed(fh, **payload))
    written = [path, write_vti(os.path.join(out, "design.vti"), grid, cells, points)]
    if stl if stl is not None else grid.dim == 3:
        try:
            written.append(write_grid_stl(os.path.join(out, "design.stl"), grid,
                                          cells["x_phys"]))
        except (ValueError, TypeError, ImportError) as e:
            print(f"design.stl not written: {e}")
    return written


def _saved_grid(path: str, data: dict) -> Grid:
    shape, h = data["grid_shape"], data.get("grid_h")
    if shape.dtype.kind not in "iu" or shape.ndim != 1 or len(shape) not in (2, 3) \
            or np.any(shape < 1):
        raise DesignFileError(path, f"'grid_shape' is {shape!r}; expected 2 or 3 positive "
                              "integers")
    if h is None or h.ndim or h.dtype.kind != "f" or not np.isfinite(h) or h <= 0:
        raise DesignFileError(path, f"'grid_h' is {h!r}; expected a positive number")
    return Grid(tuple(int(n) for n in shape), float(h))


def load_grid_design(path: str, data: dict | None = None, mesh=None,
                     problem: str | None = None) -> dict:
    """`load_design` of a grid design: the same dict, its ``mesh`` the `Grid`.

    `data` is the archive's arrays (read from `path` when not given); `mesh`,
    when given, must be the same `Grid` (shape and h). ``point_data`` is
    empty: a grid design keeps its state fields in ``design.vti`` only.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from topopt.grid import Grid
    >>> out = tempfile.mkdtemp()
    >>> _ = save_grid_design(out, Grid((3, 2)), np.ones(6), np.ones(6), {"problem": "demo"})
    >>> d = load_grid_design(out, problem="demo")
    >>> d["mesh"], d["x_phys"].dtype
    (Grid((3, 2), h=1), dtype('float64'))
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "design.npz")
    data = _read_npz(path) if data is None else data
    missing = {"x", "x_phys", "grid_shape", "grid_h", "setup"} - set(data)
    if missing:
        raise DesignFileError(path, f"missing {sorted(missing)}")
    grid = _saved_grid(path, data)
    try:
        setup = json.loads(str(data["setup"]))
    except ValueError as e:
        raise DesignFileError(path, f"'setup' is not JSON text: {e}") from None
    if not isinstance(setup, dict):
        raise DesignFileError(path, f"'setup' is a {type(setup).__name__}; expected a dict")
    cells = {}
    for name, v in data.items():
        if name in _NOT_CELL:
            continue
        if _real_array(path, name, v, 1).shape != (grid.n_el,):
            raise DesignFileError(path, f"{name!r} has {v.size} values for a grid of "
                                  f"{grid.n_el} elements; expected one per element")
        cells[name] = v.astype(float)
    for name in ("x", "x_phys"):
        _density_range(name, cells[name], path=path)
    if problem is not None and setup.get("problem") != problem:
        raise DesignFileError(path, f"a design of problem {setup.get('problem')!r}; expected "
                              f"{problem!r}")
    if mesh is not None and mesh != grid:
        raise DesignFileError(path, f"its grid is {grid!r}; the problem's is "
                              f"{mesh!r}" if isinstance(mesh, Grid) else
                              f"a design on {grid!r}; the problem's is a "
                              f"{type(mesh).__name__}, not a grid")
    return {"x": cells.pop("x"), "x_phys": cells.pop("x_phys"), "mesh": grid, "setup": setup,
            "cell_data": cells, "point_data": {}}
