"""Sphinx configuration of the topopt documentation site.

Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (what
``.ci/run`` does). The API pages under ``docs/api/`` are written by
``docs/api/generate.py`` and committed (``tests/test_docs_api.py`` checks that they
name every public name); autosummary writes one stub page per name into
``docs/api/generated/`` at build time (git-ignored). The gallery pages are made
from the committed ``results/gallery/`` (``docs/gallery/generate.py``); nothing
re-runs a problem here. The tutorials execute (MyST-NB), so keep them small.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)          # the checkout's topopt and topopt_problems, installed or not
os.environ.setdefault("MPLBACKEND", "Agg")

project = "topopt"
author = "the topopt authors"
copyright = "the topopt authors, MIT licence"
release = version = "0.1.0"

extensions = [
    "myst_nb",                    # MyST markdown pages and executed notebooks
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
]
try:                              # a copy button on code blocks, when installed
    import sphinx_copybutton  # noqa: F401
    extensions.append("sphinx_copybutton")
except ImportError:
    pass

exclude_patterns = ["_build", "**.ipynb_checkpoints", "api/generate.py", "gallery/generate.py",
                    "sync.py"]
templates_path = ["_templates"]
html_static_path = ["_static"]

# notebooks: every tutorial runs at build time, a failing cell fails the build
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_timeout = 300
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3          # `#section` links in the markdown pages, as on GitHub

# API reference: one stub per public name (docs/api/generated/, made at build time)
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"        # the numpydoc Parameters section says the types
default_role = "py:obj"           # `name` in a docstring links to it where it resolves
numpydoc_show_class_members = False        # no member tables (their stubs are not made)
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()         # style checks off; the build still fails on
                                           # broken markup and missing targets
numpydoc_xref_param_type = False

# off-line: no inventory is fetched (CI has no network); external names stay plain text
intersphinx_mapping = {}
intersphinx_disabled_reftypes = ["*"]

html_theme = "pydata_sphinx_theme"
html_title = "topopt"
html_theme_options = {
    "external_links": [],
    "navbar_align": "left",
    "header_links_before_dropdown": 6,
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
html_sidebars = {"index": [], "getting-started": []}
html_show_sourcelink = False
html_css_files = ["topopt.css"]

# formulas: MathJax 3 from the docs extra, never from a CDN. The PyPI package
# sphinx-mathjax-offline ships MathJax 3.2.2's es5 build (byte for byte npm's mathjax 3.2.2)
# as data; its folder goes onto html_static_path, so that the built site carries its own
# copy in _build/html/_static/mathjax/ and every page with a formula loads it by a relative
# path: the pages render their formulas opened from disk, with no network
# (scripts/site/check_offline.py checks the built site; results/docs/ has a screenshot).
MATHJAX_DIST = "sphinx-mathjax-offline"


def mathjax_static() -> str:
    """The folder holding ``mathjax/tex-chtml.js``, from the installed docs extra."""
    from importlib import metadata
    try:
        folder = str(metadata.distribution(MATHJAX_DIST).locate_file(
            os.path.join(MATHJAX_DIST, "static")))
    except metadata.PackageNotFoundError:
        folder = None
    if folder is None or not os.path.isfile(os.path.join(folder, "mathjax", "tex-chtml.js")):
        raise RuntimeError(
            f"the site's formulas need a local MathJax, from the package {MATHJAX_DIST} "
            f"({'not installed' if folder is None else 'no mathjax/tex-chtml.js in ' + folder}): "
            "pip install -e '.[docs]' (the docs extra) before sphinx-build; the site "
            "never loads MathJax from the network")
    return folder


html_static_path.append(mathjax_static())
mathjax_path = "mathjax/tex-chtml.js"     # under _static/: relative from every page
