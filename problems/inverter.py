"""Displacement inverter, the compliant mechanism of Sigmund (1997) and Bendsøe & Sigmund (2003).

A square design domain, symmetric about its vertical centre line: the half
model is ``nelx x nely`` unit bilinear elements (``nely = 2 nelx`` is the
square), E0 = 1, Emin = 1e-9, nu = 0.3 (plane stress), SIMP p = 3, density
or Helmholtz filter of radius `rmin`. The symmetry line is the left edge
(``u_x = 0``). The input force ``f_in = 1`` pushes the bottom of the
symmetry line up, against an input spring ``k_in``; the top of the
symmetry line, the output, rests on an output spring ``k_out``. The
domain's far side is clamped over its lowest twentieth (the corners beside
the input). Minimise the output displacement ``u_out`` (negative: the
output moves down, against the push) at volume fraction `volfrac`, each
port held by the structure (`topopt.formulations.MechanismProblem`, ``hold``),
NLopt MMA. pyMOTO's inverter example has the same orientation.

    python problems/inverter.py [--nelx 40 --nely 80 --volfrac 0.3 --rmin 2.4 ...]

writes ``results/inverter/{design.png, history.png, result.json}`` and the
design (``design.npz``, ``design.vtu``).
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import Option, compliance_options, positive_float
from topopt.formulations.mechanism import MechanismProblem, run_mechanism
from topopt.io.result import RunResult
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "inverter")
OPTIONS = compliance_options(dict(nelx=40, nely=80), volfrac=0.3, rmin=2.4) + (
    Option("k_in", positive_float, 0.1, "input spring stiffness"),
    Option("k_out", positive_float, 0.1, "output spring stiffness"),
)


def setup(nelx: int, nely: int, k_in: float = 0.1, k_out: float = 0.1):
    """Mesh, model (symmetry, clamp, springs), input load and output selector."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0), components=0)        # symmetry
    model.fix(nodes=lambda x: np.isclose(x[0], nelx) & (x[1] <= nely / 20 + 1e-9))  # clamp
    model.spring((0.0, 0.0), 1, k_in).spring((0.0, nely), 1, k_out)       # port springs
    f = model.point_load((0.0, 0.0), (0.0, 1.0))                          # input push
    l_out = model.point_load((0.0, nely), (0.0, 1.0))                     # output selector
    return mesh, model, f, l_out


def markers(model, f, nely: int):
    """The setup drawn on the (half) design: symmetry, clamp, the input force, the port
    springs and the output port (its displacement minimized: it moves down)."""
    from topopt.plot import Markers
    return Markers.of(model, f, labels={"load": "input force f_in",
                                        "spring": "springs k_in, k_out"}).add(
        "port", [(0.0, nely)], [(0.0, -1.0)], label="output port (u_out minimized)")


@keywords
def run(nelx: int = 40, nely: int = 80, volfrac: float = 0.3, rmin: float = 2.4,
        penal: float = 3.0, filter: str = "density", k_in: float = 0.1, k_out: float = 0.1,
        maxeval: int = 300, solver: str = "auto", out: str | None = None,
        verbose: bool = False, **options) -> RunResult:
    """Optimize the inverter; `options` go to `MechanismProblem.run`."""
    mesh, model, f, l_out = setup(nelx, nely, k_in, k_out)
    problem = MechanismProblem(model, f, l_out, volfrac, rmin, penal=penal, filter=filter,
                               solver=solver)
    result = run_mechanism("inverter", problem, title=f"Inverter {nelx}x{nely}", mirror=True,
                           sizes=dict(nelx=nelx, nely=nely), out=out, maxeval=maxeval,
                           verbose=verbose, notes=dict(k_in=k_in, k_out=k_out, f_in=1.0,
                                                       hold=problem.hold),
                           markers=markers(model, f, nely), **options)
    return result


def summary(result: RunResult) -> str:
    """The line the script prints after its run."""
    return (f"u_out {result['u_out']:.4f} (|u_out| {result['abs_u_out']:.4f}, u_in "
            f"{result['u_in']:.4f})  volume {result['volume']:.4f}  evaluations "
            f"{result.evaluations}  {result['seconds']:.1f} s")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=300, summary=summary)


if __name__ == "__main__":
    main()
