"""A bracket with holes from a gmsh mesh file: minimum compliance on unstructured triangles.

The part (lengths in mm, unit thickness): a base plate ``[0, 30] x [0,
80]`` bolted through two holes of radius 6 at ``(12, 15)`` and ``(12,
65)``, a web tapering to a round lug of radius 20 round the pin hole of
radius 8 at ``(110, 40)``, and a round cut-out of radius 9 at ``(58, 53)``
in the web, across the straight path from the upper bolt to the pin. gmsh
meshed it with linear triangles of size about 3 (2043 triangles, 1112
nodes: ``problems/meshes/bracket.msh``, made by
``scripts/site/mesh_bracket_gmsh.py``); `topopt.fem.read_mesh` reads it.

Supports and load are chosen by geometry: the nodes on both bolt circles
are fixed (both components); a unit total downward load is spread
uniformly over the boundary edges of the lower half of the pin hole (the
pin bearing on it). A ring 4 wide round each bolt and pin hole is passive
solid (the bosses). E0 = 1, Emin = 1e-9, nu = 0.3, plane stress, SIMP p
= 3. Minimum compliance subject to volume fraction `volfrac` of the part,
the density filter of radius `rmin` on the triangles' centroids, then the
tanh projection (eta = 0.5) with beta 1 (none), 2, 4, 8, 16, `maxeval`
MMA evaluations in all, split evenly over these stages.

    python problems/mesh_bracket.py [--volfrac 0.35 --rmin 6 --maxeval 300 ...]

writes ``results/mesh_bracket/{design.png, domain.png (the mesh), history.png,
result.json, design.npz, design.vtu}``. ``--mesh`` reads another mesh of the same part
(another element size of the gmsh script).
"""

from __future__ import annotations

import os

import numpy as np

from topopt import cli
from topopt import fem
from topopt.cli import Option, compliance_options, compliance_summary, positive_float
from topopt.design.passive import Passive
from topopt.formulations.compliance import ComplianceProblem
from topopt.io.folder import run_compliance
from topopt.io.result import RunResult
from topopt.optimize import Stage
from topopt._keywords import keywords
from topopt._validate import check_int

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "mesh_bracket")
MESH_NAME = os.path.join("problems", "meshes", "bracket.msh")       # in result.json
MESH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "meshes", "bracket.msh")  # installed too
BOLTS = ((12.0, 15.0, 6.0), (12.0, 65.0, 6.0))     # (x, y, radius), as in the gmsh script
PIN = (110.0, 40.0, 8.0)
CUTOUT = (58.0, 53.0, 9.0)
LUG = 20.0          # outer radius of the lug round the pin
BOSS = 4.0          # width of the passive solid ring round the bolt and pin holes
BETAS = (None, 2.0, 4.0, 8.0, 16.0)                # projection sharpness of each stage
OPTIONS = (Option("mesh", str, MESH, "mesh file of the part (gmsh .msh or any meshio format)"),
           Option("rmin", positive_float, 6.0, "filter radius (mm; elements are about 3 mm)"),
           *(o for o in compliance_options({}, volfrac=0.35, rmin=6.0) if o.name != "rmin"))


def distance(x, hole) -> np.ndarray:
    """Distance of the points `x` (``(2, n)``) from the centre of `hole`."""
    return np.hypot(x[0] - hole[0], x[1] - hole[1])


def on_circle(x, hole) -> np.ndarray:
    """The points on the hole's circle (gmsh puts its boundary nodes there)."""
    return np.abs(distance(x, hole) - hole[2]) <= 1e-6 * hole[2]


def setup(mesh_file: str = MESH):
    """Mesh, model bolted at both holes, the pin load and the passive bosses."""
    mesh = fem.read_mesh(mesh_file)
    model = fem.elasticity(mesh, nu=0.3, E0=1.0)
    model.fix(nodes=lambda x: on_circle(x, BOLTS[0]) | on_circle(x, BOLTS[1]))
    # boundary edges nearer the pin's centre than the middle of the lug: the pin hole's
    pin_edge = lambda x: (distance(x, PIN) < (PIN[2] + LUG) / 2) & (x[1] < PIN[1])  # noqa: E731
    f = model.traction(pin_edge, (0.0, -1.0))
    f /= -f[1::2].sum()                                   # unit total load on the chords
    boss = lambda c: np.any([distance(c, h) < h[2] + BOSS  # noqa: E731
                             for h in (*BOLTS, PIN)], axis=0)
    return mesh, model, f, Passive.from_mesh(mesh, solid=boss)


def markers(model, f, passive):
    """The setup drawn on the design: the bolted holes, the pin's load, the bosses."""
    from topopt.plot import Markers
    return Markers.of(model, f, labels={"support": "bolted holes", "load": "pin load"}).region(
        model.mesh, passive.solid, "passive solid bosses")


def stages(maxeval: int) -> list[Stage]:
    """`maxeval` evaluations split evenly over the beta stages (the first ones if fewer)."""
    maxeval = check_int("maxeval", maxeval, 1, what="MMA evaluations over all stages")
    counts = np.diff(np.linspace(0, maxeval, len(BETAS) + 1).round().astype(int))
    return [Stage(int(n), {} if b is None else {"beta": b})
            for n, b in zip(counts, BETAS) if n > 0]


@keywords
def run(mesh: str = MESH, volfrac: float = 0.35, rmin: float = 6.0, penal: float = 3.0,
        filter: str = "density", maxeval: int = 300, solver: str = "auto",
        out: str | None = None, verbose: bool = False, **options) -> RunResult:
    """Optimize the bracket; `options` go to `ComplianceProblem.run`."""
    m, model, f, passive = setup(mesh)
    problem = ComplianceProblem(model, f, volfrac, rmin, penal=penal, filter=filter,
                                solver=solver, passive=passive)
    result = run_compliance(
        "mesh_bracket", problem, title=f"Bracket, {m.t.shape[1]} triangles",
        sizes=dict(mesh=MESH_NAME if os.path.samefile(mesh, MESH) else os.path.abspath(mesh),
                   elements=int(m.t.shape[1]), nodes=int(m.p.shape[1])),
        out=out, maxeval=maxeval, verbose=verbose, stages=stages(maxeval),
        notes=dict(bolts=BOLTS, pin=PIN, cutout=CUTOUT, boss=BOSS, betas=BETAS,
                   passive_solid=int(passive.solid.size)),
        plot=dict(pictures={"domain": (domain_picture(m, passive), "The design domain: "
                                       f"{m.t.shape[1]} triangles, the bosses black")}),
        markers=markers(model, f, passive), **options)
    return result


def domain_picture(mesh, passive) -> np.ndarray:
    """The part as the mesh file has it: the free triangles light grey, the bosses black."""
    shade = np.full(mesh.t.shape[1], 0.25)
    shade[passive.solid] = 1.0
    return shade


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=300,
                    summary=compliance_summary, check=lambda kw: fem.read_mesh(kw["mesh"]))


if __name__ == "__main__":
    main()
