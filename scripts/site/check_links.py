"""Check the internal links of the built site: ``python scripts/site/check_links.py [HTML_DIR]``.

Every relative ``href`` / ``src`` of every ``.html`` page under HTML_DIR (default
``docs/_build/html``) must name a file there, and a ``#anchor`` an ``id`` (or ``name``)
in the page it points to. External links (``http:``, ``https:``, ``mailto:``, ``data:``,
``//host``) are skipped: nothing is fetched; so are ``_static/`` and ``_sources/``
(the theme's template fragments and the page sources, not pages). Prints each broken link with its page and
exits with status 1 when there is one, 2 when HTML_DIR has no page.
"""

import os
import sys
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

SKIPPED = ("_static", "_sources")
EXTERNAL = ("http:", "https:", "mailto:", "data:", "javascript:", "ftp:", "tel:")


class Page(HTMLParser):
    """The links (tag, attribute, value) and the ids of one page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if value is None:
                continue
            if key in ("id", "name") and (key == "id" or tag == "a"):
                self.ids.add(value)
            if key in ("href", "src") and not (tag == "link" and key == "href"
                                                and value.startswith("#")):
                self.links.append((tag, key, value))

    handle_startendtag = handle_starttag


def parse(path: str, kind=Page):
    """The page at `path` read by the parser `kind` (an HTMLParser)."""
    page = kind()
    with open(path, encoding="utf-8", errors="replace") as fh:
        page.feed(fh.read())
    return page


def site_pages(root: str):
    """The ``.html`` pages under `root`, in order, without the theme's templates and the page
    sources (`SKIPPED`, which hold no pages)."""
    for folder, subfolders, files in os.walk(root):
        if folder == root:
            subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED)
        for name in sorted(files):
            if name.endswith(".html"):
                yield os.path.join(folder, name)


def broken_links(root: str) -> tuple:
    """``(number of pages, [(page, link, why)])`` over the site under ``root``."""
    pages = {os.path.normpath(path): parse(path) for path in site_pages(root)}
    broken = []
    for path, page in sorted(pages.items()):
        for _, _, link in page.links:
            if link.startswith(EXTERNAL) or link.startswith("//") or not link.strip():
                continue
            parts = urlsplit(link)
            if parts.scheme:
                continue
            target = path if not parts.path else os.path.normpath(
                os.path.join(os.path.dirname(path), unquote(parts.path)))
            if os.path.isdir(target):
                target = os.path.join(target, "index.html")
            rel = os.path.relpath(path, root)
            if not os.path.isfile(target):
                broken.append((rel, link, "no such file"))
            elif parts.fragment and target.endswith(".html"):
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append((rel, link, "no such anchor"))
    return len(pages), broken


def main(argv) -> int:
    root = argv[0] if argv else os.path.join("docs", "_build", "html")
    count, broken = broken_links(root)
    if count == 0:
        print(f"no HTML page under {root}", file=sys.stderr)
        return 2
    for page, link, why in broken:
        print(f"{page}: {link} ({why})")
    print(f"{count} pages, {len(broken)} broken internal links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
