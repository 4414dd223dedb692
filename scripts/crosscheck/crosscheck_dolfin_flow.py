"""Cross-check `topopt.flow` against dolfin-adjoint: Stokes and Navier-Stokes, same mesh.

Two modes, two Python environments:

    # 1. the peer side, in a scratch environment (never a dependency of topopt)
    /work/scratch/dolfin-venv/bin/python scripts/crosscheck/crosscheck_dolfin_flow.py \\
        --dolfin results/crosscheck/dolfin_flow.json [--n 24]
    # 1b. (optional) time dolfin-adjoint's J + dJ on the demo's own 100x100 mesh
    /work/scratch/dolfin-venv/bin/python scripts/crosscheck/crosscheck_dolfin_flow.py --time-demo-mesh
    # 1c. (optional) J at the demo's final design, from the run's last .vtu
    /work/scratch/dolfin-venv/bin/python scripts/crosscheck/crosscheck_dolfin_flow.py --demo-final \
        output/control_iterations_final000123.vtu results/crosscheck/dolfin_demo_final.json
    # 2. our side, with the project's environment; prints relative differences
    PYTHONPATH=$PWD /work/main/.ci-venv/bin/python scripts/crosscheck/crosscheck_dolfin_flow.py \\
        [--json results/crosscheck/dolfin_flow.json]     # --time-demo-mesh: ours at 100x100

The setup is dolfin-adjoint 2023.0.0's ``examples/stokes-topology/stokes-topology.py``
(Borrvall & Petersson 2003, example 4): the domain [0, 1.5] x [0, 1] as dolfin's
``RectangleMesh(Point(0, 0), Point(1.5, 1), n, n)`` (diagonal "right"; the demo
has n = 100, the stored comparison n = 24 to keep the JSON small), Taylor-Hood
P2/P1, the design ``rho`` in CG1 (one value per vertex), and

    alpha(rho) = alpha_bar + (alpha_low - alpha_bar) rho (1 + q) / (rho + q),
    alpha_bar = 2.5 mu / 0.01^2,  alpha_low = 2.5 mu / 100^2,  q = 0.01,
    F(u, p; v, s) = int alpha u.v + mu grad u : grad v + grad p . v + s div u
                    [+ ((grad u) u) . v  for Navier-Stokes],
    J = int 0.5 alpha |u|^2 + mu grad u : grad u        (mu, not mu / 2: the demo's),

with the velocity prescribed on the whole boundary: two parabolic profiles of
peak 1 and width 1/6 centred at y = 1/4 and 3/4 on both x = 0 (in) and
x = 1.5 (out), zero elsewhere (the demo's ``InflowOutflow``, evaluated at the P2
boundary nodes). Stokes: mu = 1 (alpha_bar = 2.5e4). Navier-Stokes at Re = 100:
mu = 0.01 with density 1, peak velocity 1 and the domain height 1 as scales,
alpha_bar = 2.5 mu / 0.01^2 = 250 (Borrvall & Petersson's scaling with mu),
solved by Newton from the Stokes solution with the same mu.

Designs: ``numpy.random.default_rng(seed).uniform(0.2, 1.0, n_vertices)`` for
seeds 0..4, in dolfin's vertex order (the JSON's ``vertices``).

What the JSON holds (``results/crosscheck/dolfin_flow.json``): the vertices and
the triangles (dolfin's cell -> vertex lists, so both sides build the same
triangulation), the designs per vertex, the quadrature degree (6) and FIAT's
rule for it on the reference triangle (0,0), (1,0), (0,1), the values J, their
two terms, and the gradients per vertex.

Gradient representation: the l2 derivative, ``dJ/drho_i`` with ``rho_i`` the
value at vertex i (pyadjoint's ``riesz_representation="l2"``, which is the
default of ``compute_gradient`` in 2023.0.0: the assembled derivative vector,
not its L2 Riesz representer ``M^{-1} dJ``). topopt's reverse mode in a
per-vertex design gives the same object.

Quadrature: the form compiler's ``quadrature_degree`` is set to 6 for every
form (forward, functional, and the adjoint and derivative forms pyadjoint
derives). 6 is what UFL estimates for the demo's forms (``estimated_polynomial_degree``
6 for both F and J: the rational alpha counts as degree 2), so the demo's
numbers do not change; FIAT's degree-6 rule on triangles is the symmetric
12-point Strang-Fix rule, the same points as scikit-fem's ``intorder=6``
(Dunavant 6) to round-off. The polynomial terms are integrated exactly either
way; alpha(rho), a rational function, is integrated with the same 12 points
on both sides, so values and gradients can agree to round-off. The rule is
symmetric under the triangle's vertex permutations, so the order of a cell's
vertices (dolfin sorts them, scikit-fem sorts them) does not matter.

Pressure: the velocity is prescribed on every boundary, so the pressure is
defined up to a constant and the demo's matrix is singular (one constant
pressure mode); the demo solves it with the default LU (PETSc with MUMPS or
UMFPACK), which gives a pressure with an arbitrary constant. Here the
pressure is pinned to 0 at the vertex (0, 0) with a pointwise DirichletBC (it
replaces one continuity row; the net boundary flux of the data is zero by
symmetry, so nothing is lost). The velocity, J and dJ do not depend on the
constant; the JSON records how far the demo's unpinned solve is from the
pinned one (``unpinned_vs_pinned``).

Scratch environment (Debian 12, as root; records of one build on 2 cores):

    apt-get update
    apt-get install -y python3-dolfin python3-venv python3-scipy \\
        coinor-libipopt-dev pkg-config cython3
    /usr/bin/python3 -m venv --system-site-packages /work/scratch/dolfin-venv
    /work/scratch/dolfin-venv/bin/pip install dolfin-adjoint==2023.0.0 pyadjoint-ad==2023.0.0
    /work/scratch/dolfin-venv/bin/pip install --no-build-isolation cyipopt   # 1.7.0
    /work/scratch/dolfin-venv/bin/pip uninstall -y numpy scipy
        # pip pulls numpy 2 and a scipy wheel into the venv; Debian's dolfin and the
        # cyipopt build need Debian's numpy 1.24.2 and scipy 1.10.1 (system site)

(FEniCS 2019.2.0.dev0 from Debian: dolfin, FFC, FIAT, UFL 2022.2.0; IPOPT
3.11.9 with MUMPS, no HSL; newer dolfin-adjoint releases fail with this
FEniCS.)

The demo's own optimization, run unchanged (its file, sha256 763799d1...,
from the 2023.0.0 tag; IPOPT 3.11.9 through cyipopt 1.7.0 with MUMPS, no
HSL; one process, ``OMP_NUM_THREADS=1``; 100 x 100 mesh, 91 003 dofs; 2
cores shared with other sessions, load average 4-6, so wall seconds are ~2-4x
the CPU seconds): see ``DEMO`` below.

* q = 0.01, 20 iterations: J 35.4407 (rho = 1/3) -> 24.365454635950115; 21
  function and 21 gradient evaluations, 288.4 CPU s in them + 11.5 s in IPOPT:
  14.3 CPU s (24 s wall) per iteration.
* q = 0.1 from there (at most 100 iterations): J 108.60 -> 43.970945690111371,
  "EXIT: Optimal Solution Found" after 95 iterations (NLP error 7.3e-9); 124
  function and 96 gradient evaluations, 1335.9 CPU s in them + 17.6 s in
  IPOPT: 14.2 CPU s (23.2 s wall) per iteration. The design is Borrvall &
  Petersson's single merged channel (aspect 1.5), rho in [-1e-8, 1 + 1e-8].
  The documentation's run printed 45.944633030224409, stopped by the
  iteration limit at 100 (105 function, 101 gradient evaluations, dual
  infeasibility 1.8e-3, ``mpiexec -n 4``, its IPOPT build): 4.3 % higher than
  this converged run, which took another path through the same problem.
* The whole run: 48 min wall, 1.0 GB resident.

One J + dJ on the demo's mesh (``--time-demo-mesh``, the replay as IPOPT
calls it, rho constant, q = 0.01; best of 3): dolfin-adjoint 14.3 s wall, 10.6
CPU s (forward 6.2 s, adjoint and derivative 8.2 s; load average 2-3; at load
6 the same took 60 s wall, 13.6 CPU s); topopt (main at b2a5213, scikit-fem's
tensor mesh with the same vertices, UMFPACK) 6.0 s wall, 4.3 CPU s at the
same load. dolfin's serial default LU is UMFPACK too (PETSc ``preonly`` +
``lu``, checked).

The demo's final design, evaluated by both (``--demo-final``, stored in
``results/crosscheck/dolfin_demo_final.json``): dolfin at the design read
back from the last .vtu gives IPOPT's 43.970945690111371 to all digits
(unpinned); clipped to [0, 1] (IPOPT relaxes its bounds by 1e-8 and the
design reaches -9.7e-9 and 1 + 9.9e-9, which topopt.flow.alpha refuses: its
RHO_TOL is 1e-9) it is 43.97094820501572 pinned, and topopt gives
43.9709482050311 (3.5e-13 relative).

Worth knowing:

* The demo's mesh is 100 x 100 (not a small one); the stored comparison uses
  24 x 24 (625 vertices, 232 kB of JSON).
* The demo's text writes ``mu / 2`` on the viscous term, its code (and
  therefore its printed 45.94) ``mu``.
* Pressure: the unpinned Stokes solve (the demo's singular matrix, UMFPACK)
  gives J and dJ within 5e-14 / 1e-13 of the pinned one; Newton for
  Navier-Stokes on the singular Jacobian (MUMPS) diverges at its second step,
  so a pin (or a nullspace) is needed there.
* UFL estimates degree 6 for the demo's F and J (alpha(rho) of a CG1 rho
  counts as 2: numerator plus denominator); the derived adjoint and
  derivative forms would get other estimates, hence the explicit degree.
* pyadjoint's gradient is the l2 one by default; central differences of the
  reduced functional agree with it to 1.5e-9 (Stokes) and 4e-10
  (Navier-Stokes) at h = 1e-5 (``fd_check`` in the JSON).
* topopt.flow.parabolic_inlet measures the distance across the flow only
  (its centre's x does not matter), so one profile per centre serves both
  x = 0 and x = 1.5; two per centre double u (J x 4).
* The remaining differences (3-4e-14 in J, all of one sign, 6-9e-14 in dJ)
  are round-off: the two codes' quadrature tables differ by 1e-15.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_JSON = os.path.join(ROOT, "results", "crosscheck", "dolfin_flow.json")
DEFAULT_FINAL = os.path.join(ROOT, "results", "crosscheck", "dolfin_demo_final.json")

DELTA = 1.5                 # width of the domain (height 1)
N_STORED = 24               # cells per side of the stored comparison mesh (the demo: 100)
SEEDS = (0, 1, 2, 3, 4)
QUADRATURE_DEGREE = 6
Q = 0.01                    # the demo's first (and tape-building) q
INLETS = ((0.25, 1.0 / 6.0), (0.75, 1.0 / 6.0))     # (centre y, width), on x = 0 and x = DELTA
PEAK = 1.0
CASES = {
    "stokes": {"mu": 1.0, "convection": False},
    "navier_stokes_re100": {"mu": 0.01, "convection": True},
}
TOL = 1e-8                  # the acceptance bar, relative

# The demo's run on this machine (module docstring): n = 100, IPOPT 3.11.9 + MUMPS, serial.
DEMO = {
    "q=0.01": {"iterations": 20, "J_start": 35.44070249656387, "J": 24.365454635950115,
               "f_evals": 21, "g_evals": 21, "cpu_s_per_iteration": 14.3,
               "wall_s_per_iteration": 24.0, "exit": "Maximum Number of Iterations Exceeded"},
    "q=0.1": {"iterations": 95, "J_start": 108.60078, "J": 43.970945690111371,
              "f_evals": 124, "g_evals": 96, "cpu_s_per_iteration": 14.2,
              "wall_s_per_iteration": 23.2, "exit": "Optimal Solution Found"},
    "documented": {"iterations": 100, "J": 45.944633030224409,
                   "exit": "Maximum Number of Iterations Exceeded"},
    "J_plus_dJ_100x100": {"dolfin-adjoint": {"wall_s": 14.3, "cpu_s": 10.6},
                          "topopt (main b2a5213)": {"wall_s": 6.0, "cpu_s": 4.3},
                          "load_average": "2-3.5"},
}


def alpha_bounds(mu: float) -> tuple[float, float]:
    """``(alpha_low, alpha_bar)`` = ``(2.5 mu / 100^2, 2.5 mu / 0.01^2)`` (the demo's)."""
    return 2.5 * mu / 100.0 ** 2, 2.5 * mu / 0.01 ** 2


def design(seed: int, n_vertices: int) -> np.ndarray:
    """The fixed design of `seed`: uniform in [0.2, 1] per vertex."""
    return np.random.default_rng(seed).uniform(0.2, 1.0, n_vertices)


def inflow_outflow(x: float, y: float) -> tuple[float, float]:
    """The demo's ``InflowOutflow.eval`` at one point (exact float comparisons, as there)."""
    ux = 0.0
    if x == 0.0 or x == DELTA:
        for c, l in INLETS:
            if c - l / 2 < y < c + l / 2:
                t = y - c
                ux = PEAK * (1 - (2 * t / l) ** 2)
    return ux, 0.0


# ====================================================================== dolfin-adjoint side

def _dolfin_problem(n: int):
    """Mesh and spaces of the demo (dolfin objects)."""
    import dolfin as df
    import dolfin_adjoint as da
    mesh = da.Mesh(da.RectangleMesh(df.MPI.comm_world, df.Point(0.0, 0.0),
                                    df.Point(DELTA, 1.0), n, n))
    A = df.FunctionSpace(mesh, "CG", 1)
    W = df.FunctionSpace(mesh, df.VectorElement("CG", mesh.ufl_cell(), 2)
                         * df.FiniteElement("CG", mesh.ufl_cell(), 1))
    return mesh, A, W


def _bc_expression():
    import dolfin as df

    class InflowOutflow(df.UserExpression):
        def eval(self, values, x):
            values[0], values[1] = inflow_outflow(x[0], x[1])

        def value_shape(self):
            return (2,)
    return InflowOutflow(degree=1)


def _alpha(rho, mu, q):
    """alpha(rho) (UFL) and mu (a Constant)."""
    import dolfin_adjoint as da
    a_low, a_bar = alpha_bounds(mu)
    mu_c, q_c = da.Constant(mu), da.Constant(q)
    alpha = a_bar + (a_low - a_bar) * rho * (1 + q_c) / (rho + q_c)
    return alpha, mu_c


def _solve_state(W, rho, mu, q, convection, pin, annotate=True):
    """The state w = (u, p) for `rho` (Stokes: one linear solve as in the demo;
    Navier-Stokes: Newton from the Stokes solution). Returns (w, alpha, mu, newton_its)."""
    import dolfin as df
    import dolfin_adjoint as da
    alpha, mu_c = _alpha(rho, mu, q)
    bcs = [da.DirichletBC(W.sub(0), _bc_expression(), "on_boundary")]
    if pin:
        bcs.append(da.DirichletBC(W.sub(1), da.Constant(0.0),
                                  "near(x[0], 0.0) && near(x[1], 0.0)", method="pointwise"))
    (u, p), (v, s) = df.TrialFunctions(W), df.TestFunctions(W)
    a = (alpha * df.inner(u, v) * df.dx + mu_c * df.inner(df.grad(u), df.grad(v)) * df.dx
         + df.inner(df.grad(p), v) * df.dx + df.inner(df.div(u), s) * df.dx)
    w = da.Function(W)
    if not convection:
        da.solve(df.lhs(a) == df.rhs(a), w, bcs=bcs, annotate=annotate)
        return w, alpha, mu_c, 0
    with da.stop_annotating():                    # the Stokes initial guess, not on the tape
        da.solve(df.lhs(a) == df.rhs(a), w, bcs=bcs)
    u, p = df.split(w)
    F = (alpha * df.inner(u, v) * df.dx + mu_c * df.inner(df.grad(u), df.grad(v)) * df.dx
         + df.inner(df.grad(u) * u, v) * df.dx
         + df.inner(df.grad(p), v) * df.dx + df.inner(df.div(u), s) * df.dx)
    problem = da.NonlinearVariationalProblem(F, w, bcs, df.derivative(F, w))
    solver = da.NonlinearVariationalSolver(problem)
    prm = solver.parameters["newton_solver"]
    prm["relative_tolerance"] = 1e-13
    prm["absolute_tolerance"] = 1e-14
    prm["maximum_iterations"] = 30
    prm["error_on_nonconvergence"] = True
    prm["linear_solver"] = "mumps"
    its, _ = solver.solve(annotate=annotate)
    return w, alpha, mu_c, its


def _functional(w, alpha, mu_c):
    import dolfin as df
    u, _ = df.split(w)
    j_alpha = 0.5 * df.inner(alpha * u, u) * df.dx
    j_visc = mu_c * df.inner(df.grad(u), df.grad(u)) * df.dx
    return j_alpha, j_visc


def _fiat_rule(degree):
    import FIAT
    rule = FIAT.create_quadrature(FIAT.ufc_simplex(2), degree)
    return np.asarray(rule.get_points()), np.asarray(rule.get_weights())


def dolfin_side(out: str, n: int) -> dict:
    """Values and gradients of J by dolfin-adjoint on the fixed designs; writes `out`."""
    import dolfin as df
    import dolfin_adjoint as da
    import ffc
    import pyadjoint
    df.set_log_level(df.LogLevel.INFO if os.environ.get("CROSSCHECK_VERBOSE")
                     else df.LogLevel.WARNING)
    df.parameters["form_compiler"]["quadrature_degree"] = QUADRATURE_DEGREE
    mesh, A, W = _dolfin_problem(n)
    v2d = df.vertex_to_dof_map(A)                 # vertex i -> dof v2d[i]
    d2v = df.dof_to_vertex_map(A)                 # dof k -> vertex d2v[k]
    nv = mesh.num_vertices()
    X, Wq = _fiat_rule(QUADRATURE_DEGREE)
    data = {
        "about": "dolfin-adjoint side of scripts/crosscheck/crosscheck_dolfin_flow.py (its docstring)",
        "versions": {"dolfin": df.__version__, "ffc": ffc.__version__,
                     "pyadjoint": getattr(pyadjoint, "__version__", "2023.0.0"),
                     "numpy": np.__version__},
        "domain": [[0.0, DELTA], [0.0, 1.0]], "n": n, "diagonal": "right",
        "vertices": mesh.coordinates().tolist(),
        "cells": mesh.cells().tolist(),
        "elements": "P2 velocity, P1 pressure (Taylor-Hood); design CG1 per vertex",
        "q": Q, "peak": PEAK, "inlets": [{"x": [0.0, DELTA], "center_y": c, "width": l}
                                          for c, l in INLETS],
        "bc": "u = (peak (1 - (2 (y - c) / width)^2), 0) for |y - c| < width / 2 on x = 0 "
              "and x = 1.5 (both inlets, both sides), u = 0 on the rest of the boundary, "
              "evaluated at the P2 boundary nodes",
        "pressure": "pinned to 0 at the vertex (0, 0) (all-Dirichlet velocity)",
        "functional": "J = int 0.5 alpha(rho) |u|^2 + mu grad u : grad u",
        "gradient": "l2: dJ/drho_i, rho_i the design at vertex i",
        "quadrature_degree": QUADRATURE_DEGREE,
        "quadrature": {"reference": [[0, 0], [1, 0], [0, 1]], "points": X.tolist(),
                       "weights": Wq.tolist(), "source": "FIAT.create_quadrature"},
        "seeds": list(SEEDS),
        "designs": [design(s, nv).tolist() for s in SEEDS],
        "cases": {},
    }
    for name, case in CASES.items():
        mu, conv = case["mu"], case["convection"]
        a_low, a_bar = alpha_bounds(mu)
        res = {"mu": mu, "alpha_low": a_low, "alpha_bar": a_bar, "convection": conv,
               "reynolds": 1.0 / mu if conv else 0.0, "J": [], "J_alpha": [], "J_visc": [],
               "gradient": [], "newton_iterations": [], "seconds": []}
        for k, seed in enumerate(SEEDS):
            t0 = time.perf_counter()
            da.set_working_tape(da.Tape())
            rho = da.Function(A)
            rho.vector().set_local(np.asarray(data["designs"][k])[d2v])
            rho.vector().apply("insert")
            w, alpha, mu_c, its = _solve_state(W, rho, mu, Q, conv, pin=True)
            ja, jv = _functional(w, alpha, mu_c)
            J = da.assemble(ja + jv)
            ctrl = da.Control(rho)
            g = da.compute_gradient(J, ctrl, options={"riesz_representation": "l2"})
            gv = g.vector().get_local()[v2d]
            res["seconds"].append(time.perf_counter() - t0)
            res["J"].append(float(J))
            res["J_alpha"].append(float(df.assemble(ja)))
            res["J_visc"].append(float(df.assemble(jv)))
            res["gradient"].append(gv.tolist())
            res["newton_iterations"].append(int(its))
            if k == 0:
                res["fd_check"] = _fd_check(J, ctrl, rho, A, d2v, nv)
                res["unpinned_vs_pinned"] = _unpinned(W, rho, mu, conv, float(J), gv, v2d)
            print(f"{name} seed {seed}: J = {float(J):.15g}, |dJ| = {np.linalg.norm(gv):.6g}, "
                  f"Newton {its}, {res['seconds'][-1]:.1f} s", flush=True)
        data["cases"][name] = res
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out} ({os.path.getsize(out) / 1e3:.0f} kB)")
    return data


