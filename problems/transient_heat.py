"""Transient heat conduction: three heaters switched on in turn (pyMOTO's ex_transient_thermal).

A 2/30 x 0.1 plate (``nelx x nely`` square bilinear elements, h = 2/30 /
nelx) is held at T = 0 on its bottom edge; every other edge is insulated,
T = 0 at t = 0. Three heaters, blocks of nodes at mid-width (|x/Lx - 1/2| <=
1/15) and heights 1/4, 1/2, 3/4 of the plate (+- 1/30), are switched on at
t = 2/3, 1/3 and 0 of the end time `end` with 6e3, 7.5e2 and 1e3 W times
dt, spread over their nodes (the example's load). Conductivity k = 1 and
heat capacity rho c = 1000 of the solid, both scaled by the same SIMP
``1e-6 + (1 - 1e-6) x_phys^3`` (the example's interpolation); density
filter of `rmin` element widths. `n_steps` steps of the theta method
(implicit Euler, ``--theta 1``; pyMOTO's example uses Crank-Nicolson,
``--theta 0.5``). Minimise ``J = 100 sum_n sum_(heated nodes) T_n`` (n = 0
.. N) subject to volume fraction `volfrac`, NLopt MMA. The gradient is one
adjoint sweep backward through the steps with every ``ceil(sqrt N)``-th
state checkpointed (`topopt.fem.transient`). The design is a heat
reservoir around each heater: with end = 0.1 s the heat has no time to
reach the cold edge (the example's remark), so material is spent on heat
capacity beside the heaters rather than on a path to the sink.

    python problems/transient_heat.py [--nelx 40 --nely 60 --steps 50 --end 0.1 ...]

writes ``results/transient_heat/{design.png, history.png, result.json,
design.npz, design.vtu}`` (the final temperature ``T_N`` in the vtu).
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import Option, at_least, compliance_options, positive_float, positive_int
from topopt.formulations.transient_heat import TransientHeatProblem
from topopt.io.folder import run_compliance
from topopt.io.result import RunResult
from topopt._keywords import keywords
from topopt._validate import check_int

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "transient_heat")
OPTIONS = compliance_options(dict(nelx=40, nely=60), volfrac=0.5, rmin=2.0) + (
    Option("steps", positive_int, 50, "time steps N"),
    Option("end", positive_float, 0.1, "end time (s)"),
    Option("theta", at_least(0.0, high=1.0), 1.0, "1 implicit Euler, 0.5 Crank-Nicolson"),
)
LX, LY = 2 / 30, 0.1          # plate (m)
XMIN = 1e-6                   # void's conductivity and capacity, relative
CAPACITY = 1000.0             # rho c of the solid (k = 1)
HEATERS = ((6e3, 2 / 3, 1 / 4), (7.5e2, 1 / 3, 1 / 2), (1e3, 0.0, 3 / 4))   # W, on at, height
SCALE = 100.0                 # pyMOTO's objective factor


def check_plate(nelx: int, nely: int) -> float:
    """The element size of square elements on the plate (``nely = 1.5 nelx``); ValueError else."""
    h = LX / check_int("nelx", nelx, 1, what="elements along x")
    check_int("nely", nely, 1, what="elements along y")
    if not np.isclose(LY / nely, h, rtol=1e-9):
        raise ValueError(f"--nelx {nelx} --nely {nely}: the elements must be square on the "
                         f"{LX:.4g} x {LY:g} plate (nely = 1.5 nelx)")
    return h


def setup(nelx: int, nely: int, steps: int, end: float):
    """Model with the cold bottom edge; heater sources ``Q``, signals ``s``, observation ``L``."""
    h = check_plate(nelx, nely)
    model = fem.heat(fem.rectangle(nelx, nely, h=h)).fix(nodes=lambda p: p[1] < 0.5 * h)
    ij = np.rint(model.mesh.p / h).astype(int)                     # node grid indices
    dt = end / steps
    Q, s, L = np.zeros((model.ndof, 3)), np.zeros((steps + 1, 3)), np.zeros(model.ndof)
    xs = (ij[0] >= int(nelx * (1 / 2 - 1 / 15))) & (ij[0] <= int(nelx * (1 / 2 + 1 / 15)))
    for j, (power, on, y) in enumerate(HEATERS):
        block = xs & (ij[1] >= int(nely * (y - 1 / 30))) & (ij[1] <= int(nely * (y + 1 / 30)))
        Q[block, j] = 1.0 / np.count_nonzero(block)
        L[block] += 1.0
        s[int(on * steps):, j] = power * dt
    return model, Q, s, L, dt


def markers(model, Q):
    """The setup drawn on the design: the cold edge (T = 0) and the three heaters."""
    from topopt.plot import Markers
    centres = np.stack([model.mesh.p[:, Q[:, j] > 0].mean(axis=1) for j in range(Q.shape[1])])
    return Markers.of(model, labels={"support": "cold edge T = 0"}).add(
        "heat", centres, label="heaters (" + ", ".join(f"{p:g}" for p, _, _ in HEATERS)
        + " W)")


@keywords
def run(nelx: int = 40, nely: int = 60, volfrac: float = 0.5, rmin: float = 2.0,
        penal: float = 3.0, filter: str = "density", steps: int = 50, end: float = 0.1,
        theta: float = 1.0, maxeval: int = 60, solver: str = "auto", out: str | None = None,
        verbose: bool = False, **options) -> RunResult:
    """Optimize the plate; `options` go to `TransientHeatProblem.run`."""
    model, Q, s, L, dt = setup(nelx, nely, steps, end)
    problem = TransientHeatProblem(model, Q, s, L, dt, volfrac, rmin * LX / nelx, theta=theta,
                                   capacity=CAPACITY, scale=SCALE, penal=penal, filter=filter,
                                   Emin=XMIN, solver=solver)
    plot = dict(objective="temperature", symbol="J",
                objective_label="J = 100 sum of heated-node temperatures over the steps")
    result = run_compliance("transient_heat", problem, title=f"Transient heat {nelx}x{nely}",
                            sizes=dict(nelx=nelx, nely=nely), out=out, maxeval=maxeval,
                            verbose=verbose, plot=plot, notes=dict(
                                steps=steps, end=end, dt=dt, theta=theta, capacity=CAPACITY,
                                xmin=XMIN, heaters=[list(hh) for hh in HEATERS],
                                rmin_elements=rmin),
                            markers=markers(model, Q), units="m", **options)
    return result


def summary(result) -> str:
    """The line printed after the run."""
    return (f"J {result['temperature']:.6g}  volume {result['volume']:.4f}  evaluations "
            f"{result.evaluations}  states held {result['states_held']} of "
            f"{result['n_steps'] + 1}  {result['seconds']:.1f} s")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=60, summary=summary,
                    solvers=cli.DIRECT_SOLVERS,
                    check=lambda kw: check_plate(kw["nelx"], kw["nely"]),
                    size=lambda kw: ((kw["nelx"] + 1) * (kw["nely"] + 1), 2))


if __name__ == "__main__":
    main()
