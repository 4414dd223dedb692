"""Mesh study of the developed Nusselt number between isothermal plates (topopt.flow.Convection).

Gap H = 1, length 5, Poiseuille velocity of mean 1, Pe = U D_h / alpha = 50,
T = 1 at the inlet and 0 on the walls; Nu = k dT/dy|wall D_h / (k T_bulk)
at the wall's quadrature points with 3 < x < 4.5. References: 7.5407 (Shah
& London 1978, no axial conduction) and 7.5457 (the same eigenproblem with
axial conduction at Pe = 50, tests/test_flow_thermal.py::developed_nusselt).
Run: ``PYTHONPATH=. python scripts/crosscheck/thermal_nusselt.py``.
"""

import numpy as np
import skfem

from topopt import fem
from topopt.flow import Convection


def nusselt(nx, ny, order, tau="shakib", supg=True, pe=50.0, length=5.0):
    k = 2.0 / pe
    mesh = skfem.MeshTri.init_tensor(np.linspace(0, length, nx + 1), np.linspace(0, 1, ny + 1))
    model = Convection(mesh, fixed=lambda x: (x[0] < 1e-9) | (x[1] < 1e-9) | (x[1] > 1 - 1e-9),
                       order=order, k=(k, k), tau=tau, supg=supg)
    u = model.basis_u.project(lambda x: np.stack([6 * x[1] * (1 - x[1]), 0 * x[0]]))
    p = np.concatenate([u, np.ones(mesh.t.shape[1])])
    x, y = model.basis.doflocs
    T = fem.solve_nonlinear(model, p, np.where((x < 1e-9) & (y > 1e-9) & (y < 1 - 1e-9), 1.0, 0.0))
    wall = skfem.FacetBasis(mesh, model.element, intorder=4,
                            facets=mesh.facets_satisfying(lambda x: x[1] < 1e-9, True))
    xq = np.asarray(wall.global_coordinates())[0].ravel()
    flux = k * wall.interpolate(T).grad[1].ravel()
    keep = (xq > 3.0) & (xq < 4.5)
    xq, flux = xq[keep], flux[keep]
    yg, wg = np.polynomial.legendre.leggauss(12)
    yg, wg = (yg + 1) / 2, wg / 2
    Tline = model.basis.probes(np.vstack([np.repeat(xq, 12), np.tile(yg, xq.size)])) @ T
    bulk = Tline.reshape(xq.size, 12) @ (wg * 6 * yg * (1 - yg))
    return flux * 2.0 / (k * bulk), model.n


if __name__ == "__main__":
    print(f"{'mesh':>8} {'order':>5} {'tau':>8} {'dofs':>6} {'Nu min':>8} {'Nu max':>8} "
          f"{'vs 7.5457':>10} {'vs 7.5407':>10}")
    for nx, ny, order, tau, supg in [(40, 8, 2, "shakib", True), (80, 16, 2, "shakib", True),
                                     (160, 32, 2, "shakib", True), (80, 16, 2, "optimal", True),
                                     (80, 16, 2, "-", False), (160, 32, 1, "shakib", True),
                                     (320, 64, 1, "shakib", True)]:
        nu, n = nusselt(nx, ny, order, tau if supg else "shakib", supg)
        worst = nu[np.argmax(np.abs(nu - 7.5457))]
        print(f"{nx:>4}x{ny:<3} {order:>5} {tau:>8} {n:>6} {nu.min():8.4f} {nu.max():8.4f} "
              f"{worst / 7.5457 - 1:+10.2e} {worst / 7.5407 - 1:+10.2e}")
