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
* `load_checkpoint` reads only what `minimize` wrote; anything else (not an
  archive, a truncated or corrupt one, an ``.npz`` without our fields, another
  format version, pickled objects) raises `CheckpointError`, ``not a topopt
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
import math
import os
import signal
import sys
import tempfile
import threading
import zipfile
from numbers import Integral, Real
from typing import Callable, Mapping

import numpy as np

__all__ = ["CheckpointError", "OutputPathError", "CHECKPOINT_VERSION", "load_checkpoint",
           "save_checkpoint", "check_writable_file", "check_writable_folder",
           "add_run_arguments", "run_options", "run_record", "exit_status", "finish",
           "script_errors", "signals_held"]

#: Format version of the checkpoints `minimize` writes (``meta["version"]``).
CHECKPOINT_VERSION = 1


class CheckpointError(ValueError):
    """A file that is not a checkpoint `minimize` can resume from."""

    def __init__(self, path, why: str):
        self.path, self.why = os.fspath(path), why
        super().__init__(f"not a topopt checkpoint: {self.path} ({why})")

    def __reduce__(self):                         # picklable (multiprocessing)
        return type(self), (self.path, self.why)


class OutputPathError(OSError, ValueError):
    """An output or checkpoint path that cannot be written (checked before a run)."""


# --------------------------------------------------------------------------
# writing


def jsonable(obj):
    """``json.dumps`` default: arrays as lists, numpy scalars as numbers, else repr."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return repr(obj)


def atomic_write_bytes(path, write: Callable) -> None:
    """``write(fh)`` into a temporary file beside `path`, then rename it to `path`."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-" + os.path.basename(path) + "-")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    atomic_write_bytes(path, lambda fh: fh.write(text.encode()))


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
# checkpoints

_INT, _OPT_INT, _STR, _OPT_STR = "integer >= 0", "integer >= 0 or null", "string", \
    "string or null"
_META = {
    "version": _INT, "status": _STR, "n": _INT, "n_constraints": _OPT_INT, "stage": _INT,
    "stage_evaluations": _INT, "stage_done": "boolean", "stage_status": _OPT_STR,
    "evaluations": _INT, "stages": "list", "seconds": "number >= 0",
    "fe_solves": _OPT_INT, "nlopt_evaluations": _INT, "history": "list",
}


def _is(value, kind: str) -> bool:
    if value is None and kind.endswith("or null"):
        return True
    if kind.startswith("integer"):
        return isinstance(value, Integral) and not isinstance(value, bool) and value >= 0
    if kind.startswith("string"):
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list)
    return isinstance(value, Real) and not isinstance(value, bool) and \
        math.isfinite(value) and value >= 0


def save_checkpoint(path, arrays: Mapping[str, np.ndarray], meta: Mapping) -> None:
    """Write arrays and JSON `meta` as an ``.npz`` checkpoint, atomically."""
    data = dict(arrays)
    data["meta"] = np.array(json.dumps(dict(meta, version=CHECKPOINT_VERSION),
                                       default=jsonable))
    atomic_write_bytes(path, lambda fh: np.savez(fh, **data))


def _read_archive(path: str) -> dict:
    if not zipfile.is_zipfile(path):
        with open(path, "rb") as fh:
            head = fh.read(6)
        why = ("an empty file" if not head else
               "a .npy array, not an .npz archive" if head == b"\x93NUMPY" else
               "a truncated .npz archive: its zip directory is missing"
               if head.startswith(b"PK\x03\x04") else "not an .npz archive")
        raise CheckpointError(path, why)
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: np.array(data[k]) for k in data.files}
    except ValueError as e:
        if "pickle" in str(e) or "Object arrays" in str(e):
            raise CheckpointError(path, "it holds pickled Python objects, which a "
                                  "checkpoint never does; not loaded") from None
        raise CheckpointError(path, f"corrupt archive member: {type(e).__name__}") from None
    except Exception as e:            # BadZipFile, EOFError, zlib.error, OSError
        raise CheckpointError(path, f"corrupt or truncated archive: {type(e).__name__}: "
                              f"{e}") from None


