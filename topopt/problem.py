"""Moved to `topopt.formulations.compliance` and `topopt.io.folder` (kept for the README's first examples)."""
from .formulations.compliance import *  # noqa: F401,F403
from .io.folder import plot_record, run_compliance, write_json, write_results  # noqa: F401