def _fd_check(J, ctrl, rho, A, d2v, nv):
    """Central differences of the reduced functional along a random direction vs dJ . d
    (the l2 gradient's dot product with the dof vector of the direction)."""
    import dolfin_adjoint as da
    Jhat = da.ReducedFunctional(J, ctrl)
    d = np.random.default_rng(99).uniform(-1.0, 1.0, nv)
    g = Jhat.derivative(options={"riesz_representation": "l2"}).vector().get_local()
    r0 = rho.vector().get_local().copy()
    out = {"direction_seed": 99}
    for h in (1e-4, 1e-5):
        vals = []
        for sgn in (1, -1):
            r = da.Function(A)
            r.vector().set_local(r0 + sgn * h * d[d2v])
            r.vector().apply("insert")
            vals.append(Jhat(r))
        fd = (vals[0] - vals[1]) / (2 * h)
        out[f"h={h:g}"] = {"central_difference": fd, "gradient_dot": float(g @ d[d2v]),
                           "relative": abs(fd - g @ d[d2v]) / abs(fd)}
    Jhat(rho)                                     # leave the tape at rho
    return out


def _unpinned(W, rho, mu, conv, J_pinned, g_pinned, v2d):
    """The demo's singular solve (no pressure pin): J and dJ relative to the pinned ones."""
    import dolfin_adjoint as da
    da.set_working_tape(da.Tape())
    try:
        w, alpha, mu_c, _ = _solve_state(W, rho, mu, Q, conv, pin=False)
    except RuntimeError as exc:                   # Newton on the singular Jacobian
        return {"failed": str(exc).strip().splitlines()[-8:]}
    ja, jv = _functional(w, alpha, mu_c)
    J = da.assemble(ja + jv)
    try:
        g = da.compute_gradient(J, da.Control(rho)).vector().get_local()[v2d]
        gdiff = float(np.linalg.norm(g - g_pinned) / np.linalg.norm(g_pinned))
    except Exception as exc:                      # noqa: BLE001 - a singular adjoint may fail
        gdiff = f"failed: {exc}"
    return {"J_relative": abs(float(J) - J_pinned) / abs(J_pinned), "gradient_relative": gdiff}


