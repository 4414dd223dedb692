"""scripts/check_links.py: a broken file link or anchor is reported, external links are not."""

import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "scripts", "check_links.py")


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
