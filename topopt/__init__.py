"""topopt: adjoint-method topology optimization on scikit-fem."""

from . import _memory  # noqa: F401  (allocator policy, see its docstring)
from . import ad

__version__ = "0.1.0"
__all__ = ["ad"]
