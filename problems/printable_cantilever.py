"""Self-supporting cantilever: Langelaar's overhang filter (2017, Struct. Multidisc. Optim. 55:871).

Design domain ``nelx x nely`` unit square bilinear elements (pyMOTO's
``ex_compliance_overhang`` setup): E0 = 1, Emin = 1e-9, nu = 0.3, SIMP
penalty p = 3; the left edge clamped, a unit downward load at the middle of
the right edge. Minimum compliance subject to volume fraction `volfrac`,
density filter of radius `rmin`, then the additive-manufacturing filter of
Langelaar (P = 40, eps = 1e-4, xi_0 = 0.5; `topopt.design.overhang`) for the
build direction `direction` (``+y``: printed from a plate at the bottom edge
upward; ``-y``, ``+x``, ``-x`` likewise; write ``--direction=-y``), NLopt MMA.
The printed design has no element that overhangs by more than 45 degrees:
``overhang_violations`` in ``result.json`` counts the solid elements
(x_phys >= 0.5) whose three supports below are all void; ``--unfiltered``
optimizes without the filter and counts them for contrast.

    python problems/printable_cantilever.py [--nelx 120 --nely 40 --direction +y ...]

writes ``results/printable_cantilever/{design.png, history.png, result.json,
design.npz, design.vtu}``.
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import Option, compliance_options, compliance_summary
from topopt.formulations.printable import PrintableCompliance
from topopt.io.folder import run_compliance
from topopt.io.result import RunResult
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "printable_cantilever")
DIRECTIONS = ("+y", "-y", "+x", "-x")
OPTIONS = compliance_options(dict(nelx=120, nely=40), volfrac=0.5, rmin=2.0) + (
    Option("direction", str, "+y", "build direction (write --direction=-y)",
           choices=DIRECTIONS),
    Option("unfiltered", bool, False, "leave the overhang filter out (for contrast)"))


def setup(nelx: int, nely: int):
    """Mesh, elasticity model clamped on the left edge, and the load at mid-height right."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0))                    # clamped edge
    f = model.point_load((nelx, nely // 2), (0.0, -1.0))                # unit load
    return mesh, model, f


def markers(model, f, nelx: int, nely: int, direction: str | None):
    """The setup drawn on the design: the clamp, the load and the build direction (None:
    unfiltered, no overhang constraint), an arrow beside the part."""
    from topopt.plot import Markers
    out = Markers.of(model, f)
    if direction is not None:
        axis, sign = "xy".index(direction[1]), 1.0 if direction[0] == "+" else -1.0
        anchor = ((1.06 * nelx, 0.5 * nely - 0.05 * nelx * sign) if axis else
                  (0.5 * nelx - 0.05 * nelx * sign, nely + 0.06 * nelx))
        out.add("direction", [anchor], [np.eye(2)[axis] * sign],
                label=f"build direction {direction}")
    return out


@keywords
def run(nelx: int = 120, nely: int = 40, volfrac: float = 0.5, rmin: float = 2.0,
        penal: float = 3.0, filter: str = "density", direction: str = "+y",
        unfiltered: bool = False, maxeval: int = 200, solver: str = "auto",
        out: str | None = None, verbose: bool = False, **options) -> RunResult:
    """Optimize the printable cantilever; `options` go to `PrintableCompliance.run`."""
    mesh, model, f = setup(nelx, nely)
    problem = PrintableCompliance(model, f, volfrac, rmin, penal=penal, filter=filter,
                                  solver=solver, direction=direction, filtered=not unfiltered)
    what = "without overhang filter" if unfiltered else f"printed {direction}"
    result = run_compliance("printable_cantilever", problem,
                            title=f"Printable cantilever {nelx}x{nely}, {what}",
                            sizes=dict(nelx=nelx, nely=nely), out=out, maxeval=maxeval,
                            verbose=verbose, notes=dict(direction=direction,
                                                        overhang_filter=not unfiltered,
                                                        P=40.0, eps=1e-4, xi0=0.5),
                            markers=markers(model, f, nelx, nely,
                                            None if unfiltered else direction), **options)
    return result


def summary(result) -> str:
    return (f"{compliance_summary(result)}  overhang violations "
            f"{result['overhang_violations']}")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=200,
                    summary=summary)


if __name__ == "__main__":
    main()