def rectangle_mesh(n: int) -> tuple[np.ndarray, np.ndarray]:
    """dolfin's ``RectangleMesh(Point(0, 0), Point(1.5, 1), n, n)`` (diagonal "right") in
    numpy: vertices ``(nv, 2)`` (x fastest) and triangles ``(nc, 3)`` in dolfin's order
    (checked against dolfin by `demo_final`)."""
    x = np.arange(n + 1) * DELTA / n                  # dolfin's a + i (b - a) / n, bit for bit
    y = np.arange(n + 1) * 1.0 / n
    X, Y = np.meshgrid(x, y)
    v = np.column_stack([X.ravel(), Y.ravel()])
    i, j = np.meshgrid(np.arange(n), np.arange(n))
    v0 = (j * (n + 1) + i).ravel()
    v1, v2, v3 = v0 + 1, v0 + n + 1, v0 + n + 2          # right, up, up-right
    cells = np.stack([np.column_stack([v0, v1, v3]), np.column_stack([v0, v2, v3])], axis=1)
    return v, cells.reshape(-1, 3)


def read_vtu_scalar(path: str) -> tuple[np.ndarray, np.ndarray]:
    """Points ``(n, 2)`` and the point data of an ASCII .vtu of dolfin's ``File``."""
    import re
    text = open(path).read()
    pts = re.search(r"<Points>\s*<DataArray[^>]*>([^<]*)<", text).group(1)
    data = re.findall(r'<PointData[^>]*>\s*<DataArray[^>]*>([^<]*)<', text)[0]
    return (np.array(pts.split(), float).reshape(-1, 3)[:, :2], np.array(data.split(), float))


