"""Behaviour unchanged: every problem's default run gives the numbers it gave before.

::

    python scripts/site/check_unchanged.py --write results/unchanged.json   # record (before a change)
    python scripts/site/check_unchanged.py --compare results/unchanged.json # after it: exit 1 on a difference

Each problem of ``topopt_problems.__all__`` runs with its defaults (``--out`` a scratch
folder, ``--quiet``), one after the other; every number in its ``result.json``
(metrics, setup, the objective, constraint and stage histories, the plot's
supports and loads) is compared at 1e-12 relative (1e-300 absolute, for exact
zeros), every string exactly. Wall-clock fields (``seconds``) and the scratch
paths (``checkpoint``, ``resume``) are left out. The 14 default runs take about
6 minutes on 2 cores. Issue 24 (the package restructuring) was checked this way:
the record made on the code before it, the comparison on the code after it::

    git worktree add /tmp/before 20afe20 && cp scripts/site/check_unchanged.py /tmp/before/scripts/
    PYTHONPATH=/tmp/before python /tmp/before/scripts/site/check_unchanged.py --write /tmp/before.json
    python scripts/site/check_unchanged.py --compare /tmp/before.json     # "unchanged: ... of 14 problems"

(the record, 0.8 MB, is not committed: it is remade in 6 minutes).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = {"seconds", "total_seconds", "checkpoint", "resume"}
RTOL, ATOL = 1e-12, 1e-300


def flatten(value, path="") -> dict:
    """``{"a.b[2]": leaf}`` for every leaf of a JSON value, without the `SKIP` keys."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() if key not in SKIP
                for k, v in flatten(item, f"{path}.{key}" if path else key).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in flatten(item, f"{path}[{i}]").items()}
    return {path: value}


def run_all(names) -> dict:
    """The flattened ``result.json`` of each problem's default run."""
    found = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            out = os.path.join(scratch, name)
            cmd = [sys.executable, os.path.join(ROOT, "problems", f"{name}.py"), "--quiet",
                   "--out", out]
            print(" ".join(cmd), flush=True)
            subprocess.run(cmd, check=True, cwd=scratch)
            with open(os.path.join(out, "result.json")) as fh:
                found[name] = flatten(json.load(fh))
    return found


def differences(before: dict, after: dict) -> list[str]:
    """Lines naming every leaf that differs (or is missing on one side)."""
    lines = []
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name, {}), after.get(name, {})
        for key in sorted(set(b) | set(a)):
            x, y = b.get(key, "<missing>"), a.get(key, "<missing>")
            numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y))
            same = (math.isclose(x, y, rel_tol=RTOL, abs_tol=ATOL) or x == y) if numbers else x == y
            if not same:
                lines.append(f"{name}: {key}: before {x!r}, after {y!r}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="JSON", help="record the numbers of this checkout")
    group.add_argument("--compare", metavar="JSON", help="compare this checkout with a record")
    parser.add_argument("names", nargs="*", help="problems (default: all)")
    args = parser.parse_args(argv)
    sys.path.insert(0, ROOT)
    import topopt_problems
    names = args.names or list(topopt_problems.__all__)
    found = run_all(names)
    if args.write:
        with open(args.write, "w") as fh:
            json.dump(found, fh, indent=0, sort_keys=True)
        print(f"{sum(map(len, found.values()))} numbers of {len(found)} problems in {args.write}")
        return 0
    with open(args.compare) as fh:     # a record may hold fields SKIP has learnt to leave out since
        before = {name: {k: v for k, v in leaves.items() if k.rpartition(".")[2] not in SKIP}
                  for name, leaves in json.load(fh).items() if name in names}
    lines = differences(before, found)
    print("\n".join(lines) or f"unchanged: {sum(map(len, found.values()))} numbers of "
          f"{len(found)} problems equal to {RTOL:g} relative")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
