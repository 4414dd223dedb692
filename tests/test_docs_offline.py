"""The site reads off-line: scripts/site/check_offline.py, docs/conf.py's local MathJax.

The built site (``docs/_build/html``, made by ``.ci/run`` after the tests) is
checked when it is there: every page with a formula loads the site's own
``_static/mathjax/tex-chtml.js`` by a relative path and nothing from the
network (``.ci/run`` runs the script on the fresh build too).
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "site", "check_offline.py")
SITE = os.path.join(ROOT, "docs", "_build", "html")
LOCAL = '<script defer="defer" src="{up}_static/mathjax/tex-chtml.js"></script>'
MATH = '<span class="math notranslate nohighlight">\\(x\\)</span>'


def run(root):
    return subprocess.run([sys.executable, SCRIPT, str(root)], capture_output=True, text=True)


def site(tmp_path, index, sub, mathjax=True):
    (tmp_path / "tutorials").mkdir()
    (tmp_path / "index.html").write_text(index.replace("{up}", ""))
    (tmp_path / "tutorials" / "page.html").write_text(sub.replace("{up}", "../"))
    if mathjax:
        (tmp_path / "_static" / "mathjax").mkdir(parents=True)
        (tmp_path / "_static" / "mathjax" / "tex-chtml.js").write_text("")
    return tmp_path


def test_a_site_with_its_own_mathjax_passes(tmp_path):
    done = run(site(tmp_path, f'{LOCAL}<p>{MATH}</p><a href="https://example.org">out</a>'
                              '<link rel="canonical" href="https://example.org/">',
                    f"{LOCAL}<div class=\"math notranslate nohighlight\">\\[y\\]</div>"))
    assert done.returncode == 0, done.stdout
    assert "2 pages, 2 with formulas, 0 findings" in done.stdout


def test_a_cdn_mathjax_or_a_page_without_the_local_copy_fails(tmp_path):
    cdn = '<script defer src="https://cdn.jsdelivr.net/npm/mathjax@4/tex-mml-chtml.js"></script>'
    done = run(site(tmp_path, f"{cdn}<p>{MATH}</p>",
                    '<script>window.MathJax = {loader: {paths: {mathjax: '
                    f'"https://cdn.jsdelivr.net/npm/mathjax@3/es5"}}}}}}</script><p>{MATH}</p>'
                    '<link rel="stylesheet" href="//fonts.example.org/a.css">'))
    assert done.returncode == 1
    out = done.stdout
    assert "index.html: <script> loads https://cdn.jsdelivr.net/npm/mathjax@4" in out
    assert "index.html: has formulas but loads no _static/mathjax/tex-chtml.js" in out
    assert "tutorials/page.html: an inline script names https://cdn.jsdelivr.net/npm/mathjax" in out
    assert "tutorials/page.html: <link> loads //fonts.example.org/a.css" in out
    assert "tutorials/page.html: has formulas but loads no" in out


def test_a_reference_to_a_missing_copy_fails(tmp_path):
    done = run(site(tmp_path, f"{LOCAL}<p>{MATH}</p>", "<p>no formula</p>", mathjax=False))
    assert done.returncode == 1
    assert "missing: the site carries no MathJax of its own" in done.stdout


def test_a_site_without_formulas_or_pages_is_an_error(tmp_path):
    assert run(tmp_path).returncode == 2
    assert run(site(tmp_path, "<p>text</p>", "<p>text</p>")).returncode == 2


def test_conf_names_the_fix_when_mathjax_is_missing(tmp_path):
    """docs/conf.py refuses to build without the local MathJax (no silent CDN)."""
    code = ("import importlib.metadata as m, runpy\n"
            "def missing(name):\n"
            "    raise m.PackageNotFoundError(name)\n"
            "m.distribution = missing\n"
            f"runpy.run_path({os.path.join(ROOT, 'docs', 'conf.py')!r})\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env=dict(os.environ, MPLBACKEND="Agg"))
    assert done.returncode != 0
    assert "RuntimeError: the site's formulas need a local MathJax" in done.stderr
    assert "sphinx-mathjax-offline (not installed)" in done.stderr
    assert "pip install -e '.[docs]'" in done.stderr


def test_conf_takes_mathjax_from_the_docs_extra():
    pytest.importorskip("sphinx")
    try:
        from importlib import metadata
        metadata.distribution("sphinx-mathjax-offline")
    except metadata.PackageNotFoundError:
        pytest.skip("the docs extra is not installed (pip install -e '.[docs]')")
    import runpy
    conf = runpy.run_path(os.path.join(ROOT, "docs", "conf.py"))
    assert conf["mathjax_path"] == "mathjax/tex-chtml.js"
    assert os.path.isfile(os.path.join(conf["html_static_path"][-1], "mathjax", "tex-chtml.js"))


@pytest.mark.skipif(not os.path.isfile(os.path.join(SITE, "index.html")),
                    reason="the site is not built (sphinx-build -b html docs docs/_build/html)")
def test_the_built_site_reads_offline():
    done = run(SITE)
    assert done.returncode == 0, done.stdout
    assert os.path.isfile(os.path.join(SITE, "tutorials", "reliability.html"))
