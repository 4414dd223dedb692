"""The README: its examples run and print what it says; its gallery shows every problem.

* The first example reproduces top88's MBB compliance and prints the line
  its comment quotes.
* The `topopt.plot` example writes its two PNGs.
* Every image the README links exists; every gallery entry (``### ...:
  `name```) names a problem of ``problems.__all__``, shows its committed
  ``results/gallery/<name>/design.png`` and gives the command that makes it; every
  problem with a committed picture has an entry.
"""

import contextlib
import io
import os
import re
import stat

import numpy as np

import pytest

import problems

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
EXAMPLES = re.findall(r"```python\n(.*?)```", TEXT, re.S)
NUMBER = r"[-+]?\d+(?:\.\d+)?"


def test_first_lines_install_and_run():
    lines = TEXT.splitlines()
    assert lines[3] == "pip install -e . && python problems/mbb_beam.py"
    assert lines[4] == "pip install -e '.[test]' && pytest"


def test_readme_example_reproduces_top88_and_prints_what_it_says():
    code = EXAMPLES[0]
    quoted = re.search(r"^# (compliance .*)$", code, re.M).group(1)
    assert "maxeval=100," in code
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code.replace("maxeval=100,", "maxeval=100, verbose=False,"), {})
    printed = out.getvalue().strip()
    mine = [float(v) for v in re.findall(NUMBER, printed)]
    said = [float(v) for v in re.findall(NUMBER, quoted)]
    assert len(mine) == len(said) == 3, (printed, quoted)
    assert mine[0] == pytest.approx(said[0], abs=0.051)       # quoted to 0.1
    assert mine[0] == pytest.approx(233.71, rel=0.01)         # top88, Fig. 4
    assert mine[1:] == pytest.approx(said[1:], abs=0.0006)


def test_plot_example_writes_its_pictures(tmp_path, monkeypatch):
    code = next(c for c in EXAMPLES if "from topopt import plot" in c)
    monkeypatch.chdir(tmp_path)
    exec(code, {})
    for name in ("cantilever.png", "history.png"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o644


def test_every_linked_image_exists():
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", TEXT)
    assert links
    missing = [p for p in links if not os.path.isfile(os.path.join(ROOT, p))]
    assert not missing


def gallery_entries():
    """``{name: block text}`` of the gallery's ``### title: `name``` blocks."""
    gallery = TEXT[TEXT.index("## Gallery"):]
    gallery = gallery[:gallery.index("\n## ", 1)]
    blocks = re.split(r"^### ", gallery, flags=re.M)[1:]
    return {re.search(r"`(\w+)`\s*$", b.splitlines()[0]).group(1): b for b in blocks}


def test_gallery_entries_show_their_picture_and_command():
    entries = gallery_entries()
    assert entries
    for name, block in entries.items():
        assert name in problems.__all__, name
        assert f"](results/gallery/{name}/design.png)" in block, name
        assert f"python problems/{name}.py" in block, name


# problems whose gallery entry their authors still have to write (one ### block
# each, in the shape of the others); remove a name when its entry is added
def test_every_problem_with_a_committed_picture_has_an_entry():
    entries = gallery_entries()
    pictured = {n for n in problems.__all__
                if os.path.isfile(os.path.join(ROOT, "results", "gallery", n, "design.png"))}
    assert pictured
    assert pictured <= set(entries), "a problem's picture without a gallery entry"


def test_grid_example_prints_what_it_says():
    """The ``topopt.grid`` example runs and prints the compliance and CG count it quotes."""
    code = next(c for c in EXAMPLES if "from topopt.grid import" in c)
    quoted = re.search(r"^# (compliance .*)$", code, re.M).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {})
    mine = [float(v) for v in re.findall(NUMBER, out.getvalue())]
    said = [float(v) for v in re.findall(NUMBER, quoted)]
    assert len(mine) == len(said) == 2, (out.getvalue(), quoted)
    assert mine[0] == pytest.approx(said[0], abs=0.051)       # quoted to 0.1
    assert mine[1] == pytest.approx(said[1], abs=0.51)        # quoted to 1


def test_own_mesh_example_runs_on_the_committed_mesh(monkeypatch):
    """The bring-your-own-mesh example reads the bracket, fixes a bolt circle, loads the
    lug and optimizes (5 evaluations here): supports and load are where it says."""
    code = next(c for c in EXAMPLES if "fem.read_mesh(" in c)
    assert "maxeval=100," in code
    monkeypatch.chdir(ROOT)
    scope = {}
    exec(code.replace("maxeval=100,", "maxeval=5,"), scope)
    model, f, result = scope["model"], scope["f"], scope["result"]
    load = model.nodal_values(f)                                  # (points, 2)
    loaded = np.flatnonzero(np.any(load != 0, axis=1))
    assert model.fixed.size > 0 and loaded.size > 0
    assert np.all(load[:, 0] == 0) and np.all(load[:, 1] <= 0)    # downward only
    assert np.all(model.mesh.p[0, loaded] > 125)                  # on facets beyond x = 129
    assert result["evaluations"] == 5 and np.isfinite(result["compliance"])
