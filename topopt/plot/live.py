"""Watch a run: its design and history redrawn in place while MMA iterates.

`live` returns a `Live` callback for a problem's ``run`` or for `minimize`
(``callback=topopt.plot.live()``). Each redraw is one picture: the physical
design (`design_figure`, or `design_figure_3d` in 3-D, with the supports
and loads) above the history (`history_figure`: the objective in the
problem's unit and the constraints per evaluation), as ``topopt show`` draws
a finished run. Where it goes is decided at the first redraw
(``show="auto"``):

* in a Jupyter kernel (a notebook, nbclient, a documentation build): one
  `IPython.display` display handle, updated in place, so that the cell
  keeps one picture, the last one, however many redraws there were;
* in a script or a terminal IPython under an interactive matplotlib
  backend (TkAgg, QtAgg, macOS, ...): one window, redrawn
  (``canvas.draw_idle()`` and a millisecond of the GUI event loop); closing
  it stops the redraws, not the run;
* headless (a non-interactive backend such as Agg, or no display): nothing
  on screen and no error.

The library never selects or switches matplotlib's backend: the window is
the user's backend (``MPLBACKEND``, a matplotlibrc, `matplotlib.use` before
the run); the notebook and the file pictures are drawn with Agg figures
that no backend manages. With ``path=`` each redraw is also written there as
a PNG (atomically): when the run ends it holds the last frame. The last
evaluation is always drawn when the run ends (`Live.finish`, which the
problems' ``run`` calls), and the window is closed then unless
``keep_open=True``.
"""

from __future__ import annotations

import io
import os
import sys
from types import SimpleNamespace
from typing import Mapping

import numpy as np

from .._files import atomic_write_bytes, check_writable_file
from .._validate import check_bool, check_choice, check_int, check_range, check_real_array
from .canvas import _as_drawn, _dim
from .design3d import design_figure_3d
from .figures import design_figure
from .history import history_figure
from .markers import boundary_markers

__all__ = ["live", "Live", "SHOW"]

#: Where a `Live` draws: decided at its first redraw, a Jupyter kernel, a window, nothing.
SHOW = ("auto", "notebook", "window", "none")
#: Seconds of the GUI event loop after each redraw of a window.
PAUSE = 1e-3


def live(*, every: int = 1, path: str | os.PathLike | None = None, show: str = "auto",
         mirror: bool = False, title: str = "", mesh=None, dpi: float = 72.0,
         keep_open: bool = False) -> Live:
    """A callback that redraws the design and the history of a run in place.

    Pass it as ``callback=`` to a problem's ``run``
    (`topopt.formulations.DensityProblem.run`, a problem script's
    ``run(...)``), which hands it the problem (mesh, supports, loads, the
    objective's unit, the constraints' names) before the first evaluation
    and finishes it after the last; or to `topopt.optimize.minimize`, with
    `mesh` for the design and `Live.finish` called by the caller (or a
    ``with`` block).

    Parameters
    ----------
    every : int >= 1
        Redraw the first evaluation and then every `every`-th after it
        (1, 1 + every, 1 + 2 every, ...); the last is drawn at the end. A
        redraw of a 60 x 20 beam takes about 0.3 s: on larger runs a larger
        `every` keeps the drawing a small part of the run.
    path : path, optional
        PNG file rewritten at each redraw (the last frame when the run
        ends), in every environment, headless included; its folder is
        created and write-tested here.
    show : {"auto", "notebook", "window", "none"}
        Where to draw (the module notes); ``"auto"`` finds out at the first
        redraw. ``"notebook"`` needs a Jupyter kernel and ``"window"`` an
        interactive matplotlib backend (checked here); ``"none"`` draws
        nothing but the file `path`.
    mirror : bool
        Draw a half-symmetric 2-D model whole (the MBB beam), as
        `design_figure` does.
    title : str
        Prefix of the design's title (the evaluation and the objective follow).
    mesh : skfem.Mesh or topopt.grid.Grid, optional
        The mesh of the design: needed with `minimize` (which passes the
        design variables, one per element); a problem's ``run`` gives its
        own. Without a mesh only the history is drawn.
    dpi : float in [10, 600]
        Resolution of the picture.
    keep_open : bool
        Leave the script's window open at the end (``plt.show()`` then waits
        on it); by default it is closed.

    Returns
    -------
    Live

    Raises
    ------
    TypeError, ValueError
        An argument of the wrong kind or out of its range, naming it;
        ``show="notebook"`` outside a Jupyter kernel, ``show="window"``
        without an interactive backend, `mirror` with a 3-D `mesh`.

    Examples
    --------
    Headless (Agg, as under pytest and in CI) nothing is shown; ``path=``
    keeps the last frame:

    >>> import os, tempfile
    >>> import topopt
    >>> from topopt_problems import cantilever
    >>> png = os.path.join(tempfile.mkdtemp(), "live.png")
    >>> watch = topopt.plot.live(every=5, path=png, show="none")
    >>> result = cantilever.run(nelx=12, nely=6, maxeval=12, callback=watch)
    >>> len(watch.history), watch.redraws, os.path.getsize(png) > 0  # 1, 6, 11, 12
    (12, 4, True)
    """
    return Live(every=every, path=path, show=show, mirror=mirror, title=title, mesh=mesh,
                dpi=dpi, keep_open=keep_open)


