"""The README and the site's pages: their examples run and print what they say; the
gallery shows every problem.

* The README has at most 200 lines; its first example reproduces top88's MBB
  compliance and prints the line its comment quotes (the same example opens
  ``docs/getting-started.md``).
* The `topopt.plot` example (``docs/notes/pictures.md``) writes its two PNGs; the
  ``topopt.grid`` example (``docs/notes/grids.md``) and the own-mesh example
  (``docs/gallery/mesh_bracket.md``) run.
* Every image and page the README links exists; every gallery page
  (``docs/gallery/<name>.md``, titled ``# ...: `name```) names a problem of
  ``topopt_problems.__all__``, shows its committed ``results/gallery/<name>/design.png`` and
  gives the command that makes it; every problem with a committed picture has a
  page, a thumbnail in the README's strip and one on the gallery's index, and the
  pages' result.json blocks are current (``docs/gallery/generate.py --check``).
"""

import contextlib
import io
import os
import re
import stat
import subprocess
import sys

import numpy as np

import pytest

import topopt_problems

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
DOCS = os.path.join(ROOT, "docs")
GALLERY = os.path.join(DOCS, "gallery")
PAGES = [os.path.join(DOCS, *p.split("/")) for p in
         ("getting-started.md", "notes/pictures.md", "notes/grids.md", "gallery/mesh_bracket.md")]
EXAMPLES = re.findall(r"```python\n(.*?)```", TEXT, re.S) + [
    code for page in PAGES
    for code in re.findall(r"```python\n(.*?)```", open(page, encoding="utf-8").read(), re.S)]
NUMBER = r"[-+]?\d+(?:\.\d+)?"


def test_readme_fits_on_a_screen_or_two():
    assert len(TEXT.splitlines()) <= 200


def test_getting_started_shows_the_readme_example():
    page = open(PAGES[0], encoding="utf-8").read()
    assert EXAMPLES[0] in page
    assert "pip install -e . && python problems/mbb_beam.py" in page


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


def test_every_linked_image_and_page_exists():
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", TEXT) + re.findall(r'<img src="([^"]+)"', TEXT)
    links = [p for p in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", TEXT) + re.findall(r'href="([^"]+)"', TEXT)
             if not p.startswith(("http:", "https:"))]
    assert images and links
    missing = [p for p in images + links if not os.path.isfile(os.path.join(ROOT, p))]
    assert not missing


def gallery_entries():
    """``{name: page text}`` of the gallery's pages ``docs/gallery/<name>.md``."""
    entries = {}
    for file in sorted(os.listdir(GALLERY)):
        if file.endswith(".md") and file != "index.md":
            text = open(os.path.join(GALLERY, file), encoding="utf-8").read()
            name = re.search(r"`(\w+)`\s*$", text.splitlines()[0]).group(1)
            assert file == name + ".md", (file, name)
            entries[name] = text
    return entries


def test_gallery_entries_show_their_picture_and_command():
    entries = gallery_entries()
    assert entries
    for name, block in entries.items():
        assert name in topopt_problems.__all__, name
        assert f"](../../results/gallery/{name}/design.png)" in block, name
        assert f"python problems/{name}.py" in block, name


def test_every_problem_with_a_committed_picture_has_an_entry():
    entries = gallery_entries()
    pictured = {n for n in topopt_problems.__all__
                if os.path.isfile(os.path.join(ROOT, "results", "gallery", n, "design.png"))}
    assert pictured
    assert pictured <= set(entries), "a problem's picture without a gallery page"
    index = open(os.path.join(GALLERY, "index.md"), encoding="utf-8").read()
    for name in pictured:
        assert f'<a href="docs/gallery/{name}.md"><img src="results/gallery/{name}/design.png"' \
            in TEXT, f"{name}: no thumbnail in the README's gallery strip"
        assert f"(../../results/gallery/{name}/design.png)]({name}.md)" in index, name


def test_gallery_pages_are_current():
    """The result.json blocks and the index match the committed results."""
    done = subprocess.run([sys.executable, os.path.join(GALLERY, "generate.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


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
