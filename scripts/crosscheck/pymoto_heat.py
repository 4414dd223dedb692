"""The thermal analysis of topopt against pyMOTO 2.0.1: objective, volume and their gradients.

Two setups, each on five seeded random designs (uniform in [0.01, 1]):

* ``heat_sink`` -- our volume-to-point problem (`topopt_problems.heat_sink`) on 40 x
  40 unit elements: uniform heat source 0.01 per unit area (consistent
  nodal loads, h^2/4 per element corner), T = 0 on the middle tenth of the
  left edge, k = 1e-3 + (1 - 1e-3) x_tilde^3, density filter rmin = 1.2;
* ``pymoto_thermal`` -- pyMOTO's own thermal example (its
  ``examples/topology_optimization/ex_compliance.py`` with ``thermal =
  True``): 120 x 40 elements, T = 0 on the left-edge nodes ny/4 .. 3ny/4, a
  unit nodal heat load on every node off the left edge, k = 1e-9 + (1 -
  1e-9) x_tilde^3; its density filter (radius 2) instead of its padded
  ``FilterConv``, which topopt does not have.

Each side builds its loads and supports itself (pyMOTO's ``VoxelDomain``
numbering, our scikit-fem mesh); designs and gradients travel as ``(nx,
ny)`` element grids. Compared: the thermal compliance ``c = f^T T``, the
volume fraction ``v`` of the filtered design and the gradients ``dc/dx``,
``dv/dx`` (relative error ``|a - b|_inf / |b|_inf``), accepted at 1e-6.

pyMOTO is not a dependency of topopt: its side runs in another interpreter
(``--python``, by default ``$PYMOTO_PYTHON`` or
``/tmp/pymoto-venv/bin/python``), which needs numpy and pymoto only.

    python scripts/crosscheck/pymoto_heat.py [--python /path/to/python-with-pymoto]
"""

from __future__ import annotations


import numpy as np
from pymoto_bridge import case_main, rel_err, responses, run_pymoto_side, verdict

CASES = {
    "heat_sink": dict(nx=40, ny=40, rmin=1.2, kmin=1e-3, volfrac=0.4),
    "pymoto_thermal": dict(nx=120, ny=40, rmin=2.0, kmin=1e-9, volfrac=0.5),
}
N_DESIGNS, SEED, RTOL = 5, 0, 1e-6
KEYS = ("c", "dc", "v", "dv")


def designs(case: str) -> np.ndarray:
    """The five seeded random designs of `case`, shape ``(5, nx, ny)`` (element grids)."""
    c = CASES[case]
    rng = np.random.default_rng(SEED)
    return rng.uniform(0.01, 1.0, (N_DESIGNS, c["nx"], c["ny"]))


# ------------------------------------------------------------------ pyMOTO's side

def _pymoto_loads(pym, case: str, domain):
    """Supports and nodal loads of `case` in pyMOTO's numbering."""
    ny = CASES[case]["ny"]
    f = np.zeros(domain.nnodes)
    if case == "heat_sink":
        iy = np.arange(ny + 1)
        bc = domain.nodes[0, np.abs(iy - ny / 2) <= ny / 20].flatten()
        np.add.at(f, domain.conn, 0.01 / 4)             # q h^2 / 4 at each element corner
        f[bc] = 0.0                                      # loads on T = 0 do no work
    else:                                                # ex_compliance.py, thermal = True
        bc = domain.nodes[0, int(ny / 4):-int(ny / 4)].flatten()
        f[domain.nodes[1:, :].flatten()] = 1.0
    return bc, f


