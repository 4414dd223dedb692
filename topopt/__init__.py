"""topopt: adjoint-method topology optimization on scikit-fem."""

from . import ad

__version__ = "0.1.0"
__all__ = ["ad"]
