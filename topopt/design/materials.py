"""Optical constants of silver as functions of the free-space wavelength.

`silver_permittivity` is the Lorentz-Drude (LD) fit of Rakić, Djurišić,
Elazar & Majewski (1998), "Optical properties of metallic films for
vertical-cavity optoelectronic devices", Appl. Opt. 37(22):5271-5283,
Table 1, Ag, valid 0.2-12.4 µm (photon energies 0.1-5 eV), with the time
convention ``exp(-i omega t)`` (``Im eps > 0``, absorbing):

``eps(w) = 1 - f0 wp^2 / (w (w + i G0)) + sum_j fj wp^2 / (wj^2 - w^2 - i w Gj)``,

``w = h c / lambda`` in eV (``h c = 1239.84193 eV nm``) and, in eV,

=====  =======  =======  =======
 j      f_j      G_j      w_j
=====  =======  =======  =======
 0      0.845    0.048    --
 1      0.065    3.886    0.816
 2      0.124    0.452    4.481
 3      0.011    0.065    8.185
 4      0.840    0.916    9.083
 5      5.646    2.419    20.29
=====  =======  =======  =======

with ``wp = 9.01``. At 532 nm it gives ``n = 0.1330 + 3.0285i``
(``eps = -9.154 + 0.806i``): 12 % from the tutorial's silver ``n = 0.054 +
3.429i`` (22 % in ``eps``). That value is the Johnson & Christy (1972)
measurement, Phys. Rev. B 6:4370, Table I, interpolated linearly in
wavelength between its points 520.9 nm (``0.05 + 3.324i``) and 548.6 nm
(``0.06 + 3.586i``): `silver_index_jc` is that interpolation over the
visible points of the table (the table, not a fit).

`silver_permittivity` and `silver_index` are numpy expressions of the
wavelength: differentiable (`topopt.ad`) in every mode.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike

from .. import ad
from .._validate import check_array_range, check_real_array

__all__ = ["silver_permittivity", "silver_index", "silver_index_jc", "HC_EV_NM",
           "RAKIC_AG", "JOHNSON_CHRISTY_AG"]

#: ``h c`` in eV nm: a photon of wavelength ``lambda`` nm has ``HC_EV_NM / lambda`` eV.
HC_EV_NM = 1239.84193

#: Rakić et al. (1998) Table 1, Ag (LD model): ``wp``, the Drude ``(f0, G0)`` and
#: the Lorentz ``(f_j, G_j, w_j)``, energies in eV.
RAKIC_AG = {"wp": 9.01, "drude": (0.845, 0.048),
            "lorentz": ((0.065, 3.886, 0.816), (0.124, 0.452, 4.481), (0.011, 0.065, 8.185),
                        (0.840, 0.916, 9.083), (5.646, 2.419, 20.29))}

#: The validity range of the Rakić fit, nm (0.1-5 eV).
RAKIC_RANGE_NM = (247.97, 12398.0)

#: Johnson & Christy (1972) Table I, Ag, 1.64-3.00 eV: wavelength (nm), n, k.
JOHNSON_CHRISTY_AG = np.array([
    [413.3, 0.05, 2.275], [430.5, 0.04, 2.462], [450.9, 0.04, 2.657], [471.4, 0.05, 2.869],
    [495.9, 0.05, 3.093], [520.9, 0.05, 3.324], [548.6, 0.06, 3.586], [582.1, 0.05, 3.858],
    [616.8, 0.06, 4.152], [659.5, 0.05, 4.483], [704.5, 0.04, 4.838], [756.0, 0.03, 5.242]])


def _wavelength(wavelength_nm, lo: float, hi: float, source: str):
    check_array_range("wavelength_nm", wavelength_nm, lo, hi,
                      what=f"a free-space wavelength in nm, the range of {source}")
    return wavelength_nm if ad.is_traced(wavelength_nm) else np.asarray(wavelength_nm)


def silver_permittivity(wavelength_nm: ArrayLike):
    """Relative permittivity of silver, Rakić et al. (1998) Lorentz-Drude fit.

    Parameters
    ----------
    wavelength_nm : array_like
        Free-space wavelength(s) in nm, within 247.97-12398 (the fit's
        0.1-5 eV); real, without NaN. Differentiated.

    Returns
    -------
    numpy.ndarray
        Complex ``eps`` (``Im eps > 0``), the shape of `wavelength_nm`.

    Raises
    ------
    TypeError
        If `wavelength_nm` is not real.
    ValueError
        If it contains NaN or lies outside the fit's range.

    Examples
    --------
    >>> from topopt.design.materials import silver_permittivity
    >>> complex(np.round(silver_permittivity(532.0), 3))
    (-9.154+0.806j)
    """
    lam = _wavelength(wavelength_nm, *RAKIC_RANGE_NM, "the Rakić (1998) fit")
    w = HC_EV_NM / lam                                   # photon energy, eV
    wp2 = RAKIC_AG["wp"] ** 2
    f0, g0 = RAKIC_AG["drude"]
    eps = 1.0 - f0 * wp2 / (w * (w + 1j * g0))
    for f, g, wj in RAKIC_AG["lorentz"]:
        eps = eps + f * wp2 / (wj ** 2 - w ** 2 - 1j * w * g)
    return eps


def silver_index(wavelength_nm: ArrayLike):
    """Refractive index ``n = sqrt(eps)`` (``Im n > 0``) of `silver_permittivity`.

    Examples
    --------
    >>> from topopt.design.materials import silver_index
    >>> complex(np.round(silver_index(532.0), 4))
    (0.133+3.0285j)
    """
    eps = silver_permittivity(wavelength_nm)
    return np.sqrt(eps)          # principal root: Re n >= 0 and, as Im eps > 0, Im n > 0


def silver_index_jc(wavelength_nm: ArrayLike, kind: str = "linear"):
    """Silver's index from the Johnson & Christy (1972) table, interpolated in wavelength.

    Parameters
    ----------
    wavelength_nm : array_like
        Wavelength(s) in nm within the table's 413.3-756 nm; real, without NaN.
    kind : {"linear", "cubic"}
        ``"linear"``: the table's points joined by straight lines (the
        tutorial's silver at 532 nm; not differentiable). ``"cubic"``: the
        natural cubic spline through the same points, in ``n`` and ``k``
        separately: smooth, differentiable (`topopt.ad`, every mode: a
        random wavelength in a limit state); at 532 nm ``n = 0.0546 +
        3.4313i``, its ``eps`` 0.14 % from the linear one (the tutorial's).

    Returns
    -------
    numpy.ndarray
        Complex ``n = n + i k``, the shape of `wavelength_nm` (the data's
        ``n`` has two significant digits).

    Examples
    --------
    >>> from topopt.design.materials import silver_index_jc
    >>> complex(np.round(silver_index_jc(532.0), 3))    # the tutorial's silver
    (0.054+3.429j)
    >>> complex(np.round(silver_index_jc(532.0, kind="cubic"), 4))
    (0.0546+3.4313j)
    """
    table = JOHNSON_CHRISTY_AG
    if kind not in ("linear", "cubic"):
        raise ValueError(f"kind must be 'linear' or 'cubic', got {kind!r}")
    traced = ad.is_traced(wavelength_nm)
    if traced and kind == "linear":
        raise TypeError("silver_index_jc(kind='linear') is not differentiable: use "
                        "kind='cubic' (or silver_index) to differentiate")
    lam = _wavelength(wavelength_nm, table[0, 0], table[-1, 0],
                      "the Johnson & Christy (1972) table")
    if kind == "linear":
        lam = check_real_array("lam", lam, allow_bool=True)
        return (np.interp(lam, table[:, 0], table[:, 1])
                + 1j * np.interp(lam, table[:, 0], table[:, 2]))
    return _cubic(lam)


@functools.lru_cache(maxsize=1)
def _cubic_coefficients() -> np.ndarray:
    """The natural cubic spline's coefficients ``(4, intervals)`` through the J&C ``n + i k``."""
    from scipy.interpolate import CubicSpline
    table = JOHNSON_CHRISTY_AG
    c = CubicSpline(table[:, 0], table[:, 1] + 1j * table[:, 2], bc_type="natural").c
    c.setflags(write=False)                       # shared by every call
    return c


def _cubic(lam):
    """The natural cubic spline of the J&C ``n`` and ``k`` at `lam` (traced or not)."""
    table = JOHNSON_CHRISTY_AG
    i = np.clip(np.searchsorted(table[:, 0], np.asarray(ad.value(lam), float), side="right")
                - 1, 0, len(table) - 2)
    t = lam - table[i, 0]
    c = _cubic_coefficients()[:, i]
    return ((c[0] * t + c[1]) * t + c[2]) * t + c[3]
