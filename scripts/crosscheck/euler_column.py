"""Euler's clamped-free column against `topopt.fem.buckling`: a mesh refinement table.

A column L x h = 20 x 1 (plane stress, unit thickness, E = 1, nu = 0), its
left end clamped, a unit axial compression spread as a uniform traction on
its free right end. Its critical load is Euler's (Timoshenko & Gere 1961,
Sec. 2.1)::

    P_E = pi^2 E I / (4 L^2),   I = h^3 / 12

and Timoshenko's with shear (Sec. 2.17), ``P_T = P_E / (1 + P_E / (k G A))``
with ``k = 5/6``, ``G = E / (2 (1 + nu))``, lies 0.12 % below it. The lowest
factor of ``(K + lambda G(u)) phi = 0`` on ``nx x ny`` bilinear squares is
printed with its error against both and the ratio of successive changes
``(lambda_{h/2} - lambda_{h/4}) / (lambda_h - lambda_{h/2})`` inverted (4:
second order), for ``ny = 1, 2, 4, 8, 16``; and the Richardson extrapolation
of the last two, the continuum's 2-D elasticity value, which lies between
``P_T`` and ``P_E`` minus the shear correction.

    python scripts/crosscheck/euler_column.py
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from topopt import fem                                                   # noqa: E402
from topopt.fem.buckling import BucklingSystem, buckling_factors         # noqa: E402

L, H, NU = 20.0, 1.0, 0.0


def critical_loads() -> tuple[float, float]:
    """``(P_E, P_T)``: Euler's and Timoshenko's (shear) critical loads of the column."""
    P_E = np.pi ** 2 * (H ** 3 / 12) / (4 * L ** 2)
    kGA = 5 / 6 * (1 / (2 * (1 + NU))) * H
    return P_E, P_E / (1 + P_E / kGA)


def column_factor(ny: int) -> float:
    """The lowest buckling factor of the column on ``20 ny x ny`` square elements."""
    nx = int(round(L / H)) * ny
    model = fem.elasticity(fem.rectangle(nx, ny, h=H / ny), nu=NU)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0))
    f = model.traction(lambda x: np.isclose(x[0], L), [-1.0 / H, 0.0])   # resultant 1
    E = np.ones(model.n_el)
    u = fem.solve(model.system(), E, f)
    return float(buckling_factors(BucklingSystem(model, nu=NU), E, E, u)[0])


def table(levels=(1, 2, 4, 8, 16)) -> list[dict]:
    """One row per mesh: ``ny``, ``nx``, ``lambda``, errors against ``P_E`` and ``P_T``."""
    P_E, P_T = critical_loads()
    rows = []
    for ny in levels:
        lam = column_factor(ny)
        rows.append(dict(ny=ny, nx=int(round(L / H)) * ny, lam=lam, err_E=lam / P_E - 1,
                         err_T=lam / P_T - 1))
    return rows


def main() -> int:
    P_E, P_T = critical_loads()
    print(f"clamped-free column {L:g} x {H:g}, E = 1, nu = {NU:g}: P_E = pi^2 EI/(4L^2) = "
          f"{P_E:.8f}, with shear P_T = {P_T:.8f} ({P_T / P_E - 1:+.3%})")
    print(f"{'mesh':>9} {'lambda_1':>12} {'vs P_E':>10} {'vs P_T':>10} {'ratio':>6}")
    rows = table()
    for k, r in enumerate(rows):
        ratio = "" if k < 2 else f"{(rows[k - 2]['lam'] - rows[k - 1]['lam']) / (rows[k - 1]['lam'] - r['lam']):6.2f}"
        print(f"{r['nx']:>4} x {r['ny']:<3} {r['lam']:12.8f} {r['err_E']:+10.4%} "
              f"{r['err_T']:+10.4%} {ratio}")
    lim = (4 * rows[-1]["lam"] - rows[-2]["lam"]) / 3
    print(f"Richardson limit {lim:.8f}: {lim / P_E - 1:+.4%} vs P_E, {lim / P_T - 1:+.4%} vs P_T")
    fine = rows[-2]
    ok = abs(fine["err_E"]) < 0.01
    print(f"{fine['nx']} x {fine['ny']}: lambda_1 = {fine['lam']:.8f}, {fine['err_E']:+.3%} from "
          f"P_E: {'within' if ok else 'NOT within'} 1 %")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
