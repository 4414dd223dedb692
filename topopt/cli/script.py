"""The command line of every problem script: one set of options, one way to end.

A problem script declares its own parameters as `Option` rows and calls
`main`::

    OPTIONS = (Option("nelx", positive_int, 60, "elements along x"), ...)

    def main(argv=None):
        return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=300,
                        summary=summary)

Every script then takes the shared options (`topopt.cli.options.add_run_arguments`): ``--out``,
``--maxeval``, ``--solver``, ``--checkpoint``, ``--resume``, ``--quiet``,
and ``--seed`` where the problem draws random numbers. ``--help`` shows each
default and the range each option accepts (`topopt.cli.options`: the
converter states it, so the help cannot disagree with the parser). A bad
value ends the script with argparse's one-line ``error:`` message and exit
status 2 before any work: the converters check the range; `run_options`
writes to ``--out`` and the checkpoint's folder and reads the ``--resume``
file; a script's ``check`` sees combinations; the size is checked against
the machine's memory (`topopt.fem.budget`); and a ValueError the run raises
before its first evaluation (a checkpoint of another size, a model's
refusal) is a usage error too. `main` tunes the allocator (`topopt.tune_malloc`),
runs ``run(**options, out=..., verbose=..., checkpoint=..., resume=...)``
under `script_errors` and ends as the run ended (`finish`: an interrupted
run exits with 130 or 143). A run whose final design is infeasible, grey or
worse than its start (``result.json``'s ``verdict``, `topopt.optimize.ending`)
ends with a line saying so and exits with 0: the exit status says whether
the run worked, the verdict what it found (``docs/notes/runs.md``).
``TOPOPT_PERTURB=AMPLITUDE[:SEED]`` in the environment moves the start by a
seeded ``AMPLITUDE * U(-1, 1)`` (`topopt.optimize.perturb`;
``scripts/site/reproduce_gallery.py`` measures the spread of the results with it);
a malformed value is a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from typing import Any, Callable, Mapping, Sequence

from .._memory import tune_malloc
from .size import grid_dofs, size_line
from .options import SOLVERS, Option, build_parser
from .._files import atomic_write_text, check_writable_file, check_writable_folder
from ..io.folder import check_run_label, run_label, write_run_label
from ..optimize.checkpoint import load_checkpoint
from ..optimize.perturb import start_perturbation

__all__ = ["main", "run_options", "exit_status", "finish", "script_errors",
           "compliance_summary"]


def main(argv, doc: str, run: Callable, options: Sequence[Option], *, out: str,
         summary: Callable[[Any], str], maxeval: int | None = None,
         solvers: Sequence[str] | None = SOLVERS, seed: int | None = None,
         maxeval_help: str = "MMA evaluations in all", maxeval_min: int = 1,
         check: Callable | None = None, size: Callable | None = None):
    """Parse `argv`, run the problem, write its results, end as the run ended.

    Parameters
    ----------
    argv : list of str or None
        The arguments (None: ``sys.argv[1:]``).
    doc : str
        The script's docstring; its first paragraph is the description.
    run : callable
        ``run(**problem_options, [maxeval=, solver=, seed=,] out=, verbose=,
        checkpoint=, resume=)`` returning a `topopt.io.RunResult`.
    options : sequence of Option
        The problem's own parameters.
    out : str
        The default results folder.
    summary : callable
        ``summary(result) -> str``: the line printed after a run.
    maxeval, solvers, seed
        Defaults of the shared ``--maxeval``, ``--solver`` choices, ``--seed``
        (None: the script has no such option).
    maxeval_help, maxeval_min
        How the script counts ``--maxeval`` (in all, per stage, ...) and its
        least value.
    check : callable, optional
        ``check(kwargs)`` raising ValueError/OSError for a combination of
        values that the converters cannot see; a usage error like theirs.
    size : callable, optional
        ``size(kwargs) -> (n_dofs, dim)``: the problem's unknowns, for the
        memory check (`topopt.fem.budget`: a size whose estimate exceeds the
        physical memory is a usage error). Default: from ``nelx``, ``nely``
        (, ``nelz``) when the script has them (`grid_dofs`).

    A ValueError that the run raises before its first evaluation
    (`CheckpointError` for a ``--resume`` of another problem size,
    `MeshTooLargeError`, a model's refusal of its options) is a usage error
    too (`_usage_errors`). ``--dry-run`` stops after these checks and prints
    the size, the solver path and its memory estimate (`size_line`).

    Returns
    -------
    RunResult
        (None on the ranks > 0 of ``--solver petsc`` under ``mpirun``: they serve
        rank 0's solves, `topopt.fem.petsc.serve`, and print and write nothing;
        None after ``--dry-run``.)
    """
    parser = build_parser(doc, options, out, maxeval, solvers, seed, maxeval_help, maxeval_min)
    args = parser.parse_args(argv)
    if solvers is not None and args.solver not in ("auto", "voxel"):
        from ..fem import available_solvers
        if args.solver not in available_solvers(iterative=True):
            parser.error(f"argument --solver: {args.solver!r} is not installed here; "
                         f"installed: {', '.join(available_solvers(iterative=True))}")
    if solvers is not None and args.solver == "petsc":
        from ..fem.petsc import backend as petsc
        if not petsc.is_root():      # under mpirun: only rank 0 runs, prints and writes
            petsc.serve()
            return None
    paths = run_options(args, parser)          # --out, --checkpoint, --resume checked
    kwargs = {o.name: getattr(args, o.name) for o in options}
    for shared, present in (("maxeval", maxeval), ("solver", solvers), ("seed", seed)):
        if present is not None:
            kwargs[shared] = getattr(args, shared)
    label = run_label(_problem_name(run), kwargs)
    fits = _before_the_run(parser, args.resume, label, kwargs, paths, check, size or grid_dofs,
                           solvers)
    if args.dry_run:
        print(f"{fits}; --dry-run: not run")
        return None
    tune_malloc()
    write_run_label(paths["checkpoint"], label)
    with _usage_errors(parser, paths["checkpoint"]), script_errors(args.out):
        result = run(**kwargs, out=args.out, **paths)
    finish(result)                             # interrupted: message, exit 130 / 143
    _report(result, summary, args.out)
    return result


def _report(result, summary: Callable, out: str) -> None:
    """The run's summary line, then its verdict's line when it ended infeasible, grey or
    worse than its start (the exit status stays 0: `topopt.optimize.ending`)."""
    print(f"{summary(result)} -> {out}")
    line = result.ending_line() if hasattr(result, "ending_line") else ""
    if line:
        print(f"{line} (verdict in {os.path.join(out, 'result.json')})")


def _before_the_run(parser, resume, label: dict, kwargs: dict, paths: dict,
                    check: Callable | None, size: Callable, solvers=None) -> str:
    """The checks `main` makes once the options are parsed; a usage error for each.

    Returns the `size_line` of the run."""
    try:
        if resume is not None:                     # a checkpoint of another problem / mesh
            _prefixed(check_run_label, "argument --resume: ", resume, label)
        if check is not None:
            check(dict(kwargs, **paths))
        fits = size_line(size, kwargs, solvers)
        found = start_perturbation()           # TOPOPT_PERTURB, if set, is well formed
        if found is not None:
            print(f"the start is perturbed by {found[0]:g} U(-1, 1), seed {found[1]} "
                  "(TOPOPT_PERTURB)", file=sys.stderr, flush=True)
        return fits
    except (OSError, ValueError) as e:
        parser.error(str(e))


def _prefixed(fun: Callable, prefix: str, *args) -> None:
    """``fun(*args)``; a ValueError it raises gets `prefix` in front of its message."""
    try:
        fun(*args)
    except ValueError as e:
        raise ValueError(f"{prefix}{e}") from None


def _problem_name(run: Callable) -> str:
    """The problem script's name (``mbb_beam``), also when it runs as ``__main__``."""
    module = sys.modules.get(getattr(run, "__module__", ""), None)
    path = getattr(module, "__file__", None)
    return os.path.splitext(os.path.basename(path))[0] if path else str(run.__module__)


@contextlib.contextmanager
def _usage_errors(parser: argparse.ArgumentParser, checkpoint: str):
    """The run's refusals of the user's input before its first evaluation: usage errors.

    A ValueError (`CheckpointError`, `OutputPathError`, `MeshTooLargeError`, a
    model's check of its options) that the run raises before `minimize` has
    evaluated anything: not during the optimization (`minimize` marks those
    with ``topopt_checkpoint``) nor after it (the run's `checkpoint` is then
    newer than the start). Anything else keeps its traceback.
    """
    from ..optimize.checkpoint import CheckpointError
    start = time.time()
    try:
        yield
    except ValueError as e:
        if getattr(e, "topopt_checkpoint", None) is not None or _written_since(checkpoint,
                                                                               start):
            raise
        prefix = "argument --resume: " if isinstance(e, CheckpointError) else ""
        parser.error(f"{prefix}{e}")


def _written_since(path: str, start: float) -> bool:
    try:
        return os.stat(path).st_mtime >= start - 0.05     # the kernel clock is coarse
    except OSError:
        return False


# --------------------------------------------------------------------------
# checking the paths, ending the script


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
    >>> from topopt.cli import add_run_arguments
    >>> parser = argparse.ArgumentParser()
    >>> add_run_arguments(parser, os.path.join(tempfile.mkdtemp(), "out"))
    >>> opts = run_options(parser.parse_args([]))
    >>> opts["verbose"], os.path.basename(opts["checkpoint"]), opts["resume"]
    (True, 'checkpoint.npz', None)
    """
    checkpoint = os.path.join(args.out, "checkpoint.npz") if args.checkpoint is None \
        else args.checkpoint
    try:
        for flag, value in (("--checkpoint", args.checkpoint), ("--resume", args.resume)):
            if value is not None and not value.strip():
                raise ValueError(f"{flag} must be a file path, got {value!r}")
        check_writable_folder(args.out, "--out")
        check_writable_file(checkpoint, "--checkpoint")
        if args.resume is not None:
            load_checkpoint(args.resume)
    except (OSError, ValueError) as e:
        if parser is None:
            raise
        parser.error(str(e))
    return {"verbose": not args.quiet, "checkpoint": checkpoint, "resume": args.resume}


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


def compliance_summary(result) -> str:
    """The line a compliance problem script prints after its run."""
    return (f"compliance {result['compliance']:.4f}  volume {result['volume']:.4f}  "
            f"evaluations {result.evaluations}  FE solves/iteration "
            f"{result['fe_solves_per_iteration']:.3f}  {result['seconds']:.1f} s")
