"""Transient heat conduction of topopt against pyMOTO 2.0.1: objective and its gradient.

pyMOTO's ``examples/topology_optimization/ex_transient_thermal.py`` (2-D):
80 x 120 square elements on a 2/30 x 0.1 plate (h = 1/1200), T = 0 on the
bottom edge (pyMOTO's ``domain.nodes[:, 0]``), conductivity 1 and heat
capacity ``rho c = 1000`` both scaled by ``1e-6 + (1 - 1e-6) x_tilde^3``,
density filter of radius 3 elements; three heaters (the node blocks of the
example) switched on at steps 2N/3, N/3 and 0 with 6e3, 7.5e2 and 1e3 W
(times dt, spread over their nodes); end time 0.1 s in N = 200 steps;
objective ``100 sum_n sum_(heated nodes) T_n`` over the N + 1 states. Two
cases: the example's Crank-Nicolson (theta = 1/2) and implicit Euler
(theta = 1), each on five seeded random designs (uniform in [0.01, 1]).

pyMOTO stores all N + 1 states and runs its adjoint over them
(``TransientSolve``); topopt's `topopt.fem.transient` keeps every 15th
state and recomputes the segments. Compared: the objective and its
gradient (``|a - b|_inf / |b|_inf``), accepted at 1e-8. pyMOTO's
``TransientSolve`` wraps its solver in ``LDAWrapper`` (tol 1e-7), which
skips a step's solve when earlier solutions reproduce its right-hand side to
1e-7: at N = 200 that alone moved pyMOTO's numbers by 2e-8 .. 6e-8 (measured
here); the comparison gives it ``LDAWrapper(SolverSparseLU(), tol=0)``,
which solves every step.

    python scripts/crosscheck/pymoto_transient.py [--python /path/to/python-with-pymoto] [--steps 200]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from pymoto_bridge import add_arguments, rel_err, require_python, run_pymoto_side, serve, verdict

NX, NY, LX, LY = 80, 120, 2 / 30, 0.1
END, XMIN, RADIUS, CAPACITY, SCALE = 0.1, 1e-6, 3.0, 1000.0, 100.0
HEATERS = ((6e3, 2 / 3), (7.5e2, 1 / 3), (1e3, 0.0))        # power, switch-on time / END
CASES = {"crank_nicolson": 0.5, "implicit_euler": 1.0}
N_DESIGNS, SEED, RTOL = 5, 0, 1e-8


def designs(n: int = N_DESIGNS) -> np.ndarray:
    """The seeded random designs, shape ``(n, NX, NY)`` (element grids)."""
    return np.random.default_rng(SEED).uniform(0.01, 1.0, (N_DESIGNS, NX, NY))[:n]


def heater_blocks() -> list:
    """The ``(ix, iy)`` node index ranges of the three heaters (the example's slices)."""
    xs = slice(int(NX * (1 / 2 - 1 / 15)), int(NX * (1 / 2 + 1 / 15)) + 1)
    return [(xs, slice(int(NY * (f - 1 / 30)), int(NY * (f + 1 / 30)) + 1))
            for f in (1 / 4, 1 / 2, 3 / 4)]


def signals(n_steps: int) -> np.ndarray:
    """``s`` ``(N + 1, 3)``: each heater's power times dt from its switch-on step."""
    dt = END / n_steps
    s = np.zeros((n_steps + 1, 3))
    for j, (power, on) in enumerate(HEATERS):
        s[_on(on, n_steps):, j] = power * dt
    return s


def _on(on: float, n_steps: int) -> int:
    """The example's switch-on column: ``int(2 N / 3)``, ``int(N / 3)``, 0."""
    return {2 / 3: int(2 * n_steps / 3), 1 / 3: int(n_steps / 3), 0.0: 0}[on]


# ------------------------------------------------------------------ pyMOTO's side

def pymoto_side(theta: float, n_steps: int, grids: np.ndarray) -> dict:
    """pyMOTO's objective and its gradient (element grids) for each design."""
    import pymoto as pym
    domain = pym.VoxelDomain(NX, NY, unitx=LX / NX, unity=LY / NY)
    dt = END / n_steps
    q = np.zeros((domain.nnodes, n_steps + 1))
    s = signals(n_steps)
    heat = []
    for (xs, ys), col in zip(heater_blocks(), s.T):
        dofs = domain.nodes[xs, ys].flatten()
        q[dofs, :] = col[None, :] / dofs.size
        heat.append(dofs)
    heat = np.concatenate(heat)
    sx = pym.Signal("x", state=np.full(domain.nel, 0.5))
    with pym.Network() as fn:
        sxf = pym.DensityFilter(domain, radius=RADIUS)(sx)
        sk = pym.MathExpression(f"{XMIN} + {1.0 - XMIN}*inp0^3")(sxf)
        sK = pym.AssemblePoisson(domain, bc=domain.nodes[:, 0].flatten())(sk)
        sC = pym.AssembleMass(domain, bc=domain.nodes[:, 0].flatten(), ndof=1,
                              material_property=CAPACITY)(sk)
        exact = pym.solvers.LDAWrapper(pym.solvers.SolverSparseLU(), tol=0.0, hermitian=True,
                                       symmetric=True)      # every step solved (see above)
        sT = pym.TransientSolve(dt=dt, end=END, x0=np.zeros(domain.nnodes), theta=theta,
                                solver=exact)(
            pym.Signal("q", state=q), sK, sC)
        sJ = pym.MathExpression(f"{SCALE}*inp0")(pym.EinSum("ij->")(sT[heat, :]))
    el = domain.elements[:, :, 0]
    values, grads = [], []
    for grid in grids:
        x = np.empty(domain.nel)
        x[el] = grid
        sx.state = x
        fn.response()
        fn.reset()
        sJ.sensitivity = 1.0
        fn.sensitivity()
        values.append(float(sJ.state))
        grads.append(np.asarray(sx.sensitivity, dtype=float)[el])
    return {"J": np.array(values), "dJ": np.array(grads)}


# ------------------------------------------------------------------ our side

def our_problem(theta: float, n_steps: int, every: int | None = None):
    """topopt's `TransientHeatProblem` of the example (nodes by their grid indices)."""
    from topopt import fem
    from topopt.formulations.transient_heat import TransientHeatProblem
    h = LX / NX
    model = fem.heat(fem.rectangle(NX, NY, h=h)).fix(nodes=lambda p: p[1] < 0.5 * h)
    ij = np.rint(model.mesh.p / h).astype(int)                  # (ix, iy) of each node
    node = np.empty((NX + 1, NY + 1), dtype=int)
    node[ij[0], ij[1]] = np.arange(ij.shape[1])
    Q, L = np.zeros((model.ndof, 3)), np.zeros(model.ndof)
    for j, (xs, ys) in enumerate(heater_blocks()):
        dofs = node[xs, ys].ravel()
        Q[dofs, j] = 1.0 / dofs.size
        np.add.at(L, dofs, 1.0)
    return TransientHeatProblem(model, Q, signals(n_steps), L, dt=END / n_steps, volfrac=0.5,
                                rmin=RADIUS * h, theta=theta, capacity=CAPACITY, scale=SCALE,
                                Emin=XMIN, every=every)


def our_side(theta: float, n_steps: int, grids: np.ndarray) -> dict:
    """topopt's objective and gradient (element grids) for each design, and the sweep's figures."""
    from topopt import ad, fem
    problem = our_problem(theta, n_steps)
    h = LX / NX
    cells = np.floor(fem.element_centroids(problem.model.mesh) / h).astype(int)
    values, grads = [], []
    for grid in grids:
        J, g = ad.value_and_gradient(problem.objective, grid[cells[:, 0], cells[:, 1]])
        back = np.empty_like(grid)
        back[cells[:, 0], cells[:, 1]] = g
        values.append(float(J))
        grads.append(back)
    S = problem.transient
    return {"J": np.array(values), "dJ": np.array(grads), "states": S.counts["states"],
            "interval": S.interval(n_steps), "solves": S.counts["solves"] / len(grids)}


# ------------------------------------------------------------------ comparison

def compare(case: str, python: str | None = None, n_steps: int = 200,
            n_designs: int = N_DESIGNS) -> list[dict]:
    """Per design: both objectives and the relative errors of J and dJ/dx."""
    grids, theta = designs(n_designs), CASES[case]
    theirs = run_pymoto_side(__file__, python, {"grids": grids}, str(theta), str(n_steps))
    ours = our_side(theta, n_steps, grids)
    return [{"design": k, "J": ours["J"][k], "J_pymoto": theirs["J"][k],
             "err_J": rel_err(ours["J"][k], theirs["J"][k]),
             "err_dJ": rel_err(ours["dJ"][k], theirs["dJ"][k]),
             "states": ours["states"], "interval": ours["interval"],
             "solves": ours["solves"]} for k in range(len(grids))]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser, "--python", side_args=4)
    parser.add_argument("--steps", type=int, default=200, help="time steps N (default 200)")
    args = parser.parse_args(argv)
    if args.pymoto_side:
        theta, n_steps, src, dst = args.pymoto_side
        serve(src, dst, lambda inputs: pymoto_side(float(theta), int(n_steps), inputs["grids"]))
        return {}
    python = require_python(parser, "--python", args.python)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    results, worst = {}, 0.0
    for case in CASES:
        rows = results[case] = compare(case, python, args.steps)
        r0 = rows[0]
        print(f"{case} (theta = {CASES[case]}, {NX} x {NY}, N = {args.steps}; topopt holds "
              f"{r0['states']} states, interval {r0['interval']}, {r0['solves']:.0f} solves "
              "per gradient):")
        for r in rows:
            print(f"  design {r['design']}: J = {r['J']:.12g} (pyMOTO {r['J_pymoto']:.12g})  "
                  f"rel. err J {r['err_J']:.1e}, dJ/dx {r['err_dJ']:.1e}")
            worst = max(worst, r["err_J"], r["err_dJ"])
    print(verdict(worst, RTOL))
    return results


if __name__ == "__main__":
    main()
