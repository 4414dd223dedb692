"""Write generated pages that changed, or (``check``) only name the stale ones.

Shared by ``docs/api/generate.py`` and ``docs/gallery/generate.py``.
"""

import os


def sync(folder: str, pages: dict, check: bool, what: str, command: str) -> int:
    """Write each ``{file: text}`` of `pages` under `folder` whose text changed; 0 or 1.

    With `check`, nothing is written and the stale files are printed (1 if any).
    """
    stale = []
    for name, text in pages.items():
        path = os.path.join(folder, name)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            stale.append(name)
            if not check:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
    if check and stale:
        print(f"stale {what} (run {command}):", ", ".join(stale))
        return 1
    return 0
