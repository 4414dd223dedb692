"""The run template of the gallery's runs, beside the one of `DensityProblem.run`.

`DensityProblem.run` optimizes one problem that exists already: its hooks
(`start`, `prepare`, `final_design`, `metrics`, ...) fill the frame
`timed_run` (the checkpoint write-tested before the first solve, the solves
counted, the time), and the problem script writes the folder
(`topopt.io.folder.run_compliance`). A gallery run (`run_focus`,
`run_reliable`, `run_robust`, `run_stress_reference`, `run_focus_designs`)
is that run with three more steps: its arguments are checked before its
model exists, it optimizes several designs one after the other (phases,
each a `minimize` or a `DensityProblem.run` of its own), and it writes its
own folder. `GalleryRun` is its template; a run fills the hooks of

1. ``check()``: the run's own arguments, before the model exists (the
   frame then write-tests `out` and each phase's checkpoint, `phase_paths`,
   and reads `resume`);
2. ``build()``: the model and problems (the run's clock starts here);
3. ``phase(name, checkpoint, resume)`` for each name of ``PHASES`` in
   order: the phase's `topopt.optimize.Result` or `RunResult`, kept in
   ``outcomes[name]``. An interrupted phase before the last ends the run:
   ``stopped(name)`` is its record (the phase, its last good design, its
   history; its checkpoint is the one to resume); so does the last one with
   ``STOP_LAST = True``;
4. ``result()``: the run's `RunResult`; also when the last phase was
   interrupted: the figures of its last good design, as `DensityProblem.run`;
5. ``write(result)``, or ``write_stopped(result)`` after a stopped phase:
   the results folder when `out` is given, under `signals_held` (a signal
   waits for complete files). The script's command line then ends as the
   run ended (`topopt.cli.finish`: ``interrupted after N evaluations;
   resume with --resume PATH``).

The frame also gives each phase's `record` (`run_record`) and `elapsed`,
the run's seconds: since `build`, plus those the checkpoints of resumed
phases carried.
"""

from __future__ import annotations

import os
import time

from .._files import check_writable_file, check_writable_folder
from ..io.folder import plot_record, signals_held, write_json
from ..io.result import RunResult, run_record
from ..optimize.checkpoint import load_checkpoint
from .base import before_resume

__all__ = ["GalleryRun", "phase_paths", "phase_checkpoint", "MissingPhaseError"]


class MissingPhaseError(FileNotFoundError, ValueError):
    """A `resume` of a later phase whose earlier phase's checkpoint is missing: a usage
    error of the command line (a `ValueError`) and a missing file.

    Examples
    --------
    >>> issubclass(MissingPhaseError, FileNotFoundError), issubclass(MissingPhaseError,
    ...                                                              ValueError)
    (True, True)
    """


def phase_checkpoint(checkpoint: str, name: str) -> str:
    """The checkpoint of phase `name` beside `checkpoint`: ``PATH.name.npz``.

    Examples
    --------
    >>> phase_checkpoint("out/checkpoint.npz", "deterministic")
    'out/checkpoint.deterministic.npz'
    """
    root, ext = os.path.splitext(os.fspath(checkpoint))
    return f"{root}.{name}{ext or '.npz'}"


