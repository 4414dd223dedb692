"""The files of a run: checkpoints and output folders checked before the first evaluation.

`minimize` (`topopt.optimize`) checks its output paths here and writes its
checkpoint (`topopt.optimize.checkpoint`, re-exported here) and history with the
atomic writes of `topopt._files`. The problem scripts' helpers (`add_run_arguments`,
`run_options`, `run_record`, `script_errors`, `finish`, `signals_held`,
`exit_status`) are in `topopt.cli`.

* Paths are checked before the first evaluation: the folder is created and a
  file is really written there and removed (`check_writable_file`,
  `check_writable_folder`), so an unwritable ``--out`` or checkpoint fails
  at once, not after 10 evaluations or after the whole run.
* Every file is written atomically (a temporary file in the same folder,
  then ``os.replace``): an interruption leaves the old file or the new one.
* `load_checkpoint` (`topopt.optimize.checkpoint`, imported here) reads only what
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

from .._files import atomic_write_text
from ..optimize.checkpoint import CheckpointError

__all__ = ["run_label", "check_run_label", "write_run_label", "run_label_path", "SIZE_OPTIONS"]


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