class Live:
    """The redrawing callback of `live` (its parameters, keyword-only).

    ``live(record, x)`` after each evaluation (`minimize`'s callback: the
    evaluation's record and the design variables) keeps the record in
    `history` and redraws at the first evaluation and every `every`-th
    after it; it never stops the run. `start` binds it to a problem and
    resets it, `finish` draws the last evaluation and closes the window.

    Attributes
    ----------
    history : list of dict
        The records seen since `start` (after a resume, those of the
        evaluations run since: the history plot numbers them from 1, the
        design's title gives each record's own ``evaluation``).
    redraws : int
        The pictures made since `start` (none headless without `path`).
    where : str or None
        ``"notebook"``, ``"window"`` or ``"none"`` once the first redraw
        has decided it, else None.
    """

    def __init__(self, *, every: int = 1, path=None, show: str = "auto", mirror: bool = False,
                 title: str = "", mesh=None, dpi: float = 72.0, keep_open: bool = False):
        self.every = check_int("every", every, 1)
        self.show = check_choice("show", show, SHOW)
        self.mirror = check_bool("mirror", mirror)
        if not isinstance(title, str):
            raise TypeError(f"title must be a str, got {title!r}")
        self.title = title
        self.dpi = check_range("dpi", dpi, 10.0, 600.0)
        self.keep_open = check_bool("keep_open", keep_open)
        self._mesh_given = None if mesh is None else _check_mesh(mesh, self.mirror)
        if self.show == "notebook" and not _in_notebook():
            raise ValueError("show='notebook' needs a Jupyter kernel (IPython's); use "
                             "show='auto' or 'none' outside a notebook")
        if self.show == "window" and not _interactive_backend():
            raise ValueError("show='window' needs an interactive matplotlib backend "
                             f"(TkAgg, QtAgg, ...; this one is {_backend_name()!r}): set "
                             "MPLBACKEND or call matplotlib.use before the run")
        self.path = None if path is None else check_writable_file(path, "path")
        self._screen = None
        self.start()

    # ----------------------------------------------------------- the run's hooks
    def start(self, problem=None, stages=None) -> None:
        """Forget the previous run; with a `problem`, draw its designs.

        `DensityProblem.run` calls it before the first evaluation: the
        problem's mesh (unless `mesh` was given), supports and loads, its
        objective's name and unit (``objective_scale``), the constraints'
        names, and its physical design of MMA's variables in the stage of
        each record (`final_design`: filter, projection, passive elements).
        """
        self.history, self.redraws, self._x, self._stage, self._drawn = [], 0, None, 0, True
        self._mesh, self._markers, self._physical = self._mesh_given, {}, None
        self._labels = {"objective_label": "objective", "objective_scale": 1.0,
                        "constraint_names": None}
        if problem is None:
            return
        from ..grid import Grid
        model = problem.model
        grid = getattr(model, "grid", None)
        if self._mesh is None:
            self._mesh = _check_mesh(grid if isinstance(grid, Grid) else model.mesh,
                                     self.mirror)
        supports, loads = boundary_markers(model, getattr(problem, "f", None))
        self._markers = {"supports": supports, "loads": loads}
        self._labels = {"objective_label": problem.objective_name,
                        "objective_scale": float(problem.objective_scale),
                        "constraint_names": list(problem.constraint_names)}
        stages = list(stages or [])
        self._physical = lambda x, stage: problem.final_design(
            SimpleNamespace(x=x), stages[:stage + 1])[1]

    def __call__(self, record: Mapping, x) -> None:
        if not isinstance(record, Mapping) or "objective" not in record:
            raise TypeError("record must be an evaluation record of minimize (a dict with "
                            f"'objective'), got {type(record).__name__}")
        self.history.append(dict(record))
        self._x = np.array(x, dtype=float, copy=True)
        self._stage = int(record.get("stage", 0))
        self._drawn = False
        if (len(self.history) - 1) % self.every == 0:
            self.redraw()
        return None

    def finish(self) -> None:
        """Draw the last evaluation unless drawn, close the window (unless `keep_open`)."""
        if not self._drawn:
            self.redraw()
        if self._screen is not None:
            self._screen.close(self.keep_open)
        self._screen = None

    def __enter__(self) -> Live:
        return self

    def __exit__(self, *exc) -> None:
        self.finish()

    @property
    def where(self) -> str | None:
        return None if self._screen is None else self._screen.name

    # ----------------------------------------------------------- drawing
    def redraw(self) -> None:
        """Draw the last evaluation now, where `show` says (nothing before the first)."""
        if not self.history:
            return
        self._drawn = True
        if self._screen is None:
            self._screen = _screen(self.show)
        if not self._screen.active() and self.path is None:
            return                    # headless, or the window closed: nothing to draw
        image = self.image()
        png = _png(image) if self.path is not None or self._screen.name == "notebook" else None
        if self.path is not None:
            atomic_write_bytes(self.path, lambda fh: fh.write(png))
        self._screen.show(image, png, self.dpi)
        self.redraws += 1

    def image(self) -> np.ndarray:
        """The picture of the last evaluation: design above history, an RGBA uint8 array."""
        if not self.history:
            raise ValueError("no evaluation to draw yet")
        rec, labels = self.history[-1], self._labels
        figures = [history_figure(self.history, title=self.title, **labels)]
        if self._mesh is not None:
            value = labels["objective_scale"] * float(rec["objective"])
            title = (f"{self.title + ': ' if self.title else ''}evaluation "
                     f"{rec.get('evaluation', len(self.history))}, "
                     f"{labels['objective_label']} = {value:.4g}")
            x = self._x if self._physical is None else self._physical(self._x, self._stage)
            x = check_real_array("x", x, allow_bool=True)
            if _dim(self._mesh) == 2:
                fig = design_figure(_as_drawn(self._mesh), x, title, mirror=self.mirror,
                                    **self._markers)
            else:
                fig = design_figure_3d(self._mesh, x, title, **self._markers)
            figures.insert(0, fig)
        return _stack([_rgba(fig, self.dpi) for fig in figures])


