"""Cases of ``solver="petsc"`` run under ``mpirun -n P``; rank 0 writes the numbers as JSON.

    mpirun -n 2 python tests/mpi_petsc.py OUT.json PC [case ...]

Run by `tests/test_petsc.py`, which asserts on the numbers. Each case
compares with the serial CHOLMOD solve of the same system (rank 0 only, no
MPI involved in the reference). Cases: ``compliance`` (3-D cantilever 24 x 12
x 12, a random SIMP design, rtol 1e-10), ``mma`` (10 MMA iterations of that
cantilever from the uniform start), ``taylor`` (compliance of the filtered
SIMP design), ``heat`` (3-D conduction, compliance and Taylor test),
``adjoint`` (a displacement objective: the adjoint is a real solve). ``PC``
is the preconditioner (``gamg`` or ``mg``, `topopt.fem.petsc.backend.PCS`).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from topopt_problems import cantilever3d  # noqa: E402
from topopt import ad, fem  # noqa: E402
from topopt.fem.petsc import backend as petsc  # noqa: E402
from topopt.design.interpolation import simp  # noqa: E402
from topopt.formulations.compliance import ComplianceProblem  # noqa: E402

TIGHT = {"rtol": 1e-10}           # and "pc", set by main
TIGHT_AUTO = {"rtol": 1e-10}      # pc left to "auto"
SIZE = (24, 12, 12)


def _design(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.05, 1.0, n)


def compliance_case() -> dict:
    mesh, model, f = cantilever3d.setup(*SIZE)
    E = simp(_design(model.n_el, 0), 3.0, 1e-9)
    c = {s: float(f @ fem.solve(model.system(s, TIGHT if s == "petsc" else None), E, f))
         for s in ("cholmod", "petsc")}
    S = model.system("petsc", TIGHT)
    diff = abs(S.matrix(E) - model.system("cholmod").matrix(E)).max()     # built on demand
    return {"ndof": int(model.ndof), "cholmod": c["cholmod"], "petsc": c["petsc"],
            "cg_iterations": [int(i) for i in S._iterative.log], "matrix_diff": float(diff)}


def mma_case() -> dict:
    runs = {}
    for s in ("cholmod", "petsc"):
        mesh, model, f = cantilever3d.setup(*SIZE)
        problem = ComplianceProblem(model, f, 0.3, 1.5, solver=s,
                                    solver_options=TIGHT if s == "petsc" else None)
        runs[s] = problem.run(maxeval=10, verbose=False)
    x = {s: np.asarray(r.x) for s, r in runs.items()}
    return {"x_max_diff": float(np.max(np.abs(x["petsc"] - x["cholmod"]))),
            "cholmod": runs["cholmod"]["compliance"], "petsc": runs["petsc"]["compliance"],
            "evaluations": [runs[s]["evaluations"] for s in ("cholmod", "petsc")]}


def taylor_case() -> dict:
    mesh, model, f = cantilever3d.setup(12, 6, 6)
    problem = ComplianceProblem(model, f, 0.3, 1.5, solver="petsc", solver_options=TIGHT)
    x = _design(model.n_el, 1)
    dx = np.random.default_rng(2).standard_normal(model.n_el)
    return {"rate": ad.taylor_test(problem.compliance, x, dx)}


def adjoint_case() -> dict:
    """A displacement objective: its adjoint load is not the load (a real adjoint solve)."""
    mesh, model, f = cantilever3d.setup(12, 6, 6)
    g = np.zeros(model.ndof)
    g[model.basis.nodal_dofs[0, -1]] = 1.0                  # x displacement of the last node

    def objective(S):
        return lambda x: g @ fem.solve(S, simp(x, 3.0, 1e-9), f)
    x = _design(model.n_el, 3)
    grads = {s: ad.gradient(objective(model.system(s, TIGHT if s == "petsc" else None)), x)
             for s in ("cholmod", "petsc")}
    dx = np.random.default_rng(4).standard_normal(model.n_el)
    rate = ad.taylor_test(objective(model.system("petsc", TIGHT)), x, dx)
    scale = np.max(np.abs(grads["cholmod"]))
    return {"grad_rel_diff": float(np.max(np.abs(grads["petsc"] - grads["cholmod"])) / scale),
            "rate": rate}


def heat_case() -> dict:
    mesh = fem.box(16, 8, 8)
    model = fem.heat(mesh).fix(nodes=lambda p: np.isclose(p[0], 0.0) & (p[1] <= 4.0))
    f = model.body_load(1.0)
    x = _design(model.n_el, 5)
    E = simp(x, 3.0, 1e-3)
    c = {s: float(f @ fem.solve(model.system(s, TIGHT if s == "petsc" else None), E, f))
         for s in ("cholmod", "petsc")}
    S = model.system("petsc", TIGHT)
    dx = np.random.default_rng(6).standard_normal(model.n_el)
    rate = ad.taylor_test(lambda x: f @ fem.solve(S, simp(x, 3.0, 1e-3), f), x, dx)
    return {"cholmod": c["cholmod"], "petsc": c["petsc"], "rate": rate}


def auto_case() -> dict:
    """pc="auto" picks "mg" on a lattice and "gamg" on a box with a notch (not a lattice)."""
    mesh = fem.box(6, 3, 3)
    mid = mesh.p[:, mesh.t].mean(axis=1)
    notched = mesh.remove_elements(np.flatnonzero((mid[0] > 3.0) & (mid[1] > 2.0)))
    out = {}
    for name, m in (("lattice", mesh), ("notched", notched)):
        model = fem.elasticity(m).fix(nodes=lambda x: np.isclose(x[0], 0.0))
        f = model.point_load(lambda x: np.isclose(x[0], 6.0), [0.0, -1.0, 0.0])
        S = model.system("petsc", TIGHT_AUTO)
        E = simp(_design(model.n_el, 7), 3.0, 1e-9)
        c = float(f @ fem.solve(S, E, f))
        ref = float(f @ fem.solve(model.system("cholmod"), E, f))
        out[name] = {"pc": S._iterative.options["pc"], "rel": abs(c - ref) / ref}
    return out


def products_case() -> dict:
    """Element products v_e^T K_e w_e on the owning ranks against the serial ones, two
    load columns, v and w nonzero at the fixed dofs too."""
    from topopt.fem import products
    mesh, model, f = cantilever3d.setup(8, 4, 4)
    rng = np.random.default_rng(8)
    v, w = rng.standard_normal((2, model.ndof, 2))
    got = products(model.system("petsc", TIGHT), v, w)
    want = products(model.system("cholmod"), v, w)
    return {"rel": float(np.max(np.abs(got - want)) / np.max(np.abs(want)))}


def helmholtz_case() -> dict:
    """The Helmholtz filter's PDE on PETSc against SuperLU (filter and transpose), and a
    Taylor test of a compliance problem whose state and filter both run on PETSc."""
    from topopt.design import HelmholtzFilter
    mesh, model, f = cantilever3d.setup(12, 6, 6)
    x = _design(model.n_el, 9)
    w = np.random.default_rng(10).standard_normal(model.n_el)
    serial, dist = (HelmholtzFilter.from_rmin(mesh, 1.5, s) for s in (None, "petsc"))
    rel = max(float(np.max(np.abs(a - b)) / np.max(np.abs(b))) for a, b in (
        (dist(x), serial(x)), (dist.transpose(w), serial.transpose(w))))
    problem = ComplianceProblem(model, f, 0.3, 1.5, solver="petsc", solver_options=TIGHT,
                                filter="helmholtz")
    dx = np.random.default_rng(11).standard_normal(model.n_el)
    return {"filter_rel": rel, "rate": ad.taylor_test(problem.compliance, x, dx),
            "distributed": dist.system is not None and problem.filter.system is not None}


CASES = {"auto": auto_case, "products": products_case, "helmholtz": helmholtz_case,
         "compliance": compliance_case, "mma": mma_case, "taylor": taylor_case,
         "adjoint": adjoint_case, "heat": heat_case}


def main(out: str, pc: str, names: list[str]) -> None:
    TIGHT["pc"] = pc
    results = {"ranks": petsc.comm().size, "pc": pc}
    for name in names or sorted(CASES):
        results[name] = CASES[name]()
    with open(out, "w") as fh:
        json.dump(results, fh, indent=1)


if __name__ == "__main__":
    petsc.run_on_root(main, sys.argv[1], sys.argv[2], sys.argv[3:])
