"""The ``topopt`` command: list, run, show and export the problems' results.

::

    topopt list                              # the problems, one line each
    topopt run mbb_beam --maxeval 20 --out DIR   # = python problems/mbb_beam.py ...
    topopt show DIR [--png F]                # the saved design and its history
    topopt export DIR --vtu [PATH] --stl [PATH]

``run`` hands its options to the problem module's ``main(argv)`` (the
options of `topopt.cli.script`; ``topopt run NAME --help`` lists them) and
ends as the script ends: 0, 2 for bad options, 130/143 after SIGINT/SIGTERM. A bad
subcommand, an unknown problem or a folder without a result is a one-line
argparse error with exit status 2. ``show`` and ``export`` read the folder's
``design.npz`` with `topopt.io.load_design` and its ``result.json``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import os
import sys
import tempfile
from typing import Sequence

__all__ = ["main", "problem_names", "problem_line", "build_parser"]

PROG = "topopt"


# --------------------------------------------------------------------------
# the problems


def problem_names() -> list[str]:
    """The problem modules: the ``__all__`` of ``topopt_problems`` (the folder ``problems/``).

    Examples
    --------
    >>> "mbb_beam" in problem_names()
    True
    """
    import topopt_problems
    return list(topopt_problems.__all__)


def problem_line(name: str) -> str:
    """The first line of problem `name`'s module docstring, read without importing it.

    Examples
    --------
    >>> problem_line("mbb_beam").split(",")[0]
    'Half MBB beam'
    """
    spec = importlib.util.find_spec(f"topopt_problems.{name}")
    if spec is None or spec.origin is None:
        raise ValueError(f"problem must be one of {', '.join(problem_names())}, got {name!r}")
    with open(spec.origin, encoding="utf-8") as fh:
        doc = ast.get_docstring(ast.parse(fh.read())) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


# --------------------------------------------------------------------------
# the parser


def build_parser() -> argparse.ArgumentParser:
    """The ``topopt`` parser: subcommands ``list``, ``run``, ``show``, ``export``."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Topology optimization problems: list, run, show, export.")
    sub = parser.add_subparsers(dest="command", metavar="{list,run,show,export}")
    sub.required = True
    sub.add_parser("list", help="the problems, one line each")
    run = sub.add_parser("run", help="run a problem: topopt run NAME [its options]")
    run.add_argument("problem", help="a name from `topopt list`")
    run.add_argument("options", nargs=argparse.REMAINDER, default=[],
                     help="the problem's options (topopt run NAME --help)")
    show = sub.add_parser("show", help="plot a result folder's design and history")
    show.add_argument("folder", help="a result folder (design.npz, result.json)")
    show.add_argument("--png", default=None,
                      help="write the picture to this PNG instead of a window "
                           "(default without a display: FOLDER/show.png)")
    export = sub.add_parser("export", help="write a result folder's design as VTU / STL")
    export.add_argument("folder", help="a result folder (design.npz)")
    export.add_argument("--vtu", nargs="?", const="", default=None, metavar="PATH",
                        help="write a VTU file (default PATH: FOLDER/design.vtu; a folder "
                             "PATH: PATH/design.vtu)")
    export.add_argument("--stl", nargs="?", const="", default=None, metavar="PATH",
                        help="write an STL iso-surface, 3-D designs only "
                             "(default PATH: FOLDER/design.stl; a folder PATH: PATH/design.stl)")
    return parser


# --------------------------------------------------------------------------
# the subcommands


def _list() -> int:
    names = problem_names()
    width = max(map(len, names))
    for name in names:
        print(f"{name:<{width}}  {problem_line(name)}")
    return 0


def _run(parser, problem: str, options: Sequence[str]) -> int:
    names = problem_names()
    if problem not in names:
        parser.error(f"argument problem: unknown problem {problem!r}; "
                     f"known: {', '.join(names)}")
    module = importlib.import_module(f"topopt_problems.{problem}")
    argv0 = sys.argv[0] if sys.argv else ""
    sys.argv[:1] = [f"{PROG} run {problem}"]     # argparse's prog in usage and errors
    try:
        module.main(list(options))               # SystemExit 2 / 130 / 143 passes through
    finally:
        sys.argv[:1] = [argv0]
    return 0