def demo_final(vtu: str, out: str, n: int = 100) -> dict:
    """J (q = 0.1, the demo's second phase) at the demo's final design, read from its last
    ``output/control_iterations_final*.vtu``, by dolfin with the pressure pinned and as the
    demo solves it; IPOPT's bounds are relaxed by 1e-8, so the design is clipped to [0, 1]
    and J is given for both. Writes `out` (the design per vertex)."""
    import dolfin as df
    import dolfin_adjoint as da
    df.set_log_level(df.LogLevel.WARNING)
    df.parameters["form_compiler"]["quadrature_degree"] = QUADRATURE_DEGREE
    mesh, A, W = _dolfin_problem(n)
    for k in (24, n):
        v, c = rectangle_mesh(k)
        m = _dolfin_problem(k)[0]
        assert np.array_equal(v, m.coordinates()) and np.array_equal(c, m.cells()), k
    pts, vals = read_vtu_scalar(vtu)
    if not np.array_equal(pts, mesh.coordinates()):
        raise ValueError(f"{vtu}: its points are not dolfin's vertices of the {n}x{n} mesh")
    d2v = df.dof_to_vertex_map(A)
    res = {"source": os.path.basename(vtu), "n": n, "q": 0.1, "mu": 1.0,
           "raw_range": [float(vals.min()), float(vals.max())]}
    for label, r in (("raw", vals), ("clipped", np.clip(vals, 0.0, 1.0))):
        for pin in (True, False):
            da.set_working_tape(da.Tape())
            rho = da.Function(A)
            rho.vector().set_local(r[d2v])
            rho.vector().apply("insert")
            w, alpha, mu_c, _ = _solve_state(W, rho, 1.0, 0.1, False, pin=pin)
            ja, jv = _functional(w, alpha, mu_c)
            res[f"J_{label}_{'pinned' if pin else 'unpinned'}"] = float(da.assemble(ja + jv))
    res["rho"] = np.clip(vals, 0.0, 1.0).tolist()
    with open(out, "w") as f:
        json.dump(res, f, separators=(",", ":"))
        f.write("\n")
    print({k: v for k, v in res.items() if k != "rho"})
    return res


