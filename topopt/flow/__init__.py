"""Incompressible flow: Taylor-Hood Stokes and Navier-Stokes with Brinkman penalization.

Modules: `fields` (a design field at the quadrature points), `thermal` (forced
convection: the temperature in a computed flow, SUPG).
"""

from .fields import at_quadrature
from .thermal import Convection

__all__ = ["at_quadrature"]
__all__ += ["Convection"]
