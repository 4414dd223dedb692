"""Finite-element layer on scikit-fem: meshes, element matrices, the design-dependent solve."""

from .helmholtz import WaveModel, graded_axis
from .mesh import box, element_centroids, element_volumes, rectangle
from .models import Model, elasticity, heat
from .solvers import SingularSystemError, available_solvers
from .system import LinearSystem, matvec, products, solve

__all__ = ["WaveModel", "graded_axis", "rectangle", "box", "element_centroids", "element_volumes", "Model", "elasticity", "heat",
           "LinearSystem", "solve", "matvec", "products", "SingularSystemError",
           "available_solvers"]
