"""topopt: adjoint-method topology optimization on scikit-fem.

Importing topopt has no side effects; `tune_malloc` (glibc's allocator
policy, see `topopt._memory`) is an explicit call that the problem scripts
and benchmarks make.
"""

from . import ad
from ._memory import tune_malloc

__version__ = "0.1.0"
__all__ = ["ad", "tune_malloc"]
