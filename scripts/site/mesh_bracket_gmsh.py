"""Mesh the bracket of problems/mesh_bracket.py with gmsh: problems/meshes/bracket.msh.

gmsh is not a dependency of topopt (nor of its tests): the mesh is committed,
and this script is how it was made. Run it in a scratch environment::

    python3 -m venv /tmp/meshfile-venv && /tmp/meshfile-venv/bin/pip install gmsh
    /tmp/meshfile-venv/bin/python scripts/site/mesh_bracket_gmsh.py [--h 3.0] [--out PATH]

(gmsh's wheel may need system libraries: libGLU, libXcursor, libXinerama,
libXft.) The part, lengths in mm: a base plate ``[0, 30] x [0, 80]`` with two
bolt holes, a web tapering to a round lug of radius 20 at ``(110, 40)`` with
the pin hole, and a round cut-out in the web. The numbers are the ones of
``problems/mesh_bracket.py`` (`BOLTS`, `PIN`, `CUTOUT`); its test checks that
the committed mesh has its holes there. Linear triangles of size about `h`
(gmsh's Frontal-Delaunay), only the surface's physical group is saved (no
geometry points or boundary lines), msh format 4.1, ASCII.
"""

import argparse
import os

import gmsh

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOLTS = ((12.0, 15.0, 6.0), (12.0, 65.0, 6.0))     # (x, y, radius)
PIN = (110.0, 40.0, 8.0)
CUTOUT = (58.0, 53.0, 9.0)
LUG = 20.0                                         # outer radius of the lug round PIN


def outline(occ) -> int:
    """The part without holes: base plate, tapering web and round lug, fused."""
    base = occ.addRectangle(0.0, 0.0, 0.0, 30.0, 80.0)
    corners = [(30.0, 0.0), (PIN[0], PIN[1] - LUG), (PIN[0], PIN[1] + LUG), (30.0, 80.0)]
    points = [occ.addPoint(x, y, 0.0) for x, y in corners]
    lines = [occ.addLine(points[i], points[(i + 1) % 4]) for i in range(4)]
    web = occ.addPlaneSurface([occ.addCurveLoop(lines)])
    lug = occ.addDisk(PIN[0], PIN[1], 0.0, LUG, LUG)
    fused, _ = occ.fuse([(2, base)], [(2, web), (2, lug)])
    return fused


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--h", type=float, default=3.0, help="element size (mm)")
    parser.add_argument("--out", default=os.path.join(ROOT, "problems", "meshes", "bracket.msh"))
    args = parser.parse_args(argv)
    gmsh.initialize()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("bracket")
        occ = gmsh.model.occ
        body = outline(occ)
        holes = [(2, occ.addDisk(x, y, 0.0, r, r)) for x, y, r in (*BOLTS, PIN, CUTOUT)]
        part, _ = occ.cut(body, holes)
        occ.synchronize()
        gmsh.model.addPhysicalGroup(2, [tag for _, tag in part], name="bracket")
        gmsh.option.setNumber("Mesh.MeshSizeMin", args.h)
        gmsh.option.setNumber("Mesh.MeshSizeMax", args.h)
        gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", 0)
        gmsh.option.setNumber("Mesh.Algorithm", 6)          # Frontal-Delaunay
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 0)
        gmsh.model.mesh.generate(2)
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        gmsh.write(args.out)
        n_nodes = len(gmsh.model.mesh.getNodes(2, -1, includeBoundary=True)[0])
        n_tri = sum(len(t) for t in gmsh.model.mesh.getElements(2)[1])
        print(f"gmsh {gmsh.__version__}: {n_tri} triangles, {n_nodes} nodes, h = {args.h} "
              f"-> {args.out} ({os.path.getsize(args.out) / 1024:.0f} KiB)")
    finally:
        gmsh.finalize()


if __name__ == "__main__":
    main()
