"""The modal analysis of topopt against pyMOTO 2.0.1: eigenvalues and their gradients.

Two setups, each on five seeded random designs (uniform in [0.02, 1], so that
both ranges of the mass interpolation occur), through the density filter,
SIMP stiffness ``E0 (1e-9 + (1 - 1e-9) x^3)`` and the two-range mass
``rho0 m(x)``, ``m = x`` above 0.1 and ``x^6 / 0.1^5`` below (Du & Olhoff
2007; pyMOTO's ``ex_eigenfrequency.py`` uses this one, and so does our
default), the three smallest eigenvalues of ``K phi = lambda M phi``:

* ``eigen_beam`` -- our problem (`topopt_problems.eigen_beam`) on 48 x 8 unit
  elements: both ends clamped, plane stress, E0 = rho0 = 1, the central
  non-structural mass (0.2 of the structural mass at volume fraction 0.5)
  on the nodes around the centre, filter radius 1.5;
* ``pymoto_example`` -- the setup of pyMOTO's
  ``examples/topology_optimization/ex_eigenfrequency.py`` (2-D): 50 x 30
  elements, the left edge clamped, plane strain (pyMOTO's default), E0 =
  68.9e9, nu = 0.3, rho0 = 2700, filter radius 2; its non-design block
  (elements ``[3 nx/4:, ny/4:3 ny/4]``) is set to 1 in the designs instead
  of by a ``VecSet`` after the filter, and its objective, the sum of the
  inverse eigenvalues ``1/lambda_1 + 1/lambda_2 + 1/lambda_3``, is compared
  too.

Each side builds its supports and masses itself (pyMOTO's ``VoxelDomain``
numbering, our scikit-fem mesh); designs and gradients travel as ``(nx,
ny)`` element grids. Compared: ``lambda_j`` and ``d lambda_j / dx`` for j =
1, 2, 3 (relative error ``|a - b|_inf / |b|_inf``), accepted at 1e-6.

pyMOTO is not a dependency of topopt: its side runs in another interpreter
(``--python``, by default ``$PYMOTO_PYTHON`` or
``/tmp/pymoto-venv/bin/python``), which needs numpy and pymoto only.

    python scripts/crosscheck/pymoto_eigen.py [--python /path/to/python-with-pymoto]
"""

from __future__ import annotations


import numpy as np
from pymoto_bridge import case_main, rel_err, run_pymoto_side, verdict

CASES = {
    "eigen_beam": dict(nx=48, ny=8, rmin=1.5, E0=1.0, rho0=1.0, plane="stress"),
    "pymoto_example": dict(nx=50, ny=30, rmin=2.0, E0=68.9e9, rho0=2700.0, plane="strain"),
}
N_DESIGNS, SEED, RTOL, N_MODES = 5, 0, 1e-6, 3
EMIN, THRESHOLD, Q = 1e-9, 0.1, 6.0
MASS_FRACTION, VOLFRAC = 0.2, 0.5


