"""Write the API reference pages, ``docs/api/<package>.rst``, from the public ``__all__``.

One page per package of ``tests/test_public.py``'s list (``topopt`` and its
subpackages): the package's docstring, then an autosummary table of every name in
its ``__all__`` (sorted), whose stubs autosummary makes at build time. A name that is
itself a package (``topopt.ad`` in ``topopt.__all__``) links to that package's page.

Run ``python docs/api/generate.py`` after changing an ``__all__``; ``--check`` only
says whether the committed pages are current (``tests/test_docs_api.py`` checks the
names without Sphinx).
"""

import importlib
import inspect
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# the packages whose __all__ is the public surface (tests/test_public.py's PACKAGES)
PACKAGES = ("topopt", "topopt.ad", "topopt.fem", "topopt.fem.solvers", "topopt.fem.petsc",
            "topopt.reliability", "topopt.design", "topopt.responses", "topopt.optimize",
            "topopt.formulations", "topopt.robust", "topopt.io", "topopt.plot", "topopt.cli",
            "topopt.grid", "topopt.flow")


def page_name(package: str) -> str:
    return package + ".rst"


def home(package: str, name: str) -> str:
    """The package whose page documents ``package.name`` in full.

    An object exported by several packages (``topopt.DensityFilter`` is
    ``topopt.design.DensityFilter``) gets one stub, on the page of the package nearest to
    where it is defined (the longest of them that its ``__module__`` starts with; else the
    deepest); the other pages link to that stub. One description per object: Sphinx
    refuses two descriptions of one class (the same canonical name).
    """
    obj = getattr(importlib.import_module(package), name)
    if inspect.ismodule(obj):
        return package
    holders = [p for p in PACKAGES if name in importlib.import_module(p).__all__
               and getattr(importlib.import_module(p), name) is obj]
    where = getattr(obj, "__module__", None) or ""
    inside = [p for p in holders if where == p or where.startswith(p + ".")]
    return max(inside or holders, key=lambda p: (p.count("."), len(p)))


def _relative(target: str, package: str) -> str:
    """``target`` as autosummary wants it under ``currentmodule package``."""
    return target[len(package) + 1:] if target.startswith(package + ".") else target


def _kinds(module) -> dict:
    """``{"functions"|"classes"|"data"|"packages": [names]}`` of the module's __all__."""
    kinds = {"packages": [], "classes": [], "functions": [], "data": []}
    for name in sorted(module.__all__, key=str.lower):
        obj = getattr(module, name)
        if inspect.ismodule(obj):
            kinds["packages"].append(name)
        elif inspect.isclass(obj):
            kinds["classes"].append(name)
        elif callable(obj):
            kinds["functions"].append(name)
        else:
            kinds["data"].append(name)
    return kinds


TITLES = {"classes": "Classes", "functions": "Functions", "data": "Constants"}


def page(package: str) -> str:
    module = importlib.import_module(package)
    kinds = _kinds(module)
    lines = [package, "=" * len(package), "",
             f".. automodule:: {package}", "   :no-members:", "",
             f".. currentmodule:: {package}", ""]
    if kinds["packages"]:
        lines += ["Subpackages", "-----------", ""]
        for name in kinds["packages"]:
            target = getattr(module, name).__name__
            owner = max((p for p in PACKAGES if target == p or target.startswith(p + ".")),
                        key=len)
            where = "its page" if owner == target else "its names are on the page of"
            lines.append(f"* ``{package}.{name}`` (``{target}``): {where} :doc:`{owner}`")
        lines.append("")
    for kind, title in TITLES.items():
        if not kinds[kind]:
            continue
        lines += [title, "-" * len(title), ""]
        here = [n for n in kinds[kind] if home(package, n) == package]
        there = [n for n in kinds[kind] if n not in here]
        if here:
            lines += [".. autosummary::", "   :toctree: generated/", "   :nosignatures:", ""]
            lines += [f"   {name}" for name in here]
            lines.append("")
        if there:
            if here:
                lines += ["Also here, documented with their package:", ""]
            lines += [".. autosummary::", "   :nosignatures:", ""]
            lines += [f"   ~{_relative(home(package, name), package)}.{name}" for name in there]
            lines.append("")
    return "\n".join(lines)


def index() -> str:
    lines = ["API", "===", "",
             "Every name of every public ``__all__``, one page per package, generated from",
             "the docstrings (``docs/api/generate.py`` writes these pages;",
             "``tests/test_docs_api.py`` checks that none is missing). The main names of each",
             "package are importable from ``topopt`` itself.", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    lines += [f"   {p}" for p in PACKAGES]
    return "\n".join(lines) + "\n"


def pages() -> dict:
    """``{file name: text}`` of every page of the reference."""
    sys.path.insert(0, ROOT)
    out = {"index.rst": index()}
    out.update({page_name(p): page(p) for p in PACKAGES})
    return out


def main(argv) -> int:
    sys.path.insert(0, os.path.dirname(HERE))
    from sync import sync
    return sync(HERE, pages(), "--check" in argv, "API pages", "python docs/api/generate.py")

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