def phase_paths(checkpoint: str | None, resume: str | None, phases, main: str | None = None
                ) -> list:
    """``(checkpoint, resume)`` of each of `phases`: the `main` one's (by default the
    last) at `checkpoint` itself, the others' beside it (`phase_checkpoint`).

    `resume` names the phase it continues by its file (``PATH.name.npz``; else the
    main phase's): that phase resumes from it, the phases before it come, finished,
    from their siblings (which must exist), the phases after it start afresh.

    Examples
    --------
    >>> phase_paths("ck.npz", None, ("nominal", "robust", "reliable"))
    [('ck.nominal.npz', None), ('ck.robust.npz', None), ('ck.npz', None)]
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> open(os.path.join(folder, "ck.npz"), "w").close()        # a finished first phase
    >>> [tuple(p and os.path.basename(p) for p in pair) for pair in phase_paths(
    ...     os.path.join(folder, "ck.npz"), os.path.join(folder, "ck.reference.npz"),
    ...     ("stress", "reference"), main="stress")]
    [('ck.npz', 'ck.npz'), ('ck.reference.npz', 'ck.reference.npz')]
    """
    names = list(phases)
    if not names or len(set(names)) != len(names):
        raise ValueError(f"phases must name one phase or more, each once, got {phases!r}")
    main = names[-1] if main is None else main
    if main not in names:
        raise ValueError(f"main must be one of the phases {names}, got {main!r}")

    def path(base, name):
        return base if name == main else phase_checkpoint(base, name)

    cks = [None if checkpoint is None else path(checkpoint, n) for n in names]
    if resume is None:
        return [(ck, None) for ck in cks]
    root, ext = os.path.splitext(os.fspath(resume))
    at = next((n for n in names if n != main and root.endswith("." + n)), main)
    base = resume if at == main else root[:-len(at) - 1] + ext
    k = names.index(at)
    resumes = [path(base, n) for n in names[:k]] + [resume] + [None] * (len(names) - k - 1)
    for name, earlier in zip(names[:k], resumes):
        if not os.path.exists(earlier):
            raise MissingPhaseError(f"resume: {resume} continues the {at} phase, whose "
                                    f"{name} design {earlier} is missing")
    return list(zip(cks, resumes))


def _checked_paths(out, checkpoint, resume, phases, main) -> list:
    """`phase_paths`, `out` and each phase's checkpoint write-tested, `resume` read."""
    if out is not None:
        check_writable_folder(out, "out")
    paths = phase_paths(checkpoint, resume, phases, main)
    for ck, _ in paths:
        if ck is not None:
            check_writable_file(ck, "checkpoint")
    if resume is not None:
        load_checkpoint(resume)                          # a readable checkpoint
    return paths


def _write_record(out: str, result: RunResult) -> None:
    """``OUT/result.json``: how the run ended, its record and histories."""
    os.makedirs(out, exist_ok=True)
    write_json(os.path.join(out, "result.json"),
               {**result.record(), "result": result.summary(),
                **plot_record(result.history, "objective as minimized")})


