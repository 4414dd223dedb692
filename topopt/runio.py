"""The files of a run: checkpoints and output folders checked before the first evaluation.

`minimize` (`topopt.optimize`) checks its output paths here and writes its
checkpoint (`topopt.checkpoint`, re-exported here) and history with the
atomic writes of `topopt._files`. The problem scripts' helpers (`add_run_arguments`,
`run_options`, `run_record`, `script_errors`, `finish`, `signals_held`,
`exit_status`) are in `topopt.cli`.

* Paths are checked before the first evaluation: the folder is created and a
  file is really written there and removed (`check_writable_file`,
  `check_writable_folder`), so an unwritable ``--out`` or checkpoint fails
  at once, not after 10 evaluations or after the whole run.
* Every file is written atomically (a temporary file in the same folder,
  then ``os.replace``): an interruption leaves the old file or the new one.
* `load_checkpoint` (`topopt.checkpoint`, imported here) reads only what
  `minimize` wrote; anything else raises `CheckpointError`, ``not a topopt
  checkpoint: PATH (why)``. Nothing is ever unpickled.
* A script whose run was interrupted by SIGINT/SIGTERM records
  ``"status": "interrupted"`` in ``result.json``, prints ``interrupted after N
  evaluations; resume with --resume PATH`` and exits with ``128 + signum``
  (130, 143), as a shell reports a process killed by the signal (`finish`).
"""

from __future__ import annotations

import os
import tempfile

# re-exported: the checkpoint (topopt.checkpoint) and atomic writes (topopt._files)
from ._files import atomic_write_bytes, atomic_write_text, jsonable  # noqa: F401
from .checkpoint import CHECKPOINT_VERSION, CheckpointError, load_checkpoint, save_checkpoint

__all__ = ["CheckpointError", "OutputPathError", "CHECKPOINT_VERSION", "load_checkpoint",
           "save_checkpoint", "check_writable_file", "check_writable_folder"]


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
    topopt.runio.OutputPathError: checkpoint: cannot write '.../a_file/run.npz' (...)
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
