"""The thermo-elastic analysis of topopt against pyMOTO 2.0.1: compliance and its gradient.

pyMOTO's ``examples/topology_optimization/ex_thermo_mech.py`` on five seeded
random designs (``x ~ U(0.01, 1)``, seeds 0-4): a 60 x 80 half model, the
heat load ``Q = 1`` and the force ``-100`` (y) at the node (0, 0), ``T = 0``
and ``u = 0`` on the right edge, ``u_x = 0`` on the left; density filter of
radius 2; RAMP ``Emin + (1 - Emin) x / (3 - 2 x)`` (q = 2, Emin = 1e-9) of
the stiffness and the conductivity; the thermal load ``ThermoMechanical(x_f
T_e)`` (alpha = 1, ``T_e`` the element average); ``c = u^T f``. Ours is
`topopt_problems.thermo_beam.setup` with `topopt.formulations.ThermoelasticProblem`
(``temperature="centroid"``, ``q_beta = 0``: ``beta = x_f``), differentiated
by `topopt.ad`; gradients are compared as element grids.

Two cases:

* ``plane_strain`` -- the example as it is (pyMOTO's default plane strain).
  pyMOTO's plane-strain thermal strain is in-plane only, ``D (1, 1, 0)``,
  where ours has its out-of-plane part ``eps_zz = alpha T`` (the physical
  one): pyMOTO's load is ours with ``alpha / (1 + nu)``, which our side is
  given;
* ``plane_stress`` -- the same with ``plane="stress"`` on both sides (the two
  models then agree with nothing rescaled).

One change to the example: its load is zeroed at the supports (``SetValue``,
as ``pymoto_selfweight.py`` does). pyMOTO's ``AssembleStiffness`` puts unit
rows at the fixed dofs, so the thermal load there would come back as a
"displacement" of the supports and enter ``c``.

pyMOTO is not a dependency of topopt: its side runs in another interpreter
(``--python``, by default ``$PYMOTO_PYTHON`` or
``/tmp/pymoto-venv/bin/python``; see ``pymoto_bridge.py``).

    python scripts/crosscheck/pymoto_thermoelastic.py [--python /path/to/python-with-pymoto]

prints per design both compliances, the share of ours that the thermal load
does (``1 - f_mech^T u / c``), and the relative errors of ``c`` and ``dc/dx``
(max-norm); exits with status 1 above 1e-8.
"""

from __future__ import annotations

import sys

import numpy as np
from pymoto_bridge import case_main, rel_err, responses, run_pymoto_side, verdict

NX, NY, RMIN, XMIN, ALPHA, NU, LOAD, HEAT = 60, 80, 2.0, 1e-9, 1.0, 0.3, 100.0, 1.0
CASES = {"plane_strain": "strain", "plane_stress": "stress"}
N_DESIGNS, RTOL = 5, 1e-8


def designs() -> np.ndarray:
    """The five seeded designs, ``(5, NX, NY)`` element grids."""
    return np.array([np.random.default_rng(s).uniform(0.01, 1.0, (NX, NY))
                     for s in range(N_DESIGNS)])


# ------------------------------------------------------------------ pyMOTO's side

