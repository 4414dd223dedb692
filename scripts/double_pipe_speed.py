"""Seconds per design iteration and Newton iterations per solve of the double pipe (issue 36).

    python scripts/double_pipe_speed.py [--n 100 --aspect 1 --evaluations 6]

runs `evaluations` MMA evaluations of `problems/double_pipe.py` at ``round(aspect n) x n``
squares (two triangles each, Taylor-Hood P2/P1, Stokes) and prints the dofs, the seconds per
evaluation (one flow solve, its adjoint, MMA), the Newton iterations per solve and the
seconds in the flow solves. Quoted in docs/gallery/double_pipe.md.
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from topopt_problems import double_pipe  # noqa: E402
from topopt.formulations.flow import FlowProblem  # noqa: E402


def measure(n: int, aspect: float, evaluations: int) -> dict:
    mesh, model = double_pipe.setup(aspect, n)
    problem = FlowProblem(model, 1.0 / 3.0)
    t0 = time.perf_counter()
    result = problem.run(stages=double_pipe.stages(evaluations), verbose=False)
    seconds = time.perf_counter() - t0
    return {"n": n, "aspect": aspect, "triangles": int(mesh.t.shape[1]), "dofs": model.n,
            "evaluations": result.evaluations,
            "seconds_per_iteration": result["seconds_per_iteration"],
            "newton_iterations_per_solve": result["newton_iterations_per_solve"],
            "seconds_total": seconds}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--aspect", type=float, default=1.0)
    parser.add_argument("--evaluations", type=int, default=6)
    args = parser.parse_args()
    row = measure(args.n, args.aspect, args.evaluations)
    print("  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in row.items()))
