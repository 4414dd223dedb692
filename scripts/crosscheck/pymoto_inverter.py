"""Cross-check of the inverter's analysis against pyMOTO 2.0.1 (issue 14, items 1 and 6).

Five seeded random designs of ``problems/inverter.py``'s half model (the
left edge on ``u_x = 0``, the far corners clamped, springs ``k_in``,
``k_out`` at the input and output: a constant stiffness, pyMOTO's
``add_constant``). For each, topopt and pyMOTO compute on the same
discretisation (unit bilinear plane-stress elements, E = 1, nu = 0.3,
density filter of radius rmin, SIMP ``Emin + (1 - Emin) x^3``):

* the inverter: the output displacement ``u_out``, the input and output
  compliances ``f^T K^-1 f``, ``l^T K^-1 l`` (the port constraints of
  `topopt.formulations.MechanismProblem` are affine in them) and the volume
  fraction, with their gradients;
* the robust inverter at ``beta = 4``: ``u_out`` of the eroded, intermediate
  and dilated designs (tanh projection at eta = 0.75 / 0.5 / 0.25, pyMOTO's
  ``MathExpression`` of the same formula) and the dilated volume, with their
  gradients.

pyMOTO is not a dependency of topopt and lives in its own environment: this
script (run with topopt's Python) computes topopt's numbers, then runs
itself under ``--pymoto-python`` (default ``$PYMOTO_PYTHON`` or
``/tmp/pymoto-venv/bin/python``; see ``pymoto_bridge.py``) for pyMOTO's,
passing the designs in an ``.npz`` file. It prints the largest
relative difference of each value and of each gradient (max norm) and exits
with status 1 if one exceeds ``--rtol`` (1e-6).

    python scripts/crosscheck/pymoto_inverter.py [--nelx 40 --nely 80 --rmin 2.4 --seed 0]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from pymoto_bridge import (add_arguments, element_order, rel_err, require_python, responses,
                           run_pymoto_side, serve)

EMIN, NU, BETA, ETAS = 1e-9, 0.3, 4.0, (0.75, 0.5, 0.25)
DETERMINISTIC = ("u_out", "c_in", "c_out", "volume")
ROBUST = ("u_out_eroded", "u_out_intermediate", "u_out_dilated", "volume_dilated")


# ------------------------------------------------------------------ topopt's side

def topopt_side(nelx: int, nely: int, rmin: float, k_in: float, k_out: float, designs):
    """``{name: (values (5,), gradients (5, n_el))}`` in pyMOTO's element order."""
    from topopt_problems.inverter import setup
    from topopt import ad, fem
    from topopt.design.interpolation import simp
    from topopt.formulations.mechanism import MechanismProblem
    from topopt.responses.structural import volume
    from topopt.robust.projection import robust_designs

    mesh, model, f, l_out = setup(nelx, nely, k_in, k_out)
    problem = MechanismProblem(model, f, l_out, 0.3, rmin, Emin=EMIN)
    order = pymoto_order(mesh, nelx)                      # ours -> pyMOTO's element index
    S, F = problem.system, np.column_stack([f, l_out])

    def solve(x_phys):
        return fem.solve(S, simp(x_phys, 3.0, EMIN), F)

    functions = {
        "u_out": lambda x: l_out @ solve(problem.x_phys(x))[:, 0],
        "c_in": lambda x: f @ solve(problem.x_phys(x))[:, 0],
        "c_out": lambda x: l_out @ solve(problem.x_phys(x))[:, 1],
        "volume": lambda x: volume(problem.x_phys(x), problem.weights),
    }
    for k, name in enumerate(("eroded", "intermediate", "dilated")):
        functions[f"u_out_{name}"] = lambda x, k=k: l_out @ solve(
            robust_designs(problem.x_phys(x), BETA, ETAS)[k])[:, 0]
    functions["volume_dilated"] = lambda x: volume(
        robust_designs(problem.x_phys(x), BETA, ETAS)[2], problem.weights)
    out = {}
    for name, fun in functions.items():
        values, grads = [], []
        for x_py in designs:
            x = x_py[order]                                # pyMOTO's order -> ours
            v, g = ad.value_and_gradient(fun, x)
            values.append(float(v))
            grads.append(scatter(g, order))
        out[name] = (np.array(values), np.array(grads))
    return out


def pymoto_order(mesh, nelx: int) -> np.ndarray:
    """pyMOTO's element index of each of our elements (``ix + iy nelx`` of the centroid)."""
    return element_order(mesh.p[:, mesh.t].mean(axis=1).T, nelx)


def scatter(g, order) -> np.ndarray:
    """Our per-element gradient in pyMOTO's element order."""
    out = np.empty_like(g)
    out[order] = g
    return out


# ------------------------------------------------------------------ pyMOTO's side