def time_demo_mesh(path: str | None = None, n: int = 100, repeat: int = 3) -> dict:
    """Seconds of one J and one dJ on the demo's mesh, the demo's forward (unpinned),
    q = 0.01, rho = 1/3; the replay (`ReducedFunctional`) as the optimizer calls it.
    Stored in the JSON at `path` (if it exists) as ``demo_mesh_timing``, beside the
    demo's run (``demo_run``, `DEMO`): scripts/benchmarks/benchmark_flow.py reads them."""
    import dolfin as df
    import dolfin_adjoint as da
    df.set_log_level(df.LogLevel.WARNING)
    mesh, A, W = _dolfin_problem(n)
    t0 = time.perf_counter()
    rho = da.interpolate(da.Constant(1.0 / 3.0), A)
    w, alpha, mu_c, _ = _solve_state(W, rho, 1.0, Q, False, pin=False)
    ja, jv = _functional(w, alpha, mu_c)
    J = da.assemble(ja + jv)
    t_first = time.perf_counter() - t0
    Jhat = da.ReducedFunctional(J, da.Control(rho))
    out = {"n": n, "vertices": mesh.num_vertices(), "dofs": W.dim(), "J": float(J),
           "first_forward_s": t_first, "replay_J_s": [], "derivative_s": []}
    out["cpu_s"] = []
    for k in range(repeat):
        r = da.interpolate(da.Constant(0.3 + 0.01 * k), A)
        t0, c0 = time.perf_counter(), time.process_time()
        Jhat(r)
        t1 = time.perf_counter()
        Jhat.derivative()
        t2, c2 = time.perf_counter(), time.process_time()
        out["replay_J_s"].append(t1 - t0)
        out["derivative_s"].append(t2 - t1)
        out["cpu_s"].append(c2 - c0)
    out["J_plus_dJ_s"] = min(a + b for a, b in zip(out["replay_J_s"], out["derivative_s"]))
    out["J_plus_dJ_cpu_s"] = min(out["cpu_s"])
    out["load_average"] = os.getloadavg()
    out["cpu"] = _cpu_name()
    print(json.dumps(out, indent=1))
    if path is not None and os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
        data["demo_mesh_timing"], data["demo_run"] = out, DEMO
        with open(path, "w") as f:
            json.dump(data, f, separators=(",", ":"))
            f.write("\n")
        print(f"stored in {path} (demo_mesh_timing, demo_run)")
    return out


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown"


