"""A design split across MPI ranks written by pieces: no rank gathers the whole.

Each rank of a slab run (`topopt.grid.slabs`) writes its own files:

* ``design.<rank>-of-<size>.npz``: its slab's ``x``, ``x_phys`` (float64:
  a checkpoint resumes from it exactly), the slab's element planes
  ``e0, e1``, the whole grid's shape and ``h`` (`save_piece`, `load_piece`:
  a run resumes on the same number of ranks);
* ``design.<rank>-of-<size>.vti``: its slab as a piece of a VTK image
  (`topopt.io.voxels.write_vti` with ``start = e0``), cell and point data;

and rank 0 the master file ``design.pvti`` (`write_pvti`), which ParaView
opens as one image made of the pieces.
"""

from __future__ import annotations

import os
from xml.sax.saxutils import quoteattr

import numpy as np

from .._files import atomic_write_bytes
from .._validate import check_int
from .design_file import DesignFileError, _read_npz
from .voxels import write_vti

__all__ = ["piece_name", "save_piece", "load_piece", "write_piece_vti", "write_pvti"]


def piece_name(rank: int, size: int, ext: str) -> str:
    """``design.<rank>-of-<size>.<ext>``.

    Examples
    --------
    >>> piece_name(1, 4, "npz")
    'design.1-of-4.npz'
    """
    check_int("size", size, 1, what="ranks")
    check_int("rank", rank, 0, size - 1, what="this rank")
    return f"design.{rank}-of-{size}.{ext}"


def save_piece(folder: str, slabs, arrays: dict) -> str:
    """This rank's slab of the design (`arrays`: ``{name: (slab elements,) array}``)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, piece_name(slabs.rank, slabs.size, "npz"))
    payload = {k: np.asarray(v, dtype=float) for k, v in arrays.items()}
    payload.update(e0=slabs.e0, e1=slabs.e1, grid_shape=np.array(slabs.grid.shape),
                   grid_h=slabs.grid.h)

    def write(fh):
        np.savez(fh, **payload)
    atomic_write_bytes(path, write)
    return path


def load_piece(folder: str, slabs) -> dict:
    """This rank's piece of a design saved by `save_piece` on as many ranks, the same grid."""
    path = os.path.join(folder, piece_name(slabs.rank, slabs.size, "npz"))
    if not os.path.exists(path):
        others = sorted(f for f in os.listdir(folder) if f.startswith("design.")
                        and f.endswith(".npz")) if os.path.isdir(folder) else []
        raise DesignFileError(path, "no such piece: a split design resumes on the number of "
                              f"ranks that wrote it (pieces there: {others[:4]})")
    data = _read_npz(path)
    shape = tuple(int(n) for n in data["grid_shape"])
    if shape != slabs.grid.shape or (int(data["e0"]), int(data["e1"])) != (slabs.e0, slabs.e1):
        raise DesignFileError(path, f"it holds element planes {int(data['e0'])}:"
                              f"{int(data['e1'])} of a {shape} grid; this rank's slab is "
                              f"{slabs.e0}:{slabs.e1} of {slabs.grid.shape}")
    return {k: v for k, v in data.items() if k not in ("e0", "e1", "grid_shape", "grid_h")}


def write_piece_vti(folder: str, slabs, cell_data: dict, point_data: dict | None = None) -> str:
    """This rank's slab as a piece of ``design.pvti`` (`write_pvti` lists it)."""
    path = os.path.join(folder, piece_name(slabs.rank, slabs.size, "vti"))
    return write_vti(path, slabs.local, cell_data, point_data, start=slabs.e0)


def write_pvti(folder: str, slabs, cell_names, point_names=(), components=None) -> str:
    """``design.pvti``: the whole image's header and its pieces (call on one rank).

    `components` maps a point field's name to its number of components (1 by
    default; a 3-D displacement 3).
    """
    grid, components = slabs.grid, dict(components or {})
    whole = " ".join(f"0 {n}" for n in (tuple(grid.shape) + (0,))[:3])
    h = repr(float(grid.h))
    lines = ['<?xml version="1.0"?>',
             '<VTKFile type="PImageData" version="1.0" byte_order="LittleEndian" '
             'header_type="UInt64">',
             f'  <PImageData WholeExtent="{whole}" GhostLevel="0" Origin="0 0 0" '
             f'Spacing="{h} {h} {h}">', "    <PPointData>"]
    lines += [f'      <PDataArray type="Float32" Name={quoteattr(n)} '
              f'NumberOfComponents="{components.get(n, 1)}"/>' for n in point_names]
    lines += ["    </PPointData>", "    <PCellData>"]
    lines += [f'      <PDataArray type="Float32" Name={quoteattr(n)}/>' for n in cell_names]
    lines.append("    </PCellData>")
    rest = " ".join(f"0 {n}" for n in (tuple(grid.shape[1:]) + (0,))[:2])
    for r in range(slabs.size):
        e0, e1 = int(slabs.bounds[r]), int(slabs.bounds[r + 1])
        lines.append(f'    <Piece Extent="{e0} {e1} {rest}" '
                     f'Source={quoteattr(piece_name(r, slabs.size, "vti"))}/>')
    lines += ["  </PImageData>", "</VTKFile>", ""]
    path = os.path.join(folder, "design.pvti")
    atomic_write_bytes(path, lambda fh: fh.write("\n".join(lines).encode()))
    return path
