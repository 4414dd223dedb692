"""Keep the gallery pages in step with the committed results (no problem is re-run).

Each problem of ``topopt_problems.__all__`` with a committed ``results/gallery/<name>/`` has a
page ``docs/gallery/<name>.md``: a title ``# ...: `name```, its picture and command and
the text that says what the figures mean and what cross-checks them (written by
hand), then a block between the two markers below that this script writes from
``result.json``: the run's options, its figures and its history picture. It writes
``docs/gallery/index.md`` too: the thumbnails, one per problem.

``python docs/gallery/generate.py`` rewrites the blocks and the index;
``--check`` only says whether they are current (``tests/test_readme.py`` runs it).
"""

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GALLERY = os.path.join(ROOT, "results", "gallery")
BEGIN = "<!-- result.json: written by docs/gallery/generate.py, do not edit below -->"
END = "<!-- end of result.json -->"
SKIP = {"checkpoint", "resume", "signal", "plot", "objective_history", "constraint_history",
        "stage_history", "setup"}


def problem_names() -> list:
    sys.path.insert(0, ROOT)
    import topopt_problems
    return [n for n in topopt_problems.__all__ if os.path.isfile(os.path.join(GALLERY, n, "design.png"))]


def _value(v) -> str:
    if isinstance(v, bool) or v is None:
        return f"`{v}`"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, str):
        return f"`{v}`"
    if isinstance(v, list) and len(v) <= 8 and all(isinstance(x, (int, float)) for x in v):
        return ", ".join(_value(x) for x in v)
    return ""


def _rows(record: dict, prefix: str = "") -> list:
    rows = []
    for key, v in record.items():
        if key in SKIP:
            continue
        if isinstance(v, dict):
            rows += _rows(v, f"{prefix}{key}.")
        elif _value(v):
            rows.append((prefix + key, _value(v)))
    return rows


def _table(rows) -> list:
    if not rows:
        return []
    return ["| | |", "|---|---|"] + [f"| `{k}` | {v} |" for k, v in rows] + [""]


def reproduction(name: str) -> list:
    """The line on how the committed figure reproduces (``results/reproduce_gallery.json``)."""
    path = os.path.join(ROOT, "results", "reproduce_gallery.json")
    if not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8") as fh:
        record = json.load(fh)
    seeds = len(record["seeds"])
    if name in record.get("skipped", {}):
        return [f"Reproducibility: not re-run by `scripts/site/reproduce_gallery.py` "
                f"({record['skipped'][name]}).", ""]
    r = record.get("problems", {}).get(name)
    if r is None or "error" in r:
        return []
    p = r["perturbed"]
    return [f"Reproducibility (`scripts/site/reproduce_gallery.py`, "
            f"`results/reproduce_gallery.json`): `{r['figure']}` {r['committed']:.6g} "
            f"committed, {r['unperturbed']:.6g} re-run as typed, {min(p):.6g} to "
            f"{max(p):.6g} over {seeds} starts perturbed by {record['amplitude']:g}: "
            f"**spread {r['spread_pct']:.2g} %** (max - min over the median of these six "
            f"runs); the committed figure lies {abs(r['committed_off_pct']):.2g} % from their "
            f"median, {'within' if r['within'] else 'OUTSIDE'} max(spread, 0.01 %).", ""]


def block(name: str) -> str:
    """The generated part of the page: options, figures, history."""
    with open(os.path.join(GALLERY, name, "result.json"), encoding="utf-8") as fh:
        record = json.load(fh)
    result = dict(record.get("result", {}))
    rest = {k: v for k, v in record.items() if k != "result"}
    figures = dict(_rows(rest))
    figures.update(_rows(result))                 # "result" repeats status and evaluations
    lines = [BEGIN, "", "## The committed run", "",
             f"`results/gallery/{name}/result.json`, written by the command above with "
             f"`--out results/gallery/{name}` (`python scripts/site/gallery.py {name}` remakes it).",
             ""]
    lines += reproduction(name)
    setup = _rows(record.get("setup", {}))
    if setup:
        lines += ["Options:", ""] + _table(setup)
    lines += ["Figures:", ""] + _table(sorted(figures.items()))
    if os.path.isfile(os.path.join(GALLERY, name, "history.png")):
        lines += [f"![history of {name}](../../results/gallery/{name}/history.png)", ""]
    return "\n".join(lines + [END]) + "\n"


def title(name: str) -> str:
    with open(os.path.join(HERE, name + ".md"), encoding="utf-8") as fh:
        first = fh.readline()
    return re.sub(r"^# (.*?):\s*`\w+`\s*$", r"\1", first.strip())


def index(names) -> str:
    intro = open(os.path.join(HERE, "intro.txt"), encoding="utf-8").read().strip()
    lines = ["# Gallery", "", intro, "", "`````{container} gallery-grid", ""]
    for name in names:
        lines += ["````{container} gallery-item",
                  f"[![{title(name)}](../../results/gallery/{name}/design.png)]({name}.md)",
                  "", f"[{title(name)}]({name}.md)", "````", ""]
    lines += ["`````", "", "```{toctree}", ":hidden:", ""] + names + ["```"]
    return "\n".join(lines) + "\n"


def page(name: str) -> str:
    path = os.path.join(HERE, name + ".md")
    text = open(path, encoding="utf-8").read()
    if BEGIN in text:
        text = text[:text.index(BEGIN)]
    return text.rstrip("\n") + "\n\n" + block(name)


def main(argv) -> int:
    names = problem_names()
    missing = [n for n in names if not os.path.isfile(os.path.join(HERE, n + ".md"))]
    if missing:
        print("no gallery page (write docs/gallery/<name>.md first):", ", ".join(missing))
        return 1
    out = {n + ".md": page(n) for n in names}
    out["index.md"] = index(names)
    sys.path.insert(0, os.path.dirname(HERE))
    from sync import sync
    return sync(HERE, out, "--check" in argv, "gallery pages",
                "python docs/gallery/generate.py")

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
