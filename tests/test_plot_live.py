"""`topopt.plot.live`: a run watched in a notebook, in a window, or headless.

Each environment is tested by what it does: headless draws nothing (and no
figure is even made) unless ``path=`` keeps the last frame; a notebook gets
one display handle, created at the first redraw and updated at each later
one; a window is one pyplot figure, redrawn in place (``draw_idle`` and the
event loop) and closed at the end. The redraws fall on evaluations 1, 1 +
every, ... and the last; the arguments are checked by name; a problem's
``run`` binds the callback to its mesh and physical design.
"""

import importlib
import sys

import numpy as np
import pytest
from matplotlib.image import imread

from topopt import fem, plot
from topopt.formulations.compliance import ComplianceProblem
from topopt.optimize import minimize

LIVE = importlib.import_module("topopt.plot.live")   # the module (topopt.plot.live is the function)


def records(n, n_constraints=1):
    return [{"evaluation": k, "stage": 0, "objective": 1.0 / k,
             "constraints": [0.1 / k] * n_constraints} for k in range(1, n + 1)]


def cantilever(nelx=8, nely=4):
    model = fem.elasticity(fem.rectangle(nelx, nely)).fix(nodes=lambda p: np.isclose(p[0], 0))
    return ComplianceProblem(model, model.point_load((nelx, 0), (0, -1)), volfrac=0.5,
                             rmin=1.5)


@pytest.fixture
def headless(monkeypatch):
    """No display: ``show="auto"`` finds no window (and no kernel) to draw in."""
    monkeypatch.setattr(LIVE, "_has_display", lambda: False)
    monkeypatch.setattr(LIVE, "_in_notebook", lambda: False)


class FakeHandle:
    def __init__(self, log, picture):
        self.log, self.first = log, picture
        self.updates = []

    def update(self, picture):
        self.updates.append(picture)


class FakeImage:
    def __init__(self, data, format):
        self.data, self.format = data, format


@pytest.fixture
def notebook(monkeypatch):
    """A Jupyter kernel as `Live` sees it: its display function records the handles."""
    log = {"display": [], "handles": []}

    def display(picture, display_id=False):
        assert display_id is True                # a handle, to update in place
        handle = FakeHandle(log, picture)
        log["display"].append(picture)
        log["handles"].append(handle)
        return handle

    monkeypatch.setattr(LIVE, "_in_notebook", lambda: True)
    monkeypatch.setattr(LIVE, "_ipython_display", lambda: (display, FakeImage))
    return log


# --------------------------------------------------------------------------
# headless

def test_headless_draws_nothing(headless, monkeypatch):
    def no_figure(*args, **kwargs):
        raise AssertionError("a figure was made headless without path=")
    monkeypatch.setattr(LIVE, "design_figure", no_figure)
    monkeypatch.setattr(LIVE, "history_figure", no_figure)
    watch = plot.live(mesh=fem.rectangle(4, 2))
    for rec in records(5):
        assert watch(rec, np.full(8, 0.5)) is None          # never stops the run
    assert watch.where == "none"
    watch.finish()
    assert watch.redraws == 0 and len(watch.history) == 5


def test_headless_path_keeps_the_last_frame(headless, tmp_path):
    png = tmp_path / "frames" / "live.png"
    watch = plot.live(mesh=fem.rectangle(4, 2), path=png, every=2)
    xs = [np.linspace(0, 1, 8) ** k for k in range(1, 6)]
    for rec, x in zip(records(5), xs):
        watch(rec, x)
    watch.finish()
    assert watch.where is None and watch.redraws == 3                  # 1, 3, 5
    saved = np.round(imread(png) * 255).astype(np.uint8)
    assert saved.shape == watch.image().shape
    assert np.array_equal(saved, watch.image())                       # the last evaluation
    watch(records(6)[-1], xs[0])                 # another design: another picture
    assert not np.array_equal(watch.image(), saved)


def test_history_alone_without_a_mesh(headless, tmp_path):
    watch = plot.live(path=tmp_path / "h.png")
    for rec in records(3):
        watch(rec, np.zeros(3))
    with_mesh = plot.live(path=tmp_path / "d.png", mesh=fem.rectangle(4, 2))
    for rec in records(3):
        with_mesh(rec, np.zeros(8))
    assert watch.image().shape[0] < with_mesh.image().shape[0]        # no design above


# --------------------------------------------------------------------------
# every

@pytest.mark.parametrize("every, n, drawn", [(1, 4, [1, 2, 3, 4]), (3, 10, [1, 4, 7, 10]),
                                             (3, 11, [1, 4, 7, 10, 11]), (5, 3, [1, 3]),
                                             (4, 1, [1])])
