"""Regenerate the committed gallery: each problem's defaults, written to ``results/gallery/<name>/``.

::

    python scripts/site/gallery.py                    # every problem (1.5 hours on 2 cores)
    python scripts/site/gallery.py mbb_beam inverter  # some of them
    python scripts/site/gallery.py --list             # the commands, without running them

A problem script writes to ``results/<name>/`` under the working directory
by default (`topopt.cli`); the gallery's pictures (docs/gallery/) are the committed
``results/gallery/<name>/`` folders, which only this script (or the printed command)
writes, each run with the problem's defaults and ``--out`` naming its folder.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GALLERY = os.path.join(ROOT, "results", "gallery")

#: Extra runs beyond the defaults: (folder under results/gallery/, problem, its options).
EXTRA = (("em_focus/tutorial_resolution", "em_focus", ("--h", "1", "--verify")),
         ("printable_cantilever/unfiltered", "printable_cantilever", ("--unfiltered",)),
         *((f"pipe_bend/{f}", "pipe_bend", ("--re", r)) for f, r in
           (("stokes", "0"), ("re10", "10"), ("re100", "100"))),
         ("double_pipe/aspect1", "double_pipe", ("--aspect", "1")))


def commands(names=None) -> list[list[str]]:
    """The command lines that make the gallery of problems `names` (None: all)."""
    sys.path.insert(0, ROOT)
    import topopt_problems
    names = list(topopt_problems.__all__) if not names else list(names)
    unknown = [n for n in names if n not in topopt_problems.__all__]
    if unknown:
        raise ValueError(f"problem must be one of {', '.join(topopt_problems.__all__)}, "
                         f"got {', '.join(map(repr, unknown))}")
    runs = [(name, name, ()) for name in names]
    runs += [run for run in EXTRA if run[1] in names]
    return [[sys.executable, os.path.join(ROOT, "problems", f"{problem}.py"), *options,
             "--out", os.path.join(GALLERY, *folder.split("/"))]
            for folder, problem, options in runs]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="problems (default: all)")
    parser.add_argument("--list", action="store_true", help="print the commands only")
    args = parser.parse_args(argv)
    try:
        runs = commands(args.names)
    except ValueError as e:
        parser.error(f"argument names: {e}")
    for cmd in runs:
        print(" ".join(cmd), flush=True)
        if not args.list:
            subprocess.run(cmd, check=True, cwd=ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