class GalleryRun:
    """The template of a run that builds its model, runs phases and writes its folder.

    Parameters
    ----------
    out : str, optional
        The results folder: write-tested before the model exists, written
        by `write` (or `write_stopped`) at the end.
    verbose : bool
        Print the progress of each phase.
    checkpoint, resume : str, optional
        The main phase's checkpoint and the checkpoint to resume (of any
        phase, `phase_paths`).

    A run sets ``PHASES`` (the phases' names, in order; ``("design",)`` by
    default) and ``MAIN`` (the phase whose checkpoint is `checkpoint`
    itself; None: the last) and fills the hooks (the module's notes).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.optimize import minimize
    >>> class Parabola(GalleryRun):
    ...     PHASES = ("coarse", "fine")
    ...     def build(self):
    ...         self.target = 0.3
    ...     def phase(self, name, checkpoint, resume):
    ...         x0 = np.full(2, 0.5) if name == "coarse" else self.outcomes["coarse"].x
    ...         return minimize(lambda x: np.sum((x - self.target) ** 2), x0,
    ...                         maxeval=5 if name == "coarse" else 20, verbose=False,
    ...                         checkpoint=checkpoint, resume=resume)
    ...     def result(self):
    ...         res = self.outcomes["fine"]
    ...         return RunResult.from_record(self.record("fine"), {"f": float(res.fun)},
    ...                                      x=res.x, history=res.history)
    >>> r = Parabola().run()
    >>> r.status, bool(r["f"] < 1e-8), np.round(r.x, 6).tolist()
    ('maxeval_reached', True, [0.3, 0.3])
    """

    #: The phases, in order.
    PHASES: tuple = ("design",)
    #: The phase whose checkpoint is `checkpoint` itself (None: the last).
    MAIN: str | None = None
    #: True: an interrupted last phase ends the run as an earlier one does (`stopped`).
    STOP_LAST: bool = False

    def __init__(self, out: str | None = None, verbose: bool = False,
                 checkpoint: str | None = None, resume: str | None = None):
        self.out, self.verbose = out, verbose
        self.checkpoint, self.resume = checkpoint, resume
        self.paths, self.outcomes, self._wall = {}, {}, {}
        self._t0: float | None = None

    # ----------------------------------------------------------- the hooks
    def check(self) -> None:
        """The run's own arguments, checked before the model exists (nothing by default)."""

    def build(self) -> None:
        """The model and problems, once the arguments are checked (nothing by default)."""

    def phase(self, name: str, checkpoint: str | None, resume: str | None):
        """Optimize phase `name`: its `topopt.optimize.Result` or `RunResult`."""
        raise NotImplementedError(f"{type(self).__name__} runs no phase {name!r}: "
                                  "define its phase(name, checkpoint, resume)")

    def result(self) -> RunResult:
        """The run's `RunResult` from `outcomes` (the last phase's, by default)."""
        name = self.PHASES[-1]
        outcome = self.outcomes[name]
        return RunResult.from_record(self.record(name), getattr(outcome, "metrics", {}),
                                     x=outcome.x, x_phys=getattr(outcome, "x_phys", None),
                                     history=outcome.history)

    def stopped(self, name: str) -> RunResult:
        """The record of a run interrupted in phase `name` (before the last; any with
        `STOP_LAST`): the phase, its last good design and history, its checkpoint and
        the option that resumes it."""
        outcome = self.outcomes[name]
        return RunResult.from_record(
            self.record(name), {"phase": name, **getattr(outcome, "metrics", {})},
            x=outcome.x, x_phys=getattr(outcome, "x_phys", None), history=outcome.history)

    def write(self, result: RunResult) -> None:
        """Write the results folder `out`: by default `write_stopped`'s ``result.json``."""
        _write_record(self.out, result)

    def write_stopped(self, result: RunResult) -> None:
        """Write `out` after a stopped phase: ``result.json`` with how the run ended,
        the record (``"result"``) and the phase's histories (`plot_record`)."""
        _write_record(self.out, result)

    # ----------------------------------------------------------- the frame
    def record(self, name: str) -> dict:
        """How phase `name` ended (`run_record`, with the phase's checkpoint)."""
        outcome = self.outcomes[name]
        if isinstance(outcome, RunResult):
            return outcome.record()
        return run_record(outcome, self.paths[name][0])

    def clock(self) -> float:
        """Seconds since `build` began (in this process)."""
        return time.perf_counter() - self._t0

    def elapsed(self, *names: str) -> float:
        """`clock`, plus the seconds the checkpoints of the resumed phases `names` (by
        default every phase run so far) carried: the run's time."""
        names = names or tuple(self.outcomes)
        return self.clock() + sum(self._resumed(n) for n in names)

    def _resumed(self, name: str) -> float:
        """The seconds phase `name` ran before its resume (0 for a fresh phase)."""
        outcome = self.outcomes[name]
        if isinstance(outcome, RunResult):          # a DensityProblem.run: seconds of it all
            return max(outcome.metrics.get("seconds", 0.0) - self._wall[name], 0.0)
        return before_resume(outcome, "seconds", 0.0)

    def run(self) -> RunResult:
        """Check, build, run the phases, make the result, write it (the module's notes)."""
        self.check()
        self.paths = dict(zip(self.PHASES, _checked_paths(self.out, self.checkpoint,
                                                          self.resume, self.PHASES, self.MAIN)))
        self._t0 = time.perf_counter()
        self.build()
        stopped = None
        for name in self.PHASES:
            t = time.perf_counter()
            self.outcomes[name] = outcome = self.phase(name, *self.paths[name])
            self._wall[name] = time.perf_counter() - t
            if outcome.status == "interrupted" and (self.STOP_LAST or name != self.PHASES[-1]):
                stopped = name
                break
        result = self.result() if stopped is None else self.stopped(stopped)
        if self.out is not None:
            with signals_held():                 # a signal waits for complete files
                (self.write if stopped is None else self.write_stopped)(result)
        return result