def test_every_redraws_the_first_then_each_kth_and_the_last(notebook, every, n, drawn):
    seen = []
    watch = plot.live(every=every, show="notebook")
    watch.image = lambda: (seen.append(len(watch.history)), np.zeros((2, 2, 4), np.uint8))[1]
    for rec in records(n):
        watch(rec, np.zeros(2))
    watch.finish()
    watch.finish()                                      # twice: nothing more
    assert seen == drawn and watch.redraws == len(drawn)


# --------------------------------------------------------------------------
# arguments

@pytest.mark.parametrize("kwargs, error, match", [
    (dict(every=0), ValueError, "every must be an integer >= 1, got 0"),
    (dict(every=2.5), TypeError, "every must be an integer"),
    (dict(every=True), TypeError, "every must be an integer"),
    (dict(show="tv"), ValueError, "show must be one of"),
    (dict(mirror="yes"), TypeError, "mirror must be True or False"),
    (dict(keep_open=1), TypeError, "keep_open must be True or False"),
    (dict(title=3), TypeError, "title must be a str"),
    (dict(dpi=5), ValueError, r"dpi must be in \[10, 600\], got 5"),
    (dict(dpi=float("nan")), ValueError, "dpi must be finite"),
    (dict(mesh="a mesh"), TypeError, "mesh must be a skfem mesh or a topopt.grid.Grid"),
    (dict(mesh=fem.box(2, 2, 2), mirror=True), ValueError, "mirror=True draws a 2-D"),
    (dict(show="notebook"), ValueError, "show='notebook' needs a Jupyter kernel"),
    (dict(show="window"), ValueError, "show='window' needs an interactive matplotlib"),
    (dict(colour="red"), TypeError, "colour"),
])
def test_arguments_are_checked_by_name(headless, kwargs, error, match):
    with pytest.raises(error, match=match):
        plot.live(**kwargs)


