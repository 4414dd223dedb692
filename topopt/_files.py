"""Atomic file writes and JSON conversion, shared by checkpoints and run output.

Every file is written atomically (a temporary file in the same folder, then
``os.replace``): an interruption leaves the old file or the new one. Files
are created 0644 (readable by others).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Callable

import numpy as np

__all__ = ["jsonable", "atomic_path", "atomic_write_bytes", "atomic_write_text", "FILE_MODE"]

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
