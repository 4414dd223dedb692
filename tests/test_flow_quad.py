"""Taylor-Hood Q2/Q1 on quadrilaterals (and hexahedra): closed forms and rates.

Plane Poiseuille flow is in the Q2/Q1 spaces (parabolic velocity, linear
pressure), so it is reproduced to round-off (tests/test_flow.py's Poiseuille
tests run on quadrilaterals and hexahedra too); a manufactured smooth solution
converges at the Taylor-Hood rates (Brezzi & Fortin 1991, Sect. VI.6: Q2/Q1 is
inf-sup stable, velocity O(h^3) in L2 and O(h^2) in H1, pressure O(h^2)). The
derivative rules on quadrilaterals are in the tables of tests/test_flow.py.
"""

import numpy as np
import pytest
import skfem

from topopt.flow import (FlowStates, TaylorHood, at_quadrature, fluid_fraction, navier_stokes,
                         stokes)
from test_flow import channel, errors, force, newton, u_exact


@pytest.mark.parametrize("ctor,mu,rho_f", [(stokes, 1.0, 0.0), (navier_stokes, 0.05, 1.0)])
def test_manufactured_rates_on_quadrilaterals(ctor, mu, rho_f):
    """The manufactured solution of tests/test_flow.py (sin/cos velocity, cos cos
    pressure) on n x n squares: Q2/Q1 rates 3 (velocity L2), 2 (H1), 2 (pressure L2);
    Navier-Stokes (Re 20) solved by Newton from rest."""
    errs = []
    kw = {"rho_f": rho_f} if rho_f else {}
    for n in (4, 8, 16):
        mesh = skfem.MeshQuad.init_tensor(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1))
        model = ctor(mesh, mu=mu, dirichlet=[(lambda x: x[0] > -1, u_exact)],
                     body_force=force(mu, rho_f), **kw)
        assert model.pinned and model.space.intorder == (4 if rho_f == 0 else 6)
        w, its = newton(model, np.ones(mesh.nelements))
        assert its <= (1 if rho_f == 0 else 5)
        errs.append(errors(model, w))
    errs = np.array(errs)
    rates = np.log2(errs[:-1] / errs[1:])
    # measured at n = 16 (errors) and 8 -> 16 (rates; 16 -> 32: 3.00, 2.00, 2.00 and
    # 3.08, 2.10, 2.00), below P2/P1's on the same squares cut in two (9.71e-5, 1.19e-2,
    # 1.62e-3, tests/test_flow.py):
    #   Stokes (mu = 1):            4.35e-5, 4.51e-3, 1.02e-3; rates 3.00, 2.00, 2.02
    #   Navier-Stokes (mu = 0.05):  4.69e-5, 4.98e-3, 1.02e-3; rates 3.25, 2.30, 2.02
    assert np.all(rates[-1] > [2.95, 1.95, 1.95]), rates
    assert np.all(errs[-1] < [4.8e-5, 5.1e-3, 1.05e-3]), errs[-1]


def test_navier_stokes_design_states_on_quadrilaterals():
    """FlowStates on Q2/Q1: a cold Navier-Stokes solve climbs the convection, the next
    design starts warm; Poiseuille (rho = 1) takes one Newton step per climbing step."""
    model, _ = channel(navier_stokes)
    states = FlowStates(model)
    rho = np.ones(model.space.mesh.nelements)
    states.solve(rho)
    assert states.counts["solves"] == 1 and states.counts["newton_iterations"] == 3
    rho[3] = 0.5
    w = states.solve(rho)
    assert states.counts["solves"] == 2
    assert np.linalg.norm(model.residual(w, rho)[np.setdiff1d(np.arange(model.n),
                                                              model.fixed)]) < 1e-9


def test_design_fields_on_quadrilaterals():
    """A vertex design is bilinear on each quadrilateral (Q1), a cell design constant;
    the fluid fraction integrates either exactly: rho = x y on the unit square is 1/4."""
    mesh = skfem.MeshQuad.init_tensor(np.linspace(0, 1, 4), np.array([0.0, 0.3, 1.0]))
    space = TaylorHood(mesh)
    x = np.asarray(space.basis_p.global_coordinates())
    rho_v = mesh.p[0] * mesh.p[1]
    np.testing.assert_allclose(at_quadrature(space.basis_p, rho_v), x[0] * x[1], atol=1e-15)
    rho_e = np.arange(mesh.nelements) / 10.0
    np.testing.assert_array_equal(at_quadrature(space.basis_p, rho_e),
                                  rho_e[:, None] * np.ones(x.shape[2]))
    model = stokes(mesh)
    assert abs(fluid_fraction(model, rho_v) - 0.25) < 1e-15
    assert space.nu == 2 * 7 * 5 and space.np_ == 4 * 3      # (2 nx + 1)(2 ny + 1) nodes
    np.testing.assert_array_equal(space.nodes[:, :mesh.nvertices], mesh.p)  # vertices first


@pytest.mark.parametrize("ctor", [stokes, navier_stokes])
@pytest.mark.parametrize("assembly", ["kernels", "forms"])
def test_jacobian_stores_no_zeros(ctor, assembly):
    """The Jacobian keeps no stored zeros: UMFPACK takes them for entries, and with them
    its factor of the Q2/Q1 double pipe on 96 x 96 squares solved to a relative residual
    of 5.8 (measured; 4e-15 without them). Stokes' cross-component blocks are zero."""
    model, _ = channel(ctor, skfem.MeshQuad, assembly=assembly)
    w = np.random.default_rng(0).standard_normal(model.n)
    rho = np.full(model.space.mesh.nelements, 0.5)
    J = model.jacobian(w, rho)
    assert J.nnz == J.count_nonzero()
    model.jacobian(w, np.linspace(0, 1, rho.size))        # the fixed pattern is kept
    assert abs(model.jacobian(w, rho) - J).max() == 0.0
