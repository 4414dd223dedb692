"""Names every reliability module shares: the methods, the ``ln pf`` floor, the errors."""

from __future__ import annotations

import numpy as np

__all__ = ["LN_PF_FLOOR", "METHODS", "ASYMPTOTIC", "CURVED", "SAMPLING", "ReliabilityError",
           "MPPError"]

#: ``ln pf`` returned with ``on_failure="bound"`` when no failure point can be
#: reached: ``exp(-745)`` is below the smallest positive double, pf is 0.
LN_PF_FLOOR = -745.0
#: Asymptotic (differentiable) and sampling methods.
ASYMPTOTIC = ("ldt", "form", "sorm", "sorm-hohenbichler", "sorm-tvedt", "ldt-prefactor")
#: The asymptotic methods with a curvature correction at the MPP.
CURVED = ("sorm", "sorm-hohenbichler", "sorm-tvedt", "ldt-prefactor")
SAMPLING = ("mc", "is")
METHODS = ASYMPTOTIC + SAMPLING


class ReliabilityError(RuntimeError):
    """A failure-probability estimate cannot be formed."""


class MPPError(ReliabilityError):
    """The most-probable-point search failed.

    Attributes
    ----------
    reason : str
        ``"unreachable"`` (no point with ``F >= z`` can be reached: ``F`` is
        bounded below ``z`` or the search left ``|theta| <= max_radius``),
        ``"not_converged"``, ``"not_minimum"`` (a KKT point that is not a
        local minimum), ``"sorm_singular"`` (``1 + beta kappa_i <= 0``) or
        ``"origin_fails"`` (``beta <= 0`` where the method needs ``beta > 0``).
    details : dict
        Iterations, last iterate, ``F``, ``|grad F|``, ... for the message.
    best_feasible : ndarray or None
        The feasible point (``F >= z``) of smallest norm seen, if any.
    """

    def __init__(self, reason: str, message: str, details: dict | None = None,
                 best_feasible: np.ndarray | None = None):
        self.reason = reason
        self.details = dict(details or {})
        self.best_feasible = best_feasible
        text = ", ".join(f"{k}={_short(v)}" for k, v in self.details.items())
        super().__init__(f"[{reason}] {message}" + (f" ({text})" if text else ""))


def _short(v):
    if isinstance(v, np.ndarray):
        return np.array2string(v, precision=4, threshold=8)
    if isinstance(v, float):
        return f"{v:.6g}"
    return repr(v)
