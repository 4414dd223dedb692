"""Cross-check of the robust compliance E[c] + k std[c] against pyMOTO 2.0.1 (value and gradient).

The cantilever of ``problems/robust_cantilever.py`` on a small mesh
(``--nelx 20 --nely 10``, unit elements, E0 = 1, nu = 0.3 plane stress,
Emin = 1e-9, SIMP p = 3, density filter rmin = 2), the tip load ``f = B
theta``, ``theta ~ N(mu, Sigma)`` with ``mu = (0, -1)``, ``Sigma = diag(0.7^2,
0.05^2)``, ``k = 3``; five seeded random designs ``x ~ U(0.1, 1)``.

* Ours: `topopt.robust.mean_std` (SOSM: one gradient and two
  Hessian-vector products in ``theta``) and its design gradient by nested AD
  (forward over reverse), through ``RobustCompliance.objective``.
* pyMOTO's: the closed form of a quadratic compliance, ``A = B^T K^{-1} B``
  (LinSolve with two right-hand sides), ``E[c] = mu^T A mu + tr(A Sigma)``,
  ``Var[c] = 4 mu^T A Sigma A mu + 2 tr((A Sigma)^2)`` (EinSum modules),
  ``J = E + k sqrt(Var)`` (MathExpression), and its gradient from pyMOTO's
  own hand-written module sensitivities.

pyMOTO is never imported by topopt: the pyMOTO half runs in a subprocess of
``--pymoto-python`` (default ``$PYMOTO_PYTHON`` or
``/tmp/pymoto-venv/bin/python``; see ``pymoto_bridge.py``). Elements are
matched by their centres.

    python scripts/crosscheck/pymoto_robust.py [--nelx 20 --nely 10 --designs 5]

prints, per design, both E[c], std[c] and J and the relative differences of J
and of its gradient (max-norm); fails (exit status 1) above ``--rtol`` (1e-8).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from pymoto_bridge import (add_arguments, element_order, match_elements, rel_err,
                           require_python, responses, run_pymoto_side, serve)

RMIN, EMIN, NU, VOLFRAC, K = 2.0, 1e-9, 0.3, 0.4, 3.0
MU, SIGMA = np.array([0.0, -1.0]), np.diag([0.7 ** 2, 0.05 ** 2])


# ------------------------------------------------------------------ pyMOTO side

def pymoto_analysis(designs: np.ndarray, nelx: int, nely: int):
    """E[c], Var[c], J and their gradients (``dJ``, ...) of each design (rows, pyMOTO's order)."""
    import pymoto as pym
    domain = pym.VoxelDomain(nelx, nely)
    fixed = domain.get_dofnumber(domain.nodes[0, :], [0, 1], ndof=2).flatten()   # clamped
    B = np.zeros((2 * domain.nnodes, 2))
    tip = domain.get_dofnumber(domain.nodes[nelx, nely // 2], [0, 1], ndof=2).flatten()
    B[tip[0], 0] = B[tip[1], 1] = 1.0
    sx = pym.Signal("x", state=designs[0].copy())
    with pym.Network() as fn:
        sxf = pym.DensityFilter(domain, radius=RMIN)(sx)
        sE = pym.MathExpression(f"{EMIN} + {1 - EMIN}*inp0^3")(sxf)
        sK = pym.AssembleStiffness(domain, bc=fixed, plane="stress", poisson_ratio=NU)(sE)
        sU = pym.LinSolve(symmetric=True, positive_definite=True)(sK, B)
        sA = pym.EinSum("ij,ik->jk")(B, sU)                              # B^T K^-1 B
        s_nominal = pym.EinSum("i,ij,j->")(MU, sA, MU)
        s_trace = pym.EinSum("ij,ji->")(sA, SIGMA)
        s_q1 = pym.EinSum("i,ij,jk,kl,l->")(MU, sA, SIGMA, sA, MU)
        s_q2 = pym.EinSum("ij,jk,kl,li->")(sA, SIGMA, sA, SIGMA)
        s_mean = pym.MathExpression("inp0 + inp1")(s_nominal, s_trace)
        s_var = pym.MathExpression("4*inp0 + 2*inp1")(s_q1, s_q2)
        sJ = pym.MathExpression(f"inp0 + {K}*sqrt(inp1)")(s_mean, s_var)
    out = responses(fn, sx, {"mean": s_mean, "var": s_var, "J": sJ}, designs)
    centres = domain.get_node_position()[:, domain.conn].mean(axis=2).T
    return out, centres


def _pymoto_outputs(d: dict) -> dict:
    """pyMOTO's half: `pymoto_analysis` of the designs in `d`, with its element centres."""
    out, centres = pymoto_analysis(d["designs"], int(d["nelx"]), int(d["nely"]))
    return dict(centres=centres, **out)


# -------------------------------------------------------------------- our side

def ours(nelx: int, nely: int, n_designs: int):
    """Designs (seeds 0, 1, ...), E[c], std[c], J, dJ/dx and element centres of topopt."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from topopt_problems.robust_cantilever import setup
    from topopt.formulations.robust_compliance import RobustCompliance
    from topopt import ad, fem
    from topopt.formulations.compliance import ComplianceProblem
    mesh, model, B = setup(nelx, nely)
    det = ComplianceProblem(model, B @ MU, VOLFRAC, RMIN, Emin=EMIN)
    robust = RobustCompliance(det, B, MU, SIGMA, K)
    designs = np.array([np.random.default_rng(s).uniform(0.1, 1.0, det.n)
                        for s in range(n_designs)])
    rows = []
    for x in designs:
        J, g = ad.value_and_gradient(robust.objective, x)
        mean, std = (float(v) for v in robust.moments(x))
        rows.append((mean, std, float(J), g))
    mean, std, J, g = (np.array(c) for c in zip(*rows))
    return designs, mean, std, J, g, fem.element_centroids(mesh)


def compare(nelx: int, nely: int, n_designs: int, python: str) -> float:
    """Print both sides per design; the largest relative difference of J and dJ/dx."""
    designs, mean, std, J, g, centres = ours(nelx, nely, n_designs)
    theirs_of_ours = element_order(centres, nelx)
    their_designs = np.empty_like(designs)
    their_designs[:, theirs_of_ours] = designs
    pm = run_pymoto_side(__file__, python, dict(designs=their_designs, nelx=nelx, nely=nely))
    perm = match_elements(centres, pm["centres"])
    np.testing.assert_array_equal(perm, theirs_of_ours)
    worst = 0.0
    sd = ", ".join(f"{v:g}" for v in np.sqrt(np.diag(SIGMA)))
    print(f"robust cantilever {nelx} x {nely}, k = {K:g}, standard deviations ({sd})")
    print(f"{'seed':>4} {'E[c] topopt':>16} {'E[c] pyMOTO':>16} {'std topopt':>14} "
          f"{'std pyMOTO':>14} {'rel J':>9} {'rel grad':>9}")
    for k in range(n_designs):
        rJ, rg = rel_err(J[k], pm["J"][k]), rel_err(g[k], pm["dJ"][k][perm])
        worst = max(worst, rJ, rg)
        print(f"{k:>4} {mean[k]:16.10f} {pm['mean'][k]:16.10f} {std[k]:14.10f} "
              f"{np.sqrt(pm['var'][k]):14.10f} {rJ:9.1e} {rg:9.1e}")
    print(f"largest relative difference {worst:.1e}")
    return worst


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nelx", type=int, default=20)
    parser.add_argument("--nely", type=int, default=10)
    parser.add_argument("--designs", type=int, default=5)
    parser.add_argument("--rtol", type=float, default=1e-8)
    add_arguments(parser, "--pymoto-python")
    args = parser.parse_args(argv)
    if args.pymoto_side:
        serve(*args.pymoto_side, _pymoto_outputs)
        return 0.0
    if args.nely % 2:
        parser.error(f"--nely must be even (the load at mid-height), got {args.nely}")
    python = require_python(parser, "--pymoto-python", args.pymoto_python)
    worst = compare(args.nelx, args.nely, args.designs, python)
    if worst > args.rtol:
        print(f"above the tolerance {args.rtol:g}", file=sys.stderr)
        sys.exit(1)
    return worst


if __name__ == "__main__":
    main()
