"""The tutorials of the documentation site (docs/tutorials): present, MyST-NB, checked.

The site build (`.ci/run`, sphinx -W with myst-nb execution) runs them; here
only their form is checked, fast: each page exists, is listed in the
tutorials' toctree, has the MyST-NB text-notebook header with a python3
kernel, and has code cells with at least one ``assert`` (so that a wrong
number fails the build).
"""

from __future__ import annotations

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUTORIALS = os.path.join(ROOT, "docs", "tutorials")
PAGES = ("own-problem", "own-rule", "reliability", "grids", "petsc")
CELL = re.compile(r"^```\{code-cell\} ipython3\n(.*?)^```", re.S | re.M)


def _read(name: str) -> str:
    with open(os.path.join(TUTORIALS, name), encoding="utf-8") as fh:
        return fh.read()


def _front_matter(text: str) -> str:
    assert text.startswith("---\n"), "no front matter"
    return text[4:text.index("\n---\n", 4)]


@pytest.mark.parametrize("page", PAGES)
def test_page_is_a_mystnb_notebook(page):
    text = _read(page + ".md")
    header = _front_matter(text)
    assert re.search(r"^file_format: mystnb$", header, re.M), header
    assert re.search(r"^kernelspec:\n(  .*\n)*  name: python3$", header + "\n", re.M), header
    assert re.search(r"^# \S", text[text.index("\n---\n", 4):], re.M), "no title"


@pytest.mark.parametrize("page", PAGES)
def test_page_checks_its_numbers(page):
    cells = CELL.findall(_read(page + ".md"))
    assert len(cells) >= 3, f"{page}: {len(cells)} code cells"
    asserts = [c for c in cells if re.search(r"^\s*assert ", c, re.M)]
    assert asserts, f"{page}: no cell asserts anything"
    for cell in cells:                      # every cell is valid Python (magics aside)
        compile("\n".join(line for line in cell.splitlines() if not line.startswith("%")),
                page, "exec")


def test_index_lists_every_page_in_order():
    text = _read("index.md")
    toctree = re.search(r"```\{toctree\}\n(.*?)```", text, re.S).group(1)
    entries = [line.strip() for line in toctree.splitlines()
               if line.strip() and not line.startswith(":")]
    assert entries[:len(PAGES)] == list(PAGES), entries
    assert set(entries) <= set(PAGES) | {"live"}, entries
    if "live" in entries:                   # the notebook tutorial comes last
        assert entries[-1] == "live"


def test_own_problem_writes_a_run_folder_that_the_command_reads():
    """The own-problem page writes its run as a script does (`topopt.io.write_results`) and
    runs ``topopt show`` and ``topopt export`` on that folder, asserting their exit status
    and files (issue 35); the site build executes it."""
    code = "\n".join(CELL.findall(_read("own-problem.md")))
    assert "write_results(out, mesh, result, setup" in code
    assert 'topopt("show", out, "--png"' in code and 'topopt("export", out, "--vtu"' in code
    assert "assert done.returncode == 0" in code
    assert 'load_design(os.path.join(out, "design.npz"), problem="bridge")' in code
