"""Fabrication robustness of the EM focusing design: edge shifts, Taylor rates, nominal vs robust.

1. The closed-form edge shift of the Helmholtz filter (`topopt.robust.edge_shift`)
   against the filtered straight edge on `problems/em_focus.py`'s mesh (the
   measurement of tests/test_focus_robust.py::measured_shifts), for h = 1, 2, 4, 8.
2. Taylor rates of the three realizations' ``g`` and of the epigraph responses
   of `RobustFocus` (h = 8, beta = 8, seeded design).
3. The nominal design (`em_focus.run`, MAXEVAL per beta) and the robust one
   (`run_robust_focus` from it at beta = 32, MAXEVAL evaluations): the
   enhancement of each one's eroded / intermediate / dilated realizations,
   projected and as blueprints.

    python scripts/crosscheck/focus_robust_check.py [h] [maxeval]      (defaults 8, 40)
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "tests"))

from topopt import ad  # noqa: E402
from topopt.formulations.focus_robust import RobustFocus, run_robust_focus  # noqa: E402
from topopt.robust import edge_shift  # noqa: E402
from topopt_problems import em_focus  # noqa: E402
from test_focus_robust import measured_shifts  # noqa: E402


def shifts() -> None:
    etas = (0.9, 0.75, 0.6, 0.4, 0.25, 0.1)
    exact = np.array([edge_shift(e, em_focus.R_FILTER) for e in etas])
    print("r = %.4f nm; d(eta) = %s nm" % (em_focus.R_FILTER, np.round(exact, 4).tolist()))
    for h in (1.0, 2.0, 4.0, 8.0):
        d = measured_shifts(h, etas)
        print(f"h = {h:g} nm: measured {np.round(d.mean(axis=1), 4).tolist()}, "
              f"max |error| / h = {np.max(np.abs(d - exact[:, None])) / h:.3f}")


def rates() -> None:
    prob = em_focus.EMFocus(h=8.0)
    robust = RobustFocus(prob)
    rng = np.random.default_rng(1)
    p = rng.uniform(0.2, 0.8, prob.n)
    for k, name in enumerate(("eroded", "intermediate", "dilated")):
        r = ad.taylor_test(lambda p: robust.intensities(p, 8.0)[k], p,
                           rng.standard_normal(prob.n))
        print(f"Taylor rate g({name}): {r:.4f}")
    pz = robust.start(p, 8.0)
    w = rng.standard_normal(4)
    r = ad.taylor_test(lambda pz: sum(wi * v for wi, v in zip(w, robust.responses(pz, 8.0))),
                       pz, rng.standard_normal(pz.size))
    print(f"Taylor rate of the epigraph responses (random weights): {r:.4f}")


def compare(h: float, maxeval: int) -> None:
    prob = em_focus.EMFocus(h=h)
    nominal = em_focus.run(h=h, maxeval=maxeval)
    fig_n = RobustFocus(prob).figures(nominal.x, em_focus.BETAS[-1])
    _, res, fig_r = run_robust_focus(prob, maxeval=maxeval, p0=nominal.x,
                                     betas=(em_focus.BETAS[-1],))
    for name, fig in (("nominal", fig_n), ("robust", fig_r)):
        e, b = fig["field_enhancement"], fig["field_enhancement_blueprint"]
        print(f"{name:8s} E (e/i/d) projected " + " / ".join(f"{v:.2f}" for v in e.values())
              + f", worst {fig['worst_enhancement']:.2f}; blueprint "
              + " / ".join(f"{v:.2f}" for v in b.values())
              + f", worst {fig['worst_enhancement_blueprint']:.2f}")
    print(f"robust: {res.evaluations} evaluations, {fig_r['seconds']:.0f} s")


if __name__ == "__main__":
    h = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
    maxeval = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    shifts()
    rates()
    compare(h, maxeval)
