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

Run from the repository root: ``python scripts/benchmarks/benchmark_multistart.py``.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
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


def main():
    print(f"{'case':11s} {'m':>2s} {'n_starts':>8s} {'calls':>6s} {'ms':>7s} {'MPPs':>5s}")
    for name, F, z in CASES:
        for m in (2, 3, 4, 6):
            for ns in (1, 2, "auto", 2 * m + 1):
                CALLS[0] = 0
                t = time.perf_counter()
                try:
                    r = rel.find_mpp(F, None, z, m=m, n_starts=ns)
                    found = 1 + len(r.others)
                except rel.MPPError as err:
                    found = f"({err.reason})"
                dt = time.perf_counter() - t
                label = "auto" if ns == "auto" else str(ns)
                print(f"{name:11s} {m:2d} {label:>8s} {CALLS[0]:6d} {1e3 * dt:7.1f} "
                      f"{found!s:>5s}")


if __name__ == "__main__":
    main()
