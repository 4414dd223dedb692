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

import json
import os
import tempfile

# re-exported: the checkpoint (topopt.checkpoint) and atomic writes (topopt._files)
from ._files import atomic_write_bytes, atomic_write_text, jsonable  # noqa: F401
from .checkpoint import CHECKPOINT_VERSION, CheckpointError, load_checkpoint, save_checkpoint

__all__ = ["CheckpointError", "OutputPathError", "CHECKPOINT_VERSION", "load_checkpoint",
           "save_checkpoint", "check_writable_file", "check_writable_folder",
           "run_label", "check_run_label", "write_run_label", "run_label_path", "SIZE_OPTIONS"]


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


# --------------------------------------------------------------------------
# which run a checkpoint belongs to

#: The options that fix a problem's mesh: a checkpoint of other values is another problem.
SIZE_OPTIONS = ("nelx", "nely", "nelz", "n", "h")


def run_label_path(checkpoint: str) -> str:
    """The label beside a checkpoint: ``CHECKPOINT.run.json``."""
    return f"{os.fspath(checkpoint)}.run.json"


def run_label(problem: str, options: dict) -> dict:
    """``{"problem": ..., "sizes": {...}}``: what a problem script's checkpoint is of.

    Examples
    --------
    >>> run_label("mbb_beam", {"nelx": 60, "nely": 20, "volfrac": 0.5})
    {'problem': 'mbb_beam', 'sizes': {'nelx': 60, 'nely': 20}}
    """
    return {"problem": problem, "sizes": {k: options[k] for k in SIZE_OPTIONS if k in options}}


def _shown(label: dict) -> str:
    sizes = " ".join(f"--{k} {v}" for k, v in label.get("sizes", {}).items())
    return f"{label.get('problem')}{' ' + sizes if sizes else ''}"


def check_run_label(resume: str, label: dict) -> None:
    """Refuse to resume a checkpoint whose label names another problem or mesh size.

    A checkpoint without a label (written by `minimize` itself, or copied
    alone) is left to `minimize`'s own checks (the number of variables).

    Raises
    ------
    CheckpointError
        ``not a topopt checkpoint: PATH (a checkpoint of mbb_beam --nelx 60
        --nely 20; this run is cantilever --nelx 40 --nely 30)``.
    """
    try:
        with open(run_label_path(resume), encoding="utf-8") as fh:
            saved = json.load(fh)
    except (OSError, ValueError):
        return
    if not isinstance(saved, dict) or not isinstance(saved.get("sizes", {}), dict):
        return
    if saved.get("problem") != label["problem"] or saved.get("sizes", {}) != label["sizes"]:
        raise CheckpointError(resume, f"a checkpoint of {_shown(saved)}; this run is "
                              f"{_shown(label)}: give the interrupted run's options")


def write_run_label(checkpoint: str, label: dict) -> None:
    """Write `label` beside the `checkpoint` a run is about to write (best effort)."""
    try:
        atomic_write_text(run_label_path(checkpoint), json.dumps(label, indent=1))
    except OSError:
        pass