def _result_folder(parser, folder: str, need: Sequence[str]) -> str:
    if not os.path.isdir(folder):
        parser.error(f"argument folder: {folder!r} is not a folder")
    missing = [name for name in need if not os.path.isfile(os.path.join(folder, name))]
    if missing:
        parser.error(f"argument folder: {folder!r} holds no result ({' and '.join(missing)} "
                     f"missing; `topopt run` writes them)")
    return folder


def _io(parser):
    try:
        return importlib.import_module("topopt.io")
    except ImportError as e:
        parser.error(f"saved designs need topopt.io, which cannot be imported here ({e})")


def _load(parser, folder: str, record: dict | None = None):
    """The folder's design; of the problem that its ``result.json`` names, if it names one."""
    path = os.path.join(folder, "design.npz")
    setup = (record or {}).get("setup")
    problem = setup.get("problem") if isinstance(setup, dict) else None
    try:
        return _io(parser).load_design(path, problem=problem)
    except (OSError, ValueError) as e:            # "not a topopt design: PATH (why)"
        parser.error(f"argument folder: {e}")


def _read_result(parser, folder: str) -> dict:
    path = os.path.join(folder, "result.json")
    try:
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError) as e:
        parser.error(f"argument folder: cannot read {path}: {e}")
    if not isinstance(record, dict):
        parser.error(f"argument folder: {path} holds a JSON {type(record).__name__}, not the "
                     "record of a run (`topopt run` writes it)")
    return record


def _has_display() -> bool:
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _history(record: dict) -> list[dict]:
    """The history that ``result.json`` keeps (`topopt.formulations.plot_record`)."""
    values = record.get("objective_history") or []
    cons = record.get("constraint_history") or []
    stages = record.get("stage_history") or []
    out = []
    for k, v in enumerate(values):
        if v is None:
            continue
        h = {"objective": v}
        if k < len(cons) and cons[k]:
            h["constraints"] = cons[k]
        if k < len(stages):
            h["stage"] = stages[k]
        out.append(h)
    return out


def show_image(design: dict, record: dict):
    """The design's picture above its history's, as one RGBA array (`topopt.plot`).

    `design` is `topopt.io.load_design`'s record, `record` the folder's
    ``result.json``: its ``plot`` settings (`topopt.formulations.plot_record`:
    supports, loads or the whole setup's markers (`topopt.io.write_results`),
    the mirrored half model, a window, the objective's
    unit, the constraints' names) make the pictures of the run itself. A
    ``result.json`` without them gives the design alone and the objective
    as minimized (the MBB half model drawn whole).
    """
    import numpy as np
    from matplotlib.image import imread

    from ..plot import design3d, figures
    from ..plot.history import save_history
    mesh, x_phys = design["mesh"], np.asarray(design["x_phys"], dtype=float)
    setup = dict(record.get("setup") or {}, **(design.get("setup") or {}))
    result = record.get("result") or {}
    settings = record.get("plot") or {}
    title = (f"{setup.get('problem', os.path.basename(record.get('folder', '')))}: "
             f"{result.get('status', record.get('status', ''))}, "
             f"{result.get('evaluations', record.get('evaluations', '?'))} evaluations")
    markers = {k: settings[k] for k in ("supports", "loads") if settings.get(k)}
    if settings.get("markers"):           # the whole setup (write_results' markers=)
        markers = {"markers": settings["markers"], "units": settings.get("units", "")}
    window = {k: settings[k] for k in ("xlim", "ylim") if settings.get(k)}
    images = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "design.png")
        if mesh.p.shape[0] == 3:
            design3d.save_design_3d(mesh, x_phys, path, title=title, **markers)
        else:
            mirror = settings.get("mirror", setup.get("problem") == "mbb_beam")
            figures.save_design(mesh, x_phys, path, title=title, mirror=bool(mirror), **markers,
                                **window)
        images.append(imread(path))
        history = _history(record)
        if history:
            path = os.path.join(tmp, "history.png")
            save_history(history, path, title="history (result.json)",
                         objective_label=settings.get("objective_label",
                                                      "objective as minimized"),
                         constraint_names=settings.get("constraint_names"),
                         objective_scale=settings.get("objective_scale", 1.0))
            images.append(imread(path))
    width = max(im.shape[1] for im in images)
    padded = [np.pad(im, ((0, 0), (0, width - im.shape[1]), (0, 0)), constant_values=1.0)
              for im in images]
    return np.concatenate(padded, axis=0)