# ====================================================================== topopt side

def topopt_values(data: dict, case: str, rho: np.ndarray) -> tuple[float, np.ndarray]:
    """ADAPTER (the one place that knows topopt.flow's API): J and dJ/drho per vertex.

    Written against main at b2a5213 (topopt.flow.FlowModel, TaylorHood,
    parabolic_inlet, dissipated_power; topopt.fem.solve_nonlinear): there it
    agrees with dolfin-adjoint to < 1e-13. The choices that make it match:
    P1 design per vertex (the l2 gradient), ``intorder = 6`` (the 12-point rule),
    the pressure pinned at the vertex (0, 0) (any pin or none gives the same
    velocity; the pressure's sign convention, ``-p div v`` here and ``grad p . v``
    in the demo, does not matter with velocity data on the whole boundary),
    the viscous term with ``mu`` (``convention="dolfin-adjoint"``).

    Needs, from `data`: the mesh (``vertices``, ``cells``; dolfin's vertex order
    is the design's order), ``cases[case]`` (``mu``, ``alpha_low``, ``alpha_bar``,
    ``convection``), ``q``, the boundary data (``inlets``, ``peak``) and the
    quadrature (degree 6, the symmetric 12-point rule).
    """
    from topopt import ad, fem
    from topopt.flow import FlowModel, TaylorHood, parabolic_inlet

    c = data["cases"][case]
    mesh = _topopt_mesh(data)
    space = TaylorHood(mesh, intorder=data["quadrature_degree"])
    # parabolic_inlet measures the distance across the flow (along y) only: one
    # profile per centre serves both x = 0 and x = 1.5
    inlets = [parabolic_inlet([0.0, i["center_y"]], i["width"], peak=data["peak"])
              for i in data["inlets"]]

    def profile(x):
        return sum(g(x) for g in inlets)
    xmax = data["domain"][0][1]
    model = FlowModel(space, mu=c["mu"], rho_f=1.0 if c["convection"] else 0.0,
                      alpha_min=c["alpha_low"], alpha_max=c["alpha_bar"], q=data["q"],
                      dirichlet=[(lambda x: np.ones(x.shape[1], bool), 0.0),
                                 (lambda x: (x[0] < 1e-12) | (x[0] > xmax - 1e-12), profile)],
                      pin_pressure=(0.0, 0.0))
    mu = c["mu"]
    dx = space.basis_u.dx
    w0 = model.initial_state()

    def J(r):
        w = fem.solve_nonlinear(model, r, w0, rtol=1e-13, maxiter=30)
        try:
            from topopt.flow import dissipated_power
        except ImportError:                       # the form written out
            uq, gq = model.velocity_at_quadrature(w)
            a = model.alpha_at_quadrature(r)
            return np.sum(dx * (0.5 * a * np.sum(uq * uq, axis=0)
                                + mu * np.sum(gq * gq, axis=(0, 1))))
        return dissipated_power(model, w, r, convention="dolfin-adjoint")
    value, grad = ad.value_and_gradient(J, np.asarray(rho, dtype=float))
    return float(value), np.asarray(grad)


