"""Moved to `topopt.design.filters` (this path is kept for the README's first examples)."""
from .design.filters import *  # noqa: F401,F403
