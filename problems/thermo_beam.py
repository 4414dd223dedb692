"""A clamped beam heated and loaded at mid-span (Gao & Zhang 2010; pyMOTO's ex_thermo_mech).

Full design domain ``2 nelx x nely`` unit square bilinear elements, both
ends clamped (``u = 0``) and held at the ambient temperature ``T = 0``; at
the middle of the bottom edge a point force ``P`` (downward) and a point
heat source ``Q``. Half model: the symmetry line ``x = 0`` (``u_x = 0``,
insulated) carries ``P / 2`` and ``Q / 2``. The heat problem ``K_th(k(x)) T
= q`` gives the temperature rise; it expands the material by ``alpha T``
(plane stress, E0 = 1, nu = 0.3), a load ``f_th = sum_e beta_e L_e T_e`` that
depends on the design twice (through ``T`` and through ``beta``). Minimum
compliance ``c = (f + f_th)^T u`` of ``K(E(x)) u = f + f_th`` subject to the
volume fraction ``v <= volfrac``; stiffness and conductivity interpolated
by RAMP with ``q = 2`` (``Emin = 1e-9``; ``kmin = 1e-3``, a poor conductor as
in ``heat_sink``, which keeps the temperature of a void region bounded), the
thermal stress coefficient linearly (``beta = x``; ``--q_beta`` penalizes
it), density filter of radius `rmin`, NLopt MMA
(`topopt.formulations.thermoelastic`). ``--alpha 0`` drops the heat: pure
compliance, a V truss. pyMOTO's example is this setup at 60 x 80, P = 100,
alpha = 1, plane strain and kmin = 1e-9; ``scripts/crosscheck/pymoto_thermoelastic.py``
compares the analysis there.

    python problems/thermo_beam.py [--nelx 60 --nely 40 --alpha 0.05 --q_beta 0 ...]

writes ``results/thermo_beam/{design.png, history.png, result.json,
design.npz, design.vtu}`` (``displacement`` and ``temperature`` in the vtu).
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import Option, at_least, open_unit, positive_float, positive_int
from topopt.formulations.compliance import ComplianceProblem
from topopt.formulations.thermoelastic import ThermoelasticProblem
from topopt.io.folder import run_compliance
from topopt.io.result import RunResult
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "thermo_beam")
OPTIONS = (
    Option("nelx", positive_int, 60, "elements along x (half model)"),
    Option("nely", positive_int, 40, "elements along y"),
    Option("volfrac", open_unit, 0.25, "volume fraction bound"),
    Option("rmin", positive_float, 2.0, "filter radius (element widths)"),
    Option("alpha", at_least(0.0), 0.05, "coefficient of thermal expansion (0: no heat)"),
    Option("load", at_least(0.0), 1.0, "point force P (full model)"),
    Option("heat", positive_float, 1.0, "point heat source Q (full model)"),
    Option("q", at_least(0.0), 2.0, "RAMP penalization of stiffness and conductivity"),
    Option("q_beta", at_least(0.0), 0.0, "RAMP penalization of the thermal stress coefficient"),
)
NU, E_MIN, K_MIN = 0.3, 1e-9, 1e-3


def setup(nelx: int, nely: int, load: float = 1.0, heat: float = 1.0, plane: str = "stress"):
    """Mesh, half models (clamped and cold at ``x = nelx``, symmetric at ``x = 0``), loads."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=NU, plane=plane)
    model.fix(nodes=lambda x: np.isclose(x[0], nelx))                    # clamped end
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0), components=0)       # symmetry
    thermal = fem.heat(mesh).fix(nodes=lambda x: np.isclose(x[0], nelx))  # T = 0
    f = model.point_load((0.0, 0.0), (0.0, -load / 2))                   # P / 2
    q = thermal.point_load((0.0, 0.0), (heat / 2,))                      # Q / 2
    return mesh, model, thermal, f, q


def markers(model, thermal, f, q):
    """The setup drawn on the (half) design: the clamped (and cold) end, symmetry, the
    load and, with `q`, the heat source at the same point."""
    from topopt.plot import Markers
    out = Markers.of(model, f, labels={"load": "load P", "support": "clamped" if q is None
                                       else "clamped, T = 0"})
    if q is not None:
        source = Markers.of(thermal, q).items[-1]             # after the supports: the heat
        out.add("heat", source["points"], label="heat source Q")
    return out


@keywords
def run(nelx: int = 60, nely: int = 40, volfrac: float = 0.25, rmin: float = 2.0,
        alpha: float = 0.05, load: float = 1.0, heat: float = 1.0, q: float = 2.0,
        q_beta: float = 0.0, maxeval: int = 200, solver: str = "auto",
        out: str | None = None, verbose: bool = False, **options) -> RunResult:
    """Optimize the beam; `options` go to the problem's ``run``."""
    mesh, model, thermal, f, Q = setup(nelx, nely, load, heat)
    if alpha > 0:
        problem = ThermoelasticProblem(model, thermal, f, Q, volfrac, rmin, alpha=alpha,
                                       nu=NU, q=q, q_beta=q_beta, Emin=E_MIN, kmin=K_MIN,
                                       solver=solver)
    else:
        problem = ComplianceProblem(model, f, volfrac, rmin, Emin=E_MIN, solver=solver)
    title = f"Thermo-elastic beam {2 * nelx}x{nely}, alpha {alpha:g}"
    result = run_compliance("thermo_beam", problem, title=title, mirror=True, out=out,
                            sizes=dict(nelx=nelx, nely=nely), maxeval=maxeval,
                            verbose=verbose, notes=dict(alpha=alpha, load=load, heat=heat, q=q,
                                                        q_beta=q_beta, nu=NU, kmin=K_MIN,
                                                        plane="stress",
                                                        model="half, symmetric about x = 0"),
                            markers=markers(model, thermal, f, Q if alpha > 0 else None),
                            **options)
    return result


def summary(result: RunResult) -> str:
    parts = (f" (thermal part {result['compliance_thermal']:.4g}, T max "
             f"{result['temperature_max']:.4g})" if "compliance_thermal" in result else "")
    return (f"compliance {result['compliance']:.6g}{parts}  volume {result['volume']:.4f}  "
            f"evaluations {result.evaluations}  {result['seconds']:.1f} s")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=200, summary=summary)


if __name__ == "__main__":
    main()
