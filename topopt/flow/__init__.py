"""Incompressible flow: Taylor-Hood Stokes and Navier-Stokes with Brinkman penalization.

Modules: `fields` (a design field at the quadrature points).
"""

from .fields import at_quadrature

__all__ = ["at_quadrature"]
