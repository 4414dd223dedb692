"""Incompressible flow: Taylor-Hood Stokes and Navier-Stokes with Brinkman penalization.

Modules: `fields` (a design field at the quadrature points), `brinkman`
(the inverse permeability ``alpha(rho)``), `spaces` (the Taylor-Hood spaces,
P2/P1 on triangles and tetrahedra, Q2/Q1 on quadrilaterals and hexahedra, the
state layout ``w = [u, p]`` and inlet profiles), `assembly` (the fast
Jacobian: element matrices into a fixed CSR pattern), `model` (`FlowModel`,
the residual and Jacobian of `topopt.fem.solve_nonlinear`'s contract),
`responses` (dissipated power, pressure drop, fluid volume), `thermal`
(forced convection: the temperature in a computed flow, SUPG), `heat` (its
responses: convective heat flux, mean temperature), `state` (`FlowStates`: the
states of a run's designs, warm starts, counts).
"""

from .fields import at_quadrature
from .brinkman import alpha, alpha_parameters
from .spaces import TaylorHood, parabolic_inlet
from .assembly import BlockAssembler
from .model import FlowModel, navier_stokes, stokes
from .responses import dissipated_power, fluid_fraction, mean_pressure_weights, pressure_drop
from .thermal import Convection
from .state import FlowStates
from .heat import convective_flux, mean_temperature

__all__ = ["at_quadrature", "alpha", "alpha_parameters", "TaylorHood", "parabolic_inlet",
           "BlockAssembler", "FlowModel", "stokes", "navier_stokes", "dissipated_power",
           "pressure_drop", "mean_pressure_weights", "fluid_fraction"]
__all__ += ["Convection", "FlowStates", "convective_flux", "mean_temperature"]