# --------------------------------------------------------------------------
# where the picture goes

class _Headless:
    name = "none"

    def active(self) -> bool:
        return False

    def show(self, image, png, dpi) -> None:
        pass

    def close(self, keep_open: bool) -> None:
        pass


class _Notebook:
    """One display handle, created at the first picture and updated in place."""

    name = "notebook"

    def __init__(self):
        self.handle = None

    def active(self) -> bool:
        return True

    def show(self, image, png, dpi) -> None:
        display, Image = _ipython_display()
        picture = Image(data=png, format="png")
        if self.handle is None:
            self.handle = display(picture, display_id=True)
        else:
            self.handle.update(picture)

    def close(self, keep_open: bool) -> None:
        self.handle = None                           # the cell keeps the last picture


class _Window:
    """One pyplot window showing the picture; gone when the user closes it."""

    name = "window"

    def __init__(self):
        self.fig = None

    def active(self) -> bool:
        """False once the user has closed the window: no more redraws."""
        if self.fig is None:
            return True
        import matplotlib.pyplot as plt
        return plt.fignum_exists(self.fig.number)

    def show(self, image, png, dpi) -> None:
        import matplotlib.pyplot as plt
        if not self.active():
            return
        h, w = image.shape[:2]
        if self.fig is None:
            self.fig = plt.figure(figsize=(w / dpi, h / dpi), dpi=dpi)
            ax = self.fig.add_axes((0, 0, 1, 1))
            ax.set_axis_off()
            ax.imshow(image, interpolation="none")
            if getattr(self.fig.canvas, "manager", None) is not None:
                self.fig.canvas.manager.set_window_title("topopt live")
            plt.show(block=False)
        else:
            art = self.fig.axes[0].images[0]
            art.set_data(image)
            art.set_extent((-0.5, w - 0.5, h - 0.5, -0.5))
        self.fig.canvas.draw_idle()
        self.fig.canvas.start_event_loop(PAUSE)

    def close(self, keep_open: bool) -> None:
        if self.fig is not None and not keep_open:
            import matplotlib.pyplot as plt
            plt.close(self.fig)
        self.fig = None


