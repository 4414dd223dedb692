"""Dynamic compliance of topopt against pyMOTO 2.0.1: values and gradients on fixed designs.

The setup of pyMOTO's ``examples/topology_optimization/ex_dynamic_compliance.py``:
a 1 x 0.5 m cantilever of 100 x 50 bilinear elements (0.01 m, unit
thickness, plane strain -- pyMOTO's default), steel (E = 210 GPa, nu = 0.3,
rho = 7860 kg/m^3), the left edge clamped, -9000 N vertical at the
mid-height node of the right edge, ``omega = 2 pi 370`` rad/s (just below
the 372.6 Hz the example quotes), Rayleigh damping ``alpha = 1e-3``, ``beta =
1e-8``; density filter of radius 2 elements, ``x_simp = 1e-6 + (1 - 1e-6)
x^3`` scaling both the stiffness and the mass, ``Z = (1 + i omega beta) K -
(omega^2 - i omega alpha) M``, ``c = |f^T u|`` (the example's objective
before its scaling by 100) and the filtered volume ``sum_e x_tilde,e``.

On five seeded random designs (uniform in [0.02, 1]) each side builds its
own mesh, supports and load (pyMOTO's ``VoxelDomain`` numbering, our
scikit-fem mesh); designs and gradients travel as ``(nx, ny)`` element
grids. Compared: ``c``, ``dc/dx``, ``v``, ``dv/dx`` (relative error ``|a -
b|_inf / |b|_inf``), accepted at 1e-8. Each design's first three
eigenfrequencies (ours, `topopt.fem.modal`) are printed beside ``omega / 2
pi`` to show where the load frequency lies.

pyMOTO is not a dependency of topopt: its side runs in another interpreter
(``--python``, by default ``$PYMOTO_PYTHON`` or
``/tmp/pymoto-venv/bin/python``), which needs numpy and pymoto only.

    python scripts/crosscheck/pymoto_dynamic.py [--python /path/to/python-with-pymoto]
"""

from __future__ import annotations


import numpy as np
from pymoto_bridge import case_main, rel_err, responses, run_pymoto_side, verdict

CASES = {
    "pymoto_example": dict(nx=100, ny=50, h=0.01, E0=210e9, nu=0.3, rho0=7860.0,
                           omega=370 * 2 * np.pi, alpha=1e-3, beta=1e-8, force=-9000.0,
                           rmin=2.0, xmin=1e-6, plane="strain"),
}
N_DESIGNS, SEED, RTOL, VOLFRAC = 5, 0, 1e-8, 0.49


def designs(case: str) -> np.ndarray:
    """The five seeded random designs of `case`, shape ``(5, nx, ny)`` (element grids)."""
    c = CASES[case]
    return np.random.default_rng(SEED).uniform(0.02, 1.0, (N_DESIGNS, c["nx"], c["ny"]))


# ------------------------------------------------------------------ pyMOTO's side

