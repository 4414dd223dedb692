"""The API reference names every public name (no Sphinx build: the committed pages are read).

``docs/api/<package>.rst`` lists the names of the package's ``__all__`` in autosummary
tables: a plain entry (``   name``) gets its own stub, a re-export
(``   ~design.DensityFilter``) links to the stub on its package's page, and a name that is
a module is listed under "Subpackages". Each must be the object the package exports.
"""

import importlib
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API = os.path.join(ROOT, "docs", "api")
sys.path.insert(0, API)
import generate  # noqa: E402  (docs/api/generate.py)
sys.path.remove(API)

from test_public import PACKAGES  # noqa: E402


def listed(package: str) -> dict:
    """``{name: dotted target}`` of the entries of the package's page."""
    text = open(os.path.join(API, package + ".rst"), encoding="utf-8").read()
    found = {}
    for block in re.findall(r"^\.\. autosummary::\n((?:   .*\n|\n)+)", text, re.M):
        for line in block.splitlines():
            entry = line.strip()
            if not entry or entry.startswith(":"):
                continue
            target = entry.lstrip("~")
            absolute = target.startswith("topopt.")       # else relative to the package
            found[target.rsplit(".", 1)[-1]] = target if absolute else package + "." + target
    for name, target in re.findall(r"^\* ``[\w.]+\.(\w+)`` \(``([\w.]+)``\)", text, re.M):
        found[name] = target
    return found


def resolve(dotted: str):
    """The object ``dotted`` names, by attributes first (``topopt.fem.transient`` is the
    function that ``topopt.fem`` exports, not the module of that name)."""
    first, *rest = dotted.split(".")
    obj, path = importlib.import_module(first), first
    for part in rest:
        path += "." + part
        obj = getattr(obj, part) if hasattr(obj, part) else importlib.import_module(path)
    return obj


def test_the_reference_covers_the_packages_of_test_public():
    assert tuple(generate.PACKAGES) == tuple(PACKAGES)
    index = open(os.path.join(API, "index.rst"), encoding="utf-8").read()
    assert all(f"\n   {p}\n" in index + "\n" for p in PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_is_in_the_reference(package):
    module = importlib.import_module(package)
    found = listed(package)
    missing = sorted(set(module.__all__) - set(found))
    assert not missing, f"{missing} of {package}.__all__ are not in docs/api/{package}.rst"
    extra = sorted(set(found) - set(module.__all__))
    assert not extra, f"docs/api/{package}.rst lists {extra}, not in {package}.__all__"
    wrong = [n for n, target in found.items() if resolve(target) is not getattr(module, n)]
    assert not wrong, f"docs/api/{package}.rst links {wrong} to other objects"


def test_a_missing_name_is_caught(monkeypatch):
    """The check can fail: a name added to an ``__all__`` and not to the page."""
    module = importlib.import_module("topopt.grid")
    monkeypatch.setattr(module, "__all__", list(module.__all__) + ["not_documented"])
    monkeypatch.setattr(module, "not_documented", object(), raising=False)
    assert "not_documented" not in listed("topopt.grid")


def test_each_object_has_one_stub():
    """A re-exported object is described once under each of its names (Sphinx refuses two descriptions of a class)."""
    stubs = {}
    for package in PACKAGES:
        text = open(os.path.join(API, package + ".rst"), encoding="utf-8").read()
        for name in listed(package):
            if not re.search(rf"^   {re.escape(name)}$", text, re.M):
                continue                                     # a link, not a stub
            obj = getattr(importlib.import_module(package), name)
            stubs.setdefault((id(obj), name), []).append(f"{package}.{name}")
    twice = [v for v in stubs.values() if len(v) > 1]
    assert not twice


def test_the_pages_are_current():
    done = subprocess.run([sys.executable, os.path.join(API, "generate.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