def pymoto_side(case: str, grids: np.ndarray) -> dict:
    """pyMOTO's c, dc, v, dv of each design (gradients as element grids)."""
    import pymoto as pym
    c = CASES[case]
    domain = pym.VoxelDomain(c["nx"], c["ny"])
    bc, f = _pymoto_loads(pym, case, domain)
    el = domain.elements[:, :, 0]                        # element number of (ix, iy)
    sx = pym.Signal("x", state=np.full(domain.nel, 0.5))
    with pym.Network() as fn:
        sxf = pym.DensityFilter(domain, radius=c["rmin"])(sx)
        sk = pym.MathExpression(f"{c['kmin']} + {1.0 - c['kmin']}*inp0^3")(sxf)
        sK = pym.AssemblePoisson(domain, bc=bc)(sk)
        sT = pym.LinSolve(symmetric=True, positive_definite=True)(sK, f)
        sc = pym.EinSum("i, i->")(sT, f)
        sv = pym.MathExpression(f"inp0 / {domain.nel}")(pym.EinSum("i->")(sxf))
    return responses(fn, sx, {"c": sc, "v": sv}, grids, el)


# ------------------------------------------------------------------ our side

def _our_problem(case: str):
    from topopt import fem
    from topopt.formulations.compliance import ComplianceProblem
    c = CASES[case]
    if case == "heat_sink":
        from topopt_problems import heat_sink
        _, model, f = heat_sink.setup(c["nx"], c["ny"])
    else:
        nx, ny = c["nx"], c["ny"]
        model = fem.heat(fem.rectangle(nx, ny))
        model.fix(nodes=lambda p: np.isclose(p[0], 0.0) & (p[1] >= ny // 4 - 1e-9)
                  & (p[1] <= ny - ny // 4 + 1e-9))
        f = model.point_load(lambda p: p[0] > 0.5, (1.0,))
    return ComplianceProblem(model, f, c["volfrac"], c["rmin"], Emin=c["kmin"])


def our_side(case: str, grids: np.ndarray) -> dict:
    """topopt's c, dc, v, dv of each design (gradients as element grids)."""
    from topopt import ad, fem
    problem = _our_problem(case)
    cells = np.floor(fem.element_centroids(problem.model.mesh)).astype(int)   # (ix, iy)
    out = {k: [] for k in KEYS}
    for grid in grids:
        x = grid[cells[:, 0], cells[:, 1]]
        for name, fun in (("c", problem.compliance), ("v", problem.volume)):
            value, g = ad.value_and_gradient(fun, x)
            back = np.empty_like(grid)
            back[cells[:, 0], cells[:, 1]] = g
            out[name].append(float(value))
            out["d" + name].append(back)
    return {k: np.asarray(v) for k, v in out.items()}


# ------------------------------------------------------------------ comparison

def compare(case: str, python: str | None = None) -> list[dict]:
    """Per design: the relative errors of c, dc, v, dv (ours against pyMOTO's)."""
    grids = designs(case)
    theirs = run_pymoto_side(__file__, python, {"grids": grids}, case)
    ours = our_side(case, grids)
    rows = []
    for k in range(len(grids)):
        row = {"design": k, "c": ours["c"][k], "c_pymoto": theirs["c"][k],
               "v": ours["v"][k], "v_pymoto": theirs["v"][k]}
        row.update({"err_" + key: rel_err(ours[key][k], theirs[key][k]) for key in KEYS})
        rows.append(row)
    return rows


def main(argv=None) -> dict:
    python = case_main(__doc__, argv, lambda case, inputs: pymoto_side(case, inputs["grids"]))
    if python is None:                               # the pyMOTO side served its case
        return {}
    results, worst = {}, 0.0
    for case in CASES:
        rows = results[case] = compare(case, python)
        print(f"{case} ({CASES[case]['nx']} x {CASES[case]['ny']}):")
        for r in rows:
            print(f"  design {r['design']}: c = {r['c']:.10g} (pyMOTO {r['c_pymoto']:.10g})  "
                  f"v = {r['v']:.6f}  rel. err c {r['err_c']:.1e}, dc/dx {r['err_dc']:.1e}, "
                  f"v {r['err_v']:.1e}, dv/dx {r['err_dv']:.1e}")
            worst = max(worst, *(r["err_" + k] for k in KEYS))
    print(verdict(worst, RTOL))
    return results


if __name__ == "__main__":
    main()
