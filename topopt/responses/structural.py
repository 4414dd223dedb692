"""Responses of a design: compliance, volume, mechanism output.

Each is plain numpy on traced values, so `topopt.ad` differentiates it; the
FE solve inside is the `topopt.fem.solve` primitive.
"""

from __future__ import annotations

import numpy as np

from .. import ad
from .._validate import (check_array_range, check_finite_values, check_load, check_nonempty,
                         check_real_array)
from ..design.interpolation import DENSITY_TOL

__all__ = ["compliance", "volume", "output_displacement", "compliance_coefficients"]


def _same_shape(name_a, a, name_b, b) -> None:
    """Equal shapes (numpy would broadcast ``(n,) * (n, 1)`` into a wrong sum)."""
    sa, sb = np.shape(ad.value(a)), np.shape(ad.value(b))
    if sa != sb:
        raise ValueError(f"{name_a} has shape {sa} but {name_b} has shape {sb}; they must "
                         "be equal")


def compliance(u, f):
    """``c = f^T u`` (top88 eq. (2)), summed over load cases for ``(ndof, n)`` arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.responses.structural import compliance
    >>> float(compliance(np.array([1.0, 2.0]), np.array([0.5, 0.25])))
    1.0
    """
    _same_shape("u", u, "f", f)
    check_load("f", f, real=True)
    if np.iscomplexobj(ad.value(u)):
        raise TypeError("u must be real: the compliance of a complex (harmonic) field is "
                        "dynamic_compliance, |f^H u|")
    return np.sum(f * u)


def volume(x_phys, weights=None):
    """Volume fraction ``sum(v_e x_e) / sum(v_e)``; uniform weights by default.

    `x_phys` must lie in [0, 1] (up to `topopt.design.DENSITY_TOL`) and
    be finite; `weights` (element volumes) non-negative with a positive sum.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.responses.structural import volume
    >>> float(volume(np.array([1.0, 0.0, 0.5, 0.5])))
    0.5
    """
    check_nonempty("x_phys", x_phys)
    check_array_range("x_phys", x_phys, 0.0, 1.0, tol=DENSITY_TOL, what="a density")
    if weights is None:
        return np.mean(x_phys)
    if ad.is_traced(weights):
        raise TypeError("weights are not differentiated: pass plain element volumes")
    weights = check_real_array("weights", weights, allow_bool=True)
    _same_shape("weights", weights, "x_phys", x_phys)
    check_array_range("weights", weights, 0.0, None, what="element volumes")
    total = np.sum(weights)
    if not (np.isfinite(total) and total > 0):
        raise ValueError(f"weights must have a finite positive sum, got {total}")
    return np.sum(x_phys * weights) / total


def output_displacement(u, l_out):
    """Mechanism output ``u_out = l^T u`` (Sigmund 1997), ``l`` selecting output dofs.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.responses.structural import output_displacement
    >>> float(output_displacement(np.array([3.0, -2.0]), np.array([0.0, 1.0])))
    -2.0
    """
    _same_shape("u", u, "l_out", l_out)
    check_finite_values("l_out", l_out, "the output selector must be finite", ("dof",))
    return np.sum(l_out * u)


def compliance_coefficients(system, E, f0, G):
    """Coefficients of ``c(theta) = c0 + 2 b^T theta + theta^T A theta``.

    The compliance under the random load ``f = f0 + G theta`` (``G`` of shape
    ``(ndof, m)``): ``c0 = f0^T K^{-1} f0``, ``b = G^T K^{-1} f0``, ``A = G^T
    K^{-1} G``, from one factorization and ``m + 1`` solves. Differentiable
    in `E`; pass ``QuadraticLimitState(lambda x: compliance_coefficients(...))``
    to `topopt.reliability`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.responses.structural import compliance_coefficients
    >>> model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda x: x[0] == 0)
    >>> f0 = model.point_load((4, 1), (0, -1))
    >>> G = np.stack([model.point_load((4, 1), (1, 0))], axis=1)
    >>> c0, b, A = compliance_coefficients(model.system(), np.ones(8), f0, G)
    >>> float(c0) > 0 and A.shape == (1, 1)
    True
    """
    from ..fem import solve

    f0 = check_real_array("f0", f0, allow_bool=True)
    G = check_real_array("G", G, allow_bool=True)
    if f0.ndim != 1 or G.ndim != 2 or G.shape[0] != f0.shape[0] or G.shape[1] < 1:
        raise ValueError(f"f0 must have shape (ndof,) and G shape (ndof, m), m >= 1; got "
                         f"{f0.shape} and {G.shape}")
    if np.shape(ad.value(E)) != (system.n_el,):
        raise ValueError(f"E has shape {np.shape(ad.value(E))}; expected ({system.n_el},): one "
                         f"coefficient per element of the system")
    U = solve(system, E, np.column_stack([f0, G]))
    u0, UG = U[:, 0], U[:, 1:]
    return f0 @ u0, G.T @ u0, G.T @ UG