def _topopt_mesh(data):
    import skfem
    p = np.ascontiguousarray(np.asarray(data["vertices"], dtype=float).T)
    t = np.ascontiguousarray(np.asarray(data["cells"], dtype=np.int64).T)
    return skfem.MeshTri(p, t)


def _rule_difference(data) -> float:
    """Largest difference between FIAT's rule (the JSON) and scikit-fem's of the same order
    (sorted by weight and coordinates)."""
    from skfem.quadrature import get_quadrature
    from skfem.refdom import RefTri
    Xs, Ws = get_quadrature(RefTri, data["quadrature_degree"])
    Xf = np.asarray(data["quadrature"]["points"]).T
    Wf = np.asarray(data["quadrature"]["weights"])
    if Ws.size != Wf.size:
        return float("inf")
    key = lambda X, W: np.lexsort((X[1], X[0], np.round(W, 12)))   # noqa: E731
    ks, kf = key(Xs, Ws), key(Xf, Wf)
    return float(max(np.abs(Xs[:, ks] - Xf[:, kf]).max(), np.abs(Ws[ks] - Wf[kf]).max()))


def compare(path: str = DEFAULT_JSON, cases=None, seeds=None) -> list[dict]:
    """topopt's J and dJ beside dolfin-adjoint's (the JSON at `path`), one row per case
    and seed: ``case, seed, J_dolfin, J_topopt, rel_J, rel_dJ`` (2-norm), ``rel_dJ_max``
    (max-norm of the difference over that of dJ)."""
    with open(path) as f:
        data = json.load(f)
    rows = []
    for case, c in data["cases"].items():
        if cases is not None and case not in cases:
            continue
        for k, seed in enumerate(data["seeds"]):
            if seeds is not None and seed not in seeds:
                continue
            Jd, gd = c["J"][k], np.asarray(c["gradient"][k])
            Jt, gt = topopt_values(data, case, np.asarray(data["designs"][k]))
            rows.append({"case": case, "seed": seed, "J_dolfin": Jd, "J_topopt": Jt,
                         "rel_J": abs(Jt - Jd) / abs(Jd),
                         "rel_dJ": float(np.linalg.norm(gt - gd) / np.linalg.norm(gd)),
                         "rel_dJ_max": float(np.abs(gt - gd).max() / np.abs(gd).max())})
    return rows


def time_topopt(path: str = DEFAULT_JSON, n: int = 100, repeat: int = 3) -> dict:
    """topopt's J + dJ at n x n (the demo's mesh size; scikit-fem's tensor mesh of the
    same vertices), Stokes, q = 0.01, rho near 1/3: the counterpart of `time_demo_mesh`."""
    import skfem
    with open(path) as f:
        data = json.load(f)
    mesh = skfem.MeshTri.init_tensor(np.linspace(0.0, DELTA, n + 1), np.linspace(0.0, 1.0, n + 1))
    data = dict(data, vertices=mesh.p.T.tolist(), cells=mesh.t.T.tolist())
    out = {"n": n, "vertices": int(mesh.p.shape[1]), "wall_s": [], "cpu_s": []}
    for k in range(repeat):
        rho = np.full(mesh.p.shape[1], 0.3 + 0.01 * k)
        t0, c0 = time.perf_counter(), time.process_time()
        J, _ = topopt_values(data, "stokes", rho)
        out["wall_s"].append(time.perf_counter() - t0)
        out["cpu_s"].append(time.process_time() - c0)
    out["J_plus_dJ_s"], out["J_plus_dJ_cpu_s"] = min(out["wall_s"]), min(out["cpu_s"])
    out["load_average"] = os.getloadavg()
    print(json.dumps(out, indent=1))
    return out