def test_path_is_write_tested(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(ValueError, match="path: cannot write"):
        plot.live(path=blocker / "live.png", show="none")
    with pytest.raises(ValueError, match="path: .* is a folder"):
        plot.live(path=tmp_path, show="none")


def test_bad_calls(headless):
    watch = plot.live(show="none")
    with pytest.raises(TypeError, match="record must be an evaluation record"):
        watch([1.0], np.zeros(2))
    with pytest.raises(ValueError, match="no evaluation to draw yet"):
        watch.image()
    with pytest.raises(TypeError, match="callback must be callable"):
        cantilever().run(maxeval=2, verbose=False, callback=3)


def test_a_design_of_the_wrong_size_names_it(headless, tmp_path):
    watch = plot.live(mesh=fem.rectangle(4, 2), path=tmp_path / "x.png")
    with pytest.raises(ValueError, match=r"x has shape \(5,\); expected \(8,\)"):
        watch(records(1)[0], np.zeros(5))


# --------------------------------------------------------------------------
# notebook

def test_notebook_updates_one_handle_per_redraw(notebook, tmp_path):
    watch = plot.live(mesh=fem.rectangle(4, 2), every=2, path=tmp_path / "n.png")
    for rec in records(6):
        watch(rec, np.full(8, rec["objective"]))
    watch.finish()                                      # evaluation 6 was not drawn: now
    assert watch.where is None and watch.redraws == 4   # 1, 3, 5, 6
    assert len(notebook["display"]) == 1                # one display, its handle updated
    handle = notebook["handles"][0]
    assert len(handle.updates) == 3
    pictures = [handle.first] + handle.updates
    assert all(isinstance(p, FakeImage) and p.format == "png" for p in pictures)
    assert all(p.data.startswith(b"\x89PNG") for p in pictures)
    assert len({p.data for p in pictures}) == 4         # each redraw a new picture
    assert pictures[-1].data == (tmp_path / "n.png").read_bytes()   # the last frame


def test_notebook_a_new_run_gets_a_new_handle(notebook):
    watch = plot.live(show="notebook")
    for run in range(2):
        watch.start()
        for rec in records(2):
            watch(rec, np.zeros(2))
        watch.finish()
    assert len(notebook["handles"]) == 2
    assert [len(h.updates) for h in notebook["handles"]] == [1, 1]


# --------------------------------------------------------------------------
# script window

@pytest.fixture
def window(monkeypatch):
    """An interactive backend as `Live` sees it; the canvas records its redraws."""
    import matplotlib.pyplot as plt
    from matplotlib.backend_bases import FigureCanvasBase
    calls = []
    monkeypatch.setattr(LIVE, "_in_notebook", lambda: False)
    monkeypatch.setattr(LIVE, "_interactive_backend", lambda: True)
    monkeypatch.setattr(plt, "show", lambda block=None: calls.append(("show", block)))
    monkeypatch.setattr(FigureCanvasBase, "draw_idle",
                        lambda self, *a, **k: calls.append(("draw_idle", self.figure)))
    monkeypatch.setattr(FigureCanvasBase, "start_event_loop",
                        lambda self, timeout=0: calls.append(("event_loop", timeout)))
    before = set(plt.get_fignums())
    yield calls
    for num in set(plt.get_fignums()) - before:
        plt.close(num)


def test_window_is_one_figure_redrawn_in_place(window):
    import matplotlib.pyplot as plt
    before = set(plt.get_fignums())
    watch = plot.live(mesh=fem.rectangle(4, 2), every=2)
    for rec in records(5):
        watch(rec, np.full(8, rec["objective"]))
        if rec["evaluation"] == 1:
            assert watch.where == "window"
            opened = set(plt.get_fignums()) - before
            assert len(opened) == 1
    fig = plt.figure(opened.pop())
    assert watch.redraws == 3                            # 1, 3, 5
    assert [c[0] for c in window] == ["show"] + ["draw_idle", "event_loop"] * 3
    assert {c[1] for c in window if c[0] == "draw_idle"} == {fig}
    assert window[0] == ("show", False)                  # never blocks the run
    shown = fig.axes[0].images[0].get_array()
    assert np.array_equal(shown, watch.image())         # the last evaluation's picture
    watch.finish()
    assert not plt.fignum_exists(fig.number)             # closed at the end


def test_window_kept_open_and_closed_by_the_user(window):
    import matplotlib.pyplot as plt
    watch = plot.live(show="window", keep_open=True)
    watch(records(1)[0], np.zeros(2))
    fig = watch._screen.fig
    watch.finish()
    assert plt.fignum_exists(fig.number)                 # keep_open: left to plt.show()
    plt.close(fig)
    watch = plot.live(show="window")
    watch(records(1)[0], np.zeros(2))
    plt.close(watch._screen.fig)                         # the user closes the window
    n = len(window)
    for rec in records(3)[1:]:
        watch(rec, np.zeros(2))                          # no error, no new window
    watch.finish()
    assert len(window) == n and watch.redraws == 1


def test_auto_without_display_never_imports_a_gui(headless, monkeypatch):
    called = []
    monkeypatch.setattr(LIVE, "_backend_name", lambda: called.append(1) or "tkagg")
    assert LIVE._interactive_backend() is False and not called
    monkeypatch.setattr(LIVE, "_has_display", lambda: True)
    assert LIVE._interactive_backend() is True
    monkeypatch.setattr(LIVE, "_backend_name", lambda: "agg")
    assert LIVE._interactive_backend() is False


def test_the_backend_is_left_alone(headless):
    import matplotlib
    backend = matplotlib.rcParams._get_backend_or_none()
    watch = plot.live(show="auto")
    for rec in records(2):
        watch(rec, np.zeros(2))
    watch.finish()
    assert matplotlib.rcParams._get_backend_or_none() == backend


# --------------------------------------------------------------------------
# with a run

def test_a_problem_run_binds_and_finishes_the_callback(headless, monkeypatch, tmp_path):
    drawn = []
    real = LIVE.design_figure
    monkeypatch.setattr(LIVE, "design_figure",
                        lambda mesh, x, *a, **k: drawn.append(np.array(x)) or real(mesh, x, *a, **k))
    problem = cantilever()
    watch = plot.live(every=3, path=tmp_path / "run.png")
    result = problem.run(maxeval=7, verbose=False, callback=watch)
    assert [h["objective"] for h in watch.history] == [h["objective"] for h in result.history]
    assert watch.redraws == len(drawn) == 3                          # 1, 4, 7
    assert np.allclose(drawn[-1], problem.x_phys(watch._x))         # the physical design
    assert not np.allclose(drawn[-1], watch._x)
    assert watch._labels == {"objective_label": "compliance",
                             "objective_scale": problem.c0, "constraint_names": ["volume"]}
    assert len(watch._markers["supports"]) == 5 and len(watch._markers["loads"]) == 1
    assert (tmp_path / "run.png").stat().st_size > 0
    again = problem.run(maxeval=2, verbose=False, callback=watch)   # start() resets it
    assert len(watch.history) == len(again.history) == 2


def test_the_hooks_order_and_a_failing_run(headless):
    calls = []

    class Recorder:
        def start(self, problem, stages):
            calls.append(("start", problem, stages))

        def __call__(self, record, x):
            calls.append(("call", record["evaluation"]))
            if record["evaluation"] == 2:
                raise RuntimeError("boom")

        def finish(self):
            calls.append(("finish",))

    problem = cantilever()
    with pytest.raises(RuntimeError, match="boom"):
        problem.run(maxeval=5, verbose=False, callback=Recorder())
    assert calls == [("start", problem, None), ("call", 1), ("call", 2), ("finish",)]
    plain = []                                   # a plain function: called, no hooks needed
    problem.run(maxeval=3, verbose=False, callback=lambda rec, x: plain.append(x.size))
    assert plain == [problem.n] * 3


def test_a_script_run_and_minimize_directly(headless, tmp_path):
    from topopt_problems import mbb_beam
    watch = plot.live(mirror=True, path=tmp_path / "mbb.png")
    result = mbb_beam.run(nelx=12, nely=4, maxeval=3, callback=watch)
    assert watch.redraws == 3 and result.evaluations == 3
    assert watch._mesh is not None and watch.mirror
    mesh = fem.rectangle(2, 1)
    c = np.array([1.0, 4.0])
    with plot.live(mesh=mesh, path=tmp_path / "min.png") as w:
        res = minimize(lambda x: np.sum(c / x), np.full(2, 0.5), [lambda x: np.sum(x) - 1.2],
                       bounds=(0.01, 1.0), maxeval=4, verbose=False, callback=w)
    assert w.redraws == len(res.history) == 4
    assert np.array_equal(w._x, res.x_last)


# --------------------------------------------------------------------------
# a real window (TkAgg on a virtual X display), where the machine has one

WINDOW_SCRIPT = """
import json, matplotlib, matplotlib.pyplot as plt, numpy as np
from topopt import plot
from topopt_problems import cantilever
seen = {}
watch = plot.live(every=2)
class Spy:
    def start(self, problem, stages): watch.start(problem, stages)
    def __call__(self, record, x):
        watch(record, x)
        seen.setdefault("where", watch.where)
        seen.setdefault("figures", plt.get_fignums())
    def finish(self): watch.finish()
cantilever.run(nelx=12, nely=6, maxeval=5, callback=Spy())
print(json.dumps(dict(seen, backend=matplotlib.get_backend(), redraws=watch.redraws,
                      after=plt.get_fignums())))
"""


def test_a_real_window_on_a_virtual_display():
    import json
    import os
    import shutil
    import subprocess
    pytest.importorskip("tkinter", reason="the real-window test needs tkinter")
    if shutil.which("Xvfb") is None:
        pytest.skip("the real-window test needs Xvfb (a virtual X display)")
    read, write = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "800x600x24",
                               "-nolisten", "tcp"], pass_fds=(write,),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        with os.fdopen(read) as fh:
            display = fh.readline().strip()
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, DISPLAY=f":{display}", MPLBACKEND="TkAgg", PYTHONPATH=root)
        out = subprocess.run([sys.executable, "-c", WINDOW_SCRIPT], env=env, cwd=root,
                             capture_output=True, text=True, timeout=120)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["backend"].lower() == "tkagg"         # the user's backend, left as it was
    assert seen["where"] == "window" and seen["figures"] == [1]      # one window
    assert seen["redraws"] == 3 and seen["after"] == []             # 1, 3, 5; closed


def test_a_grid_problem_and_a_3d_mesh(headless, monkeypatch, tmp_path):
    from topopt.grid import Grid, grid_elasticity
    model = grid_elasticity(Grid((8, 4))).fix(nodes=lambda x: x[0] == 0)
    problem = ComplianceProblem(model, model.point_load((8, 0), (0, -1)), 0.5, 1.5,
                                solver="voxel")
    watch = plot.live(path=tmp_path / "grid.png")
    problem.run(maxeval=2, verbose=False, callback=watch)
    assert isinstance(watch._mesh, Grid) and watch.redraws == 2
    drawn = []
    real = LIVE.design_figure_3d
    monkeypatch.setattr(LIVE, "design_figure_3d",
                        lambda mesh, x, *a, **k: drawn.append(x.size) or real(mesh, x, *a, **k))
    watch = plot.live(mesh=fem.box(4, 2, 2), path=tmp_path / "box.png")
    watch(records(1)[0], np.ones(16))
    assert drawn == [16] and watch.redraws == 1
