"""Moved to `topopt.formulations.compliance` (this path is kept for the README's first examples)."""
from .formulations.compliance import *  # noqa: F401,F403