def compare_final(path: str = DEFAULT_JSON, final: str = DEFAULT_FINAL) -> dict:
    """topopt's J at the demo's final design (q = 0.1, 100 x 100, clipped to [0, 1]) beside
    dolfin's, the pressure pinned in both."""
    with open(path) as f:
        data = json.load(f)
    with open(final) as f:
        fin = json.load(f)
    v, c = rectangle_mesh(fin["n"])
    data = dict(data, q=fin["q"], vertices=v.tolist(), cells=c.tolist())
    Jt, _ = topopt_values(data, "stokes", np.asarray(fin["rho"]))
    Jd = fin["J_clipped_pinned"]
    return {"J_dolfin": Jd, "J_topopt": Jt, "rel_J": abs(Jt - Jd) / abs(Jd),
            "J_ipopt": fin["J_raw_unpinned"]}


def topopt_side(path: str, final: str = DEFAULT_FINAL) -> int:
    """Print `compare`'s table; exit status 0 when every difference is within `TOL`."""
    with open(path) as f:
        data = json.load(f)
    print(f"{path}: n = {data['n']}, {len(data['vertices'])} vertices, "
          f"{len(data['cells'])} triangles, quadrature degree {data['quadrature_degree']} "
          f"({len(data['quadrature']['weights'])} points)")
    print(f"FIAT vs scikit-fem rule: max difference {_rule_difference(data):.2e}")
    try:
        rows = compare(path)
    except (ImportError, NotImplementedError, AttributeError, TypeError) as exc:
        print(f"the topopt side is not available in this tree: {type(exc).__name__}: {exc}\n"
              "(it needs topopt.flow: FlowModel, TaylorHood, parabolic_inlet, and "
              "topopt.fem.solve_nonlinear; see topopt_values)")
        return 2
    worst = 0.0
    for case, c in data["cases"].items():
        print(f"\n{case}: mu = {c['mu']}, alpha in [{c['alpha_low']:g}, {c['alpha_bar']:g}], "
              f"q = {data['q']}, Newton iterations (dolfin) {c['newton_iterations']}")
        print(f"{'seed':>4} {'J dolfin-adjoint':>22} {'J topopt':>22} {'rel. J':>9} "
              f"{'rel. dJ (2-norm)':>16} {'rel. dJ (max)':>13}")
        for r in rows:
            if r["case"] == case:
                worst = max(worst, r["rel_J"], r["rel_dJ"])
                print(f"{r['seed']:>4} {r['J_dolfin']:>22.15g} {r['J_topopt']:>22.15g} "
                      f"{r['rel_J']:9.2e} {r['rel_dJ']:16.2e} {r['rel_dJ_max']:13.2e}")
    if os.path.exists(final):
        r = compare_final(path, final)
        worst = max(worst, r["rel_J"])
        print(f"\nthe demo's final design (100x100, q = 0.1, clipped to [0, 1]; IPOPT's "
              f"unclipped J {r['J_ipopt']:.15g}):\n"
              f"J dolfin-adjoint {r['J_dolfin']:.15g}, topopt {r['J_topopt']:.15g}, "
              f"relative {r['rel_J']:.2e}")
    ok = worst <= TOL
    print(f"\nworst relative difference {worst:.2e}: {'PASS' if ok else 'FAIL'} "
          f"(bar {TOL:g})")
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dolfin", metavar="OUT.json",
                    help="run the dolfin-adjoint side (scratch venv) and write OUT.json")
    ap.add_argument("--n", type=int, default=N_STORED, help="cells per side (dolfin side)")
    ap.add_argument("--time-demo-mesh", action="store_true",
                    help="time J + dJ on the demo's 100x100 mesh (dolfin-adjoint under the "
                    "scratch venv, topopt otherwise)")
    ap.add_argument("--json", default=DEFAULT_JSON, help="the dolfin side's results")
    ap.add_argument("--demo-final", nargs=2, metavar=("VTU", "OUT.json"),
                    help="dolfin side: J at the demo's final design (its last "
                    "control_iterations_final*.vtu), written to OUT.json")
    ap.add_argument("--final-json", default=DEFAULT_FINAL,
                    help="topopt side: the --demo-final results (skipped if absent)")
    args = ap.parse_args(argv)
    if args.n < 6:
        ap.error(f"--n must be >= 6 (the inlets are 1/6 wide), got {args.n}")
    if args.time_demo_mesh:
        try:
            import dolfin  # noqa: F401
        except ImportError:
            time_topopt(args.json)
            return 0
        time_demo_mesh(args.json)
        return 0
    if args.demo_final:
        demo_final(*args.demo_final)
        return 0
    if args.dolfin:
        dolfin_side(args.dolfin, args.n)
        return 0
    return topopt_side(args.json, args.final_json)


if __name__ == "__main__":
    sys.exit(main())
