"""Brinkman penalization: the inverse permeability of Borrvall & Petersson (2003)."""

from __future__ import annotations

import numpy as np

from .._validate import check_array_range, check_range

__all__ = ["alpha", "alpha_parameters"]

#: Slack of [0, 1] accepted for the design (rounding of filters and projections).
RHO_TOL = 1e-9


def alpha_parameters(alpha_min, alpha_max, q) -> tuple[float, float, float]:
    """The checked ``(alpha_min, alpha_max, q)`` of `alpha` as floats.

    Examples
    --------
    >>> from topopt.flow import alpha_parameters
    >>> alpha_parameters(0, 2.5e4, 0.1)
    (0.0, 25000.0, 0.1)
    """
    alpha_min = check_range("alpha_min", alpha_min, 0.0, None,
                            what="inverse permeability of the fluid")
    alpha_max = check_range("alpha_max", alpha_max, alpha_min, None,
                            what="inverse permeability of the solid, >= alpha_min")
    q = check_range("q", q, 0.0, None, lo_open=True, what="Borrvall-Petersson convexity")
    return alpha_min, alpha_max, q


def alpha(rho, alpha_min: float = 0.0, alpha_max: float = 2.5e4, q: float = 0.1):
    """Inverse permeability ``alpha_max + (alpha_min - alpha_max) rho (1 + q) / (rho + q)``.

    The interpolation of Borrvall & Petersson (2003, Int. J. Numer. Meth.
    Fluids 41:77, eq. 15 with their ``alpha_bar = alpha_max``, ``alpha_low =
    alpha_min``): ``rho = 1`` is fluid (``alpha_min``), ``rho = 0`` solid
    (``alpha_max``). Small `q` makes it nearly a step (strongly penalizes
    intermediate ``rho``), large `q` nearly linear; it is convex in ``rho``
    for every ``q > 0``. Plain numpy, traced by `topopt.ad` in `rho` (every
    mode); the parameters are constants.

    Parameters
    ----------
    rho : array_like
        Design, in [0, 1] (up to `RHO_TOL`). Differentiated.
    alpha_min : float, default 0
        Fluid value, >= 0.
    alpha_max : float, default 2.5e4
        Solid value, >= `alpha_min` (Borrvall & Petersson use ``2.5 mu / 0.01^2``).
    q : float, default 0.1
        Convexity parameter, > 0.

    Returns
    -------
    numpy.ndarray
        ``alpha(rho)``, the shape of `rho`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.flow import alpha
    >>> alpha(np.array([0.0, 0.5, 1.0]), 0.0, 100.0, 0.1).round(4)
    array([100.    ,   8.3333,   0.    ])
    >>> ad.gradient(lambda r: np.sum(alpha(r, 0.0, 100.0, 0.1)), np.array([1.0])).round(4)
    array([-9.0909])
    """
    alpha_min, alpha_max, q = alpha_parameters(alpha_min, alpha_max, q)
    check_array_range("rho", rho, 0.0, 1.0, tol=RHO_TOL,
                      what="the design, 1 fluid and 0 solid")
    return alpha_max + (alpha_min - alpha_max) * (1.0 + q) * rho / (rho + q)
