"""Projection thresholds as edge displacements of the Helmholtz filter (a straight edge).

The PDE filter ``-r^2 x_tilde'' + x_tilde = x`` (Lazarov & Sigmund 2011,
eq. (5)) applied to a straight edge, the step ``x = 1`` for ``s < 0``
(solid) and ``x = 0`` for ``s > 0`` (void), ``s`` the distance along the
edge's outward normal, has the closed-form solution (continuous with a
continuous derivative at ``s = 0``, bounded at infinity)::

    x_tilde(s) = 1 - exp(s / r) / 2    (s <= 0)
    x_tilde(s) =     exp(-s / r) / 2   (s >= 0)

so the edge of the projected design ``x_tilde >= eta`` (the limit ``beta
-> inf`` of the tanh projection) moves to ``x_tilde(d) = eta``::

    d(eta) = -r ln(2 eta)              (eta <= 1/2: dilated, d >= 0)
    d(eta) =  r ln(2 (1 - eta))        (eta >= 1/2: eroded,  d <= 0)

and back, ``eta(d) = exp(-d / r) / 2`` for ``d >= 0``, ``1 - exp(d / r) /
2`` for ``d <= 0``. ``d`` is measured from the unfiltered edge (the
``eta = 1/2`` edge); positive outwards (more solid). The thresholds of
`topopt.robust.ETAS` (0.75 / 0.5 / 0.25) are ``-/+ r ln 2``. In two
dimensions the formula holds for edges whose radius of curvature is large
against ``r`` and away from other edges (within a few ``r``); on a mesh it
holds to a fraction of an element (tests/test_focus_robust.py measures it).

Examples
--------
>>> from topopt.robust.edges import edge_shift, threshold_for_shift
>>> round(edge_shift(0.25, 1.0), 6), round(threshold_for_shift(-1.0, 1.0), 6)
(0.693147, 0.81606)
"""

from __future__ import annotations

import numpy as np

from .. import ad
from .._validate import check_array_range, check_positive, check_range, check_real_array, real

__all__ = ["edge_shift", "threshold_for_shift", "filtered_step", "shifted_projection"]


def _radius(r) -> float:
    return check_positive("r", r, "Helmholtz filter length scale")


def filtered_step(s, r: float) -> np.ndarray:
    """The Helmholtz-filtered straight edge ``x_tilde(s)`` (solid for ``s < 0``).

    ``1 - exp(s/r)/2`` for ``s <= 0``, ``exp(-s/r)/2`` for ``s >= 0``: the
    solution of ``-r^2 x'' + x = H(-s)`` bounded at infinity.

    Parameters
    ----------
    s : array_like
        Distance from the edge along its outward normal (void side > 0).
    r : float
        Filter length scale, > 0 (`topopt.design.HelmholtzFilter`'s ``r``).

    Examples
    --------
    >>> from topopt.robust.edges import filtered_step
    >>> filtered_step([-50.0, 0.0, 1.0], 1.0).round(6).tolist()
    [1.0, 0.5, 0.18394]
    """
    r = _radius(r)
    s = check_real_array("s", s, allow_bool=True)
    if not np.all(np.isfinite(s)):
        raise ValueError("s must be finite distances from the edge")
    e = 0.5 * np.exp(-np.abs(s) / r)
    return np.where(s >= 0, e, 1.0 - e)


def edge_shift(eta: float, r: float) -> float:
    """The displacement ``d(eta)`` of a straight edge projected at threshold `eta`.

    ``d = -r ln(2 eta)`` for ``eta <= 1/2`` (dilated: the edge moves out,
    ``d >= 0``), ``d = r ln(2 (1 - eta))`` for ``eta >= 1/2`` (eroded);
    from the closed-form filtered step (`filtered_step`), in the length
    unit of `r`.

    Parameters
    ----------
    eta : float in (0, 1)
        Projection threshold.
    r : float
        Helmholtz filter length scale, > 0.

    Examples
    --------
    >>> from topopt.robust.edges import edge_shift
    >>> r = 10 / (2 * 3 ** 0.5)                 # problems/em_focus.py, nm
    >>> [round(edge_shift(eta, r), 4) for eta in (0.75, 0.5, 0.25)]
    [-2.0009, 0.0, 2.0009]
    """
    eta = check_range("eta", eta, 0.0, 1.0, lo_open=True, hi_open=True,
                      what="projection threshold")
    r = _radius(r)
    return float(-r * np.log(2 * eta) if eta <= 0.5 else r * np.log(2 * (1 - eta))) + 0.0


