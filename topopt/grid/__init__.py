"""Structured voxel grids: the matrix-free path for large 2-D and 3-D designs.

Modules, each importing only those above it: `grid` (`Grid`: numbering by
strides), `element` (the one element matrix ``K0``).
"""

from .grid import Grid

__all__ = ["Grid"]