def pymoto_side(case: str, grids: np.ndarray) -> dict:
    """pyMOTO's ``c``, ``v`` and their gradients (element grids) for each design."""
    import pymoto as pym
    c = CASES[case]
    nx, ny, w = c["nx"], c["ny"], c["omega"]
    domain = pym.VoxelDomain(nx, ny, unitx=c["h"], unity=c["h"], unitz=1.0)
    bc = domain.get_dofnumber(domain.nodes[0, :], [0, 1], ndof=2)
    f = np.zeros(2 * domain.nnodes)
    f[2 * domain.get_nodenumber(nx, ny // 2) + 1] = c["force"]
    sx = pym.Signal("x", state=np.full(domain.nel, VOLFRAC))
    with pym.Network() as fn:
        sxf = pym.DensityFilter(domain, radius=c["rmin"])(sx)
        sxs = pym.MathExpression(f"{c['xmin']} + {1 - c['xmin']}*inp0^3")(sxf)
        sK = pym.AssembleStiffness(domain, e_modulus=c["E0"], poisson_ratio=c["nu"], bc=bc,
                                   plane=c["plane"])(sxs)
        sM = pym.AssembleMass(domain, bc=bc, material_property=c["rho0"], ndof=2)(sxs)
        sZ = pym.AddMatrix()(1 + 1j * w * c["beta"], sK, -w ** 2 + 1j * w * c["alpha"], sM)
        su = pym.LinSolve()(sZ, f)
        sc = pym.ComplexNorm()(pym.EinSum("i,i->")(su, f))
        sv = pym.EinSum("i->")(sxf)
    return responses(fn, sx, {"c": sc, "v": sv}, grids, el=domain.elements[:, :, 0])


# ------------------------------------------------------------------ our side

def our_problem(case: str):
    """Our `DynamicComplianceProblem` of `case` and its element cells ``(ix, iy)``."""
    from topopt import fem
    from topopt.formulations.dynamic import DynamicComplianceProblem
    c = CASES[case]
    mesh = fem.rectangle(c["nx"], c["ny"], h=c["h"])
    model = fem.elasticity(mesh, nu=c["nu"], E0=c["E0"], plane=c["plane"])
    model.fix(nodes=lambda p: np.isclose(p[0], 0.0))
    f = model.point_load((c["nx"] * c["h"], c["ny"] // 2 * c["h"]), (0.0, c["force"]))
    problem = DynamicComplianceProblem(
        model, f, c["omega"], VOLFRAC, c["rmin"] * c["h"], alpha=c["alpha"], beta=c["beta"],
        rho0=c["rho0"], mass="simp", Emin=c["xmin"])
    cells = np.floor(fem.element_centroids(mesh) / c["h"]).astype(int)
    return problem, cells


def our_side(case: str, grids: np.ndarray) -> dict:
    """topopt's ``c``, ``v``, their gradients (element grids) and eigenfrequencies (Hz)."""
    from topopt import ad
    problem, cells = our_problem(case)
    n = problem.n_el
    out = {k: [] for k in ("c", "dc", "v", "dv", "hz")}
    for grid in grids:
        x = grid[cells[:, 0], cells[:, 1]]
        for key, fun in (("c", problem.dynamic_compliance),
                         ("v", lambda z: n * problem.volume(z))):
            value, g = ad.value_and_gradient(fun, x)
            grid_g = np.empty_like(grid)
            grid_g[cells[:, 0], cells[:, 1]] = g
            out[key].append(float(value))
            out["d" + key].append(grid_g)
        out["hz"].append(problem.eigenfrequencies(problem.x_phys(x)) / (2 * np.pi))
    return {k: np.asarray(v) for k, v in out.items()}


# ------------------------------------------------------------------ comparison

def compare(case: str, python: str | None = None) -> list[dict]:
    """Per design: ``c`` (ours, pyMOTO's), the eigenfrequencies and the relative errors."""
    grids = designs(case)
    theirs = run_pymoto_side(__file__, python, {"grids": grids}, case)
    ours = our_side(case, grids)
    return [{"design": k, "c": ours["c"][k], "c_pymoto": theirs["c"][k], "hz": ours["hz"][k],
             **{f"err_{key}": rel_err(ours[key][k], theirs[key][k])
                for key in ("c", "dc", "v", "dv")}}
            for k in range(len(grids))]


def main(argv=None) -> dict:
    python = case_main(__doc__, argv, lambda case, inputs: pymoto_side(case, inputs["grids"]))
    if python is None:                               # the pyMOTO side served its case
        return {}
    results, worst = {}, 0.0
    for case, c in CASES.items():
        rows = results[case] = compare(case, python)
        print(f"{case} ({c['nx']} x {c['ny']}, load at {c['omega'] / (2 * np.pi):g} Hz):")
        for r in rows:
            hz = ", ".join(f"{v:.1f}" for v in r["hz"])
            print(f"  design {r['design']}: c = {r['c']:.12g} (pyMOTO {r['c_pymoto']:.12g}); "
                  f"f_1..3 = {hz} Hz\n    rel. err c {r['err_c']:.1e}, dc/dx {r['err_dc']:.1e}, "
                  f"v {r['err_v']:.1e}, dv/dx {r['err_dv']:.1e}")
            worst = max(worst, r["err_c"], r["err_dc"], r["err_v"], r["err_dv"])
    print(verdict(worst, RTOL))
    return results


if __name__ == "__main__":
    main()