def threshold_for_shift(d: float, r: float) -> float:
    """The threshold whose projected edge moves by `d` (the inverse of `edge_shift`).

    ``eta = exp(-d/r) / 2`` for ``d >= 0`` (dilation), ``1 - exp(d/r) / 2``
    for ``d <= 0`` (erosion); always in (0, 1).

    Parameters
    ----------
    d : float
        Edge displacement, positive outwards, in the length unit of `r`.
        Differentiated when traced (`topopt.ad`; every mode; the second
        derivative jumps at ``d = 0``).
    r : float
        Helmholtz filter length scale, > 0.

    Examples
    --------
    >>> from topopt.robust.edges import edge_shift, threshold_for_shift
    >>> eta = threshold_for_shift(-1.5, 2.0)
    >>> round(eta, 6), round(edge_shift(eta, 2.0), 12)
    (0.763817, -1.5)
    """
    traced = ad.is_traced(d)
    dv = real("d", ad.value(d))
    r = _radius(r)
    if traced:                                    # the same branch, differentiable in d
        return 0.5 * np.exp(-d / r) if dv >= 0 else 1.0 - 0.5 * np.exp(d / r)
    e = 0.5 * np.exp(-abs(dv) / r)
    eta = float(e if dv >= 0 else 1.0 - e)
    if not 0.0 < eta < 1.0:
        raise ValueError(f"d must be within about 36 r of the edge (a threshold in (0, 1)), "
                         f"got d = {d:g} with r = {r:g}")
    return eta


def shifted_projection(x_tilde, beta: float, d, r: float):
    """The tanh projection at the threshold whose edges move by `d`; differentiable in `d`.

    ``(tanh(beta eta) + tanh(beta (x_tilde - eta))) / (tanh(beta eta) +
    tanh(beta (1 - eta)))`` with ``eta = threshold_for_shift(d, r)`` (Wang,
    Lazarov & Sigmund 2011, eq. (9)): `topopt.design.project`, with ``eta``
    a function of the edge displacement, so that a random edge shift (a
    fabrication error in nm) can be a traced input of a limit state.

    Parameters
    ----------
    x_tilde : array_like
        Filtered densities, typically in [0, 1] (a Helmholtz field overshoots
        a little); real, without NaN. Differentiated.
    beta : float
        Sharpness, > 0.
    d : float
        Edge displacement (outwards > 0, the length unit of `r`). Differentiated.
    r : float
        Filter length scale, > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.design import project
    >>> from topopt.robust.edges import shifted_projection, threshold_for_shift
    >>> x = np.array([0.2, 0.5, 0.7])
    >>> bool(np.allclose(shifted_projection(x, 8.0, 1.0, 2.0),
    ...                  project(x, 8.0, threshold_for_shift(1.0, 2.0))))
    True
    >>> g = float(ad.gradient(lambda d: shifted_projection(x, 8.0, d, 2.0)[1], 1.0))
    >>> bool(g > 0)                                   # dilation adds material
    True
    """
    beta = check_positive("beta", beta, "projection sharpness")
    check_array_range("x_tilde", x_tilde)         # real, no NaN (as `project`)
    eta = threshold_for_shift(d, r)
    a, b = np.tanh(beta * eta), np.tanh(beta * (1.0 - eta))
    return (a + np.tanh(beta * (x_tilde - eta))) / (a + b)
