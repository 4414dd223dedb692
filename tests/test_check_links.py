"""scripts/site/check_links.py: a broken file link or anchor is reported, external links are not."""

import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "scripts", "site", "check_links.py")


def run(root):
    return subprocess.run([sys.executable, SCRIPT, str(root)], capture_output=True, text=True)


def site(tmp_path, body):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.html").write_text('<h1 id="top">t</h1><img src="../pic.png">')
    (tmp_path / "pic.png").write_bytes(b"")
    (tmp_path / "index.html").write_text(f'<p id="here">{body}</p>')
    return tmp_path


def test_good_links_pass(tmp_path):
    done = run(site(tmp_path, '<a href="sub/page.html#top">a</a> <a href="#here">b</a> '
                              '<a href="https://example.org/x.html#nothing">c</a> '
                              '<a href="sub/page.html">d</a>'))
    assert done.returncode == 0, done.stdout
    assert "2 pages, 0 broken" in done.stdout


def test_a_missing_file_and_a_missing_anchor_fail(tmp_path):
    done = run(site(tmp_path, '<a href="sub/gone.html">a</a> <a href="sub/page.html#nope">b</a>'
                              ' <img src="missing.png">'))
    assert done.returncode == 1
    assert "sub/gone.html (no such file)" in done.stdout
    assert "sub/page.html#nope (no such anchor)" in done.stdout
    assert "missing.png (no such file)" in done.stdout


def test_no_pages_is_an_error(tmp_path):
    assert run(tmp_path).returncode == 2


# scripts/site/check_md_links.py: the relative links of the Markdown files, as GitHub reads them

MD_SCRIPT = os.path.join(os.path.dirname(SCRIPT), "check_md_links.py")


def run_md(root):
    return subprocess.run([sys.executable, MD_SCRIPT, str(root)], capture_output=True, text=True)


def md_tree(tmp_path, body):
    (tmp_path / "docs" / "notes").mkdir(parents=True)
    (tmp_path / "docs" / "notes" / "runs.md").write_text(
        "# Runs, checkpoints and resume\n\n## Resume: `--resume`\n\n(kept)=\n## Resume\n")
    (tmp_path / "docs" / "tutorials").mkdir()
    (tmp_path / "docs" / "tutorials" / "own.md").write_text(body)
    (tmp_path / "README.md").write_text("[runs](docs/notes/runs.md#runs-checkpoints-and-resume)\n")
    return tmp_path


def test_md_links_resolve_from_the_page_folder(tmp_path):
    """A tutorial's ``../notes/runs.md`` with GitHub's heading slugs (a repeated heading
    gets ``-1``; punctuation and code marks dropped) and an explicit ``(kept)=`` target."""
    done = run_md(md_tree(tmp_path, "[a](../notes/runs.md) [b](../notes/runs.md#resume---resume)"
                                    " [c](../notes/runs.md#resume) [d](../notes/runs.md#kept)\n"
                                    "```\n[not a link](nowhere.md)\n```\n`[code](gone.md)`\n"))
    assert done.returncode == 0, done.stdout
    assert "3 Markdown pages, 0 broken" in done.stdout


def test_md_links_that_do_not_resolve_fail(tmp_path):
    """The tutorial's old link to a README section that moved, a path written from the
    checkout's root instead of the page's folder, and a missing anchor."""
    done = run_md(md_tree(tmp_path, "see [runs](../../README.md#runs-checkpoints-and-resume)\n"
                                    "[b](docs/notes/runs.md)\n<img src=\"pic.png\">\n"
                                    "[c](../notes/runs.md#resume-2)\n"))
    assert done.returncode == 1
    assert "docs/tutorials/own.md:1: ../../README.md#runs-checkpoints-and-resume (no such anchor)" \
        in done.stdout
    assert "docs/tutorials/own.md:2: docs/notes/runs.md (no such file)" in done.stdout
    assert "own.md:3: pic.png (no such file)" in done.stdout
    assert "own.md:4: ../notes/runs.md#resume-2 (no such anchor)" in done.stdout


def test_the_checkouts_md_links_resolve():
    """Every relative link of README.md, docs/ and the other Markdown files of this checkout."""
    done = run_md(os.path.dirname(os.path.dirname(SCRIPT)))
    assert done.returncode == 0, done.stdout
