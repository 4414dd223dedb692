"""The nominal (532 nm) and the min-max band designs of `topopt_problems.em_focus`, over the band.

Both are optimized on the same cell (``--h``, nm) with the same budget
(``--maxeval`` MMA evaluations per beta stage, beta 8 -> 16 -> 32): the
nominal one by `topopt_problems.em_focus.run` (the tutorial's silver ``0.054 +
3.429i`` at 532 nm), the band one by `topopt.formulations.focus_band`
(``--band`` wavelengths; silver from the Johnson & Christy 1972 table,
``--index jc``, or the Rakić 1998 Lorentz-Drude fit, ``--index rakic``).
Each design, projected with beta = 32, is then evaluated at every
wavelength of the band with the same silver model; printed: the field
enhancement |E(x0)|/|E_inc| per wavelength and the worst.

Measured (h = 8, 40 per stage, ratio form, 2 shared cores: 19 s and 56 s):

    wavelength nm     500.0    532.0    560.0    worst
    nominal           15.33    16.65    13.67    13.67
    band              16.51    18.40    16.52    16.51

    python scripts/studies/em_band.py [--h 8] [--maxeval 15] [--band 500 532 560] [--index jc]
                              [--form ratio] [--t-max 1000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from topopt_problems import em_focus  # noqa: E402
from topopt.design.materials import silver_index, silver_index_jc  # noqa: E402
from topopt.formulations.focus_band import FORMS, FocusBand, run_focus_band  # noqa: E402

INDEX = {"jc": silver_index_jc, "rakic": silver_index}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--h", type=float, default=8.0)
    ap.add_argument("--maxeval", type=int, default=15)
    ap.add_argument("--band", type=float, nargs="+", default=[500.0, 532.0, 560.0])
    ap.add_argument("--index", choices=sorted(INDEX), default="jc")
    ap.add_argument("--form", choices=FORMS, default="ratio")
    ap.add_argument("--t-max", type=float, default=1e3)
    args = ap.parse_args(argv)
    band = FocusBand(em_focus.SETUP, args.band, index=INDEX[args.index], h=args.h,
                     form=args.form, t_max=args.t_max)
    t0 = time.perf_counter()
    nominal = em_focus.run(h=args.h, maxeval=args.maxeval)
    t1 = time.perf_counter()
    robust = run_focus_band(band, maxeval=args.maxeval)
    t2 = time.perf_counter()
    beta = em_focus.SETUP.betas[-1]
    out = {"nominal": band.enhancements(nominal.x, beta), "band": band.enhancements(robust.x, beta)}
    print(f"h = {args.h} nm, {args.maxeval} evaluations per stage, silver: {args.index}, "
          f"{args.form} form, t_max {args.t_max:g}; band t at its bound: {robust['t_at_bound']}")
    print("wavelength nm   " + "  ".join(f"{lam:7.1f}" for lam in band.wavelengths) + "    worst")
    for name, E in out.items():
        print(f"{name:14s}  " + "  ".join(f"{e:7.2f}" for e in E) + f"  {E.min():7.2f}")
    print(f"times: nominal {t1 - t0:.0f} s, band {t2 - t1:.0f} s")
    return out


if __name__ == "__main__":
    main()
