"""Material interpolation and projection of element densities.

`project` is the smoothed Heaviside threshold of Wang, Lazarov & Sigmund
(2011); `simp` and `ramp` map a density to a stiffness (modified SIMP of
top88, RAMP of Stolpe & Svanberg 2001). Each is an `ad.primitive`
differentiated in its first argument only; the other arguments are fixed
parameters. Pullbacks are numpy expressions of the residuals, so second
derivatives (`ad.hvp`) go through them. `permittivity` is the
refractive-index interpolation of electromagnetic problems (numpy
operations, traced by `ad`), `blueprint` the binary limit of `project`.

Examples
--------
>>> import numpy as np
>>> from topopt.design.interpolation import project, simp
>>> simp(project(np.array([0.0, 0.5, 1.0]), beta=8.0, eta=0.5), penal=3.0, Emin=0.0)
array([0.   , 0.125, 1.   ])
"""

from __future__ import annotations

import inspect

import numpy as np
from numpy.typing import ArrayLike

from .. import ad
from .._validate import check_array_range, check_positive, check_range, check_real_array, real
from .._keywords import keyword_error

__all__ = ["project", "simp", "ramp", "DENSITY_TOL", "permittivity", "blueprint"]


# --------------------------------------------------------------- validation

#: Slack of the density range [0, 1] in `simp` and `ramp`: filters (a
#: weighted average, a PDE solve) return 1 + 2e-16 where the design is 1.
#: Values within it are evaluated at the nearest end of [0, 1].
DENSITY_TOL = 1e-9

#: Slack of [0, 1] in `permittivity`: a projected Helmholtz field overshoots by
#: a few 1e-4 and continues the polynomial; 1e-2 is far beyond that.
INDEX_TOL = 1e-2


def _density(x, name: str = "x") -> None:
    """Check that `x` (possibly traced) is a real array without NaN."""
    check_array_range(name, x)


def _unit_density(x, name: str = "x"):
    """`x` checked to lie in [0, 1] (up to `DENSITY_TOL`); negatives set to 0.

    One min/max pass; the copy ``max(x, 0)`` only when an entry is negative
    (entries just above 1 keep their exact value and derivatives).
    Densities outside [0, 1] give negative or unbounded stiffness (and NaN
    for a non-integer exponent), so they are an error, not extrapolated.
    """
    lo, hi = check_array_range(name, x, 0.0, 1.0, tol=DENSITY_TOL,
                               what="a density; values outside give negative or unbounded "
                                    "stiffness. A Helmholtz-filtered field overshoots [0, 1] "
                                    "near sharp edges at small r: clip it (np.clip) or "
                                    "use a larger radius")
    return np.maximum(x, 0.0) if lo < 0.0 else x


def _moduli(Emin, E0) -> tuple[float, float]:
    Emin, E0 = real("Emin", Emin), real("E0", E0)
    if not 0.0 <= Emin < E0:
        raise ValueError(f"need 0 <= Emin < E0, got Emin={Emin}, E0={E0}")
    return Emin, E0


def _bind(fun, primals, kw) -> tuple:
    """Arguments of `fun` (positional or keyword) in signature order."""
    signature = inspect.signature(fun)
    unknown = set(kw) - set(signature.parameters)
    if unknown:                                  # as the untraced call says it
        raise keyword_error(fun.__name__, unknown, signature.parameters)
    bound = signature.bind(*primals, **kw)
    bound.apply_defaults()
    return tuple(bound.arguments.values())


# ---------------------------------------------------------------- projection

def _project_params(beta, eta) -> tuple[float, float]:
    return (check_positive("beta", beta, "projection sharpness"),
            check_range("eta", eta, 0.0, 1.0, what="threshold"))


