#!/usr/bin/env python
"""Accuracy and time of topopt's first-order system pf against scipy's multinormal cdf.

For every case of the system table (``tests/reliability_cases.py``, references
from ``scripts/crosscheck/crosscheck_systems.py``): the relative error and the time per
call of

- topopt: ``topopt.reliability.systems._ln_first_order`` (orthant
  probabilities by nested Gauss-Legendre, two orders, series as a sum of
  positive terms);
- scipy: ``scipy.stats.multivariate_normal.cdf`` (Genz's quasi-Monte-Carlo
  algorithm) as the previous code used it: ``1 - Phi_K(beta)`` for a series
  system, ``Phi_K(-beta)`` for a parallel one (``maxpts = 200000 K, abseps =
  1e-12, releps = 1e-8``; scipy's own bivariate routine for ``K = 2``).

Run from the repository root: ``python scripts/benchmarks/benchmark_orthant.py`` (about a minute;
``--repeats`` calls per median, 5 for topopt and 3 for scipy by default; ``--out`` writes
the rows with their spread, the machine and the commit; ``--smallest``: the cases of
K = 2, once).

Measured (one core, both orders; the references of ``scripts/crosscheck/crosscheck_systems.py``):

======  ===============  ===========  ===============  ============
K       ours: worst rel  ours: median scipy: worst rel scipy: median
======  ===============  ===========  ===============  ============
2       7e-15            0.6 ms       3e-13            0.2 ms
3       2.7e-14          3.9 ms       7.6e-2           130 ms
4       4.9e-14          22 ms        7.7e-5           243 ms
5       4.7e-14          70-300 ms    3.8e-4           265 ms
======  ===============  ===========  ===============  ============

Independent groups of variables are a product (about 1 ms). Against the
independent references the series and parallel systems of 2-5 components, pf
from 2e-13 to 0.3, are right to 5e-14 relative. On random correlation
matrices (``K = 3, 4``; a sixth of them singular, a third with a correlation
within 1e-10..1e-3 of ``+-1``, bounds in ``[-2, 5]``) the choice of the outer
variable changes ``ln P`` by less than 2e-9 (``K = 3``; 2e-7 once, for a
singular matrix at ``P = 2e-7``, where the error estimate said 3e-13: the known
weak spot) and 3e-13 (``K = 4``) where ``P > 1e-300``; series systems of 3-5
such components summed in every component order agree to 1e-10.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
import scipy.stats  # noqa: E402

import harness  # noqa: E402

from reliability_cases import SYSTEM_CASES, SYSTEM_REFERENCE  # noqa: E402
from topopt.reliability.systems import _ln_first_order  # noqa: E402


def scipy_pf(kind, b, R):
    k = len(b)
    x = -b if kind == "parallel" else b
    cdf = scipy.stats.multivariate_normal.cdf(x, mean=np.zeros(k), cov=R, allow_singular=True,
                                              maxpts=200_000 * k, abseps=1e-12, releps=1e-8,
                                              rng=np.random.default_rng(0))
    return cdf if kind == "parallel" else 1.0 - cdf


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.options(parser, repeats=None, smallest="the cases of K = 2")
    args = parser.parse_args(argv)
    ours_n, scipy_n = (1, 1) if args.smallest else (args.repeats or 5, args.repeats or 3)
    print(f"{'case':16s} {'K':>2s} {'pf':>10s} {'topopt err':>10s} {'ms':>7s} "
          f"{'scipy err':>10s} {'ms':>7s} {'in bounds':>9s}")
    from topopt.reliability.systems import _parallel_bounds, ditlevsen_bounds
    worst, rows = {}, []
    for name, kind, R, betas, _ in SYSTEM_CASES:
        if args.smallest and len(betas) != 2:
            continue
        b, R = np.asarray(betas, float), np.asarray(R, float)
        exact = SYSTEM_REFERENCE[name]
        s_ours, (ln, _) = harness.timed(lambda: _ln_first_order(kind, b, R), ours_n)
        ours = np.exp(ln)
        s_sc, theirs = harness.timed(lambda: scipy_pf(kind, b, R), scipy_n)
        t_ours, t_sc = s_ours["median"], s_sc["median"]
        lo, hi = ditlevsen_bounds(b, R) if kind == "series" else _parallel_bounds(b, R)
        e1, e2 = abs(ours - exact) / exact, abs(theirs - exact) / exact
        k = len(b)
        w = worst.setdefault(k, [0.0, 0.0, [], []])
        w[0], w[1] = max(w[0], e1), max(w[1], e2)
        w[2].append(t_ours)
        w[3].append(t_sc)
        rows.append(dict(case=name, kind=kind, K=k, pf=exact, topopt_error=float(e1),
                         scipy_error=float(e2), topopt_seconds=s_ours, scipy_seconds=s_sc,
                         in_bounds=bool(lo <= theirs <= hi)))
        print(f"{name:16s} {k:2d} {exact:10.3e} {e1:10.1e} {1e3 * t_ours:7.1f} {e2:10.1e} "
              f"{1e3 * t_sc:7.1f} {str(bool(lo <= theirs <= hi)):>9s}")
    print("\nK  topopt: worst rel. error, median ms | scipy: worst rel. error, median ms")
    for k, (e1, e2, t1, t2) in sorted(worst.items()):
        print(f"{k}  {e1:9.1e} {1e3 * harness.spread(t1)['median']:8.1f}       | {e2:9.1e} "
              f"{1e3 * harness.spread(t2)['median']:8.1f}")
    if args.out:
        harness.write(args.out, harness.record(
            {"command": harness.command(__file__, argv), "repeats_topopt": ours_n, "repeats_scipy": scipy_n,
             "rows": rows}, ours_n))
    return rows


if __name__ == "__main__":
    main()