def pymoto_side(nelx: int, nely: int, rmin: float, k_in: float, k_out: float, designs):
    """The same quantities with pyMOTO's modules and sensitivities (pyMOTO's Python):
    ``{name: values (5,), "d" + name: gradients (5, n_el)}``."""
    import pymoto as pym
    from scipy.sparse import csr_matrix

    domain = pym.VoxelDomain(nelx, nely)
    node = lambda ix, iy: int(ix + iy * (nelx + 1))                   # noqa: E731
    left = [node(0, iy) for iy in range(nely + 1)]
    clamp = [node(nelx, iy) for iy in range(nely + 1) if iy <= nely / 20 + 1e-9]
    fixed = np.union1d(2 * np.array(left), np.concatenate([2 * np.array(clamp),
                                                           2 * np.array(clamp) + 1]))
    dof_in, dof_out = 2 * node(0, 0) + 1, 2 * node(0, nely) + 1
    ndof = 2 * domain.nnodes
    f, l_out = np.zeros(ndof), np.zeros(ndof)
    f[dof_in], l_out[dof_out] = 1.0, 1.0
    K0 = csr_matrix(([k_in, k_out], ([dof_in, dof_out], [dof_in, dof_out])), shape=(ndof, ndof))
    sx = pym.Signal("x", state=designs[0].copy())
    heaviside = ("(tanh({b} * {e}) + tanh({b} * (inp0 - {e}))) / "
                 "(tanh({b} * {e}) + tanh({b} * (1 - {e})))")
    with pym.Network() as net:
        sxf = pym.DensityFilter(domain, radius=rmin)(sx)

        def chain(s_phys):
            sE = pym.MathExpression(f"{EMIN} + (1 - {EMIN}) * inp0^3")(s_phys)
            sK = pym.AssembleStiffness(domain, e_modulus=1.0, poisson_ratio=NU, plane="stress",
                                       bc=fixed, add_constant=K0)(sE)
            su = pym.LinSolve(symmetric=True, positive_definite=True)(sK, f)
            sw = pym.LinSolve(symmetric=True, positive_definite=True)(sK, l_out)
            return su, sw

        su, sw = chain(sxf)
        signals = {"u_out": pym.EinSum("i,i->")(su, l_out), "c_in": pym.EinSum("i,i->")(su, f),
                   "c_out": pym.EinSum("i,i->")(sw, l_out),
                   "volume": pym.MathExpression(f"inp0 / {domain.nel}")(
                       pym.EinSum("i->")(sxf))}
        for name, eta in zip(("eroded", "intermediate", "dilated"), ETAS):
            s_proj = pym.MathExpression(heaviside.format(b=BETA, e=eta))(sxf)
            signals[f"u_out_{name}"] = pym.EinSum("i,i->")(chain(s_proj)[0], l_out)
            if name == "dilated":
                signals["volume_dilated"] = pym.MathExpression(f"inp0 / {domain.nel}")(
                    pym.EinSum("i->")(s_proj))
    return responses(net, sx, signals, designs)


def _pymoto_outputs(d: dict) -> dict:
    """pyMOTO's half: `pymoto_side` of the sizes and designs in `d`."""
    return pymoto_side(int(d["nelx"]), int(d["nely"]), float(d["rmin"]), float(d["k_in"]),
                       float(d["k_out"]), d["designs"])


# ------------------------------------------------------------------ comparison

def designs_of(nelx: int, nely: int, seed: int, count: int = 5) -> np.ndarray:
    """`count` random designs in [0.05, 1] (seeded), in pyMOTO's element order."""
    return np.random.default_rng(seed).uniform(0.05, 1.0, (count, nelx * nely))


def compare(ours: dict, theirs: dict) -> dict:
    """``{name: (max relative value difference, max relative gradient difference)}``."""
    report = {}
    for name in ours:
        (v, g), (V, G) = ours[name], theirs[name]
        dv = max(rel_err(v[i], V[i]) for i in range(len(V)))
        dg = max(rel_err(g[i], G[i]) for i in range(len(V)))
        report[name] = (dv, dg)
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nelx", type=int, default=40)
    parser.add_argument("--nely", type=int, default=80)
    parser.add_argument("--rmin", type=float, default=2.4)
    parser.add_argument("--k_in", type=float, default=0.1)
    parser.add_argument("--k_out", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rtol", type=float, default=1e-6)
    add_arguments(parser, "--pymoto-python")
    args = parser.parse_args(argv)
    if args.pymoto_side:                                   # in pyMOTO's environment
        serve(*args.pymoto_side, _pymoto_outputs)
        return 0
    python = require_python(parser, "--pymoto-python", args.pymoto_python)
    sizes = (args.nelx, args.nely, args.rmin, args.k_in, args.k_out)
    designs = designs_of(args.nelx, args.nely, args.seed)
    ours = topopt_side(*sizes, designs)
    data = run_pymoto_side(__file__, python,
                           dict(zip(("nelx", "nely", "rmin", "k_in", "k_out"), sizes),
                                designs=designs))
    theirs = {k: (data[k], data["d" + k]) for k in ours}
    print(f"inverter {args.nelx} x {args.nely}, rmin {args.rmin}, k_in {args.k_in}, k_out "
          f"{args.k_out}, 5 random designs (seed {args.seed}); robust at beta = {BETA}")
    print(f"{'quantity':20s} {'topopt (design 1)':>20s} {'pyMOTO (design 1)':>20s} "
          f"{'max rel. value':>15s} {'max rel. grad':>15s}")
    worst = 0.0
    for name, (dv, dg) in compare(ours, theirs).items():
        print(f"{name:20s} {ours[name][0][0]:20.12g} {theirs[name][0][0]:20.12g} "
              f"{dv:15.2e} {dg:15.2e}")
        worst = max(worst, dv, dg)
    print(f"largest relative difference {worst:.2e} (tolerance {args.rtol:g})")
    return 0 if worst <= args.rtol else 1


if __name__ == "__main__":
    sys.exit(main())
