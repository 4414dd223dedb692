"""Moved to `topopt.design.interpolation` (this path is kept for the README's first examples)."""
from .design.interpolation import *  # noqa: F401,F403
