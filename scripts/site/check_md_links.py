"""Check the relative links of the Markdown files as GitHub reads them.

``python scripts/site/check_md_links.py [ROOT]``: every ``.md`` file under ROOT
(default: the checkout; the build folders, virtual environments and ``.git``
left out) and the Markdown cells of every ``.ipynb`` under ``docs/``. A link
``[text](path)``, ``![alt](path)``, ``<a href="path">`` or ``<img src="path">``
that is not external must name a file or folder relative to the page's own
folder (GitHub's rule: the README's ``docs/notes/runs.md``, a tutorial's
``../notes/runs.md``), and a ``#anchor`` a heading of the target page under
GitHub's slug (lower case, punctuation dropped, spaces as ``-``, ``-1``, ``-2``
for repeats) or an explicit ``(anchor)=`` / ``<a id>`` / ``<a name>``. Code
blocks and inline code are not links. Prints each broken link with its page
and line; exits with status 1 when there is one, 2 when ROOT has no page.
``scripts/site/check_links.py`` checks the built site's links the same way.
"""

import json
import os
import re
import sys
from urllib.parse import unquote

SKIPPED = {".git", "_build", "jupyter_execute", "generated", "node_modules", ".ci-venv",
           ".venv", "venv", "build", "dist", "__pycache__", ".pytest_cache"}
EXTERNAL = ("http:", "https:", "mailto:", "data:", "ftp:", "tel:", "//")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", re.I)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
TARGET = re.compile(r"^\(([\w\-.:]+)\)=\s*$|<a\s+(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
FENCE = re.compile(r"^ {0,3}(```+|~~~+)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text: ``"Runs, checkpoints and resume"`` ->
    ``"runs-checkpoints-and-resume"``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)       # a link: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose(lines, blank_code=True):
    """``(line number, text)`` of the lines outside fenced code, inline code blanked."""
    fence = None
    for number, line in enumerate(lines, 1):
        match = FENCE.match(line)
        if match:
            mark = match.group(1)
            if fence is None:
                fence = mark[0] * 3
            elif mark.startswith(fence):
                fence = None
            continue
        if fence is None:
            yield number, re.sub(r"(`+)(?:(?!\1).)+\1", "", line) if blank_code else line


def page_lines(path: str) -> list:
    if path.endswith(".ipynb"):
        with open(path, encoding="utf-8") as fh:
            cells = json.load(fh).get("cells", [])
        lines = []
        for cell in cells:
            if cell.get("cell_type") == "markdown":
                source = cell.get("source", "")
                text = "".join(source) if isinstance(source, list) else source
                lines += text.splitlines() + [""]
        return lines
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read().splitlines()


def anchors(path: str) -> set:
    """The anchors of a Markdown page (GitHub's heading slugs and explicit targets)."""
    seen, found = {}, set()
    for _, line in prose(page_lines(path), blank_code=False):
        match = HEADING.match(line)
        if match:
            base = slug(match.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        for target in TARGET.finditer(line):
            found.add(target.group(1) or target.group(2))
    return found


def pages(root: str) -> list:
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED
                               and not d.endswith(".egg-info"))
        rel = os.path.relpath(folder, root)
        for name in sorted(files):
            if name.endswith(".md") or (name.endswith(".ipynb") and
                                        rel.split(os.sep)[0] == "docs"):
                found.append(os.path.join(folder, name))
    return found


def broken_links(root: str) -> tuple:
    """``(number of pages, [(page, line, link, why)])`` over the Markdown under `root`."""
    files = pages(root)
    cache = {}
    broken = []
    for path in files:
        rel = os.path.relpath(path, root)
        for number, line in prose(page_lines(path)):
            for link in LINK.findall(line) + HTML.findall(line):
                if link.lower().startswith(EXTERNAL):
                    continue
                target_path, _, fragment = link.partition("#")
                target = (path if not target_path else os.path.normpath(
                    os.path.join(os.path.dirname(path), unquote(target_path))))
                if not os.path.exists(target):
                    broken.append((rel, number, link, "no such file"))
                elif fragment and target.endswith((".md", ".ipynb")):
                    if target not in cache:
                        cache[target] = anchors(target)
                    if unquote(fragment) not in cache[target]:
                        broken.append((rel, number, link, "no such anchor"))
    return len(files), broken


def main(argv) -> int:
    root = argv[0] if argv else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    count, broken = broken_links(root)
    if count == 0:
        print(f"no Markdown page under {root}", file=sys.stderr)
        return 2
    for page, number, link, why in broken:
        print(f"{page}:{number}: {link} ({why})")
    print(f"{count} Markdown pages, {len(broken)} broken relative links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
