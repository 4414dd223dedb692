"""em_robust's designs between the grid's shifts: ``E(d)`` every 0.1 nm.

The 5 x 5 grid of `problems/em_robust.py` steps 1 nm in edge shift; a
resonant design's enhancement can dip over a few tenths of a nanometre in
between, which decides its Monte Carlo ``pf`` but not its grid's worst case.
This prints ``E(d; lambda)`` for ``d`` = -3 ... 3 nm in 0.1 nm steps at a
few wavelengths, for the designs of a finished run's checkpoints
(``OUT/checkpoint.nominal.npz``, ``checkpoint.robust.npz``,
``checkpoint.npz``), and marks ``d`` where ``E < E_t``.

    python scripts/studies/em_robust_scan.py OUT [--h 4] [--wavelengths 517,532,547]

For the committed run (``OUT = results/gallery/em_robust`` after
``python scripts/site/gallery.py em_robust``; 4 nm, ``E_t`` = 5.77, 2 shared
cores, about a minute per design): the robust design is below ``E_t`` for
``d`` = +0.2 ... +0.9 nm at all three wavelengths (2.0 at +0.3 nm, 532 nm),
between its training shifts 0 and 1 nm: P(0.15 < d < 0.95) = 0.27 of its
Monte Carlo pf 0.281; the reliability-based design is above ``E_t`` for
``|d| <= 2.6`` nm at 532 and 547 nm and falls below it from ``d`` = +2.7
nm, outside the PMA's disk ``|theta| <= 2.576`` (at 517 nm, 3 sigma off,
also at -0.4 nm: outside the disk too).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from topopt_problems import em_focus, em_robust  # noqa: E402
from topopt.formulations import FocusVariations  # noqa: E402

#: The phase checkpoints and how many trailing entries of x are not the design.
DESIGNS = (("nominal", "checkpoint.nominal.npz", 0), ("robust", "checkpoint.robust.npz", 1),
           ("reliability_based", "checkpoint.npz", 0))


def scan(var, x, wavelengths, beta: float) -> dict:
    """``{lambda: [(d, E), ...]}`` for ``d`` in -3 ... 3 nm, 0.1 nm apart."""
    shifts = np.round(np.arange(-3.0, 3.0001, 0.1), 2)
    return {lam: [(float(d), float(var.enhancement(x, d, lam, beta))) for d in shifts]
            for lam in wavelengths}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="a finished em_robust run's folder (its checkpoints)")
    parser.add_argument("--h", type=float, default=4.0, help="its element size, nm")
    parser.add_argument("--wavelengths", default="517,532,547", help="nm, comma-separated")
    args = parser.parse_args(argv)
    wavelengths = [float(v) for v in args.wavelengths.split(",")]
    var = FocusVariations(em_focus.EMFocus(h=args.h))
    beta = em_focus.BETAS[-1]
    target = None
    for name, file, extra in DESIGNS:
        path = os.path.join(args.out, file)
        if not os.path.isfile(path):
            parser.error(f"argument out: no {file} in {args.out} (a finished em_robust run)")
        x = np.load(path, allow_pickle=True)["x"]
        x = x[:len(x) - extra]
        if x.shape != (var.n,):
            parser.error(f"argument --h: {file} holds {x.size} variables, the {args.h:g} nm "
                         f"cell has {var.n}")
        if target is None:                                # E_t: a quarter of the nominal's E
            target = em_robust.TARGET_FRACTION * float(var.enhancement(x, 0.0, None, beta))
        for lam, curve in scan(var, x, wavelengths, beta).items():
            print(f"{name}, {lam:g} nm (E_t = {target:.2f}, * below):")
            print("  " + " ".join(f"{d:+.1f}:{e:.1f}{'*' if e < target else ''}"
                                  for d, e in curve), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