def _screen(show: str):
    if show == "auto":
        show = ("notebook" if _in_notebook() else
                "window" if _interactive_backend() else "none")
    return {"notebook": _Notebook, "window": _Window, "none": _Headless}[show]()


def _in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython imported, its shell a kernel's)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def _ipython_display():
    from IPython.display import Image, display
    return display, Image


def _has_display() -> bool:
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _backend_name() -> str:
    """The backend pyplot uses (resolving its automatic choice as pyplot does)."""
    import matplotlib
    import matplotlib.pyplot  # noqa: F401  (pyplot's own resolution of "auto")
    return str(matplotlib.get_backend())


def _interactive_backend() -> bool:
    """Whether a pyplot window would show: a display and an interactive backend."""
    if not _has_display():
        return False
    try:
        from matplotlib.backends import BackendFilter, backend_registry
        interactive = backend_registry.list_builtin(BackendFilter.INTERACTIVE)
    except ImportError:                              # matplotlib < 3.9
        from matplotlib.rcsetup import interactive_bk as interactive
    return _backend_name().lower() in {b.lower() for b in interactive}


# --------------------------------------------------------------------------
# pictures

def _check_mesh(mesh, mirror: bool):
    from ..grid import Grid
    if not isinstance(mesh, Grid) and not (hasattr(mesh, "p") and hasattr(mesh, "t")):
        raise TypeError(f"mesh must be a skfem mesh or a topopt.grid.Grid, got "
                        f"{type(mesh).__name__}")
    if mirror and _dim(mesh) != 2:
        raise ValueError(f"mirror=True draws a 2-D half model whole; the mesh is "
                         f"{_dim(mesh)}-D")
    return mesh


def _rgba(fig, dpi: float) -> np.ndarray:
    fig.set_dpi(dpi)
    fig.canvas.draw()
    return np.array(fig.canvas.buffer_rgba())


def _stack(images: list) -> np.ndarray:
    """The images one above the other, left-aligned on white."""
    width = max(im.shape[1] for im in images)
    return np.concatenate([np.pad(im, ((0, 0), (0, width - im.shape[1]), (0, 0)),
                                  constant_values=255) for im in images], axis=0)


def _png(image: np.ndarray) -> bytes:
    from matplotlib.image import imsave
    buf = io.BytesIO()
    imsave(buf, image, format="png")
    return buf.getvalue()
