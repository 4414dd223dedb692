"""Cross-check of the self-weight analysis against pyMOTO 2.0.1 (compliance and gradient).

The half arch of ``problems/arch.py`` on a small mesh (``--nelx 20 --nely
12``, unit elements, E0 = 1, nu = 0.3 plane stress, Emin = 1e-9), five
seeded random designs ``x ~ U(0, 1)``: density filter (rmin = 2) -> RAMP
``E = Emin + (1 - Emin) x / (1 + q (1 - x))`` (q = 8) -> stiffness, and the
load ``f = f_point + sum_e x_phys_e f_e`` (``f_e`` a quarter of the element's
weight ``gamma`` at each node) -> ``c = f^T K^{-1} f`` and ``dc/dx``.

Ours comes from `topopt.formulations.SelfWeightProblem` and `topopt.ad`;
pyMOTO's from its module network (DensityFilter, MathExpression, AssembleStiffness,
NodalOperation, SetValue, LinSolve, EinSum) in its own interpreter. pyMOTO is
never imported by topopt: this script runs the pyMOTO half in a subprocess of
``--pymoto-python`` (default ``$PYMOTO_PYTHON`` or ``/tmp/pymoto-venv/bin/python``;
see ``pymoto_bridge.py``) and compares.
Elements and nodes are matched by their coordinates.

    python scripts/crosscheck/pymoto_selfweight.py [--nelx 20 --nely 12 --designs 5]

prints, per design, both compliances and the relative differences of the
compliance and of the gradient (max-norm), and fails (exit status 1) above
``--rtol`` (1e-6).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from pymoto_bridge import (add_arguments, element_order, match_elements, rel_err,
                           require_python, responses, run_pymoto_side, serve)

Q, RMIN, EMIN, NU, VOLFRAC, WEIGHT = 8.0, 2.0, 1e-9, 0.3, 0.3, 4.0


# ------------------------------------------------------------------ pyMOTO side

def pymoto_analysis(designs: np.ndarray, nelx: int, nely: int, gamma: float):
    """Compliance and gradient of each design (rows, pyMOTO's element order), with pyMOTO."""
    import pymoto as pym
    domain = pym.VoxelDomain(nelx, nely)
    left = domain.get_dofnumber(domain.nodes[0, :], 0, ndof=2).flatten()       # symmetry
    pin = domain.get_dofnumber(domain.nodes[nelx, 0], [0, 1], ndof=2).flatten()
    fixed = np.unique(np.concatenate([left, pin]))
    f_point = np.zeros(2 * domain.nnodes)
    f_point[domain.get_dofnumber(domain.nodes[0, 0], 1, ndof=2)] = -0.5       # P / 2
    # weight of a solid unit element, a quarter at each node (dofs x, y interleaved)
    weight_e = np.tile([0.0, -gamma / 4.0], 4)
    sx = pym.Signal("x", state=designs[0].copy())
    with pym.Network() as fn:
        sxf = pym.DensityFilter(domain, radius=RMIN)(sx)
        sE = pym.MathExpression(f"{EMIN} + {1 - EMIN}*inp0/(1 + {Q}*(1 - inp0))")(sxf)
        sK = pym.AssembleStiffness(domain, bc=fixed, plane="stress", poisson_ratio=NU)(sE)
        sw = pym.NodalOperation(domain, weight_e)(sxf)
        sf0 = pym.MathExpression("inp0 + inp1")(f_point, sw)
        sf = pym.SetValue(indices=fixed, value=0.0)(sf0)          # K has unit rows there
        su = pym.LinSolve(symmetric=True, positive_definite=True)(sK, sf)
        sc = pym.EinSum("i,i->")(su, sf)
    out = responses(fn, sx, {"c": sc}, designs)
    positions = domain.get_node_position()[:, domain.conn].mean(axis=2).T   # element centres
    return out["c"], out["dc"], positions


def _pymoto_outputs(d: dict) -> dict:
    """pyMOTO's half: `pymoto_analysis` of the designs in `d`."""
    c, g, centres = pymoto_analysis(d["designs"], int(d["nelx"]), int(d["nely"]),
                                    float(d["gamma"]))
    return dict(c=c, g=g, centres=centres)


# -------------------------------------------------------------------- our side

def ours(nelx: int, nely: int, n_designs: int):
    """Designs (seeds 0, 1, ...), compliances, gradients and element centres of topopt."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from topopt_problems.arch import setup
    from topopt import ad, fem
    from topopt.formulations.selfweight import SelfWeightProblem
    mesh, model, f, gravity = setup(nelx, nely, VOLFRAC, WEIGHT)
    p = SelfWeightProblem(model, f, gravity, VOLFRAC, RMIN, q=Q, Emin=EMIN)
    designs = np.array([np.random.default_rng(s).uniform(0.0, 1.0, p.n)
                        for s in range(n_designs)])
    cg = [ad.value_and_gradient(p.compliance, x) for x in designs]
    return (designs, np.array([float(c) for c, _ in cg]), np.array([g for _, g in cg]),
            fem.element_centroids(mesh), -gravity[1])


def compare(nelx: int, nely: int, n_designs: int, python: str, rtol: float) -> float:
    designs, c, g, centres, gamma = ours(nelx, nely, n_designs)
    theirs_of_ours = element_order(centres, nelx)         # pyMOTO's e = ix + iy nelx
    their_designs = np.empty_like(designs)
    their_designs[:, theirs_of_ours] = designs
    out = run_pymoto_side(__file__, python, dict(designs=their_designs, nelx=nelx, nely=nely,
                                                 gamma=gamma))
    perm = match_elements(centres, out["centres"])
    np.testing.assert_array_equal(perm, theirs_of_ours)
    c_pm, g_pm = out["c"], out["g"][:, perm]
    worst = 0.0
    print(f"half arch {nelx} x {nely}, RAMP q = {Q:g}, rmin = {RMIN:g}, weight {WEIGHT:g} P "
          f"(gamma = {gamma:.6g})")
    print(f"{'seed':>4} {'c topopt':>18} {'c pyMOTO':>18} {'rel c':>9} {'rel grad':>9}")
    for k in range(n_designs):
        rc, rg = rel_err(c[k], c_pm[k]), rel_err(g[k], g_pm[k])
        worst = max(worst, rc, rg)
        print(f"{k:>4} {c[k]:18.10f} {c_pm[k]:18.10f} {rc:9.1e} {rg:9.1e}")
    print(f"largest relative difference {worst:.1e} (tolerance {rtol:g})")
    return worst


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nelx", type=int, default=20)
    parser.add_argument("--nely", type=int, default=12)
    parser.add_argument("--designs", type=int, default=5)
    parser.add_argument("--rtol", type=float, default=1e-6)
    add_arguments(parser, "--pymoto-python")
    args = parser.parse_args(argv)
    if args.pymoto_side:
        serve(*args.pymoto_side, _pymoto_outputs)
        return 0.0
    python = require_python(parser, "--pymoto-python", args.pymoto_python)
    worst = compare(args.nelx, args.nely, args.designs, python, args.rtol)
    if worst > args.rtol:
        sys.exit(1)
    return worst


if __name__ == "__main__":
    main()
