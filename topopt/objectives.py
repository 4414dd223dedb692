"""Responses of a design: compliance, volume, mechanism output.

Each is plain numpy on traced values, so `topopt.ad` differentiates it; the
FE solve inside is the `topopt.fem.solve` primitive.
"""

from __future__ import annotations

import numpy as np

__all__ = ["compliance", "volume", "output_displacement"]


def compliance(u, f):
    """``c = f^T u`` (top88 eq. (2)), summed over load cases for ``(ndof, n)`` arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.objectives import compliance
    >>> float(compliance(np.array([1.0, 2.0]), np.array([0.5, 0.25])))
    1.0
    """
    return np.sum(f * u)


def volume(x_phys, weights=None):
    """Volume fraction ``sum(v_e x_e) / sum(v_e)``; uniform weights by default.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.objectives import volume
    >>> float(volume(np.array([1.0, 0.0, 0.5, 0.5])))
    0.5
    """
    if weights is None:
        return np.mean(x_phys)
    weights = np.asarray(weights, dtype=float)
    return np.sum(x_phys * weights) / np.sum(weights)


def output_displacement(u, l_out):
    """Mechanism output ``u_out = l^T u`` (Sigmund 1997), ``l`` selecting output dofs.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.objectives import output_displacement
    >>> float(output_displacement(np.array([3.0, -2.0]), np.array([0.0, 1.0])))
    -2.0
    """
    return np.sum(l_out * u)
