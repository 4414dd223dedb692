"""The result of a problem's run: one type for every problem script.

`RunResult` holds how the run ended (the fields of
`run_record`: ``status``, ``signal``, ``evaluations``,
``checkpoint``, ``resume``), the problem's metrics (JSON numbers: a
compliance problem's ``compliance``, ``volume``, ``grey_level``,
``fe_solves``, ...; em_focus's ``g`` and field enhancements; ...), the
design ``x``, the physical design ``x_phys`` and the optimizer's history.
``result["name"]`` reads a run field, a metric, or ``x``/``x_phys``/
``history``; `summary` is the metrics record that ``result.json`` holds.

In `record` and `summary` (what ``result.json`` holds) the ``checkpoint`` and the path
of ``resume`` are relative to the working directory when they lie below it: a committed run folder names no machine's absolute path, and
``resume`` stays a command to type where the run was started. The attributes keep
the path as the run was given it.

Beside the optimizer's ``status``, ``verdict`` says what is wrong with the
final design (``"ok"``, or ``"infeasible"``, ``"grey"``,
``"worse_than_start"`` joined by ``", "``) and ``ending`` holds its figures
(`topopt.optimize.ending`: the largest violation, the grey level of
``x_phys``, the objective at the start and the end, the limits).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from ..design.measures import grey_level
from ..optimize.ending import ending_line, with_grey

__all__ = ["RunResult", "RUN_KEYS", "run_record"]

#: How a run ended, at the top level of every ``result.json``.
RUN_KEYS = ("status", "signal", "evaluations", "checkpoint", "resume", "verdict", "ending")
_ARRAYS = ("x", "x_phys", "history")


def run_record(res, checkpoint: str | None) -> dict:
    """How a run ended, for ``result.json``: status, signal, evaluations, checkpoint.

    `res` is a `topopt.optimize.Result`. ``resume`` is the command-line
    option that continues the run (None when it converged or no checkpoint
    was written); ``verdict`` and ``ending`` are the `Result`'s (the grey
    level of the physical design is added by `RunResult.from_record`).
    """
    resumable = checkpoint is not None and res.status not in (
        "success", "stopval_reached", "ftol_reached", "xtol_reached")
    return {"status": res.status, "signal": res.signal, "evaluations": res.evaluations,
            "checkpoint": checkpoint,
            "resume": f"--resume {checkpoint}" if resumable else None,
            "verdict": getattr(res, "verdict", None), "ending": getattr(res, "ending", None)}


def _shown_path(path: str | None, start: str | None = None) -> str | None:
    """`path` relative to `start` (the working directory) when it lies below it, else as given.

    Parameters
    ----------
    path : str or None
        A file the run wrote (its checkpoint); None passes through.
    start : str, optional
        The folder it is shown from; the working directory by default.

    Returns
    -------
    str or None

    Examples
    --------
    >>> import os
    >>> _shown_path(os.path.join(os.getcwd(), "results", "mbb_beam", "checkpoint.npz"))
    'results/mbb_beam/checkpoint.npz'
    >>> _shown_path("/elsewhere/ck.npz", start="/work/main")
    '/elsewhere/ck.npz'
    >>> _shown_path(None) is None
    True
    """
    if path is None:
        return None
    start = os.path.abspath(start or os.getcwd())
    full = os.path.abspath(path)
    if full.startswith(start + os.sep):
        return os.path.relpath(full, start)
    return path


def _shown_option(option: str | None) -> str | None:
    """``"--resume PATH"`` with PATH as ``_shown_path`` gives it."""
    if not option:
        return option
    flag, _, path = option.partition(" ")
    return f"{flag} {_shown_path(path)}" if path else option


def _grey(metrics: dict, x_phys) -> float | None:
    """The physical design's grey level: the problem's own figure, else that of `x_phys`."""
    g = metrics.get("grey_level")
    if isinstance(g, (int, float)) and not isinstance(g, bool):
        return float(g)
    if x_phys is None:
        return None
    try:
        return grey_level(x_phys)
    except (TypeError, ValueError):            # not a density in [0, 1]
        return None


@dataclass
class RunResult:
    """How a run ended, the problem's metrics, the design and its history.

    Parameters
    ----------
    status : str
        `topopt.optimize.Result.status` (``"interrupted"`` after a signal).
    signal : str or None
        ``"SIGINT"``/``"SIGTERM"`` for an interrupted run.
    evaluations : int
    checkpoint : str or None
    resume : str or None
        The command-line option that continues the run (``--resume PATH``).
    verdict : str or None
        ``"ok"`` or what is wrong with the final design (module notes).
    ending : dict or None
        The figures behind `verdict` (`topopt.optimize.ending.ending`).
    metrics : dict
        The problem's numbers (JSON-able), in the order ``result.json`` lists them.
    x, x_phys : ndarray
        Design variables and the physical (filtered, projected) design.
    history : list of dict
        One record per evaluation (`topopt.optimize.Result.history`).
    arrays : dict
        Further designs of the problem (e.g. the bracket's deterministic design).

    Examples
    --------
    >>> r = RunResult("maxeval_reached", None, 3, None, None, {"compliance": 2.5},
    ...               x=np.ones(2), x_phys=np.ones(2))
    >>> r["compliance"], r["evaluations"], r.summary()["status"]
    (2.5, 3, 'maxeval_reached')
    >>> r["volume"]
    Traceback (most recent call last):
    ...
    KeyError: "'volume' is not a field of this RunResult; it has status, signal, ..."
    """

    status: str
    signal: str | None
    evaluations: int
    checkpoint: str | None
    resume: str | None
    metrics: dict = field(default_factory=dict)
    x: np.ndarray | None = None
    x_phys: np.ndarray | None = None
    history: list = field(default_factory=list)
    arrays: dict = field(default_factory=dict)
    verdict: str | None = None
    ending: dict | None = None

    @classmethod
    def from_record(cls, record: dict, metrics: dict, **designs) -> "RunResult":
        """From a `run_record` dict (`RUN_KEYS`) and the metrics.

        The record's ``ending`` gains the grey level of the physical design
        (the metrics' ``grey_level``, else that of ``x_phys``) and its verdict
        ``"grey"`` above `topopt.optimize.ending.GREY_LIMIT`.
        """
        fields = {k: record.get(k) for k in RUN_KEYS}
        if fields["ending"]:
            fields["ending"] = with_grey(fields["ending"],
                                         _grey(metrics, designs.get("x_phys")))
            fields["verdict"] = fields["ending"]["verdict"]
        return cls(**fields, metrics=dict(metrics), **designs)

    def ending_line(self) -> str:
        """The line a flagged run ends with (``""`` when its verdict is ``"ok"`` or unknown)."""
        return ending_line(self.ending) if self.ending else ""

    def record(self) -> dict:
        """How the run ended: the `RUN_KEYS` fields (the checkpoint's path relative to the
        working directory when it lies below it)."""
        out = {k: getattr(self, k) for k in RUN_KEYS}
        out["checkpoint"] = _shown_path(self.checkpoint)
        out["resume"] = _shown_option(self.resume)
        return out

    def summary(self) -> dict:
        """The run's fields, then the metrics: ``result.json``'s ``"result"`` record."""
        return self.record() | self.metrics

    def keys(self) -> list:
        return [*RUN_KEYS, *self.metrics, *_ARRAYS, *self.arrays]

    def __getitem__(self, key: str) -> Any:
        if key in RUN_KEYS or key in _ARRAYS:
            return getattr(self, key)
        if key in self.metrics:
            return self.metrics[key]
        if key in self.arrays:
            return self.arrays[key]
        raise KeyError(f"{key!r} is not a field of this RunResult; it has "
                       f"{', '.join(self.keys())}")

    def __contains__(self, key) -> bool:
        return key in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def get(self, key: str, default=None) -> Any:
        return self[key] if key in self else default