@ad.primitive
def project(x: ArrayLike, beta: float, eta: float) -> np.ndarray:
    """Smoothed Heaviside projection of densities (tanh threshold).

    ``(tanh(beta eta) + tanh(beta (x - eta))) / (tanh(beta eta) +
    tanh(beta (1 - eta)))`` (Wang, Lazarov & Sigmund 2011): maps 0 to 0 and
    1 to 1, and tends to a step at `eta` as `beta` grows.

    Parameters
    ----------
    x : array_like
        Densities, typically filtered, in [0, 1]. Differentiated.
    beta : float
        Sharpness, > 0. Not differentiated.
    eta : float
        Threshold in [0, 1]. Not differentiated.

    Returns
    -------
    numpy.ndarray
        Projected densities, same shape as `x`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.design.interpolation import project
    >>> project(np.array([0.0, 0.5, 1.0]), beta=8.0, eta=0.5)
    array([0. , 0.5, 1. ])
    >>> g = ad.gradient(lambda x: np.sum(project(x, 8.0, 0.5)), np.array([0.5]))
    >>> np.round(g, 4)  # beta / (2 tanh(beta / 2)) at x = eta
    array([4.0027])
    """
    beta, eta = _project_params(beta, eta)
    _density(x)
    x = check_real_array("x", x, allow_bool=True)
    a, b = np.tanh(beta * eta), np.tanh(beta * (1.0 - eta))
    return (a + np.tanh(beta * (x - eta))) / (a + b)


def _project_parts(x, beta, eta):
    """Value and derivative of `project`; numpy ops so that outer traces record them."""
    beta, eta = _project_params(beta, eta)
    _density(x)
    a, b = np.tanh(beta * eta), np.tanh(beta * (1.0 - eta))
    t = np.tanh(beta * (x - eta))
    return (a + t) / (a + b), beta * (1.0 - t * t) / (a + b)


# ---------------------------------------------------------------------- SIMP

def _simp_params(penal, Emin, E0) -> tuple[float, float, float]:
    penal = check_range("penal", penal, 1.0, None, what="SIMP penalization exponent")
    return (penal, *_moduli(Emin, E0))


@ad.primitive
def simp(x: ArrayLike, penal: float = 3.0, Emin: float = 1e-9,
         E0: float = 1.0) -> np.ndarray:
    """Modified SIMP interpolation ``Emin + x**penal * (E0 - Emin)``.

    top88 eq. (1): the small `Emin` keeps the stiffness matrix regular
    where ``x = 0``.

    Parameters
    ----------
    x : array_like
        Densities in [0, 1] (up to `DENSITY_TOL`, the rounding of filters;
        entries just below 0 count as 0). Differentiated.
    penal : float, default 3.0
        Penalization exponent, >= 1.
    Emin, E0 : float, default 1e-9 and 1.0
        Void and solid stiffness, ``0 <= Emin < E0``.

    Returns
    -------
    numpy.ndarray
        Interpolated stiffness, same shape as `x`.

    Raises
    ------
    ValueError
        If `x` has NaN or an entry outside [0, 1] by more than `DENSITY_TOL`
        (the entry and its index are named), or a parameter is out of range.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.design.interpolation import simp
    >>> simp(np.array([0.0, 0.5, 1.0]), penal=3.0, Emin=0.0)
    array([0.   , 0.125, 1.   ])
    >>> ad.gradient(lambda x: np.sum(simp(x, 3.0, 0.0)), np.array([0.5]))
    array([0.75])
    """
    penal, Emin, E0 = _simp_params(penal, Emin, E0)
    x = np.asarray(_unit_density(x), dtype=float)
    return Emin + x ** penal * (E0 - Emin)


def _simp_parts(x, penal, Emin, E0):
    penal, Emin, E0 = _simp_params(penal, Emin, E0)
    x = _unit_density(x)
    # y exactly as `simp` computes it: the FE solve caches factorizations by
    # the bits of E, and the traced and plain paths must agree on them
    return Emin + x ** penal * (E0 - Emin), penal * (E0 - Emin) * x ** (penal - 1.0)


