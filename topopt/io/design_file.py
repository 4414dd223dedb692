"""What the design files share: the extra's message, density and finiteness checks, the
npz reader and its error, the signed volume of a surface (`topopt.io.designs` for meshes
and `topopt.io.voxels` for grids both build on it, neither on the other)."""

from __future__ import annotations

import os

import numpy as np

from .._files import read_npz
from .._validate import check_finite_values, check_indices, check_real_array

__all__ = ["DesignFileError", "signed_volume", "EXTRA", "DENSITY_SLACK"]

EXTRA = "pip install 'topopt[io]'"


def _require(module: str, what: str):
    """Import `module` or raise ImportError naming the ``io`` extra."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"{what} needs {module} ({EXTRA})") from e



DENSITY_SLACK = 0.01


def _density_range(name: str, v: np.ndarray, error=ValueError, path: str | None = None):
    """``x`` and ``x_phys`` are densities: in [0, 1] up to `DENSITY_SLACK`."""
    lo, hi = (float(np.min(v)), float(np.max(v))) if v.size else (0.0, 0.0)
    if lo < -DENSITY_SLACK or hi > 1.0 + DENSITY_SLACK:
        bad = lo if -lo > hi - 1.0 else hi
        why = (f"{name!r} has the value {bad:g} at element {int(np.flatnonzero(v == bad)[0])}; "
               f"a density lies in [0, 1] (up to {DENSITY_SLACK:g})")
        raise DesignFileError(path, why) if path is not None else error(
            f"{name} must lie in [0, 1] up to {DENSITY_SLACK:g} (a density); got {bad:g} at "
            f"element {int(np.flatnonzero(v == bad)[0])}")


def _finite(name: str, v: np.ndarray) -> None:
    bad = np.flatnonzero(~np.isfinite(np.asarray(v, dtype=float)).reshape(len(v), -1).all(axis=1))
    if bad.size:
        raise ValueError(f"{name} has {bad.size} non-finite entr{'y' if bad.size == 1 else 'ies'}"
                         f" (first at row {bad[0]}); a saved design holds finite numbers")


def _field_rows(name: str, v, rows: int, what: str, max_ndim: int | None = None) -> np.ndarray:
    """`v` as finite real numbers with `rows` rows (one per `what`) and at most `max_ndim`
    axes; else ValueError naming `name`."""
    v = np.asarray(v)
    if np.iscomplexobj(v) or v.dtype.kind not in "biuf":
        raise ValueError(f"{name} has dtype {v.dtype}; expected real numbers (save a complex "
                         "field's real and imaginary parts)")
    if v.shape[:1] != (rows,) or (max_ndim is not None and v.ndim > max_ndim):
        tail = ", c" if max_ndim == 2 else ", ..."
        raise ValueError(f"{name} has shape {v.shape}; expected ({rows},) or ({rows}{tail}), "
                         f"one row per {what}")
    _finite(name, v)
    return v


def signed_volume(verts, faces) -> float:
    """Signed volume of a closed triangle surface (divergence theorem).

    Positive when the triangles face outward (counter-clockwise seen from
    outside), negative when the surface is inside-out.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.]])
    >>> f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    >>> round(signed_volume(v, f), 12), round(signed_volume(v, f[:, ::-1]), 12)
    (0.166666666667, -0.166666666667)
    """
    verts = check_real_array("verts", verts, allow_bool=True)
    faces = np.asarray(faces)
    if verts.ndim != 2 or verts.shape[1] != 3 or faces.ndim != 2 or faces.shape[1] != 3:
        raise ValueError(f"verts must be (n, 3) and faces (m, 3); got {verts.shape} and "
                         f"{faces.shape}")
    check_finite_values("verts", verts, "vertex coordinates must be finite", ("vertex", "axis"))
    faces = check_indices("faces", faces, len(verts), "vertex indices")
    a, b, c = (verts[faces[:, i]] for i in range(3))
    return float(np.einsum("ij,ij->", a, np.cross(b, c))) / 6.0



class DesignFileError(ValueError):
    """A file that is not a topopt design, or not one of the expected mesh or problem.

    The message is ``not a topopt design: PATH (why)``.
    """

    def __init__(self, path: str, why: str):
        self.path, self.why = path, why
        super().__init__(f"not a topopt design: {path} ({why})")


def _read_npz(path: str) -> dict:
    """Every array of the design file `path` (`topopt._files.read_npz`); DesignFileError else."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"no design file: {path} (save_design writes design.npz)")
    return read_npz(path, DesignFileError, "a design")


def _real_array(path: str, name: str, v: np.ndarray, ndim: int) -> np.ndarray:
    if v.dtype.kind not in "biuf" or v.ndim != ndim:
        raise DesignFileError(path, f"{name!r} is a {v.ndim}-D {v.dtype} array; expected "
                              f"{ndim}-D real numbers")
    if not np.all(np.isfinite(v)):
        raise DesignFileError(path, f"{name!r} has {int(np.sum(~np.isfinite(v)))} non-finite "
                              "entries")
    return v