def designs(case: str) -> np.ndarray:
    """The five seeded random designs of `case`, shape ``(5, nx, ny)`` (element grids)."""
    c = CASES[case]
    rng = np.random.default_rng(SEED)
    grids = rng.uniform(0.02, 1.0, (N_DESIGNS, c["nx"], c["ny"]))
    if case == "pymoto_example":
        nx, ny = c["nx"], c["ny"]
        grids[:, 3 * nx // 4:, ny // 4:3 * ny // 4] = 1.0         # the non-design block
    return grids


# ------------------------------------------------------------------ pyMOTO's side

def _pymoto_supports(case: str, domain) -> tuple[np.ndarray, np.ndarray | None]:
    """Fixed dofs and the non-structural mass matrix of `case` in pyMOTO's numbering."""
    import scipy.sparse as sps
    c = CASES[case]
    nx, ny = c["nx"], c["ny"]
    if case == "pymoto_example":
        return domain.get_dofnumber(domain.nodes[0, ...], ndof=2).flatten(), None
    ends = np.concatenate([domain.nodes[0, :].flatten(), domain.nodes[nx, :].flatten()])
    xy = domain.get_node_position()
    centre = np.flatnonzero((np.abs(xy[0] - nx / 2) <= 1.0) & (np.abs(xy[1] - ny / 2) <= 1.0))
    diag = np.zeros(2 * domain.nnodes)
    diag[domain.get_dofnumber(centre, ndof=2).flatten()] = \
        MASS_FRACTION * VOLFRAC * nx * ny / centre.size
    return domain.get_dofnumber(ends, ndof=2).flatten(), sps.diags(diag, format="csr")


def _two_range_mass(pym):
    """``m(x)``: x above THRESHOLD, x^Q / THRESHOLD^(Q - 1) below, as a pyMOTO module."""
    class TwoRangeMass(pym.Module):
        def __call__(self, x):
            return np.where(x > THRESHOLD, x, x ** Q / THRESHOLD ** (Q - 1))

        def _sensitivity(self, dm):
            x = self.sig_in[0].state
            return dm * np.where(x > THRESHOLD, 1.0, Q * x ** (Q - 1) / THRESHOLD ** (Q - 1))
    return TwoRangeMass


def pymoto_side(case: str, grids: np.ndarray) -> dict:
    """pyMOTO's eigenvalues and their gradients (element grids) for each design."""
    import pymoto as pym
    c = CASES[case]
    domain = pym.VoxelDomain(c["nx"], c["ny"])
    bc, M0 = _pymoto_supports(case, domain)
    el = domain.elements[:, :, 0]                         # element number of (ix, iy)
    sx = pym.Signal("x", state=np.full(domain.nel, 0.5))
    with pym.Network() as fn:
        sxf = pym.DensityFilter(domain, radius=c["rmin"])(sx)
        sE = pym.MathExpression(f"{c['E0']}*({EMIN} + {1 - EMIN}*inp0^3)")(sxf)
        sm = pym.MathExpression(f"{c['rho0']}*inp0")(_two_range_mass(pym)()(sxf))
        sK = pym.AssembleStiffness(domain, bc=bc, plane=c["plane"])(sE)
        sM = pym.AssembleMass(domain, bc=bc, ndof=2, add_constant=M0)(sm)
        slam, _ = pym.EigenSolve(hermitian=True, nmodes=N_MODES)(sK, sM)
    out = {"lam": [], "dlam": []}
    for grid in grids:
        x = np.empty(domain.nel)
        x[el] = grid
        sx.state = x
        fn.response()
        out["lam"].append(np.array(slam.state[:N_MODES]))
        grads = []
        for j in range(N_MODES):
            fn.reset()
            seed = np.zeros(np.size(slam.state))
            seed[j] = 1.0
            slam.sensitivity = seed
            fn.sensitivity()
            grads.append(np.asarray(sx.sensitivity)[el])
        out["dlam"].append(np.stack(grads))
    return {k: np.asarray(v) for k, v in out.items()}


# ------------------------------------------------------------------ our side

def _our_problem(case: str):
    from topopt import fem
    from topopt.formulations.eigen import EigenProblem
    c = CASES[case]
    if case == "eigen_beam":
        from topopt_problems import eigen_beam
        _, model, M0 = eigen_beam.setup(c["nx"], c["ny"], VOLFRAC, MASS_FRACTION)
    else:
        model = fem.elasticity(fem.rectangle(c["nx"], c["ny"]), nu=0.3, E0=c["E0"],
                               plane=c["plane"])
        model.fix(nodes=lambda p: np.isclose(p[0], 0.0))
        M0 = None
    return EigenProblem(model, VOLFRAC, c["rmin"], M0=M0, n_modes=N_MODES, Emin=EMIN,
                        mass_threshold=THRESHOLD, mass_exponent=Q, rho0=c["rho0"])


def our_side(case: str, grids: np.ndarray) -> dict:
    """topopt's eigenvalues and their gradients (element grids) for each design."""
    from topopt import ad, fem
    problem = _our_problem(case)
    cells = np.floor(fem.element_centroids(problem.model.mesh)).astype(int)   # (ix, iy)
    out = {"lam": [], "dlam": []}
    for grid in grids:
        x = grid[cells[:, 0], cells[:, 1]]
        lam, back = ad.pullback(problem.eigenvalues, x)
        grads = []
        for j in range(N_MODES):
            g = back(np.eye(N_MODES)[j])[0]
            grid_g = np.empty_like(grid)
            grid_g[cells[:, 0], cells[:, 1]] = g
            grads.append(grid_g)
        out["lam"].append(np.asarray(lam))
        out["dlam"].append(np.stack(grads))
    return {k: np.asarray(v) for k, v in out.items()}


# ------------------------------------------------------------------ comparison

def compare(case: str, python: str | None = None) -> list[dict]:
    """Per design: the eigenvalues (ours, pyMOTO's) and the relative errors."""
    grids = designs(case)
    theirs = run_pymoto_side(__file__, python, {"grids": grids}, case)
    ours = our_side(case, grids)
    rows = []
    for k in range(len(grids)):
        la, lb = ours["lam"][k], theirs["lam"][k]
        ga, gb = ours["dlam"][k], theirs["dlam"][k]
        inv_a, inv_b = np.sum(1 / la), np.sum(1 / lb)             # pyMOTO's objective
        dinv_a = -np.tensordot(1 / la ** 2, ga, axes=1)
        dinv_b = -np.tensordot(1 / lb ** 2, gb, axes=1)
        rows.append({"design": k, "lam": la, "lam_pymoto": lb,
                     "err_lam": [rel_err(la[j], lb[j]) for j in range(N_MODES)],
                     "err_dlam": [rel_err(ga[j], gb[j]) for j in range(N_MODES)],
                     "err_inv": rel_err(inv_a, inv_b), "err_dinv": rel_err(dinv_a, dinv_b)})
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
            lam = ", ".join(f"{v:.10g}" for v in r["lam"])
            print(f"  design {r['design']}: lambda = {lam}\n"
                  f"    rel. err lambda_j {max(r['err_lam']):.1e}, dlambda_j/dx "
                  + ", ".join(f"{e:.1e}" for e in r["err_dlam"])
                  + f"; sum 1/lambda {r['err_inv']:.1e}, its gradient {r['err_dinv']:.1e}")
            worst = max(worst, *r["err_lam"], *r["err_dlam"], r["err_inv"], r["err_dinv"])
    print(verdict(worst, RTOL))
    return results


if __name__ == "__main__":
    main()
