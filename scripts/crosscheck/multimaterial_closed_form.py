"""Two- and three-material bars in series and in parallel: topopt's FE with ordered SIMP
against the closed forms of the rule of mixtures.

::

    python scripts/crosscheck/multimaterial_closed_form.py

A bar of length L = ``nelx`` and height H = ``nely`` (unit square bilinear
elements, plane stress, unit thickness) is split into layers of the solid
phases of `topopt.design.ordered_simp`: each element's density is a pure
phase's ``rho_i``, so its modulus is ``E_i``. The left end has ``u_x = 0``
(the node at the origin also ``u_y = 0``), the right end is a rigid plate
moved by ``delta`` along x. The plate is made of the FE solves themselves:
a unit x-force at each right-end node gives the flexibility matrix ``C``
(``C_jk`` = x-displacement of node k under the force at node j; one solve
with ``n_right`` load columns); the forces ``C^-1 delta 1`` move every node
by ``delta``, and their sum ``P`` gives ``E_eff = P L / (H delta)``.

* series (layers across the length, fractions ``t_i`` of L), nu = 0: a
  uniaxial stress, ``1 / E_eff = sum_i t_i / E_i``;
* parallel (layers along the length, fractions ``t_i`` of H), nu = 0.3:
  a uniform strain with the same lateral contraction in every layer,
  ``E_eff = sum_i t_i E_i``.

Both fields are linear in each layer, which bilinear elements represent
exactly: the FE value equals the closed form to round-off.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from topopt import fem                                         # noqa: E402
from topopt.design.multimaterial import ordered_simp           # noqa: E402

#: (layout, rho, E, t): the layers' phases and their fractions of L (series) or H (parallel).
CASES = (
    ("series", (0.5, 1.0), (0.3, 1.0), (0.25, 0.75)),
    ("series", (0.5, 1.0), (0.3, 1.0), (0.5, 0.5)),
    ("series", (0.4, 0.7, 1.0), (0.2, 0.6, 1.0), (0.25, 0.25, 0.5)),
    ("parallel", (0.5, 1.0), (0.3, 1.0), (0.25, 0.75)),
    ("parallel", (0.5, 1.0), (0.3, 1.0), (0.5, 0.5)),
    ("parallel", (0.4, 0.7, 1.0), (0.2, 0.6, 1.0), (0.25, 0.25, 0.5)),
)
NU = {"series": 0.0, "parallel": 0.3}


def layered_density(mesh, layout: str, rho, t) -> np.ndarray:
    """Each element's density: the ``rho_i`` of the layer holding its centroid."""
    c = fem.element_centroids(mesh)
    axis = 0 if layout == "series" else 1
    s = (c[:, axis] - mesh.p[axis].min()) / np.ptp(mesh.p[axis])   # in (0, 1)
    layer = np.searchsorted(np.cumsum(t)[:-1], s, side="right")
    return np.asarray(rho, dtype=float)[layer]


def closed_form(layout: str, E, t) -> float:
    """``1 / sum t_i / E_i`` in series, ``sum t_i E_i`` in parallel."""
    E, t = np.asarray(E, dtype=float), np.asarray(t, dtype=float)
    return 1.0 / np.sum(t / E) if layout == "series" else float(np.sum(t * E))


def fe_modulus(layout: str, rho, E, t, nelx: int = 40, nely: int = 8,
               penal: float = 3.0) -> dict:
    """The bar's ``E_eff`` by topopt's FE with `ordered_simp` at the pure phases."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=NU[layout], E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0), components=0)
    model.fix(nodes=(0.0, 0.0), components=1)
    right = model.dofs(nodes=lambda x: np.isclose(x[0], nelx), components=0)
    F = np.zeros((model.ndof, right.size))
    F[right, np.arange(right.size)] = 1.0                       # a unit force per node
    x_phys = layered_density(mesh, layout, rho, t)
    Ee = ordered_simp(x_phys, rho, E, penal, 1e-9)
    U = np.asarray(fem.solve(model.system(), Ee, F))
    C = U[right, :]                                             # flexibility of the end
    delta = 1e-3
    P = float(np.sum(np.linalg.solve(C, np.full(right.size, delta))))
    fe = P * nelx / (nely * delta)
    exact = closed_form(layout, E, t)
    return {"layout": layout, "rho": tuple(rho), "E": tuple(E), "t": tuple(t),
            "E_eff_fe": fe, "E_eff_closed": exact, "rel_diff": abs(fe / exact - 1.0),
            "phase_E_error": float(np.max(np.abs(Ee - np.asarray(E)[
                np.searchsorted(rho, x_phys)])))}


def main() -> list:
    rows = [fe_modulus(*case) for case in CASES]
    print(f"{'layout':9} {'E_i':16} {'t_i':18} {'E_eff FE':>20} {'closed form':>20} "
          f"{'rel diff':>9} {'max|E(rho_i)-E_i|':>18}")
    for r in rows:
        print(f"{r['layout']:9} {str(r['E']):16} {str(r['t']):18} {r['E_eff_fe']:20.15f} "
              f"{r['E_eff_closed']:20.15f} {r['rel_diff']:9.1e} {r['phase_E_error']:18.1e}")
    return rows


if __name__ == "__main__":
    main()
