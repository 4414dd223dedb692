"""Ordered multi-material interpolation (Zuo & Saitou 2017, Struct. Multidisc. Optim. 55:477).

One density ``x`` per element describes void and ``m`` solid phases. The
phases are ordered by their normalized densities ``0 = rho_0 < rho_1 < ...
< rho_m = 1`` (mass densities divided by the heaviest one; phase 0 is void).
Between two neighbouring phases a property is a power law of ``x`` through
both phases' values (the paper's ordered SIMP): on ``rho_{i-1} <= x <=
rho_i``

    ``E(x) = A_i x^p + B_i``,  ``A_i = (E_{i-1} - E_i) / (rho_{i-1}^p - rho_i^p)``,
    ``B_i = E_{i-1} - A_i rho_{i-1}^p``,

so ``E(rho_i) = E_i`` at each pure phase, with ``E_0 = Emin`` for void.
`ordered_simp` is that map; with ``p = 1`` and the indicator of phase ``i``
as values it is the piecewise-linear share of phase ``i`` in an element
(`phase_fraction`): the hats of the knots ``rho``, which sum to 1 with the
void's share and give back the mass, ``sum_i rho_i phi_i(x) = x``. Each is
differentiable in `x` in every mode (reverse, forward, hvp, nested); at a
knot the derivative is the left segment's (``x = 0``: the first one's).
`phase_index` is the nearest phase of each element, for pictures.

Examples
--------
>>> import numpy as np
>>> from topopt.design.multimaterial import ordered_simp, phase_fraction
>>> rho, E = (0.5, 1.0), (0.3, 1.0)
>>> ordered_simp(np.array([0.0, 0.5, 1.0]), rho, E, penal=3.0, Emin=0.0)
array([0. , 0.3, 1. ])
>>> phase_fraction(np.array([0.25, 0.5, 0.75]), rho, 1)
array([0.5, 1. , 0.5])
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import ad
from .._validate import check_finite_array, check_int, check_range, real
from .interpolation import _register, _unit_density

__all__ = ["ordered_simp", "phase_fraction", "phase_index", "check_phases"]

MAX_PHASES = 8          # solid phases; more has never been asked for and is likely a mistake


def check_phases(rho, values=None, name: str = "E") -> tuple[np.ndarray, np.ndarray | None]:
    """The normalized densities `rho` (and a property `values` of the phases), checked.

    `rho`: 1 to `MAX_PHASES` strictly increasing entries in (0, 1], the last
    exactly 1 (densities normalized by the heaviest phase); `values`: one
    finite entry >= 0 per phase. Returns them as float arrays.

    Examples
    --------
    >>> from topopt.design.multimaterial import check_phases
    >>> check_phases((0.4, 1.0), (0.2, 1.0))
    (array([0.4, 1. ]), array([0.2, 1. ]))
    >>> check_phases((0.4, 0.9))
    Traceback (most recent call last):
    ...
    ValueError: rho must end at 1 (densities normalized by the heaviest phase), got 0.9
    """
    rho = check_finite_array("rho", rho)
    if rho.ndim != 1 or not 1 <= rho.size <= MAX_PHASES:
        raise ValueError(f"rho must be a 1-D sequence of 1 to {MAX_PHASES} normalized "
                         f"densities (one per solid phase), got shape {rho.shape}")
    if rho[0] <= 0.0 or np.any(np.diff(rho) <= 0.0):
        raise ValueError(f"rho must be strictly increasing in (0, 1] (phase 0, void, is at "
                         f"0), got {rho.tolist()}")
    if rho[-1] != 1.0:
        raise ValueError(f"rho must end at 1 (densities normalized by the heaviest phase), "
                         f"got {rho[-1]:g}")
    if values is None:
        return rho, None
    values = check_finite_array(name, values)
    if values.shape != rho.shape:
        raise ValueError(f"{name} has shape {values.shape}; expected {rho.shape}, one value "
                         "per phase of rho")
    if np.any(values < 0.0):
        raise ValueError(f"{name} must be >= 0 (a property of each phase), got "
                         f"{values.tolist()}")
    return rho, values


def _params(rho, E, penal, Emin):
    rho, E = check_phases(rho, E)
    penal = check_range("penal", penal, 1.0, None, what="ordered SIMP exponent")
    Emin = real("Emin", Emin)
    if Emin < 0.0:
        raise ValueError(f"Emin must be >= 0 (the void's value), got {Emin:g}")
    if np.any(E < Emin):
        raise ValueError(f"Emin = {Emin:g} must not exceed the E of any phase (the weakest "
                         f"is {E.min():g}, phase {int(np.argmin(E)) + 1}): the void would be "
                         "stiffer than a solid phase")
    knots, vals = np.concatenate([[0.0], rho]), np.concatenate([[Emin], E])
    kp = knots ** penal
    A = (vals[:-1] - vals[1:]) / (kp[:-1] - kp[1:])         # A_i of segment i = 1..m
    B = vals[:-1] - A * kp[:-1]
    return knots, A, B, penal


def _segment(x, knots) -> np.ndarray:
    """0-based segment of each density: ``rho_{i-1} < x <= rho_i`` (``x <= 0``: the first)."""
    k = np.searchsorted(knots, np.asarray(ad.value(x)), side="left") - 1
    return np.clip(k, 0, knots.size - 2)


@ad.primitive
def ordered_simp(x: ArrayLike, rho, E, penal: float = 3.0, Emin: float = 1e-9) -> np.ndarray:
    """Ordered SIMP: the piecewise power law through the phases ``(rho_i, E_i)``.

    Zuo & Saitou (2017), Sec. 2: on ``rho_{i-1} <= x <= rho_i`` the value is
    ``A_i x^penal + B_i`` with ``A_i, B_i`` such that it is ``E_{i-1}`` and
    ``E_i`` at the segment's ends (``rho_0 = 0``, ``E_0 = Emin``: void).

    Parameters
    ----------
    x : array_like
        Densities in [0, 1] (up to `topopt.design.DENSITY_TOL`, as `simp`).
        Differentiated.
    rho : sequence of float
        Normalized densities of the solid phases, strictly increasing, in (0, 1],
        the last 1 (`check_phases`). Not differentiated.
    E : sequence of float
        The property of each phase (Young's modulus over ``E0``), >= 0. Not
        differentiated.
    penal : float, default 3.0
        Exponent ``p`` >= 1 of every segment.
    Emin : float, default 1e-9
        The void's value, >= 0.

    Returns
    -------
    numpy.ndarray
        The interpolated property, same shape as `x`; ``E_i`` where ``x =
        rho_i`` (to round-off).

    Raises
    ------
    ValueError
        If `x` has NaN or leaves [0, 1], or a parameter is out of range.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.design.multimaterial import ordered_simp
    >>> ordered_simp(np.array([0.25, 0.75]), (0.5, 1.0), (0.4, 1.0), penal=1.0, Emin=0.0)
    array([0.2, 0.7])
    >>> ad.gradient(lambda x: np.sum(ordered_simp(x, (0.5, 1.0), (0.4, 1.0), 1.0, 0.0)),
    ...             np.array([0.25, 0.75]))       # the slopes 0.4 / 0.5 and 0.6 / 0.5
    array([0.8, 1.2])
    """
    return _ordered_parts(x, rho, E, penal, Emin)[0]


def _ordered_parts(x, rho, E, penal, Emin):
    """Value and derivative of `ordered_simp`; numpy ops so that outer traces record them."""
    knots, A, B, p = _params(rho, E, penal, Emin)
    x = _unit_density(x)
    k = _segment(x, knots)
    a, b = A[k], B[k]
    return a * x ** p + b, p * a * x ** (p - 1.0)


ordered_simp_rrule, ordered_simp_frule = _register(ordered_simp, _ordered_parts,
                                                   ("rho", "E", "penal", "Emin"))


def phase_fraction(x: ArrayLike, rho, phase: int) -> np.ndarray:
    """The share of phase `phase` in each element: the hat of ``rho_phase`` (linear).

    `ordered_simp` with ``penal = 1`` and the indicator of `phase` as values:
    1 at ``x = rho_phase``, 0 at the other knots, linear between. Over the
    phases 0 (void) to ``m`` the shares sum to 1 and ``sum_i rho_i phi_i(x) =
    x``: the volumes ``V_i = sum_e v_e phi_i(x_e) / sum_e v_e`` split the
    element's material between its two neighbouring phases and their
    ``rho``-weighted sum is the mass (one constraint per phase,
    `topopt.formulations.MultiMaterialCompliance`).

    Parameters
    ----------
    x : array_like
        Densities in [0, 1]. Differentiated (every mode, through `ordered_simp`).
    rho : sequence of float
        The phases' normalized densities (`check_phases`).
    phase : int
        0 (void) to ``len(rho)``.

    Returns
    -------
    numpy.ndarray
        ``phi_phase(x)`` in [0, 1], same shape as `x`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.design.multimaterial import phase_fraction
    >>> x = np.array([0.2, 0.6, 0.9])
    >>> rho = (0.4, 0.7, 1.0)
    >>> np.round(sum(phase_fraction(x, rho, i) for i in range(4)), 12)
    array([1., 1., 1.])
    >>> np.round(sum(r * phase_fraction(x, rho, i + 1) for i, r in enumerate(rho)), 12)
    array([0.2, 0.6, 0.9])
    """
    rho, _ = check_phases(rho)
    phase = check_int("phase", phase, 0, rho.size)
    if phase == 0:                      # void: 1 - x / rho_1 on the first segment
        return 1.0 - ordered_simp(x, rho, np.ones(rho.size), 1.0, 0.0)
    return ordered_simp(x, rho, np.eye(rho.size)[phase - 1], 1.0, 0.0)


def phase_index(x: ArrayLike, rho) -> np.ndarray:
    """The nearest phase of each density: 0 (void) to ``len(rho)``, for a picture.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.design.multimaterial import phase_index
    >>> phase_index(np.array([0.1, 0.3, 0.6, 0.95]), (0.5, 1.0))
    array([0, 1, 1, 2])
    """
    rho, _ = check_phases(rho)
    if ad.is_traced(x):
        raise TypeError("phase_index is piecewise constant and has no derivative: pass "
                        "plain densities")
    x = np.asarray(_unit_density(x), dtype=float)
    knots = np.concatenate([[0.0], rho])
    return np.argmin(np.abs(x[..., None] - knots), axis=-1)
