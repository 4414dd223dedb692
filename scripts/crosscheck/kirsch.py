"""Kirsch's stress concentration at a small circular hole, on mapped meshes of growing density.

A quarter of a square plate (side 2L = 20) with a hole of radius a = 1 (d/W
= 0.1) under remote tension 1 along x, symmetry supports on the cut edges;
`topopt.fem.shapes.plate_with_hole` meshes it with bilinear quadrilaterals
whose innermost ring lies on the circle. Kirsch (1898): sigma_theta = 3 at
the top of the hole in an infinite plate; for d/W = 0.1 Howland's
finite-width factor is about 3.03. Printed: the largest element-centre von
Mises stress (`topopt.responses.ElementStress`), where it sits and its error
against 3.

    python scripts/crosscheck/kirsch.py
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

MESHES = ((24, 20, 1.2), (48, 40, 1.1), (64, 50, 1.08), (96, 60, 1.07), (128, 80, 1.05))


def peak(n_theta: int, n_radial: int, growth: float, a: float = 1.0, L: float = 10.0):
    """``(largest von Mises stress, its element centroid, elements)`` of one mesh."""
    from topopt import fem
    from topopt.fem.shapes import plate_with_hole
    from topopt.responses.stress import ElementStress
    model = fem.elasticity(plate_with_hole(a, L, n_theta, n_radial, growth), nu=0.3)
    model.fix(nodes=lambda x: np.isclose(x[0], 0), components=0)
    model.fix(nodes=lambda x: np.isclose(x[1], 0), components=1)
    f = model.traction(lambda x: np.isclose(x[0], L), (1.0, 0.0))
    vm = ElementStress(model, nu=0.3).von_mises(model.solve(np.ones(model.n_el), f))
    e = int(np.argmax(vm))
    return float(vm[e]), fem.element_centroids(model.mesh)[e], model.n_el


def main() -> list:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    rows = []
    for n_theta, n_radial, growth in MESHES:
        t0 = time.perf_counter()
        vm, where, n_el = peak(n_theta, n_radial, growth)
        rows.append((n_theta, n_radial, growth, n_el, vm))
        print(f"{n_theta:4d} x {n_radial:3d} rings (growth {growth:.2f}, {n_el:6d} elements): "
              f"max sigma_vm = {vm:.4f} at ({where[0]:.3f}, {where[1]:.3f}), "
              f"{100 * (vm / 3 - 1):+.2f} % against 3  ({time.perf_counter() - t0:.2f} s)")
    return rows


if __name__ == "__main__":
    main()
