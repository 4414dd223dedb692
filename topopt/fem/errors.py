"""The errors of the linear solves, shared by every backend."""

from __future__ import annotations

import numpy as np

__all__ = ["SingularSystemError", "ConvergenceError"]


class SingularSystemError(np.linalg.LinAlgError):
    """The system matrix is singular (e.g. a part of the domain has no support).

    Raised the same way by every backend: before the factorization when the
    supports leave a rigid-body motion free (`topopt.fem.supports`, a proof
    that does not depend on rounding), by the factorization or CG when they
    break down, and after a solve whose Rayleigh quotient shows a matrix
    singular to working precision (`topopt.fem.system.RAYLEIGH_TOL`).
    """


class ConvergenceError(SingularSystemError, RuntimeError):
    """CG did not reach the tolerance within ``maxiter`` iterations.

    A subclass of `SingularSystemError` (a singular system is the usual
    cause) and of `RuntimeError`.
    """
