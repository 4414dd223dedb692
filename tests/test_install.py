"""What an install puts on a user's path: ``topopt`` and ``topopt_problems``, no ``problems``.

The problem scripts live in the folder ``problems/`` (``python problems/mbb_beam.py``)
and install under our own name, ``topopt_problems`` (``pyproject.toml``'s
``package-dir``; issue 35: ``import problems`` used to work anywhere after an
install). The packages are listed in ``pyproject.toml``, not found, so a new
package under ``topopt/`` must be added there: the first test says which.
"""

import os
import subprocess
import sys

import pytest

from script_runs import ROOT, _installed_root

tomllib = pytest.importorskip("tomllib")     # Python >= 3.11


def _setuptools():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        return tomllib.load(fh)["tool"]["setuptools"]


def test_every_package_under_topopt_is_installed():
    found = sorted(os.path.relpath(folder, ROOT).replace(os.sep, ".")
                   for folder, _, files in os.walk(os.path.join(ROOT, "topopt"))
                   if "__init__.py" in files)
    listed = _setuptools()["packages"]
    assert sorted(p for p in listed if p != "topopt_problems") == found
    assert "topopt_problems" in listed and "problems" not in listed


def test_the_problems_folder_installs_as_topopt_problems():
    config = _setuptools()
    assert config["package-dir"] == {"topopt_problems": "problems"}
    assert config["package-data"] == {"topopt_problems": ["meshes/*.msh"]}
    assert os.path.isfile(os.path.join(ROOT, "problems", "meshes", "bracket.msh"))


def test_the_checkout_link_is_the_problems_folder():
    """``topopt_problems`` at the checkout's root is a link to ``problems/`` (the same
    import name from a checkout on PYTHONPATH as from an install)."""
    link = os.path.join(ROOT, "topopt_problems")
    if not os.path.islink(link):
        pytest.skip("no symbolic links in this checkout (git core.symlinks=false)")
    assert os.readlink(link) == "problems"
    assert os.path.samefile(link, os.path.join(ROOT, "problems"))


def test_the_install_provides_topopt_problems_and_no_problems(tmp_path):
    """From a folder outside the checkout, without PYTHONPATH, as a user's shell: the
    installed ``topopt_problems`` is this checkout's ``problems/`` folder and no
    module named ``problems`` can be imported."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if _installed_root(env) != ROOT:
        pytest.skip("the interpreter's topopt is not this checkout's editable install "
                    "(`pip install -e .` here)")
    code = ("import importlib.util, os, topopt_problems; "
            "print(os.path.realpath(topopt_problems.__file__)); "
            "print(importlib.util.find_spec('problems')); "
            "print(','.join(topopt_problems.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    origin, spec, names = out.stdout.splitlines()
    assert origin == os.path.realpath(os.path.join(ROOT, "problems", "__init__.py"))
    assert spec == "None"
    assert "mbb_beam" in names.split(",")
