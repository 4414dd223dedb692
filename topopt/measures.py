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
>>> from topopt.measures import grey_level, variable_grey_level
>>> grey_level([0.0, 1.0, 0.5, 0.5])
0.5
>>> variable_grey_level(np.array([3.0, 5.0]), np.array([1.0, 1.0]), np.array([3.0, np.inf]))
0.0
"""

from __future__ import annotations

import numpy as np

from ._validate import check_array_range

__all__ = ["grey_level", "variable_grey_level"]


def _measure(t: np.ndarray) -> float:
    """``mean(4 t (1 - t))`` of a normalised array (Sigmund 2007)."""
    return float(np.mean(4.0 * t * (1.0 - t)))


def grey_level(x_phys) -> float:
    """Sigmund's measure of non-discreteness ``mean(4 x (1 - x))`` of a physical density.

    Parameters
    ----------
    x_phys : array_like
        Physical densities, nominally in [0, 1]; real, without NaN, not
        empty. Entries a filter pushed just outside [0, 1] (a Helmholtz
        field's overshoot) count with the same polynomial, slightly below 0.

    Returns
    -------
    float
        0 for a 0/1 design, 1 for a uniform 0.5.

    Examples
    --------
    >>> from topopt.measures import grey_level
    >>> grey_level([0.0, 1.0, 0.5, 0.5])
    0.5
    >>> grey_level([])
    Traceback (most recent call last):
    ...
    ValueError: x_phys is empty: the grey level of no element is undefined
    """
    x = np.asarray(x_phys)
    if x.size == 0:
        raise ValueError("x_phys is empty: the grey level of no element is undefined")
    check_array_range("x_phys", x)                      # real, no NaN
    return _measure(x.astype(float, copy=False))


def variable_grey_level(x: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> float | None:
    """The grey level of optimization variables on their bounds, ``None`` if none is bounded.

    ``mean(4 t (1 - t))`` with ``t = (x - lower) / (upper - lower)`` over
    the entries whose bounds are finite and distinct; variables without
    such bounds have no "middle" and are left out.

    Parameters
    ----------
    x, lower, upper : (n,) ndarray
        Variables and their bounds (``lower <= x <= upper``), as the
        optimizer holds them (no conversion, no checks: one call per
        evaluation).

    Returns
    -------
    float or None

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.measures import variable_grey_level
    >>> variable_grey_level(np.array([0.5, 5.0]), np.zeros(2), np.array([1.0, np.inf]))
    1.0
    >>> variable_grey_level(np.zeros(1), np.zeros(1), np.full(1, np.inf)) is None
    True
    """
    bounded = np.isfinite(lower) & np.isfinite(upper) & (upper > lower)
    if not bounded.any():
        return None
    lo, hi = lower[bounded], upper[bounded]
    return _measure((x[bounded] - lo) / (hi - lo))
