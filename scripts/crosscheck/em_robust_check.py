"""Checks behind problems/em_robust.py: silver at 532 nm, Taylor rates, FORM/SORM against MC.

1. Silver's permittivity at the tutorial's 532 nm from each model against
   the tutorial's ``n = 0.054 + 3.429i`` (Christiansen et al. 2019): the
   Johnson & Christy table (linear, cubic spline) and the Rakic et al.
   (1998) Lorentz-Drude fit.
2. Taylor rates on em_focus's cell at h = 8 nm (seeded design, beta = 8):
   the band objective (`FocusBand`, 512/532/552 nm), the robust epigraph
   (`WorstFocus`, em_robust's 5 shifts x 3 wavelengths) and the
   reliability objective (``ln pf`` by FORM and SORM, `FocusReliability`).
3. ``pf`` of that design by FORM, SORM and Monte Carlo (N solves).

    python scripts/crosscheck/em_robust_check.py [N]        (default 1000)
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from topopt_problems import em_focus, em_robust  # noqa: E402
from topopt import ad  # noqa: E402
from topopt.design.materials import silver_index, silver_index_jc  # noqa: E402
from topopt.formulations import (FocusBand, FocusReliability, FocusVariations,  # noqa: E402
                                 WorstFocus)

TUTORIAL = (0.054 + 3.429j) ** 2


def silver() -> None:
    for name, n in (("J&C linear", silver_index_jc(532.0)),
                    ("J&C cubic spline", silver_index_jc(532.0, kind="cubic")),
                    ("Rakic 1998 LD fit", silver_index(532.0))):
        eps = complex(n) ** 2
        print(f"{name:18s} n = {complex(n):.4f}, eps = {eps:.4f}: "
              f"|eps - eps_tutorial| / |eps_tutorial| = {abs(eps - TUTORIAL) / abs(TUTORIAL):.4%}")


def rates(samples: int) -> None:
    rng = np.random.default_rng(7)
    prob = em_focus.EMFocus(h=8.0)
    p = rng.uniform(0.3, 0.9, prob.n)
    band = FocusBand(em_focus.SETUP, em_robust.BAND, index=lambda l: silver_index_jc(l, "cubic"),
                     h=8.0)
    z = band.prepare(p, 8.0)
    w = rng.standard_normal(band.m + 1)
    fun = lambda z: sum(wi * r for wi, r in zip(w, band.responses(z, 8.0)))  # noqa: E731
    print(f"Taylor rate, band epigraph: {ad.taylor_test(fun, z, rng.standard_normal(z.size)):.4f}")
    var = FocusVariations(prob)
    worst = WorstFocus(var, em_robust.SHIFTS, em_robust.BAND)
    pz = worst.start(p, 8.0)
    w = rng.standard_normal(len(worst.pairs) + 1)
    fun = lambda pz: sum(wi * r for wi, r in zip(w, worst.responses(pz, 8.0)))  # noqa: E731
    print(f"Taylor rate, robust epigraph: "
          f"{ad.taylor_test(fun, pz, rng.standard_normal(pz.size)):.4f}")
    E0 = float(var.enhancement(p, 0.0, None, 8.0))
    rel = FocusReliability(var, 0.8 * E0, em_robust.SIGMA_SHIFT, em_robust.SIGMA_WAVELENGTH,
                           beta=8.0)
    for method in ("form", "sorm"):
        r = ad.taylor_test(lambda p: rel.ln_pf(p, method), p, rng.standard_normal(p.size))
        print(f"Taylor rate, ln pf ({method.upper()}): {r:.4f}")
    mc = rel.monte_carlo(p, samples, seed=3)
    print(f"target E_t = {rel.target:.4f} (0.8 E(0) = 0.8 x {E0:.4f}): pf FORM "
          f"{np.exp(float(rel.ln_pf(p, 'form'))):.4f}, SORM {np.exp(float(rel.ln_pf(p, 'sorm'))):.4f}"
          f", MC {mc.pf:.4f} +- {mc.pf_std:.4f} ({samples} solves)")


if __name__ == "__main__":
    silver()
    rates(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
