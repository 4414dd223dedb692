"""Check that the built site reads off-line: ``python scripts/site/check_offline.py [HTML_DIR]``.

Over every ``.html`` page under HTML_DIR (default ``docs/_build/html``):

* nothing a page loads comes from the network: no ``<script src>``, ``<img src>``,
  ``<iframe>``/``<source>``/``<video>``/``<audio>``/``<embed>`` ``src``, ``<object data>``
  nor ``<link href>`` other than a link to navigate (``rel`` canonical, alternate, next,
  prev, ...) is an ``http:``, ``https:`` or ``//host`` URL, and no inline script names a
  MathJax URL (links that a reader follows, ``<a href>``, may point anywhere);
* a page with a formula (an element of class ``math``, as Sphinx writes them) loads
  the site's own MathJax: a ``<script src>`` with a relative path to
  ``_static/mathjax/tex-chtml.js`` under HTML_DIR, and that file is there.

Prints each finding with its page and the number of pages with formulas; exits with
status 1 on a finding, 2 when HTML_DIR has no page or no page has a formula (the
tutorials and notes have formulas: none means the check reads the wrong site).
"""

import os
import re
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

from check_links import parse, site_pages   # the same pages, read the same way

MATHJAX = os.path.join("_static", "mathjax", "tex-chtml.js")
LOADED = {"script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src",
          "audio": "src", "embed": "src", "track": "src", "object": "data"}
NAVIGATION = {"canonical", "alternate", "next", "prev", "previous", "index", "search",
              "author", "license", "help", "top", "up", "first", "last", "home", "copyright"}
REMOTE_MATHJAX = re.compile(r"(https?:)?//[^\s\"'<>]*mathjax", re.IGNORECASE)


def remote(url: str) -> bool:
    return url.strip().lower().startswith(("http:", "https:", "//"))


class Page(HTMLParser):
    """What one page loads (tag, url), its inline scripts and whether it has a formula."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.loads, self.inline, self.has_math = [], [], False
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = {k: (v or "") for k, v in attrs}
        if "math" in attrs.get("class", "").split():
            self.has_math = True
        if tag in LOADED and attrs.get(LOADED[tag]):
            self.loads.append((tag, attrs[LOADED[tag]]))
        if tag == "link" and attrs.get("href"):
            rel = set(attrs.get("rel", "").lower().split())
            if not rel or not rel <= NAVIGATION:
                self.loads.append((tag, attrs["href"]))
        self._in_script = tag == "script" and not attrs.get("src")

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.inline.append(data)


def findings(root: str) -> tuple:
    """``(pages, pages with formulas, [(page, what)])`` over the site under ``root``."""
    mathjax = os.path.normpath(os.path.join(root, MATHJAX))
    pages = math_pages = 0
    found = []
    for path in site_pages(root):
        folder, rel, page = os.path.dirname(path), os.path.relpath(path, root), parse(path, Page)
        pages += 1
        for tag, url in page.loads:
            if remote(url):
                found.append((rel, f"<{tag}> loads {url} from the network"))
        for body in page.inline:
            for match in REMOTE_MATHJAX.finditer(body):
                found.append((rel, f"an inline script names {match.group(0)}"))
        if not page.has_math:
            continue
        math_pages += 1
        local = [url for tag, url in page.loads if tag == "script" and not remote(url)
                 and not urlsplit(url).scheme and os.path.normpath(os.path.join(
                     folder, unquote(urlsplit(url).path))) == mathjax]
        if not local:
            found.append((rel, f"has formulas but loads no {MATHJAX} by a relative path"))
    if math_pages and not os.path.isfile(mathjax):
        found.append((MATHJAX, "missing: the site carries no MathJax of its own"))
    return pages, math_pages, found


def main(argv) -> int:
    root = argv[0] if argv else os.path.join("docs", "_build", "html")
    pages, math_pages, found = findings(root)
    for page, what in found:
        print(f"{page}: {what}")
    print(f"{pages} pages, {math_pages} with formulas, {len(found)} findings "
          f"(off-line: nothing loaded from the network, MathJax from {MATHJAX})")
    if pages == 0 or math_pages == 0:
        print(f"no {'page' if pages == 0 else 'page with a formula'} under {root}",
              file=sys.stderr)
        return 2
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
