"""Cross-check problems/mesh_bracket.py against an independent scikit-fem solve of its mesh.

The independent side shares no code of topopt: scikit-fem reads the ``.msh``
itself (``skfem.MeshTri.load``, its own meshio import, not
`topopt.fem.read_mesh`), the plane-stress bilinear form is written out here
(``sigma = E / (1 - nu^2) ((1 - nu) eps + nu tr(eps) I)``, not
`skfem.models.elasticity`), the element moduli enter as a piecewise-constant
field, ``K`` is assembled by ``skfem.asm`` and solved by
``skfem.solve(*skfem.condense(K, f, D=...))``; the supports (nodes on the
bolt circles), the pin load (a traction on the lower half of the pin hole,
scaled to a unit total), the passive bosses (centroids within 4 of a bolt or
pin hole), the density filter (``H_ei = max(0, rmin - |c_e - c_i|)`` from all
centroid distances, top88 eq. (6)) and SIMP are computed here from the
script's geometry constants. The gradient is the adjoint's closed form for
compliance, ``dc/dE_e = -u_e^T K_e u_e`` (the element energies of the
independent solution at unit modulus), through SIMP and the filter's
transpose to the free elements.

On fixed designs (the uniform start and seeded random ones, no
projection) it prints the relative differences of the compliance and of
the gradient (max norm) against ``ComplianceProblem.compliance`` and its
reverse-mode gradient::

    PYTHONPATH=. python scripts/crosscheck/meshfile_crosscheck.py [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

import numpy as np
import skfem
from skfem.helpers import ddot, sym_grad, trace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from topopt_problems import mesh_bracket as mb  # noqa: E402

NU, PENAL, EMIN = 0.3, 3.0, 1e-9
# skfem.io.meshio warns that it finds no MSH 2.2 tags (this file is msh 4.1; no tags needed)
logging.getLogger("skfem.io.meshio").setLevel(logging.ERROR)


def _energy_density(eps_u, eps_v, E):
    """Plane stress: ``sigma(u) : eps(v)`` with ``sigma = E/(1-nu^2)((1-nu) eps + nu tr I)``."""
    return E / (1 - NU ** 2) * ((1 - NU) * ddot(eps_u, eps_v) + NU * trace(eps_u) * trace(eps_v))


@skfem.BilinearForm
def stiffness(u, v, w):
    return _energy_density(sym_grad(u), sym_grad(v), w["E"])


@skfem.Functional
def energy(w):
    return _energy_density(sym_grad(w["u"]), sym_grad(w["u"]), 1.0)


class Independent:
    """The bracket set up with scikit-fem alone, from the mesh file."""

    def __init__(self, path: str = mb.MESH, rmin: float = 6.0):
        self.mesh = skfem.MeshTri.load(path)
        self.basis = skfem.Basis(self.mesh, skfem.ElementVector(skfem.ElementTriP1()))
        self.basis0 = self.basis.with_element(skfem.ElementTriP0())
        p = self.mesh.p
        on = [np.abs(np.hypot(p[0] - h[0], p[1] - h[1]) - h[2]) <= 1e-6 * h[2] for h in mb.BOLTS]
        self.fixed = self.basis.get_dofs(nodes=np.flatnonzero(on[0] | on[1])).all()
        mid = self.mesh.p[:, self.mesh.facets].mean(axis=1)
        hole = (np.hypot(mid[0] - mb.PIN[0], mid[1] - mb.PIN[1]) < mb.PIN[2] + 1.0) \
            & (mid[1] < mb.PIN[1])
        facets = np.intersect1d(np.flatnonzero(hole), self.mesh.boundary_facets())
        fb = skfem.FacetBasis(self.mesh, self.basis.elem, facets=facets)
        f = skfem.LinearForm(lambda v, w: -v[1]).assemble(fb)       # traction (0, -1)
        self.f = f / -f[self.basis.nodal_dofs[1]].sum()            # unit total load
        self.c = p[:, self.mesh.t].mean(axis=1).T                  # centroids (n_el, 2)
        near = [np.hypot(*(self.c - h[:2]).T) < h[2] + mb.BOSS for h in (*mb.BOLTS, mb.PIN)]
        self.solid = np.any(near, axis=0)
        d = np.sqrt(((self.c[:, None, :] - self.c[None, :, :]) ** 2).sum(axis=2))
        self.H = np.maximum(0.0, rmin - d)                         # top88 eq. (6), dense
        self.Hs = self.H.sum(axis=1)

    def x_phys(self, x_free):
        x = np.ones(self.mesh.t.shape[1])
        x[~self.solid] = x_free
        x_tilde = self.H @ x / self.Hs
        x_tilde[self.solid] = 1.0
        return x_tilde

    def compliance_and_gradient(self, x_free):
        xp = self.x_phys(x_free)
        E = EMIN + xp ** PENAL * (1 - EMIN)
        K = skfem.asm(stiffness, self.basis, E=self.basis0.interpolate(E))
        u = skfem.solve(*skfem.condense(K, self.f, D=self.fixed))
        e = energy.elemental(self.basis, u=self.basis.interpolate(u))   # u_e^T K_e u_e
        g_phys = -e * PENAL * xp ** (PENAL - 1) * (1 - EMIN)
        g_phys[self.solid] = 0.0                                   # passive: fixed x_phys
        g = self.H.T @ (g_phys / self.Hs)
        return float(self.f @ u), g[~self.solid]


def compare(seeds=(0, 1, 2), rmin: float = 6.0, volfrac: float = 0.35) -> list[dict]:
    """Relative differences of compliance and gradient on the uniform and seeded designs."""
    from topopt import ad
    from topopt.formulations.compliance import ComplianceProblem
    mesh, model, f, passive = mb.setup()
    problem = ComplianceProblem(model, f, volfrac, rmin, passive=passive)
    ref = Independent(rmin=rmin)
    assert np.allclose(ref.c, mesh.p[:, mesh.t].mean(axis=1).T, rtol=0, atol=1e-12), \
        "the two readers number the elements differently"
    assert np.array_equal(np.flatnonzero(~ref.solid), passive.free), "other passive bosses"
    designs = [("uniform", np.full(problem.n, volfrac))]
    designs += [(f"random seed {s}", np.random.default_rng(s).uniform(0.0, 1.0, problem.n))
                for s in seeds]
    rows = []
    for name, x in designs:
        c, g = ad.value_and_gradient(problem.compliance, x)
        c_ref, g_ref = ref.compliance_and_gradient(x)
        rows.append(dict(design=name, c=float(c), c_ref=c_ref,
                         rel_c=abs(float(c) - c_ref) / abs(c_ref),
                         rel_g=float(np.max(np.abs(g - g_ref)) / np.max(np.abs(g_ref)))))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    args = parser.parse_args(argv)
    rows = compare(tuple(args.seeds))
    print(f"{'design':<16} {'c topopt':>18} {'c scikit-fem':>18} {'rel diff c':>11} "
          f"{'rel diff grad':>13}")
    for r in rows:
        print(f"{r['design']:<16} {r['c']:18.12f} {r['c_ref']:18.12f} {r['rel_c']:11.2e} "
              f"{r['rel_g']:13.2e}")
    return rows


if __name__ == "__main__":
    main()
