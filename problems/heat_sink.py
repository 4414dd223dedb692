"""Volume-to-point heat conduction (Bendsøe & Sigmund 2003, Sec. 1.5; Gersborg-Hansen et al. 2006).

A square plate of ``nelx x nely`` unit bilinear elements generates heat
uniformly, q = 0.01 per unit area; the heat leaves through a small sink held
at T = 0, the middle tenth of the left edge (``|y - nely/2| <= nely/20``,
the ``toph`` setup of the book); every other edge is insulated. Two
materials conduct: k = 1 (the design) and k_min = 1e-3, interpolated by
SIMP, ``k = k_min + (1 - k_min) x_phys^p`` with p = 3. Minimum thermal
compliance ``c = f^T T`` (the mean temperature weighted by the source)
subject to volume fraction `volfrac` of the conductor, density or
Helmholtz PDE filter of radius `rmin`, NLopt MMA. The optimized conductor
is a branching tree rooted at the sink.

    python problems/heat_sink.py [--nelx 80 --nely 80 --volfrac 0.4 --rmin 2.4 ...]

writes ``results/heat_sink/{design.png, history.png, result.json, design.npz,
design.vtu}`` (``temperature`` in the vtu).
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import compliance_options, compliance_summary
from topopt.formulations.compliance import ComplianceProblem
from topopt.io.folder import run_compliance
from topopt.io.result import RunResult
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "heat_sink")
OPTIONS = compliance_options(dict(nelx=80, nely=80), volfrac=0.4, rmin=2.4)
Q = 0.01            # heat generated per unit area (toph: 0.01 per node)
K_MIN = 1e-3        # conductivity of the poor conductor (k = 1 for the good one)


def check_sink(nely: int) -> int:
    """The sink (left-edge nodes within ``nely / 20`` of mid-height) holds a node: `nely`
    even or >= 10; `ValueError` otherwise."""
    if nely % 2 and nely < 10:
        raise ValueError(f"--nely {nely}: the heat sink (the left-edge nodes within nely/20 "
                         f"of mid-height) holds no node; give an even nely or nely >= 10")
    return nely


def setup(nelx: int, nely: int):
    """Mesh, heat model with the sink at the middle of the left edge, and the source."""
    check_sink(nely)
    mesh = fem.rectangle(nelx, nely)
    model = fem.heat(mesh, k0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0)                     # sink, T = 0
              & (np.abs(x[1] - nely / 2) <= nely / 20 + 1e-9))
    f = model.body_load((Q,))                                           # uniform source
    return mesh, model, f


def markers(model, nelx: int, nely: int):
    """The setup drawn on the design: the sink (T = 0) and the uniform heat source."""
    from topopt.plot import Markers
    return Markers.of(model, labels={"support": "sink T = 0"}).add(
        "body_load", [(0.0, 0.0), (nelx, nely)], label=f"uniform heat source q = {Q:g}")


@keywords
def run(nelx: int = 80, nely: int = 80, volfrac: float = 0.4, rmin: float = 2.4,
        penal: float = 3.0, filter: str = "density", maxeval: int = 300,
        solver: str = "auto", out: str | None = None, verbose: bool = False,
        **options) -> RunResult:
    """Optimize the conductor; `options` go to `ComplianceProblem.run`."""
    mesh, model, f = setup(nelx, nely)
    problem = ComplianceProblem(model, f, volfrac, rmin, penal=penal, filter=filter,
                                Emin=K_MIN, solver=solver)
    result = run_compliance("heat_sink", problem, title=f"Heat sink {nelx}x{nely}",
                            sizes=dict(nelx=nelx, nely=nely), out=out, maxeval=maxeval,
                            verbose=verbose, notes=dict(q=Q, k_min=K_MIN,
                                                        sink_length=nely / 10),
                            markers=markers(model, nelx, nely), **options)
    return result


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=300,
                    summary=compliance_summary, check=lambda kw: check_sink(kw["nely"]),
                    size=lambda kw: ((kw["nelx"] + 1) * (kw["nely"] + 1), 2))  # temperature


if __name__ == "__main__":
    main()