def _check_meta(path: str, arrays: dict) -> dict:
    if "meta" not in arrays:
        raise CheckpointError(path, "an .npz archive without the 'meta' record; it holds "
                              + (", ".join(sorted(arrays)) or "no arrays"))
    meta = arrays["meta"]
    if meta.ndim != 0 or meta.dtype.kind != "U":
        raise CheckpointError(path, f"its 'meta' is a {meta.dtype} array of shape "
                              f"{meta.shape}, not a JSON text")
    try:
        meta = json.loads(str(meta))
    except json.JSONDecodeError as e:
        raise CheckpointError(path, f"its 'meta' is not JSON: {e}") from None
    if not isinstance(meta, dict):
        raise CheckpointError(path, "its 'meta' is not a JSON object")
    version = meta.get("version")
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(path, f"format version {version!r}; this topopt reads "
                              f"version {CHECKPOINT_VERSION}")
    missing = [k for k in _META if k not in meta]
    if missing:
        raise CheckpointError(path, "missing fields: " + ", ".join(missing))
    for k, kind in _META.items():
        if not _is(meta[k], kind):
            raise CheckpointError(path, f"field {k!r} = {meta[k]!r} is not "
                                  f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}")
    if len(meta["history"]) != meta["evaluations"] or \
            not all(isinstance(h, dict) for h in meta["history"]):
        raise CheckpointError(path, f"its history has {len(meta['history'])} records for "
                              f"{meta['evaluations']} evaluations")
    return meta


def _check_arrays(path: str, arrays: dict, meta: dict) -> None:
    n, k = meta["n"], meta["n_constraints"]
    shapes = {"x": (n,), "x_last": (n,)}
    if k is not None:
        shapes.update(seed_values=(k + 1,), seed_grads=(k + 1, n))
    if "x" not in arrays:
        raise CheckpointError(path, "no design 'x'")
    if ("seed_values" in arrays) != ("seed_grads" in arrays) or \
            (k is None and "seed_values" in arrays):
        raise CheckpointError(path, "an incomplete seed (values and gradients)")
    for name, shape in shapes.items():
        if name not in arrays:
            continue
        a = arrays[name]
        if a.dtype.kind != "f" or a.shape != shape or not np.all(np.isfinite(a)):
            raise CheckpointError(path, f"'{name}' is a {a.dtype} array of shape {a.shape}; "
                                  f"expected finite floats of shape {shape}")
    unknown = set(arrays) - set(shapes) - {"meta"}
    if unknown:
        raise CheckpointError(path, "unknown arrays: " + ", ".join(sorted(unknown)))


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Read a checkpoint written by `minimize`, after checking that it is one.

    Returns a dict with ``x`` (the restart design), ``x_last`` (the last
    design evaluated), ``seed`` (``(values, gradients)`` at ``x`` or None),
    ``history``, ``stage``, ``stage_evaluations``, ``stage_done``,
    ``stage_status``, ``evaluations``, ``stages``, ``seconds``, ``status``,
    ``n`` and ``n_constraints``.

    Raises
    ------
    FileNotFoundError
        No file at `path`.
    CheckpointError
        (a `ValueError`) ``not a topopt checkpoint: PATH (why)``: not an
        ``.npz`` archive, a truncated or corrupt one, one without our fields
        or with fields of the wrong type or shape, another format version.
        Pickled objects are never loaded.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from topopt.optimize import minimize
    >>> path = os.path.join(tempfile.mkdtemp(), "run.npz")
    >>> r = minimize(lambda x: np.sum((x - 0.3) ** 2), np.full(2, 0.5), maxeval=3,
    ...              checkpoint=path, verbose=False)
    >>> ck = load_checkpoint(path)
    >>> len(ck["history"]), ck["stage_status"]
    (3, 'maxeval_reached')
    >>> np.savez(path, x=np.zeros(2))
    >>> load_checkpoint(path)
    Traceback (most recent call last):
    ...
    topopt.runio.CheckpointError: not a topopt checkpoint: ... (an .npz archive without ...)
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"the checkpoint path must be a str or os.PathLike, got "
                        f"{type(path).__name__}")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no checkpoint at {path!r}")
    if os.path.isdir(path):
        raise CheckpointError(path, "a folder")
    arrays = _read_archive(path)
    meta = _check_meta(path, arrays)
    _check_arrays(path, arrays, meta)
    out = dict(meta)
    out["x"] = arrays["x"]
    out["x_last"] = arrays.get("x_last")
    out["seed"] = ((arrays["seed_values"], arrays["seed_grads"])
                   if "seed_values" in arrays else None)
    return out


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