def pymoto_side(plane: str, grids: np.ndarray) -> dict:
    """pyMOTO's ``c`` and ``dc/dx`` of each design (gradients as element grids)."""
    import pymoto as pym
    domain = pym.VoxelDomain(NX, NY)
    right, left = domain.nodes[-1, :].flatten(), domain.nodes[0, :].flatten()
    fixed = np.unique(np.hstack([domain.get_dofnumber(left, 0, ndof=2).flatten(),
                                 domain.get_dofnumber(right, [0, 1], ndof=2).flatten()]))
    f = np.zeros(2 * domain.nnodes)
    f[2 * domain.nodes[0, 0] + 1] = -LOAD
    q = np.zeros(domain.nnodes)
    q[domain.nodes[0, 0]] = HEAT
    sx = pym.Signal("x", state=np.full(domain.nel, 0.25))
    with pym.Network() as fn:
        sxf = pym.DensityFilter(domain, radius=RMIN)(sx)
        sramp = pym.MathExpression(f"{XMIN} + {1 - XMIN}*(inp0 / (3 - 2*inp0))")(sxf)
        sK = pym.AssembleStiffness(domain, bc=fixed, plane=plane, poisson_ratio=NU)(sramp)
        sKT = pym.AssemblePoisson(domain, bc=right)(sramp)
        sT = pym.LinSolve()(sKT, q)
        sTe = pym.ElementAverage(domain)(sT)
        sxT = pym.MathExpression("inp0 * inp1")(sTe, sxf)
        sth = pym.ThermoMechanical(domain, alpha=ALPHA, poisson_ratio=NU, plane=plane)(sxT)
        sf0 = pym.MathExpression("inp0 + inp1")(f, sth)
        sf = pym.SetValue(indices=fixed, value=0.0)(sf0)
        su = pym.LinSolve()(sK, sf)
        sc = pym.EinSum("i,i->")(su, sf)
    return responses(fn, sx, {"c": sc}, grids, domain.elements[:, :, 0])


# ------------------------------------------------------------------ our side

def our_side(plane: str, grids: np.ndarray) -> dict:
    """topopt's ``c`` and ``dc/dx`` of each design (gradients as element grids)."""
    from topopt_problems.thermo_beam import setup
    from topopt import ad, fem
    from topopt.formulations.thermoelastic import ThermoelasticProblem
    # the example's loads act on the half model as they are (not halved)
    mesh, model, thermal, f, q = setup(NX, NY, 2 * LOAD, 2 * HEAT, plane=plane)
    alpha = ALPHA / (1 + NU) if plane == "strain" else ALPHA     # pyMOTO's in-plane strain
    p = ThermoelasticProblem(model, thermal, f, q, 0.25, RMIN, alpha=alpha, nu=NU,
                             plane=plane, q=2.0, q_beta=0.0, Emin=XMIN, kmin=XMIN,
                             temperature="centroid")
    cells = np.floor(fem.element_centroids(mesh)).astype(int)        # (ix, iy)
    c, dc, share = [], [], []
    for grid in grids:
        x = grid[cells[:, 0], cells[:, 1]]
        value, g = ad.value_and_gradient(p.compliance, x)
        back = np.empty_like(grid)
        back[cells[:, 0], cells[:, 1]] = g
        c.append(float(value))
        dc.append(back)
        share.append(p.final(p.x_phys(x))[0]["compliance_thermal"] / float(value))
    return {"c": np.array(c), "dc": np.array(dc), "share": np.array(share)}


# ------------------------------------------------------------------ comparison

def compare(case: str, python: str | None = None) -> list[dict]:
    """Per design: both compliances and the relative errors of c and dc/dx."""
    grids = designs()
    theirs = run_pymoto_side(__file__, python, {"grids": grids}, CASES[case])
    ours = our_side(CASES[case], grids)
    return [{"design": k, "c": ours["c"][k], "c_pymoto": theirs["c"][k],
             "thermal_share": ours["share"][k], "err_c": rel_err(ours["c"][k], theirs["c"][k]),
             "err_dc": rel_err(ours["dc"][k], theirs["dc"][k])} for k in range(len(grids))]


def main(argv=None) -> float:
    python = case_main(__doc__, argv, lambda plane, inputs: pymoto_side(plane, inputs["grids"]))
    if python is None:                               # the pyMOTO side served its case
        return 0.0
    worst = 0.0
    for case in CASES:
        print(f"{case} ({NX} x {NY}, pyMOTO's ex_thermo_mech.py):")
        for r in compare(case, python):
            print(f"  design {r['design']}: c = {r['c']:.12g} (pyMOTO {r['c_pymoto']:.12g})  "
                  f"thermal part {r['thermal_share']:.0%}  rel. err c {r['err_c']:.1e}, "
                  f"dc/dx {r['err_dc']:.1e}")
            worst = max(worst, r["err_c"], r["err_dc"])
    print(verdict(worst, RTOL))
    if worst > RTOL:
        sys.exit(1)
    return worst


if __name__ == "__main__":
    main()
