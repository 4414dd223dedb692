"""The ``topopt`` command (`topopt.cli.command`), driven through subprocesses as a user would.

Every command runs twice: as ``python -m topopt.cli.command`` and as the console
script ``topopt`` that ``pip install`` puts next to the interpreter (when it
is there), from a folder outside the checkout and without PYTHONPATH.
"""

import ast
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import topopt_problems
from script_runs import ROOT, installed_env, interrupt_after, script, run_script
from topopt.io.designs import load_design

_SCRIPT = os.path.join(os.path.dirname(sys.executable), "topopt")
LAUNCHERS = [pytest.param([sys.executable, "-m", "topopt.cli.command"], id="python-m")]
if os.path.isfile(_SCRIPT) and os.access(_SCRIPT, os.X_OK):
    LAUNCHERS.append(pytest.param([_SCRIPT], id="console-script"))


def topopt(launcher, *args, cwd):
    env = installed_env()
    env["MPLBACKEND"] = "Agg"
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return subprocess.run([*launcher, *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def first_doc_line(name):
    """The first docstring line of problems/<name>.py, read from the file."""
    with open(os.path.join(ROOT, "problems", f"{name}.py"), encoding="utf-8") as fh:
        return ast.get_docstring(ast.parse(fh.read())).splitlines()[0]


def test_console_script_declared():
    """pyproject declares the entry point the installed ``topopt`` calls."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as fh:
        text = fh.read()
    assert '[project.scripts]\ntopopt = "topopt.cli.command:main"' in text


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_list(launcher, tmp_path):
    """One line per problem of ``topopt_problems.__all__``: its name and docstring's first line."""
    r = topopt(launcher, "list", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(topopt_problems.__all__)
    for line, name in zip(lines, topopt_problems.__all__):
        assert line[len(name):].strip() == first_doc_line(name)


# (arguments, text the one error line holds); "{empty}" is an empty folder
USAGE_ERRORS = [
    (["frob"], "invalid choice: 'frob'"),
    ([], "required"),
    (["run"], "required: problem"),
    (["run", "nope"], "unknown problem 'nope'; known: " + ", ".join(topopt_problems.__all__)),
    (["run", "mbb_beam", "--nelx", "0"], "argument --nelx: must be an integer >= 1, got 0"),
    (["run", "mbb_beam", "--bogus"], "unrecognized arguments: --bogus"),
    (["show", "{empty}"], "holds no result (design.npz and result.json missing"),
    (["show", "{empty}/nothing"], "is not a folder"),
    (["export", "{empty}", "--vtu"], "holds no result (design.npz missing"),
    (["run", "em_robust", "--chords", "1"], "argument --chords: must be an integer >= 2, got 1"),
]


@pytest.mark.parametrize("args, message", USAGE_ERRORS)
def test_usage_errors(args, message, tmp_path):
    """Exit status 2, one ``error:`` line naming the problem, nothing on stdout."""
    args = [a.replace("{empty}", str(tmp_path)) for a in args]
    r = topopt(LAUNCHERS[-1].values[0], *args, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    errors = [line for line in r.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0], r.stderr
    assert r.stdout == ""
    assert os.listdir(tmp_path) == []                   # no work, nothing written


@pytest.fixture(scope="module")
def mbb_run(tmp_path_factory):
    """``topopt run mbb_beam --maxeval 20 --out DIR`` once for the module."""
    out = tmp_path_factory.mktemp("mbb") / "run"
    r = topopt(LAUNCHERS[-1].values[0], "run", "mbb_beam", "--maxeval", 20, "--out", out,
               "--quiet", cwd=out.parent)
    assert r.returncode == 0, r.stderr
    return out, r


def test_run_is_the_script(mbb_run, tmp_path):
    """``topopt run mbb_beam OPTIONS`` = ``python problems/mbb_beam.py OPTIONS``."""
    out, r = mbb_run
    direct = run_script(script("mbb_beam", "--maxeval", 20, "--out", tmp_path, "--quiet"))
    assert direct.returncode == 0, direct.stderr
    mine = json.loads((out / "result.json").read_text())
    theirs = json.loads((tmp_path / "result.json").read_text())
    assert mine["result"]["evaluations"] == theirs["result"]["evaluations"] == 20
    assert mine["result"]["compliance"] == pytest.approx(theirs["result"]["compliance"],
                                                         rel=1e-12)
    assert mine["objective_history"] == pytest.approx(theirs["objective_history"], rel=1e-12)
    assert r.stdout.startswith("compliance ") and r.stdout.rstrip().endswith(f"-> {out}")


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_show_png(launcher, mbb_run, tmp_path):
    """``topopt show DIR --png F``: a PNG with the design (black and white pixels) on top."""
    from matplotlib.image import imread
    out, _ = mbb_run
    png = tmp_path / "sub" / "show.png"
    r = topopt(launcher, "show", out, "--png", png, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(png)
    image = imread(png)[..., :3].mean(axis=2)
    assert image.shape[0] > 300 and image.shape[1] > 600
    assert image.min() < 0.1 and image.max() > 0.9      # a design, not a blank page


def test_show_without_display_writes_into_the_folder(mbb_run, tmp_path):
    """No display and no --png: ``DIR/show.png``, said on stderr."""
    out, _ = mbb_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    r = topopt(LAUNCHERS[0].values[0], "show", copy, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (copy / "show.png").is_file() and "no display" in r.stderr


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_export_vtu(launcher, mbb_run, tmp_path):
    """``topopt export DIR --vtu PATH``: meshio reads back x and x_phys of design.npz."""
    meshio = pytest.importorskip("meshio")
    out, _ = mbb_run
    path = tmp_path / "beam.vtu"
    r = topopt(launcher, "export", out, "--vtu", path, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(path)
    saved = load_design(out / "design.npz")
    mesh = meshio.read(path)
    for key in ("x", "x_phys"):
        np.testing.assert_allclose(mesh.cell_data[key][0], saved[key], rtol=0, atol=1e-12)
    assert mesh.points.shape[0] == saved["mesh"].p.shape[1]


def test_export_vtu_into_a_folder(mbb_run, tmp_path):
    """``--vtu FOLDER`` writes FOLDER/design.vtu (it failed naming a temporary file)."""
    pytest.importorskip("meshio")
    out, _ = mbb_run
    (tmp_path / "folder").mkdir()
    r = topopt(LAUNCHERS[0].values[0], "export", out, "--vtu", tmp_path / "folder",
               cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "folder" / "design.vtu")
    assert os.path.getsize(tmp_path / "folder" / "design.vtu") > 0


def test_export_stl_of_a_2d_design_is_refused(mbb_run, tmp_path):
    """An STL needs a 3-D grid: exit 2 with the reason, no file."""
    out, _ = mbb_run
    r = topopt(LAUNCHERS[0].values[0], "export", out, "--stl", tmp_path / "b.stl",
               cwd=tmp_path)
    assert r.returncode == 2 and "argument --stl:" in r.stderr, r.stderr
    assert not (tmp_path / "b.stl").exists()


@pytest.mark.parametrize("sig, status", [("SIGINT", 130), ("SIGTERM", 143)])
def test_run_passes_the_signal_status_through(sig, status, tmp_path):
    """An interrupted ``topopt run`` ends as the script does: 130 / 143."""
    cmd = [sys.executable, "-m", "topopt.cli.command", "run", "mbb_beam", "--maxeval", 10**5,
           "--out", tmp_path]
    code, _, stderr = interrupt_after(cmd, sig, evaluations=3)
    assert code == status, stderr
    assert "interrupted after" in stderr


def test_3d_show_and_stl(tmp_path):
    """A small 3-D cantilever: ``show`` draws it, ``export --stl`` writes an STL of triangles."""
    pytest.importorskip("meshio")
    pytest.importorskip("skimage")
    launcher = LAUNCHERS[-1].values[0]
    out = tmp_path / "c3"
    r = topopt(launcher, "run", "cantilever3d", "--nelx", 16, "--nely", 8, "--nelz", 4,
               "--maxeval", 10, "--out", out, "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = topopt(launcher, "show", out, "--png", tmp_path / "c3.png", cwd=tmp_path)
    assert r.returncode == 0 and (tmp_path / "c3.png").is_file(), r.stderr
    r = topopt(launcher, "export", out, "--stl", tmp_path / "c3.stl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert stl_triangles((tmp_path / "c3.stl").read_bytes()) > 0


def stl_triangles(data):
    """Triangles of an ASCII or binary STL, after checking its structure."""
    if data.startswith(b"solid") and data.rstrip().split(b"\n")[-1].startswith(b"endsolid"):
        words = data.split()
        n = words.count(b"endfacet")
        assert words.count(b"facet") == n and words.count(b"vertex") == 3 * n
        return n
    n = int(np.frombuffer(data[80:84], "<u4")[0])      # 80-byte header, uint32 count,
    assert len(data) == 84 + 50 * n                    # 50 bytes a triangle
    return n


def test_show_draws_the_runs_own_history_and_markers(mbb_run):
    """``show`` reads result.json's plot settings: the objective times its scale is
    the compliance of the history's first design (c0 * 1), the constraint is named,
    and the supports and loads are the model's."""
    from topopt.cli import command
    from topopt.plot.markers import boundary_markers
    from topopt_problems.mbb_beam import setup
    out, _ = mbb_run
    record = json.loads((out / "result.json").read_text())
    history = command._history(record)
    assert len(history) == 20 and all(len(h["constraints"]) == 1 for h in history)
    settings = record["plot"]
    assert settings["objective_label"] == "compliance c"
    assert settings["constraint_names"] == ["volume V / 0.5 - 1"]
    _, model, f = setup(60, 20)
    for got, want in zip((settings["supports"], settings["loads"]), boundary_markers(model, f)):
        np.testing.assert_array_equal(got, want)


def test_em_robust_quick_with_what_it_sets_is_a_usage_error(tmp_path):
    """``--quick`` sets --h, --maxeval, --chords and --samples itself: given with one of
    them, exit status 2 and one error line naming both fixes, before any solve (the
    results folder is made and write-tested first, as for every option check)."""
    r = topopt(LAUNCHERS[-1].values[0], "run", "em_robust", "--quick", "--samples", 20,
               "--out", tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    errors = [line for line in r.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and ("--quick sets --h 8.0 --maxeval 3 --chords 5 --samples 50 "
                                 "itself; drop --samples 20 or --quick") in errors[0], r.stderr
    assert r.stdout == "" and os.listdir(tmp_path / "out") == []


def test_em_robust_help_says_what_each_phase_costs(tmp_path):
    """``--help`` names the quick setting and the cost of each phase (issue 35: ``--maxeval
    5`` ran > 400 s, 1 000 Monte Carlo solves per design, and the help did not say so)."""
    r = topopt(LAUNCHERS[-1].values[0], "run", "em_robust", "--help", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    for phrase in ("--quick", "--h 8 --maxeval 3 --chords 5 --samples 50",
                   "3 designs: 3000 solves", "3 C - 4 points", "(15 each)",
                   "N = 5 about 4 minutes before the Monte Carlo"):
        assert phrase in text, phrase


def test_em_robust_quick_runs_every_phase_on_the_quick_values(monkeypatch):
    """``run(quick=True)`` hands QUICK's values to `run_focus_designs` (the chords through
    the spec); without it the given ones."""
    from topopt_problems import em_robust
    seen = []
    monkeypatch.setattr(em_robust, "run_focus_designs",
                        lambda setup, h, maxeval, spec, samples, *rest: seen.append(
                            (h, maxeval, spec.n_shifts, samples, spec.approach)))
    em_robust.run(quick=True, approach="ria")
    em_robust.run(h=6.0, maxeval=7, samples=30, chords=9)
    assert seen == [(8.0, 3, 5, 50, "ria"), (6.0, 7, 9, 30, "pma")]
    with pytest.raises(ValueError, match="drop --h 6.0 --maxeval 7 or --quick"):
        em_robust.run(quick=True, h=6.0, maxeval=7)
    with pytest.raises(ValueError, match="quick must be True or False"):
        em_robust.run(quick="yes")
