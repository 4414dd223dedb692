"""Atomic file writes, JSON conversion, output-path checks and the ``.npz`` reader, shared by
checkpoints and run output.

Every file is written atomically (a temporary file in the same folder, then
``os.replace``): an interruption leaves the old file or the new one. Files
are created 0644 (readable by others). An archive is read back by
`read_npz`, which never unpickles (checkpoints and design files).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import zipfile
import zlib
from typing import Callable

import numpy as np

__all__ = ["jsonable", "atomic_path", "atomic_write_bytes", "atomic_write_text", "FILE_MODE",
           "OutputPathError", "check_writable_file", "check_writable_folder", "read_npz"]

# results are readable by others, as a file made by open() under umask 022
# (tempfile.mkstemp alone gives 0600)
FILE_MODE = 0o644


def jsonable(obj):
    """``json.dumps`` default: arrays as lists, numpy scalars as numbers, else repr.

    Examples
    --------
    >>> import json, numpy as np
    >>> json.dumps({"x": np.arange(2), "c": np.float64(0.5)}, default=jsonable)
    '{"x": [0, 1], "c": 0.5}'
    """
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return repr(obj)


@contextlib.contextmanager
def atomic_path(path):
    """A temporary path beside `path` to write; renamed to `path` (0644) when the block ends.

    On an exception the temporary file is removed and `path` is untouched.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-" + os.path.basename(path) + "-")
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path, write: Callable) -> None:
    """``write(fh)`` into a temporary file beside `path`, then rename it to `path` (0644)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())


def atomic_write_text(path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    atomic_write_bytes(path, lambda fh: fh.write(text.encode()))


def read_npz(path: str, error: Callable[[str, str], Exception], what: str) -> dict:
    """Every array of the ``.npz`` archive at `path`, read without unpickling.

    A file that is not such an archive raises ``error(path, why)``, `why`
    saying what the file is instead: an empty file, a ``.npy`` array, an
    archive without its zip directory (truncated), no archive at all, one
    whose member holds Python objects (which `what`, the kind of file the
    caller reads, never holds), a corrupt archive. The file must exist.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npz")
    >>> np.savez(path, x=np.arange(3))
    >>> read_npz(path, OSError, "an array file")["x"]
    array([0, 1, 2])
    >>> np.savez(path, x=np.array([{}], dtype=object))
    >>> read_npz(path, lambda path, why: ValueError(why), "an array file")
    Traceback (most recent call last):
    ...
    ValueError: 'x' holds pickled Python objects, which an array file never does; not unpickled
    """
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as fh:
            head = fh.read(6)
        raise error(path, "an empty file" if not head else
                    "a .npy array, not an .npz archive" if head == b"\x93NUMPY" else
                    "a truncated .npz archive: its zip directory is missing"
                    if head.startswith(b"PK\x03\x04") else "not an .npz archive")
    arrays, name = {}, None
    try:
        with np.load(path, allow_pickle=False) as data:
            for name in data.files:
                arrays[name] = data[name]
    except ValueError as e:
        if "pickle" in str(e) or "Object arrays" in str(e):
            raise error(path, f"{name!r} holds pickled Python objects, which {what} never "
                        "does; not unpickled") from None
        raise error(path, f"corrupt archive member {name!r}: {type(e).__name__}") from None
    except (zipfile.BadZipFile, EOFError, OSError, KeyError, zlib.error) as e:
        raise error(path, f"corrupt or truncated archive: {type(e).__name__}: {e}") from None
    return arrays


# --------------------------------------------------------------------------
# output paths, checked before a run

class OutputPathError(OSError, ValueError):
    """An output or checkpoint path that cannot be written (checked before a run)."""


# --------------------------------------------------------------------------
# writing


def _probe(folder: str, name: str, shown: str) -> None:
    """Create `folder` and write, flush and remove a file in it."""
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".topopt-write-test-")
        try:
            os.write(fd, b"topopt write test\n")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(tmp)
    except OSError as e:
        raise OutputPathError(f"{name}: cannot write {shown!r} "
                              f"({e.strerror or type(e).__name__}: {e.filename or folder})"
                              ) from e


def check_writable_file(path, name: str) -> str:
    """Check that the file `path` can be written (atomically) before a run.

    Creates the parent folder, writes and removes a file in it; an existing
    `path` is left alone. Returns the path as a str.

    Raises
    ------
    OutputPathError
        (an `OSError` and a `ValueError`) naming `name` and the reason.

    Examples
    --------
    >>> import os, tempfile
    >>> blocker = os.path.join(tempfile.mkdtemp(), "a_file")
    >>> open(blocker, "w").close()
    >>> check_writable_file(os.path.join(blocker, "run.npz"), "checkpoint")
    Traceback (most recent call last):
    ...
    topopt._files.OutputPathError: checkpoint: cannot write '.../a_file/run.npz' (...)
    """
    path = _path_arg(path, name, "file")
    if os.path.isdir(path):
        raise OutputPathError(f"{name}: {path!r} is a folder; expected a file path")
    _probe(os.path.dirname(os.path.abspath(path)), name, path)
    return path


def _path_arg(path, name: str, kind: str) -> str:
    """`path` as a non-empty str; TypeError/ValueError naming `name`."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a {kind} path (str or os.PathLike), got "
                        f"{type(path).__name__}")
    path = os.fspath(path)
    if not path:
        raise ValueError(f"{name} must be a {kind} path, got ''")
    return path


def check_writable_folder(folder, name: str) -> str:
    """Create `folder` if needed and check that files can be written in it.

    Examples
    --------
    >>> import os, tempfile
    >>> out = os.path.join(tempfile.mkdtemp(), "results", "mbb")
    >>> check_writable_folder(out, "--out") == out, os.listdir(out)
    (True, [])
    """
    folder = _path_arg(folder, name, "folder")
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise OutputPathError(f"{name}: {folder!r} is a file; expected a folder")
    _probe(folder, name, folder)
    return folder
