"""The files of a run: checkpoints, output folders, and how a problem script ends.

`minimize` (`topopt.optimize`) writes its checkpoint and history through
this module; problem scripts use `add_run_arguments`, `run_options`,
`run_record`, `script_errors` and `finish`.

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

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
import threading
from typing import Mapping

# re-exported: the checkpoint (topopt.checkpoint) and atomic writes (topopt._files)
from ._files import atomic_write_bytes, atomic_write_text, jsonable  # noqa: F401
from .checkpoint import CHECKPOINT_VERSION, CheckpointError, load_checkpoint, save_checkpoint

__all__ = ["CheckpointError", "OutputPathError", "CHECKPOINT_VERSION", "load_checkpoint",
           "save_checkpoint", "check_writable_file", "check_writable_folder",
           "add_run_arguments", "run_options", "run_record", "exit_status", "finish",
           "script_errors", "signals_held"]


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
# problem scripts


def add_run_arguments(parser: argparse.ArgumentParser, out: str) -> None:
    """Add a problem script's ``--out``, ``--checkpoint``, ``--resume`` and ``--quiet``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    out : str
        Default results folder; the checkpoint defaults to ``OUT/checkpoint.npz``.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_run_arguments(parser, "results/demo")
    >>> args = parser.parse_args(["--quiet"])
    >>> args.out, args.checkpoint, args.resume, args.quiet
    ('results/demo', None, None, True)
    """
    parser.add_argument("--out", default=out, help="results folder (created; checked "
                        "before the run)")
    parser.add_argument("--checkpoint", default=None,
                        help="checkpoint file (default: OUT/checkpoint.npz)")
    parser.add_argument("--resume", default=None,
                        help="resume from this checkpoint (the run's options must match)")
    parser.add_argument("--quiet", action="store_true")


def run_options(args: argparse.Namespace,
                parser: argparse.ArgumentParser | None = None) -> dict:
    """Check the `add_run_arguments` options; ``verbose``, ``checkpoint``, ``resume``.

    Before any work: ``--out`` is created and written to, the checkpoint's
    folder too (`check_writable_folder`, `check_writable_file`), and the
    ``--resume`` file is read (`load_checkpoint`). A failure raises
    (`OutputPathError`, `CheckpointError`, `FileNotFoundError`), or with
    `parser` ends the script with ``parser.error`` (usage, exit status 2).

    Examples
    --------
    >>> import argparse, os, tempfile
    >>> parser = argparse.ArgumentParser()
    >>> add_run_arguments(parser, os.path.join(tempfile.mkdtemp(), "out"))
    >>> opts = run_options(parser.parse_args([]))
    >>> opts["verbose"], os.path.basename(opts["checkpoint"]), opts["resume"]
    (True, 'checkpoint.npz', None)
    """
    checkpoint = args.checkpoint or os.path.join(args.out, "checkpoint.npz")
    try:
        check_writable_folder(args.out, "--out")
        check_writable_file(checkpoint, "--checkpoint")
        if args.resume is not None:
            load_checkpoint(args.resume)
    except (OSError, ValueError) as e:
        if parser is None:
            raise
        parser.error(str(e))
    return {"verbose": not args.quiet, "checkpoint": checkpoint, "resume": args.resume}


def run_record(res, checkpoint: str | None) -> dict:
    """How a run ended, for ``result.json``: status, signal, evaluations, checkpoint.

    `res` is a `topopt.optimize.Result`. ``resume`` is the command-line
    option that continues the run (None when it converged or no checkpoint
    was written).
    """
    resumable = checkpoint is not None and res.status not in (
        "success", "stopval_reached", "ftol_reached", "xtol_reached")
    return {"status": res.status, "signal": res.signal, "evaluations": res.evaluations,
            "checkpoint": checkpoint,
            "resume": f"--resume {checkpoint}" if resumable else None}


def exit_status(signal_name: str) -> int:
    """``128 + signum``: what a shell reports for a process ended by the signal.

    Examples
    --------
    >>> exit_status("SIGINT"), exit_status("SIGTERM")
    (130, 143)
    """
    return 128 + int(signal.Signals[signal_name])


def finish(record: Mapping) -> None:
    """End a problem script as its run ended (`run_record`'s fields).

    An interrupted run prints ``interrupted after N evaluations; resume with
    --resume PATH`` on stderr and exits with `exit_status` (130 for SIGINT,
    143 for SIGTERM); any other returns.
    """
    if record.get("status") != "interrupted":
        return
    n = record["evaluations"]
    where = (f"resume with --resume {record['checkpoint']}" if record.get("checkpoint")
             else "no checkpoint was written")
    print(f"interrupted after {n} evaluations; {where}", file=sys.stderr, flush=True)
    sys.exit(exit_status(record.get("signal") or "SIGINT"))


@contextlib.contextmanager
def signals_held():
    """Finish the block (writing results) before a SIGINT/SIGTERM takes effect.

    A signal that arrives in the block is recorded, and raised again once the
    previous handlers are back: a Ctrl-C while the pictures and
    ``result.json`` of an interrupted run are written stops the script after
    they are complete. Outside the main thread it does nothing.

    Examples
    --------
    >>> import os, signal
    >>> seen = []
    >>> previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append("handled"))
    >>> with signals_held():
    ...     os.kill(os.getpid(), signal.SIGTERM)
    ...     seen.append("block done")
    >>> seen
    ['block done', 'handled']
    >>> _ = signal.signal(signal.SIGTERM, previous)
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []
    previous = {sig: signal.signal(sig, lambda signum, frame: received.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        if received:
            signal.raise_signal(received[0])


@contextlib.contextmanager
def script_errors(out: str | None):
    """End a problem script whose run raised, keeping what it did.

    When `minimize` wrote its checkpoint on the way out (the exception
    carries ``topopt_checkpoint``), ``OUT/result.json`` records the run from
    it (evaluations, objective history, checkpoint, the option that resumes
    it) and a line on stderr says where the last good design is:

    * an error: ``"status": "error"`` with the message; the exception
      propagates;
    * a second SIGINT/SIGTERM (`minimize` raises ``KeyboardInterrupt``):
      ``"status": "interrupted"``, ``aborted after N evaluations; resume
      with --resume PATH``, and the script exits with `exit_status`.

    An exception raised before the run started, or after it returned, leaves
    ``result.json`` alone and propagates.
    """
    try:
        yield
    except (Exception, KeyboardInterrupt) as e:
        ck = getattr(e, "topopt_checkpoint", None)
        saved = None
        if ck is not None:
            with contextlib.suppress(Exception):
                saved = load_checkpoint(ck)
        aborted = isinstance(e, KeyboardInterrupt)
        sig = e.args[0] if aborted and e.args and e.args[0] in ("SIGINT", "SIGTERM") \
            else "SIGINT"
        if saved is not None:
            n = saved["evaluations"]
            print(f"aborted after {n} evaluations; resume with --resume {ck}" if aborted else
                  f"error after {n} evaluations; the last good design and the history are "
                  f"in {ck}; resume with --resume {ck}", file=sys.stderr, flush=True)
            payload = {
                "status": "interrupted" if aborted else "error",
                "signal": sig if aborted else None,
                "error": None if aborted else f"{type(e).__name__}: {e}",
                "evaluations": n, "checkpoint": ck, "resume": f"--resume {ck}",
                "objective_history": [h.get("objective") for h in saved["history"]],
            }
            if out is not None:
                with contextlib.suppress(OSError):
                    atomic_write_text(os.path.join(out, "result.json"),
                                      json.dumps(payload, indent=2))
        if aborted and saved is not None:
            sys.exit(exit_status(sig))
        raise
