"""Incompressible flow: Taylor-Hood Stokes and Navier-Stokes with Brinkman penalization.

Modules: `fields` (a design field at the quadrature points), `brinkman`
(the inverse permeability ``alpha(rho)``), `spaces` (the P2/P1 spaces, the
state layout ``w = [u, p]`` and inlet profiles), `model` (`FlowModel`, the
residual and Jacobian of the nonlinear-solve contract), `assembly` (its
fast Jacobian: element matrices into a fixed CSR pattern), `responses`
(dissipated power, pressure drop, fluid volume).
"""

from .fields import at_quadrature
from .brinkman import alpha, alpha_parameters
from .spaces import TaylorHood, parabolic_inlet
from .assembly import BlockAssembler
from .model import FlowModel, navier_stokes, stokes
from .responses import dissipated_power, fluid_fraction, mean_pressure_weights, pressure_drop

__all__ = ["at_quadrature", "alpha", "alpha_parameters", "TaylorHood", "parabolic_inlet",
           "BlockAssembler", "FlowModel", "stokes", "navier_stokes", "dissipated_power",
           "pressure_drop", "mean_pressure_weights", "fluid_fraction"]