# ---------------------------------------------------------------------- RAMP

def _ramp_params(q, Emin, E0) -> tuple[float, float, float]:
    q = check_range("q", q, 0.0, None, what="RAMP penalization")
    return (q, *_moduli(Emin, E0))


@ad.primitive
def ramp(x: ArrayLike, q: float = 8.0, Emin: float = 1e-9,
         E0: float = 1.0) -> np.ndarray:
    """RAMP interpolation ``Emin + x / (1 + q (1 - x)) * (E0 - Emin)``.

    Rational approximation of material properties (Stolpe & Svanberg 2001):
    unlike SIMP its slope at ``x = 0`` is nonzero, ``(E0 - Emin) / (1 + q)``.

    Parameters
    ----------
    x : array_like
        Densities, as in `simp` (its checks and errors too). Differentiated.
    q : float, default 8.0
        Penalization, >= 0 (``q = 0`` is linear).
    Emin, E0 : float, default 1e-9 and 1.0
        As in `simp`.

    Returns
    -------
    numpy.ndarray
        Interpolated stiffness, same shape as `x`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.design.interpolation import ramp
    >>> ramp(np.array([0.0, 0.5, 1.0]), q=2.0, Emin=0.0)
    array([0.  , 0.25, 1.  ])
    >>> ad.gradient(lambda x: np.sum(ramp(x, 2.0, 0.0)), np.array([0.0]))
    array([0.33333333])
    """
    q, Emin, E0 = _ramp_params(q, Emin, E0)
    x = np.asarray(_unit_density(x), dtype=float)
    return Emin + x / (1.0 + q * (1.0 - x)) * (E0 - Emin)


def _ramp_parts(x, q, Emin, E0):
    q, Emin, E0 = _ramp_params(q, Emin, E0)
    x = _unit_density(x)
    d = 1.0 + q * (1.0 - x)
    return Emin + x / d * (E0 - Emin), (1.0 + q) * (E0 - Emin) / (d * d)


# ------------------------------------------------------------------- rules

def _register(fun, parts, params: tuple):
    """Rules of an elementwise map of `x` whose other arguments are parameters.

    ``parts(x, *params) -> (y, dy/dx)`` with numpy operations, so that outer
    traces record them (second derivatives); each parameter gets a cotangent
    that raises if it is traced.
    """
    name = fun.__name__
    names = {i + 1: f"{p} of {name}" for i, p in enumerate(params)}

    @ad.rrule(fun)
    def rrule(x, *args, **kw):
        y, dy = parts(*_bind(fun._impl, (x,) + args, kw))

        def pullback(ybar):
            return (ybar * dy,) + tuple(ad.not_differentiable(v) for v in names.values())
        pullback.__name__ = pullback.__qualname__ = f"{name}_pullback"
        return y, pullback

    @ad.frule(fun)
    def frule(primals, tangents, **kw):
        ad.check_tangents(tangents, names)
        y, dy = parts(*_bind(fun._impl, primals, kw))
        return y, None if tangents[0] is None else tangents[0] * dy

    rrule.__name__ = rrule.__qualname__ = f"{name}_rrule"
    frule.__name__ = frule.__qualname__ = f"{name}_frule"
    return rrule, frule


project_rrule, project_frule = _register(project, _project_parts, ("beta", "eta"))
simp_rrule, simp_frule = _register(simp, _simp_parts, ("penal", "Emin", "E0"))
ramp_rrule, ramp_frule = _register(ramp, _ramp_parts, ("q", "Emin", "E0"))


# ------------------------------------------------- index interpolation, limit

