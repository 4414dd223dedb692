"""The grey level: how far a design is from 0/1, in two variants.

Both are Sigmund's measure of non-discreteness ``M = mean(4 t (1 - t))``
(Sigmund 2007, "Morphology-based black and white filters for topology
optimization", Struct. Multidisc. Optim. 33): 0 when every entry is at an
end of its range, 1 when every entry sits in the middle.

* `grey_level` reads the **physical density** ``x_phys`` (filtered,
  projected) on ``[0, 1]``: the figure a problem reports for its final
  design (``RunResult["grey_level"]``, ``result.json``).
* `variable_grey_level` reads the **optimizer's variables** ``x`` on their
  own bounds, ``t = (x - lower) / (upper - lower)`` over the variables with
  finite, distinct bounds: the ``grey`` column of `topopt.optimize.minimize`'s
  history, which knows nothing of filters or projections.

The two differ on one design: a 0/1 variable field whose filter blurs the
edges has ``variable_grey_level = 0`` and ``grey_level > 0``.

Examples
--------
>>> import numpy as np
>>> from topopt.design.measures import grey_level, variable_grey_level
>>> grey_level([0.0, 1.0, 0.5, 0.5])
0.5
>>> variable_grey_level(np.array([3.0, 5.0]), np.array([1.0, 1.0]), np.array([3.0, np.inf]))
0.0
"""

from __future__ import annotations

import numpy as np

from .._validate import check_array_range, check_finite_values, check_ordered, check_real_array
from .interpolation import DENSITY_TOL

__all__ = ["grey_level", "variable_grey_level", "GREY_TOL"]

#: Slack of the range [0, 1] of a measured design (`DENSITY_TOL`): a filter's
#: rounding (1 + 2e-16) passes, a value outside by more is an error.
GREY_TOL = DENSITY_TOL


def _measure(t: np.ndarray) -> float:
    """``mean(4 t (1 - t))`` of a normalised array (Sigmund 2007)."""
    return float(np.mean(4.0 * t * (1.0 - t)))


def grey_level(x_phys) -> float:
    """Sigmund's measure of non-discreteness ``mean(4 x (1 - x))`` of a physical density.

    Parameters
    ----------
    x_phys : array_like
        Physical densities in [0, 1] (up to `GREY_TOL`, which counts with
        the same polynomial, a few 1e-9 below 0); real, finite, not empty. A
        value outside (a density of 1.5 would count as -3) is a `ValueError`
        naming the worst entry: clip a Helmholtz field first, as the
        problems do.

    Returns
    -------
    float
        0 for a 0/1 design, 1 for a uniform 0.5.

    Examples
    --------
    >>> from topopt.design.measures import grey_level
    >>> grey_level([0.0, 1.0, 0.5, 0.5])
    0.5
    >>> grey_level([])
    Traceback (most recent call last):
    ...
    ValueError: x_phys is empty: the grey level of no element is undefined
    >>> grey_level([1.5, -0.5])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: x_phys must lie in [0, 1] up to 1e-09 (a density); got -0.5 at flat index 1 ...
    """
    x = np.asarray(x_phys)
    if x.size == 0:
        raise ValueError("x_phys is empty: the grey level of no element is undefined")
    check_array_range("x_phys", x, 0.0, 1.0, tol=GREY_TOL, what="a density")
    return _measure(x.astype(float, copy=False))


def variable_grey_level(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> float | None:
    """The grey level of optimization variables on their bounds, ``None`` if none is bounded.

    ``mean(4 t (1 - t))`` with ``t = (x - lower) / (upper - lower)`` over
    the entries whose bounds are finite and distinct; variables without
    such bounds have no "middle" and are left out.

    Parameters
    ----------
    x, lower, upper : (n,) ndarray
        Variables and their bounds (``lower <= x <= upper``, up to
        `GREY_TOL` of ``upper - lower``), as the optimizer holds them: one
        min/max pass checks them (a `ValueError` names the worst entry).

    Returns
    -------
    float or None

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.design.measures import variable_grey_level
    >>> variable_grey_level(np.array([0.5, 5.0]), np.zeros(2), np.array([1.0, np.inf]))
    1.0
    >>> variable_grey_level(np.zeros(1), np.zeros(1), np.full(1, np.inf)) is None
    True
    """
    x, lower, upper = (check_real_array(n, a, allow_bool=True) for n, a in
                        (("x", x), ("lower", lower), ("upper", upper)))
    if not x.shape == lower.shape == upper.shape or x.ndim != 1:
        raise ValueError(f"x, lower and upper must be 1-D of one length, got shapes "
                         f"{x.shape}, {lower.shape}, {upper.shape}")
    check_finite_values("x", x, "the variables must be finite")
    check_ordered("lower", lower, "upper", upper)
    bounded = np.isfinite(lower) & np.isfinite(upper) & (upper > lower)
    if not bounded.any():
        return None
    lo, hi = lower[bounded], upper[bounded]
    t = (x[bounded] - lo) / (hi - lo)
    tmin, tmax = float(np.min(t)), float(np.max(t))
    if tmin < -GREY_TOL or tmax > 1.0 + GREY_TOL:
        k = int(np.argmin(t) if tmin < -GREY_TOL else np.argmax(t))
        i = int(np.flatnonzero(bounded)[k])
        raise ValueError(f"x[{i}] = {x[i]:.6g} lies outside its bounds [{lower[i]:g}, "
                         f"{upper[i]:g}] (tolerance {GREY_TOL:g} of the range)")
    return _measure(t)
