"""The run folder: its pictures, ``result.json`` and design files; the labels of checkpoints.

`write_results` writes a run's folder (``design.png``, ``history.png``,
``result.json``, the design files) and `run_compliance` runs a problem of a
script and writes it: the formulations (`topopt.formulations`) compute, the
scripts' side writes.

`minimize` (`topopt.optimize`) checks its output paths here and writes its
checkpoint (`topopt.optimize.checkpoint`) and history with the
atomic writes of `topopt._files`. The problem scripts' helpers (`add_run_arguments`,
`run_options`, `script_errors`, `finish`, `signals_held`,
`exit_status`) are in `topopt.cli`.

* Paths are checked before the first evaluation: the folder is created and a
  file is really written there and removed (`check_writable_file`,
  `check_writable_folder`), so an unwritable ``--out`` or checkpoint fails
  at once, not after 10 evaluations or after the whole run.
* Every file is written atomically (a temporary file in the same folder,
  then ``os.replace``): an interruption leaves the old file or the new one.
* `load_checkpoint` (`topopt.optimize.checkpoint`) reads only what
  `minimize` wrote; anything else raises `CheckpointError`, ``not a topopt
  checkpoint: PATH (why)``. Nothing is ever unpickled.
* A script whose run was interrupted by SIGINT/SIGTERM records
  ``"status": "interrupted"`` in ``result.json``, prints ``interrupted after N
  evaluations; resume with --resume PATH`` and exits with ``128 + signum``
  (130, 143), as a shell reports a process killed by the signal (`finish`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from typing import Sequence

import numpy as np

from .._files import atomic_write_text, check_writable_folder
from ..grid import Grid
from ..optimize.checkpoint import CheckpointError
from .result import RunResult

__all__ = ["run_label", "check_run_label", "write_run_label", "run_label_path", "SIZE_OPTIONS",
           "write_results", "plot_record", "write_json", "run_compliance", "signals_held"]


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


# --------------------------------------------------------------------------
# the run folder

def write_results(out: str, mesh, result: RunResult, setup: dict, title: str,
                  mirror: bool = False, point_data: dict | None = None,
                  objective: str = "compliance", symbol: str = "c",
                  constraint_names: Sequence[str] | None = None, *,
                  objective_scale: float | None = None, objective_label: str | None = None,
                  supports=None, loads=None, markers=None, units: str = "",
                  pictures: dict | None = None) -> dict:
    """Write ``design.png``, ``history.png``, ``result.json`` (no arrays) and the design to `out`.

    Parameters
    ----------
    out, mesh, result, setup, title
        The folder, the mesh (or `topopt.grid.Grid`: design.vti, a blocked
        STL, projections of a large 3-D design), the run, the problem's
        parameters and the pictures' title.
    mirror : bool
        Draw the whole structure of a half-symmetric model (`topopt.plot.design_figure`).
    point_data : dict, optional
        The state fields of ``design.vtu``.
    objective, symbol : str
        The metric of `result` quoted in the design's title as ``symbol = value``.
    constraint_names : list of str, optional
        The history's constraints (``g1``, ``g2``, ... by default).
    objective_scale : float, optional
        The history holds the minimized objective; times `objective_scale` it
        is the metric in the user's unit (a compliance problem minimizes ``c /
        c0``: ``objective_scale=c0``, as `minimize`'s). Without it the history
        plot says "objective as minimized".
    objective_label : str, optional
        The history's axis label; default ``"compliance c"`` from `objective`
        and `symbol` when `objective_scale` is given.
    supports, loads : arrays, optional
        `topopt.plot.boundary_markers` of the model: drawn on the design.
    markers : topopt.plot.Markers, optional
        The whole setup of a 2-D design, in place of `supports` and `loads`
        (`topopt.plot.Markers.of` holds them; give one or the other): its
        masses, heat sources, ports, springs, regions ... drawn on the design
        and kept in ``result.json`` for ``topopt show``; in the half model's
        coordinates for a mirrored design.
    units : str
        The lengths' unit on the axes of a 2-D design (``"m"``, ``"nm"``), kept
        in ``result.json`` too; none by default.
    pictures : dict, optional
        More designs drawn beside it: ``{"eroded": (x_phys, title)}`` writes
        ``eroded.png`` (2-D, mirrored as the design is).

    The design is kept by `topopt.io.save_design`: ``design.npz`` (``x``,
    ``x_phys``, the mesh, `setup`), ``design.vtu`` (with the state fields
    `point_data`) and, in 3-D, ``design.stl``. ``result.json`` holds the
    histories and these plot settings too (`plot_record`), so that ``topopt
    show`` draws the same pictures.

    ``result.json`` says how the run ended at its top level (`RUN_KEYS`:
    ``"status": "interrupted"``, the signal, the evaluations, the checkpoint
    and the option that resumes it); the pictures and metrics are those of
    the last good design. A SIGINT/SIGTERM while they are written takes
    effect once they are complete (`topopt.cli.signals_held`).
    """
    dim = mesh.dim if isinstance(mesh, Grid) else mesh.p.shape[0]
    if mirror and dim != 2:
        raise ValueError(f"mirror=True draws a 2-D half model whole; the mesh is "
                         f"{dim}-D")
    _check_markers(markers, units, dim, supports, loads)
    if objective_label is None:
        name = objective.replace("_", " ")
        objective_label = ("objective as minimized" if objective_scale is None else
                           symbol if name == symbol else f"{name} {symbol}")
    record = plot_record(result.history, objective_label,
                         1.0 if objective_scale is None else objective_scale,
                         constraint_names, mirror, supports, loads, markers=markers,
                         units=units)
    with signals_held():
        payload = _write_results(out, mesh, result, setup, title, point_data, objective,
                                 symbol, record)
        _write_pictures(out, mesh, pictures or {}, mirror)
        return payload


def plot_record(history: Sequence[dict], objective_label: str, objective_scale: float = 1.0,
                constraint_names: Sequence[str] | None = None, mirror: bool = False,
                supports=None, loads=None, xlim=None, ylim=None, markers=None,
                units: str = "") -> dict:
    """The histories and plot settings that ``result.json`` keeps (``topopt show``).

    ``objective_history`` (as minimized), ``constraint_history``,
    ``stage_history`` (continuation runs) and ``plot``: the keywords of
    `topopt.plot.history_figure` and `topopt.plot.design_figure` (``mirror``,
    ``supports``, ``loads``, the window ``xlim``, ``ylim``, the whole setup's
    ``markers``, a `topopt.plot.Markers` kept as its record, and ``units``).

    Examples
    --------
    >>> r = plot_record([{"objective": 0.5, "constraints": [0.0]}], "compliance c", 400.0,
    ...                 ["V / 0.5 - 1"])
    >>> r["objective_history"], r["plot"]["objective_scale"], r["plot"]["constraint_names"]
    ([0.5], 400.0, ['V / 0.5 - 1'])
    """
    _check_markers(markers, units)
    scale = float(objective_scale)
    if not np.isfinite(scale) or scale == 0:
        raise ValueError(f"objective_scale must be finite and non-zero, got {objective_scale!r}")
    record = {"objective_history": [h["objective"] for h in history],
              "constraint_history": [list(h.get("constraints") or []) for h in history]}
    stages = [h.get("stage", 0) for h in history]
    if any(stages):
        record["stage_history"] = stages
    arrays = {k: np.asarray(v, dtype=float).tolist() for k, v in
              (("supports", supports), ("loads", loads), ("xlim", xlim), ("ylim", ylim))
              if v is not None}
    record["plot"] = {"objective_label": objective_label, "objective_scale": scale,
                      "constraint_names": None if constraint_names is None else
                      list(constraint_names), "mirror": bool(mirror), **arrays}
    if markers is not None:
        record["plot"]["markers"] = markers.record()
    if units:
        record["plot"]["units"] = units
    return record


def _check_markers(markers, units: str = "", dim: int | None = None, supports=None,
                  loads=None) -> None:
    """Refuse `markers` that are not a `topopt.plot.Markers` of a `dim`-D design, or
    given with `supports` / `loads`, and `units` that are not a str (of a 2-D design).

    Examples
    --------
    >>> _check_markers([{"kind": "mass"}])
    Traceback (most recent call last):
    ...
    TypeError: markers must be a topopt.plot.Markers or None, got list
    """
    from ..plot.setup import Markers
    if markers is not None and not isinstance(markers, Markers):
        raise TypeError(f"markers must be a topopt.plot.Markers or None, got "
                        f"{type(markers).__name__}")
    if not isinstance(units, str):
        raise TypeError(f"units must be a str (\"m\", \"nm\"; \"\" for none), got "
                        f"{type(units).__name__}")
    if markers is not None and (supports is not None or loads is not None):
        raise ValueError("markers replace supports and loads (topopt.plot.Markers.of(model, "
                         "f) holds them): give markers alone")
    if dim is not None and dim != 2 and (markers is not None or units):
        raise ValueError(f"markers and units are drawn on a 2-D design; the mesh is {dim}-D: "
                         "give its supports and loads")
    if dim is not None and markers is not None and markers.dim != dim:
        raise ValueError(f"markers are {markers.dim}-D; the mesh is {dim}-D")


def _write_pictures(out: str, mesh, pictures: dict, mirror: bool) -> None:
    from ..plot.canvas import _as_drawn
    from ..plot.figures import save_design
    for name, (x_phys, title) in pictures.items():
        save_design(_as_drawn(mesh), x_phys, os.path.join(out, f"{name}.png"), title=title,
                    mirror=mirror)


def _write_results(out, mesh, result, setup, title, point_data, objective, symbol, record):
    from .designs import save_design as keep_design
    from ..plot.figures import save_design
    from ..plot.design3d import save_design_3d
    from ..plot.history import save_history
    from ..plot.canvas import _as_drawn, _dim

    os.makedirs(out, exist_ok=True)
    if result.status == "interrupted":
        title = f"{title} (interrupted after {result.evaluations} evaluations)"
    plot = record["plot"]
    half = " (half model, drawn whole)" if plot["mirror"] else ""
    label = f"{title}{half}: {symbol} = {result[objective]:.4g}"
    markers = {k: plot[k] for k in ("supports", "loads", "markers", "units") if k in plot}
    path = os.path.join(out, "design.png")
    if _dim(mesh) == 2:
        save_design(_as_drawn(mesh), result.x_phys, path, title=label, mirror=plot["mirror"],
                    **markers)
    else:
        save_design_3d(mesh, result.x_phys, path, title=label, **markers)
    save_history(result.history, os.path.join(out, "history.png"), title=title,
                 objective_label=plot["objective_label"],
                 constraint_names=plot["constraint_names"],
                 objective_scale=plot["objective_scale"])
    payload = {**result.record(), "setup": setup, "result": result.summary(), **record}
    write_json(os.path.join(out, "result.json"), payload)
    keep_design(out, mesh, result.x, result.x_phys, setup, point_data=point_data)
    return payload


def write_json(path: str, payload: dict) -> None:
    """Write `payload` as indented JSON, atomically (numpy scalars as floats).

    Examples
    --------
    >>> import json, os, tempfile, numpy as np
    >>> from topopt.io.folder import write_json
    >>> path = os.path.join(tempfile.mkdtemp(), "r.json")
    >>> write_json(path, {"c": np.float64(1.5)})
    >>> json.load(open(path))
    {'c': 1.5}
    """
    atomic_write_text(path, json.dumps(payload, indent=2, default=float))


def run_compliance(name: str, problem, *, title: str, sizes: dict,
                   out: str | None = None, maxeval: int = 300, verbose: bool = False,
                   mirror: bool = False, notes: dict | None = None, plot: dict | None = None,
                   markers=None, units: str = "", **options) -> RunResult:
    """Optimize a compliance problem of a problem script; write its results to `out`.

    Parameters
    ----------
    name : str
        The problem's name in ``result.json`` (``"mbb_beam"``).
    problem : topopt.formulations.ComplianceProblem
        Or any problem with its ``volfrac``, ``rmin``, ``penal``, ``filter_name``,
        ``model``, ``f``, ``c0``, ``nodal_state``.
    title : str
        Title of the pictures (the filter is appended).
    sizes : dict
        The mesh counts (``{"nelx": 60, "nely": 20}``), recorded in ``setup``.
    out : str, optional
        Results folder; created and write-tested before the first solve.
    maxeval, verbose, options
        Passed to the problem's ``run`` (``checkpoint``, ``resume``, ...).
    mirror : bool
        Draw the design mirrored about its left edge (a half-symmetric model).
    notes : dict, optional
        More ``setup`` entries (how the load is applied, ...).
    plot : dict, optional
        `write_results` keywords that replace the compliance's (``objective``,
        ``symbol``, ``constraint_names``, ``objective_scale``, ...): a subclass
        such as `topopt.formulations.MechanismProblem` reports its own response.
    markers, units
        The whole setup drawn on a 2-D design and its lengths' unit
        (`write_results`); checked before the first solve.

    The pictures show the supports and loads (`topopt.plot.boundary_markers`,
    or `markers`), the history the compliance ``c = c0 * (c / c0)`` and the
    volume constraint.
    """
    model = problem.model
    mesh = model.grid if isinstance(getattr(model, "grid", None), Grid) else model.mesh
    _check_markers(markers, units, mesh.dim if isinstance(mesh, Grid) else mesh.p.shape[0])
    if out is not None:
        check_writable_folder(out, "out")
    result = problem.run(maxeval=maxeval, verbose=verbose, **options)
    if out is not None:
        setup = dict(problem=name, **sizes, volfrac=problem.volfrac, rmin=problem.rmin,
                     penal=problem.penal, filter=problem.filter_name, maxeval=maxeval,
                     **(notes or {}))
        from ..plot.markers import boundary_markers
        setting = (dict(markers=markers, units=units) if markers is not None else
                   dict(zip(("supports", "loads"), boundary_markers(problem.model, problem.f)),
                        units=units))
        labels = dict(constraint_names=[f"volume V / {problem.volfrac:g} - 1"],
                      objective_scale=problem.objective_scale, objective_label=None
                      if problem.model.components > 1 else "thermal compliance c")
        write_results(out, mesh, result, setup=setup, mirror=mirror,
                      title=f"{title}, {problem.filter_name} filter",
                      point_data=problem.nodal_state(result["u"]), **setting,
                      **(labels | (plot or {})))
    return result


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
