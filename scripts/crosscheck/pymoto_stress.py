"""The stress analysis of topopt against pyMOTO 2.0.1: p-norm stress, volume, gradients.

A cantilever of ``nx x ny`` unit bilinear elements (E0 = 1, nu = 0.3,
plane stress), clamped along its left edge, a unit downward point load at
the middle of its right edge; density filter (radius `rmin`), modified
SIMP ``E = 1e-9 + (1 - 1e-9) x_tilde^3``. Stress: ``D eps`` with pyMOTO's
``Strain`` (the strain averaged over the four Gauss points, equal to ours
at the centroid of a rectangle) and ``get_D``, von Mises ``sigma^T V
sigma`` with its example's ``V``, the relaxation ``x_tilde^q sigma_vm`` and
``PNorm(P)`` (no scaling: the adaptive normalisation is a constant of each
evaluation).

pyMOTO 2.0.1's ``Stress`` module is not used: its ``Strain(voigt=True)``
doubles the shear row of ``get_B``, which already holds the engineering
shear ``gamma_xy = du/dy + dv/dx``, so its shear stress is twice the
true one. On the 4 x 2 cantilever with a unit end load (``--shear-check``)
the elements carry the mean shear ``tau = F / A = 0.5`` (beam theory): ours
gives 0.5, pyMOTO's ``Stress`` 1.0, ``D Strain(voigt=False)`` 0.5.

Two relaxations:

* ``pymoto_q1`` -- pyMOTO's stress example (``ex_volume_stress.py``):
  ``q = 1``, here with ``P = 10``;
* ``topopt_default`` -- our default, Le et al. (2010): ``q = 0.5``, ``P = 8``.

Five seeded random designs (uniform in [0.01, 1]) per case; compared: the
aggregate ``PN``, the volume fraction ``v`` and the gradients ``dPN/dx``,
``dv/dx`` (relative error ``|a - b|_inf / |b|_inf``), accepted at 1e-6.

pyMOTO is not a dependency of topopt: its side runs in another interpreter
(``--python``, by default ``$PYMOTO_PYTHON`` or
``/tmp/pymoto-venv/bin/python``), which needs numpy and pymoto only.

    python scripts/crosscheck/pymoto_stress.py [--python /path/to/python-with-pymoto]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from pymoto_bridge import (add_arguments, rel_err, require_python, responses,
                           run_pymoto_side, serve, verdict)

NX, NY, RMIN, NU = 40, 20, 2.0, 0.3
CASES = {"pymoto_q1": dict(q=1.0, P=10.0), "topopt_default": dict(q=0.5, P=8.0)}
N_DESIGNS, SEED, RTOL = 5, 0, 1e-6
KEYS = ("pn", "dpn", "v", "dv")


def designs() -> np.ndarray:
    """The five seeded random designs, shape ``(5, NX, NY)`` (element grids)."""
    return np.random.default_rng(SEED).uniform(0.01, 1.0, (N_DESIGNS, NX, NY))


# ------------------------------------------------------------------ pyMOTO's side

def pymoto_side(case: str, grids: np.ndarray) -> dict:
    """pyMOTO's PN, dPN, v, dv of each design (gradients as element grids)."""
    import pymoto as pym
    q, P = CASES[case]["q"], CASES[case]["P"]
    domain = pym.VoxelDomain(NX, NY)
    bc = domain.get_dofnumber(domain.nodes[0, :], [0, 1], ndof=2).flatten()
    f = np.zeros(2 * domain.nnodes)
    f[domain.get_dofnumber(domain.nodes[NX, NY // 2], 1, ndof=2)] = -1.0
    el = domain.elements[:, :, 0]
    V = np.array([[1, -0.5, 0], [-0.5, 1, 0], [0, 0, 3]])
    sx = pym.Signal("x", state=np.full(domain.nel, 0.5))
    with pym.Network() as fn:
        sxf = pym.DensityFilter(domain, radius=RMIN)(sx)
        sE = pym.MathExpression("1e-9 + (1 - 1e-9)*inp0^3")(sxf)
        sK = pym.AssembleStiffness(domain, bc=bc, plane="stress", poisson_ratio=NU)(sE)
        su = pym.LinSolve(symmetric=True, positive_definite=True)(sK, f)
        # sigma = D eps; pyMOTO's Stress doubles the shear (see the module docstring)
        D = pym.modules.assembly.get_D(1.0, NU, "stress")
        ss = pym.EinSum("ij,jk->ik")(D, pym.Strain(domain, voigt=False)(su))
        svm = pym.MathExpression("sqrt(inp0)")(pym.EinSum("ij,ik,kj->j")(ss, V, ss))
        srel = pym.MathExpression(f"inp0^{q} * inp1")(sxf, svm)
        spn = pym.PNorm(p=P)(srel)
        sv = pym.MathExpression(f"inp0 / {domain.nel}")(pym.EinSum("i->")(sxf))
    return responses(fn, sx, {"pn": spn, "v": sv}, grids, el)


def pymoto_shear() -> tuple[float, float]:
    """Mean shear of the 4 x 2 cantilever (unit end load): pyMOTO's Stress, D Strain."""
    import pymoto as pym
    domain = pym.VoxelDomain(4, 2)
    bc = domain.get_dofnumber(domain.nodes[0, :], [0, 1], ndof=2).flatten()
    f = np.zeros(2 * domain.nnodes)
    f[domain.get_dofnumber(domain.nodes[4, 1], 1, ndof=2)] = -1.0
    sx = pym.Signal("x", state=np.ones(domain.nel))
    with pym.Network() as fn:
        sK = pym.AssembleStiffness(domain, bc=bc, plane="stress", poisson_ratio=NU)(sx)
        su = pym.LinSolve(symmetric=True, positive_definite=True)(sK, f)
        s_stress = pym.Stress(domain, plane="stress", poisson_ratio=NU)(su)
        s_strain = pym.Strain(domain, voigt=False)(su)
    fn.response()
    D = pym.modules.assembly.get_D(1.0, NU, "stress")
    return (float(-np.mean(s_stress.state[2])), float(-np.mean((D @ s_strain.state)[2])))


# ------------------------------------------------------------------ our side

def our_shear() -> float:
    """Mean shear of the 4 x 2 cantilever (unit end load) from `ElementStress`."""
    from topopt import fem
    from topopt.responses.stress import ElementStress
    model = fem.elasticity(fem.rectangle(4, 2), nu=NU).fix(nodes=lambda p: np.isclose(p[0], 0))
    f = model.point_load((4, 1), (0.0, -1.0))
    return float(-np.mean(ElementStress(model, nu=NU).components(model.solve(np.ones(8), f))[:, 2]))


def our_functions(case: str):
    """``(pn(x), v(x), cells)``: our aggregate and volume, and each element's (ix, iy)."""
    from topopt import fem
    from topopt.design.interpolation import simp
    from topopt.formulations.compliance import ComplianceProblem
    from topopt.responses.stress import ElementStress, stress_pnorm
    q, P = CASES[case]["q"], CASES[case]["P"]
    model = fem.elasticity(fem.rectangle(NX, NY), nu=NU)
    model.fix(nodes=lambda p: np.isclose(p[0], 0.0))
    f = model.point_load((NX, NY // 2), (0.0, -1.0))
    problem = ComplianceProblem(model, f, 0.5, RMIN)
    stress = ElementStress(model, nu=NU)

    def pn(x):
        x_phys = problem.x_phys(x)
        u = fem.solve(problem.system, simp(x_phys, 3.0, 1e-9), f)
        return stress_pnorm(x_phys, stress.von_mises_squared(u), q=q, P=P)

    cells = np.floor(fem.element_centroids(model.mesh)).astype(int)
    return pn, problem.volume, cells


def our_side(case: str, grids: np.ndarray) -> dict:
    """topopt's PN, dPN, v, dv of each design (gradients as element grids)."""
    from topopt import ad
    pn, vol, cells = our_functions(case)
    out = {k: [] for k in KEYS}
    for grid in grids:
        x = grid[cells[:, 0], cells[:, 1]]
        for name, fun in (("pn", pn), ("v", vol)):
            value, g = ad.value_and_gradient(fun, x)
            back = np.empty_like(grid)
            back[cells[:, 0], cells[:, 1]] = g
            out[name].append(float(value))
            out["d" + name].append(back)
    return {k: np.asarray(v) for k, v in out.items()}


# ------------------------------------------------------------------ comparison

def compare(case: str, python: str | None = None) -> list[dict]:
    """Per design: the relative errors of PN, dPN, v, dv (ours against pyMOTO's)."""
    grids = designs()
    theirs = run_pymoto_side(__file__, python, {"grids": grids}, case)
    ours = our_side(case, grids)
    rows = []
    for k in range(len(grids)):
        row = {"design": k, "pn": ours["pn"][k], "pn_pymoto": theirs["pn"][k],
               "v": ours["v"][k], "v_pymoto": theirs["v"][k]}
        row.update({"err_" + key: rel_err(ours[key][k], theirs[key][k]) for key in KEYS})
        rows.append(row)
    return rows


def _pymoto_side(case: str, inputs: dict) -> dict:
    """pyMOTO's half: the case's table, or (case ``shear``) `pymoto_shear`'s two values."""
    if case == "shear":
        return {"shear": np.array(pymoto_shear())}
    return pymoto_side(case, inputs["grids"])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser, "--python", side_args=3)
    parser.add_argument("--shear-check", action="store_true",
                        help="only the mean shear of a 4 x 2 cantilever (beam theory: 0.5)")
    args = parser.parse_args(argv)
    if args.pymoto_side:
        case, src, dst = args.pymoto_side
        serve(src, dst, lambda inputs: _pymoto_side(case, inputs))
        return {}
    python = require_python(parser, "--python", args.python)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    if args.shear_check:
        theirs = run_pymoto_side(__file__, python, {}, "shear")["shear"]
        print(f"mean shear, 4 x 2 cantilever, unit end load (beam theory F/A = 0.5): topopt "
              f"{our_shear():.6f}, pyMOTO Stress {theirs[0]:.6f}, pyMOTO D Strain(voigt=False) "
              f"{theirs[1]:.6f}")
        return {}
    results, worst = {}, 0.0
    for case, params in CASES.items():
        rows = results[case] = compare(case, python)
        print(f"{case} (q = {params['q']:g}, P = {params['P']:g}; {NX} x {NY}):")
        for r in rows:
            print(f"  design {r['design']}: PN = {r['pn']:.10g} (pyMOTO {r['pn_pymoto']:.10g})  "
                  f"v = {r['v']:.6f}  rel. err PN {r['err_pn']:.1e}, dPN/dx {r['err_dpn']:.1e}, "
                  f"v {r['err_v']:.1e}, dv/dx {r['err_dv']:.1e}")
            worst = max(worst, *(r["err_" + k] for k in KEYS))
    print(verdict(worst, RTOL))
    return results


if __name__ == "__main__":
    main()