def _index(name: str, value) -> complex | float:
    """A finite refractive index (real or complex), unchanged in type."""
    if ad.is_traced(value):
        raise TypeError(f"{name} is not differentiated here: pass a plain number")
    if isinstance(value, bool) or not isinstance(value, (int, float, complex, np.number)):
        raise TypeError(f"{name} must be a real or complex number, got {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return complex(value) if np.iscomplexobj(value) else float(value)


def permittivity(x: ArrayLike, n_solid: complex, n_void: complex = 1.0) -> np.ndarray:
    """Permittivity of the index interpolation ``eps = [n_void + x (n_solid - n_void)]^2``.

    Christiansen, Vester-Petersen, Madsen & Sigmund (2019): the index, not the
    permittivity, is linear in the density, so the metal's large negative
    ``Re(eps)`` is reached without the resonant intermediate values of a
    linear ``eps``. Written with numpy operations: differentiable in `x` in
    every mode (reverse, forward, nested); `x` just outside [0, 1] (a
    projected Helmholtz-filtered field overshoots by a few 1e-4) continues
    the same polynomial, up to `INDEX_TOL`; farther out is a `ValueError`.

    Parameters
    ----------
    x : array_like
        Densities, typically projected; real, without NaN. Differentiated.
    n_solid : complex
        Refractive index where ``x = 1`` (silver at 532 nm: ``0.054 +
        3.429j``). Differentiated when traced (a dispersive metal at a
        traced wavelength, `topopt.design.materials`).
    n_void : complex, default 1.0
        Refractive index where ``x = 0`` (air). Not differentiated.

    Returns
    -------
    numpy.ndarray
        ``eps(x)``, complex if an index is complex, same shape as `x`.

    Raises
    ------
    TypeError
        If `x` is not real, or an index is not a number (or `n_void` is traced).
    ValueError
        If `x` contains NaN, lies outside [0, 1] by more than `INDEX_TOL`,
        or an index is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.design.interpolation import permittivity
    >>> permittivity(np.array([0.0, 0.5, 1.0]), n_solid=3.0)
    array([1., 4., 9.])
    >>> ad.gradient(lambda x: np.sum(permittivity(x, 3.0)), np.array([0.5]))  # 2 n(x) (3 - 1)
    array([8.])
    """
    if not ad.is_traced(n_solid):
        n_solid = _index("n_solid", n_solid)
    n_void = _index("n_void", n_void)
    check_array_range("x", x, 0.0, 1.0, tol=INDEX_TOL, what="a density; the index "
                      "interpolation is not meant far outside")
    x = x if ad.is_traced(x) else np.asarray(x)
    return (n_void + x * (n_solid - n_void)) ** 2


def blueprint(x: ArrayLike, eta: float) -> np.ndarray:
    """The binary design ``x >= eta``: `project`'s limit as ``beta -> inf``.

    Where ``x > eta`` the projection tends to 1 and where ``x < eta`` to 0;
    a tie ``x == eta`` (where `project` tends to 1/2 for ``0 < eta < 1``)
    counts as solid. Piecewise constant, so not differentiable: a traced
    `x` is a ``TypeError`` (differentiate `project` at a finite `beta`).

    Parameters
    ----------
    x : array_like
        Densities, typically filtered; real, without NaN.
    eta : float
        Threshold in [0, 1], as in `project`.

    Returns
    -------
    numpy.ndarray
        Float array of 0.0 and 1.0, same shape as `x`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.design.interpolation import blueprint, project
    >>> x = np.array([0.2, 0.5, 0.7])
    >>> blueprint(x, 0.5)
    array([0., 1., 1.])
    >>> np.round(project(x, 1e3, 0.5), 6)       # beta -> inf, but 1/2 at the tie
    array([0. , 0.5, 1. ])
    """
    eta = check_range("eta", eta, 0.0, 1.0, what="threshold")
    if ad.is_traced(x):
        raise TypeError("blueprint is piecewise constant (the beta -> inf limit of project) "
                        "and has no derivative: differentiate project at a finite beta")
    check_array_range("x", x)
    return (np.asarray(x) >= eta).astype(float)
