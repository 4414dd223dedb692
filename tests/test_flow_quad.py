"""Taylor-Hood Q2/Q1 on quadrilaterals (and hexahedra): states, design fields, assembly.

Plane Poiseuille flow (in the Q2/Q1 spaces, so to round-off) and the
manufactured rates (Brezzi & Fortin 1991, Sect. VI.6: velocity O(h^3) in L2,
O(h^2) in H1, pressure O(h^2)) run on quadrilaterals in the tables of
tests/test_flow.py, and so do the derivative rules; here what is Q2/Q1's own.
"""

import numpy as np
import pytest
import skfem

from topopt.flow import (FlowStates, TaylorHood, at_quadrature, fluid_fraction, navier_stokes,
                         stokes)
from test_flow import channel


def test_navier_stokes_design_states_on_quadrilaterals():
    """FlowStates on Q2/Q1: a cold Navier-Stokes solve climbs the convection, the next
    design starts warm; Poiseuille (rho = 1) takes one Newton step per climbing step."""
    model, _ = channel(navier_stokes, skfem.MeshQuad)
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
