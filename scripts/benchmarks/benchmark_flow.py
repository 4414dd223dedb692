"""Seconds per design iteration and Newton iterations per solve of the flow problems (issue 36).

    python scripts/benchmarks/benchmark_flow.py [--repeats 3] [--evaluations 4] [--out results/benchmark_flow.json]

Rows (each the median and spread of `repeats` runs of `evaluations` MMA evaluations, one
flow solve, its adjoint and MMA per evaluation; the run's own first evaluation included):

* ``double_pipe`` at 100 x 100 squares (aspect 1, two triangles each: 20 000 triangles,
  91 003 Taylor-Hood P2/P1 unknowns), Stokes: one Newton step per solve, the adjoint
  reusing its LU factorization (`FlowModel.linear`);
* ``pipe_bend`` at Re = 500, 30 x 30 squares (the script's default, 8 103 unknowns) and
  100 x 100 (91 003), Navier-Stokes warm-started from the last state (the first
  evaluation climbs the convective term through five continuation steps);
* dolfin-adjoint's Stokes demo on its own 100 x 100 mesh of [0, 1.5] x [0, 1] (20 000
  triangles, the same element pair): the seconds of one functional and gradient, read
  from ``results/crosscheck/dolfin_flow.json`` (measured there by
  ``scripts/crosscheck/crosscheck_dolfin_flow.py --time-demo-mesh`` in the scratch environment on
  this machine), beside ours on that mesh measured here.

The JSON records the machine (CPU, cores, load average before and after) and the commit
(`harness.record`); every time is the median with its min and max (`harness.spread`).
``--smallest``: ``pipe_bend`` at 12 x 12 for 2 evaluations and J + dJ on a 20 x 20 demo
mesh, once.
Needs the test extra's cvxopt (UMFPACK); without it the LU is SuperLU, about 5-7x slower
on these matrices (``topopt.fem.solvers.direct.factorize_lu``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import harness  # noqa: E402

from topopt import ad, fem  # noqa: E402
from topopt.formulations.flow import FlowProblem  # noqa: E402
from topopt_problems import double_pipe, pipe_bend  # noqa: E402


def _summary(samples) -> dict:
    """`harness.spread` with the spread in percent of the median."""
    s = harness.spread(samples)
    s["spread_pct"] = 100.0 * (s["max"] - s["min"]) / s["median"] if s["median"] else 0.0
    return s


def _double_pipe(evaluations: int):
    _, model = double_pipe.setup(1.0, 100, cells="tri")     # the recorded rows' triangles
    return FlowProblem(model, 1.0 / 3.0), double_pipe.stages(evaluations), model.n


def _bend(n: int):
    def make(evaluations: int):
        _, model = pipe_bend.setup(500, n)
        problem = FlowProblem(model, 0.25, steps=(0.2, 0.4, 0.6, 0.8, 1.0),
                              newton=dict(rtol=1e-8))
        qs = pipe_bend.q_values(model, 0.25)
        return problem, pipe_bend.stages(max(evaluations, len(qs)), qs), model.n
    return make


CASES = {"double_pipe 100x100 Stokes": _double_pipe,
         "pipe_bend 30x30 Re 500": _bend(30),
         "pipe_bend 100x100 Re 500": _bend(100)}
#: ``--smallest``'s case (the tests')
SMALLEST = {"pipe_bend 12x12 Re 500": _bend(12)}


def measure(name: str, evaluations: int, repeats: int) -> dict:
    per_iteration, newton = [], []
    for _ in range(repeats):
        problem, stages, dofs = {**CASES, **SMALLEST}[name](evaluations)
        result = problem.run(stages=stages, verbose=False)
        per_iteration.append(result["seconds_per_iteration"])
        newton.append(result["newton_iterations_per_solve"])
    return {"case": name, "dofs": dofs, "evaluations": result.evaluations,
            "seconds_per_iteration": _summary(per_iteration),
            "newton_iterations_per_solve": _summary(newton)}


def demo_mesh(repeats: int, n: int = 100) -> dict:
    """Our J + dJ on dolfin-adjoint's demo mesh (Stokes, q = 0.01, CG1 design at 1/3);
    its n x n squares (the demo's: n = 100; the peer's time only beside that one)."""
    import skfem
    from topopt.flow import dissipated_power, stokes
    mesh = skfem.MeshTri.init_tensor(np.linspace(0, 1.5, n + 1), np.linspace(0, 1, n + 1))
    ports = double_pipe.profile
    model = stokes(mesh, q=0.01, dirichlet=[(lambda x: np.ones(x.shape[1], bool), 0.0),
                                            (lambda x: x[0] < 1e-9, ports(0.0)),
                                            (lambda x: x[0] > 1.5 - 1e-9, ports(1.5))])
    rho = np.full(mesh.p.shape[1], 1.0 / 3.0)
    designs = iter(rho + 1e-3 * k for k in range(repeats))     # a new design: no cached solve

    def once():
        ad.value_and_gradient(lambda r: dissipated_power(
            model, fem.solve_nonlinear(model, r, model.initial_state()), r,
            convention="dolfin-adjoint"), next(designs))

    seconds, _ = harness.timed(once, repeats)
    seconds["spread_pct"] = (100.0 * (seconds["max"] - seconds["min"]) / seconds["median"]
                             if seconds["median"] else 0.0)
    peer = None
    path = os.path.join(ROOT, "results", "crosscheck", "dolfin_flow.json")
    if os.path.isfile(path) and n == 100:
        peer = json.load(open(path)).get("demo_mesh_timing")
    return {"case": f"J + dJ on the demo's {n}x{n} mesh of [0, 1.5] x [0, 1]",
            "dofs": model.n, "topopt_seconds": seconds, "dolfin_adjoint": peer}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--evaluations", type=int, default=4)
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    harness.options(parser, repeats=3, out=os.path.join(ROOT, "results", "benchmark_flow.json"),
                    smallest="pipe_bend 12x12, 2 evaluations; a 20x20 demo mesh")
    args = parser.parse_args(argv)
    if args.smallest:
        args.cases, args.evaluations, args.repeats = list(SMALLEST), 2, 1
    data = harness.record({"command": harness.command(__file__, argv)}, args.repeats)
    rows = [measure(name, args.evaluations, args.repeats) for name in args.cases]
    rows.append(demo_mesh(args.repeats, 20 if args.smallest else 100))
    data["machine"]["load_average_after"] = list(os.getloadavg())
    for row in rows:
        print(json.dumps(row))
    harness.write(args.out, dict(data, rows=rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
