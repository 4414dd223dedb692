"""Cantilever under a harmonic load near its static design's resonance: minimum dynamic compliance.

Design domain 2:1, ``nelx x nely`` unit square bilinear elements (plane
stress, unit thickness), E0 = 1, nu = 0.3, rho0 = 1; the left edge clamped,
a unit vertical load ``f e^{i omega t}`` at the mid-height node of the right
edge (pyMOTO's ``ex_dynamic_compliance.py``). SIMP stiffness ``E = Emin +
(1 - Emin) x^3`` (Emin = 1e-9) and Du & Olhoff's mass ``m = x`` above 0.1
(``--mass simp``: pyMOTO's ``m = E``); ``Z u = f`` with ``Z = K - omega^2 M
+ i omega C``, Rayleigh damping ``C = alpha M + beta K``, ``alpha = zeta
omega``, ``beta = zeta / omega`` (damping ratio `zeta` at the load
frequency); minimise ``|f^H u|`` subject to the volume fraction, density
filter, MMA.

The frequency is where the static design resonates: first the minimum
(static) compliance design is found (`static_maxeval` evaluations), its
first eigenfrequency ``omega_1`` computed (`topopt.fem.modal`), and the load
put at ``omega = ratio omega_1`` (0.95: the static design's response there
is 7.7 times its static compliance). The dynamic optimization starts from
the static design: the uniform start's own ``omega_1`` (0.46 ``omega_1`` of
the static design with this mass) lies below the load, and from above its
first resonance MMA follows the mass-dominated branch (Silva, Neves & Lenzi
2019) to a design of near-zero stiffness. It moves the resonance up, away
from the load (to 1.24 ``omega_1`` by default). `checkpoint` / `resume` are
the dynamic run's; `solver` is the static run's, and the dynamic run's unless
it is ``"cholmod"`` (real positive definite only: the complex ``Z`` then
takes ``"auto"``, UMFPACK or SuperLU).

    python problems/dynamic_beam.py [--nelx 60 --nely 30 --ratio 0.95 --zeta 0.01 ...]

writes ``results/dynamic_beam/{design.png, static.png, response.png, history.png,
result.json, design.npz, design.vtu}``: the two designs, both ``|f^H u|`` over ``0.2 .. 2
omega_1``, the amplitude's ``displacement_real`` / ``_imag`` in the vtu.
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli, fem
from topopt.cli import Option, at_least, open_unit, positive_float, positive_int
from topopt.formulations import MASS_INTERPOLATIONS, ComplianceProblem, DynamicComplianceProblem
from topopt.io import check_writable_file, check_writable_folder, write_results
from topopt.io.result import RunResult
from topopt._keywords import keywords

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "dynamic_beam")
SWEEP = np.linspace(0.2, 2.0, 31)        # the frequency response, times omega_1 (static)
OPTIONS = (
    Option("nelx", positive_int, 60, "elements along x"),
    Option("nely", positive_int, 30, "elements along y"),
    Option("volfrac", open_unit, 0.5, "volume fraction"),
    Option("rmin", positive_float, 2.0, "filter radius (element widths)"),
    Option("ratio", positive_float, 0.95, "load frequency / the static design's omega_1"),
    Option("zeta", at_least(0.0), 0.01, "damping ratio at the load frequency"),
    Option("mass", str, "du_olhoff", "mass interpolation", choices=MASS_INTERPOLATIONS),
    Option("static_maxeval", positive_int, 100, "MMA evaluations of the static design"),
)


def setup(nelx: int, nely: int):
    """Mesh, elasticity model clamped on the left edge, the unit load at the right mid-height."""
    mesh = fem.rectangle(nelx, nely)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: np.isclose(x[0], 0.0))
    f = model.point_load((nelx, nely // 2), (0.0, -1.0))
    return mesh, model, f


@keywords
def run(nelx: int = 60, nely: int = 30, volfrac: float = 0.5, rmin: float = 2.0,
        ratio: float = 0.95, zeta: float = 0.01, mass: str = "du_olhoff",
        static_maxeval: int = 100, maxeval: int = 80, solver: str = "auto",
        out: str | None = None, verbose: bool = False, checkpoint: str | None = None,
        resume: str | None = None) -> RunResult:
    """The static design, its omega_1, then the dynamic design at ``ratio omega_1``."""
    if out is not None:
        check_writable_folder(out, "out")                    # before any work
    if checkpoint is not None:
        check_writable_file(checkpoint, "checkpoint")
    mesh, model, f = setup(nelx, nely)
    static = ComplianceProblem(model, f, volfrac, rmin, solver=solver).run(
        maxeval=static_maxeval, verbose=False)
    solver = "auto" if solver == "cholmod" else solver           # Z is complex
    probe = DynamicComplianceProblem(model, f, 0.0, volfrac, rmin, mass=mass, solver=solver)
    omega1 = float(probe.eigenfrequencies(static.x_phys)[0])
    omega = ratio * omega1
    problem = DynamicComplianceProblem(model, f, omega, volfrac, rmin, alpha=zeta * omega,
                                       beta=zeta / omega, mass=mass, solver=solver)
    result = problem.run(maxeval=maxeval, x0=static.x, verbose=verbose, checkpoint=checkpoint,
                         resume=resume)
    c_static = float(problem.dynamic_compliance(static.x))
    result.metrics.update(
        omega1_static=omega1, ratio=ratio, dynamic_compliance_static=c_static,
        compliance_static=static["compliance"],
        omega1_uniform=float(probe.eigenfrequencies(np.full(model.n_el, volfrac))[0]))
    if out is not None:
        from topopt.plot import Markers
        sweep = [problem.frequency_response(x, SWEEP * omega1)
                 for x in (static.x_phys, result.x_phys)]
        result.metrics["sweep"] = {"omega": list(SWEEP * omega1), "static": list(sweep[0]),
                                   "dynamic": list(sweep[1])}
        setup_record = dict(problem="dynamic_beam", nelx=nelx, nely=nely, volfrac=volfrac,
                            rmin=rmin, ratio=ratio, omega=omega, zeta=zeta, alpha=zeta * omega,
                            beta=zeta / omega, mass_interpolation=mass, penal=problem.penal,
                            Emin=problem.Emin, static_maxeval=static_maxeval)
        title = f"ω = {ratio:g} ω1(static), static design: |f·u| = {c_static:.4g}"
        write_results(out, mesh, result, setup_record,
                      title=f"Cantilever {nelx}x{nely} at ω = {ratio:g} ω1 of the static design",
                      objective="dynamic_compliance", symbol="|f·u|",
                      point_data={f"displacement_{part}": model.nodal_values(
                          getattr(result.arrays["u"], part)) for part in ("real", "imag")},
                      objective_scale=problem.c0, constraint_names=["V/Vmax - 1"],
                      markers=Markers.of(model, f, labels={"load": "harmonic load f cos(ωt)"}),
                      pictures={"static": (static.x_phys, title)})
        _response_figure(os.path.join(out, "response.png"), SWEEP, sweep, ratio)
    return result


def _response_figure(path: str, sweep, responses, ratio: float) -> None:
    """``|f^H u|`` of both designs against ``omega / omega_1`` (static design), log scale."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(6, 3.5), layout="constrained")
    ax = fig.add_subplot()
    for c, label in zip(responses, ("static design", "dynamic design")):
        ax.semilogy(sweep, c, label=label)
    ax.axvline(ratio, color="k", ls=":", label="load frequency")
    ax.set(xlabel="ω / ω1 (static design)", ylabel="dynamic compliance |f·u|")
    ax.legend()
    fig.savefig(path, dpi=110)


def summary(result: RunResult) -> str:
    """The line printed after a run."""
    return (f"|f.u| {result['dynamic_compliance']:.5g} (static design "
            f"{result['dynamic_compliance_static']:.5g}) at omega {result['omega']:.4g}; "
            f"omega1 {result['eigenfrequencies'][0]:.4g} (static design "
            f"{result['omega1_static']:.4g}); {result['seconds']:.1f} s")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=80,
                    maxeval_help="MMA evaluations of the dynamic design",
                    solvers=cli.DIRECT_SOLVERS, summary=summary)


if __name__ == "__main__":
    main()