def _writable(parser, flag: str, path: str, name: str) -> str:
    """The file to write for `flag`: `path`, or ``path/name`` when `path` is a folder;
    its folder created and write-tested (`topopt.io.check_writable_file`)."""
    from .._files import check_writable_file
    if os.path.isdir(path) or path.endswith(os.sep):
        path = os.path.join(path, name)
    try:
        return check_writable_file(path, f"argument {flag}")
    except (OSError, ValueError) as e:
        parser.error(str(e))


def _show(parser, folder: str, png: str | None) -> int:
    _result_folder(parser, folder, ("design.npz", "result.json"))
    record = _read_result(parser, folder)
    if png is None and not _has_display():
        png = os.path.join(folder, "show.png")
        print("no display: writing a PNG", file=sys.stderr)
    if png is not None:
        png = _writable(parser, "--png", png, "show.png")     # before the picture is made
    design = _load(parser, folder, record)
    try:
        image = show_image(design, record)
    except (AttributeError, TypeError, KeyError) as e:       # a hand-edited result.json
        parser.error(f"argument folder: {os.path.join(folder, 'result.json')} is not the "
                     f"record of a run ({type(e).__name__}: {e})")
    if png is not None:
        from matplotlib.image import imsave

        from .._files import atomic_write_bytes
        try:
            atomic_write_bytes(png, lambda fh: imsave(fh, image, format="png"))
        except OSError as e:
            parser.error(f"argument --png: cannot write {png!r} ({e})")
        print(png)
        return 0
    import matplotlib.pyplot as plt
    h, w = image.shape[:2]
    fig = plt.figure(figsize=(w / 100, h / 100))
    fig.add_axes((0, 0, 1, 1)).imshow(image)
    fig.axes[0].set_axis_off()
    plt.show()
    return 0


def _export(parser, folder: str, vtu: str | None, stl: str | None) -> int:
    if vtu is None and stl is None:
        parser.error("give --vtu and/or --stl")
    _result_folder(parser, folder, ("design.npz",))
    import numpy as np
    io = _io(parser)
    design = _load(parser, folder)
    mesh, x_phys = design["mesh"], np.asarray(design["x_phys"], dtype=float)
    jobs = (("--vtu", vtu, "design.vtu",
             lambda path: io.write_vtu(path, mesh, {"x": design["x"], "x_phys": x_phys},
                                       design.get("point_data"))),
            ("--stl", stl, "design.stl", lambda path: io.write_stl(path, mesh, x_phys)))
    paths = {flag: _writable(parser, flag, value or folder, name)     # all, before writing
             for flag, value, name, _ in jobs if value is not None}
    for flag, _, _, write in jobs:
        if flag not in paths:
            continue
        try:
            print(write(paths[flag]))
        except (ImportError, OSError, TypeError, ValueError) as e:
            parser.error(f"argument {flag}: {e}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``topopt`` command line; returns the exit status (0).

    Errors end through ``parser.error`` (exit status 2); ``run`` passes a
    problem script's own ``SystemExit`` through.
    """
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    if args.command == "list":
        try:
            return _list()
        except BrokenPipeError:                  # `topopt list | head`: the reader left
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
    if args.command == "run":
        return _run(parser, args.problem, args.options)
    if args.command == "show":
        return _show(parser, args.folder, args.png)
    return _export(parser, args.folder, args.vtu, args.stl)


if __name__ == "__main__":
    sys.exit(main())
