#!/usr/bin/env python
"""Cost and outcome of the multi-start MPP search for the choices of ``n_starts``.

For small limit states in ``m`` variables: the number of calls of ``F`` (each a
value, gradient or Hessian evaluation through ``topopt.ad``), the wall time of
``find_mpp`` and the MPPs found, for ``n_starts = 1``, ``2`` (the mirror start),
``"auto"`` (the default: mirror plus every coordinate start for ``m <= 3``) and
``2 m + 1`` (every coordinate start in any ``m``). The cases:

- ``linear``: one half space ``theta_1 >= 3`` (one MPP);
- ``mirror``: ``theta_1^2 >= 9`` (two MPPs, mirror images);
- ``orthogonal``: ``theta_1 >= 3`` or ``theta_2 >= 3.5 + theta_1^2/2`` (two
  MPPs; the mirror start returns to the first).

Run from the repository root: ``python scripts/benchmarks/benchmark_multistart.py
[--repeats 3] [--out FILE] [--smallest]``; the times are medians of ``--repeats`` searches
(`harness.timed`), written with their spread, the machine and the commit by ``--out``.
``--smallest``: m = 2, ``n_starts`` 1 and ``"auto"``.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import harness  # noqa: E402
from topopt import reliability as rel  # noqa: E402

CALLS = [0]


def linear(t, d):
    CALLS[0] += 1
    return t[0]


def mirror(t, d):
    CALLS[0] += 1
    return t[0] ** 2


def orthogonal(t, d):
    CALLS[0] += 1
    return np.maximum(t[0] - 3.0, t[1] - 3.5 - 0.5 * t[0] ** 2)


CASES = [("linear", linear, 3.0), ("mirror", mirror, 9.0), ("orthogonal", orthogonal, 0.0)]


def search(F, z, m, ns):
    """One `find_mpp`: the calls of ``F`` and the MPPs found (or the reason it failed)."""
    CALLS[0] = 0
    try:
        r = rel.find_mpp(F, None, z, m=m, n_starts=ns)
        found = 1 + len(r.others)
    except rel.MPPError as err:
        found = f"({err.reason})"
    return CALLS[0], found


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.options(parser, repeats=3, smallest='m = 2, n_starts 1 and "auto"')
    args = parser.parse_args(argv)
    if args.smallest:
        args.repeats = 1
    rows = []
    print(f"{'case':11s} {'m':>2s} {'n_starts':>8s} {'calls':>6s} {'ms':>7s} {'MPPs':>5s}")
    for name, F, z in CASES:
        for m in (2,) if args.smallest else (2, 3, 4, 6):
            for ns in (1, "auto") if args.smallest else (1, 2, "auto", 2 * m + 1):
                seconds, (calls, found) = harness.timed(lambda: search(F, z, m, ns),
                                                        args.repeats)
                label = "auto" if ns == "auto" else str(ns)
                rows.append(dict(case=name, m=m, n_starts=label, calls=calls, mpps=found,
                                 seconds=seconds))
                print(f"{name:11s} {m:2d} {label:>8s} {calls:6d} "
                      f"{1e3 * seconds['median']:7.1f} {found!s:>5s}")
    if args.out:
        harness.write(args.out, harness.record({"command": harness.command(__file__, argv), "rows": rows},
                                               args.repeats))
    return rows


if __name__ == "__main__":
    main()
