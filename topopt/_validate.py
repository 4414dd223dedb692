"""Argument validation shared by the public API: one error, naming the argument.

Every check raises ``TypeError`` (wrong kind: not a number, not an integer,
a traced value where a plain parameter is needed) or ``ValueError`` (right
kind, outside the accepted range) with the parameter's name and the accepted
range in the message. Traced values (`topopt.ad` boxes) are looked at through
``ad.value`` and never converted. Array checks are one pass (min/max), cheap
enough for every optimization iteration.

Examples
--------
>>> from topopt._validate import check_range
>>> check_range("volfrac", 0.4, 0.0, 1.0, lo_open=True, hi_open=True)
0.4
>>> check_range("volfrac", 1.2, 0.0, 1.0, lo_open=True, hi_open=True)
Traceback (most recent call last):
...
ValueError: volfrac must be in (0, 1), got 1.2
"""

from __future__ import annotations

import numbers
import os
import sys
import warnings
from typing import Iterable

import numpy as np

from . import ad
from ._keywords import keyword_error

__all__ = ["TopoptWarning", "real", "check_range", "check_positive", "check_int", "check_choice",
           "check_bool", "check_callable", "check_type", "check_seed", "check_sequence",
           "check_mapping",
           "check_keywords",
           "check_array_range", "check_real_array", "check_finite_array", "check_finite_values",
           "check_load",
           "check_indices", "check_grid_index", "check_factor", "check_ordered", "check_nonempty",
           "interval",
           "warn"]


class TopoptWarning(UserWarning):
    """Input that is valid but most likely not what was meant (e.g. a filter
    radius larger than the domain)."""


def interval(lo=None, hi=None, lo_open: bool = False, hi_open: bool = False) -> str:
    """The interval ``[lo, hi)`` etc. as text; ``None`` is an infinite end.

    Examples
    --------
    >>> from topopt._validate import interval
    >>> interval(0, None, lo_open=True), interval(-1, 0.5, True, True)
    ('(0, inf)', '(-1, 0.5)')
    """
    left = "(" if lo is None or lo_open else "["
    right = ")" if hi is None or hi_open else "]"
    lo_s = "-inf" if lo is None else f"{lo:g}"
    hi_s = "inf" if hi is None else f"{hi:g}"
    return f"{left}{lo_s}, {hi_s}{right}"


def _bounds(lo, hi, lo_open: bool, hi_open: bool) -> str:
    """``"> 0"``, ``"<= 1"`` or ``"in [0, 1)"``."""
    if hi is None and lo is not None:
        return f"{'>' if lo_open else '>='} {lo:g}"
    if lo is None and hi is not None:
        return f"{'<' if hi_open else '<='} {hi:g}"
    return f"in {interval(lo, hi, lo_open, hi_open)}"


def real(name: str, value, *, finite: bool = True) -> float:
    """`value` as a plain real float; `TypeError` for traced or non-real input.

    Examples
    --------
    >>> from topopt._validate import real
    >>> real("z", 3)
    3.0
    >>> real("z", "3")
    Traceback (most recent call last):
    ...
    TypeError: z must be a real number, got '3'
    """
    if ad.is_traced(value):
        raise TypeError(f"{name} is a parameter and is not differentiated: pass a "
                        f"plain number (ad.value({name}) if it is traced)")
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    arr = np.asarray(value) if not isinstance(value, str) else None
    if arr is None or arr.ndim != 0 or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number, got {value!r}")
    out = float(arr)
    if np.isnan(out) or (finite and not np.isfinite(out)):
        raise ValueError(f"{name} must be {'finite' if finite else 'a number'}, got {out}")
    return out


def check_range(name: str, value, lo=None, hi=None, *, lo_open: bool = False,
                hi_open: bool = False, what: str = "", finite: bool = True) -> float:
    """A real number in ``[lo, hi]`` (ends open on request); returns it as float."""
    v = real(name, value, finite=finite)
    bad = ((lo is not None and (v < lo or (lo_open and v == lo)))
           or (hi is not None and (v > hi or (hi_open and v == hi))))
    if bad:
        note = f" ({what})" if what else ""
        raise ValueError(f"{name} must be {_bounds(lo, hi, lo_open, hi_open)}{note}, "
                         f"got {v:g}")
    return v


def check_positive(name: str, value, what: str = "") -> float:
    """A finite real number > 0 (a radius, a modulus, a step); returns it as float.

    Examples
    --------
    >>> from topopt._validate import check_positive
    >>> check_positive("rmin", 0.0, "filter radius")
    Traceback (most recent call last):
    ...
    ValueError: rmin must be > 0 (filter radius), got 0
    """
    return check_range(name, value, 0.0, None, lo_open=True, what=what)


def check_int(name: str, value, lo: int | None = None, hi: int | None = None,
              what: str = "") -> int:
    """An integer (not bool, not float) in ``[lo, hi]``."""
    if ad.is_traced(value) or isinstance(value, (bool, np.bool_)) \
            or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        note = f" ({what})" if what else ""
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be an integer {rng}{note}, got {v}")
    return v


def check_choice(name: str, value, choices: Iterable):
    """`value` if it is one of `choices`."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"unknown {name} {value!r}: {name} must be one of {choices}")
    return value


def check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_callable(name: str, value, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {type(value).__name__}")
    return value


def check_type(name: str, value, kind, noun: str):
    """`value` if it is an instance of `kind` (a type or tuple of types).

    Examples
    --------
    >>> from topopt._validate import check_type
    >>> check_type("mesh", [0.0], dict, "a scikit-fem Mesh")
    Traceback (most recent call last):
    ...
    TypeError: mesh must be a scikit-fem Mesh, got list
    """
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be {noun}, got {type(value).__name__}")
    return value


def check_seed(name: str, seed):
    """``None`` or a non-negative integer (numpy's ``default_rng`` seed)."""
    if seed is None:
        return None
    return check_int(name, seed, 0, what="seed of numpy.random.default_rng")


def check_sequence(name: str, value) -> list:
    """`value` (a list, tuple, range, array or other iterable, not text) as a list.

    Examples
    --------
    >>> from topopt._validate import check_sequence
    >>> check_sequence("params", 3)
    Traceback (most recent call last):
    ...
    TypeError: params must be a sequence of items (list, tuple, array), got int
    """
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a sequence of items (list, tuple, array), "
                        f"got {type(value).__name__}")
    return list(value)


def check_mapping(name: str, value) -> dict:
    """``None`` (as ``{}``) or a dict of options, as a dict.

    Examples
    --------
    >>> from topopt._validate import check_mapping
    >>> check_mapping("mma_params", [1])
    Traceback (most recent call last):
    ...
    TypeError: mma_params must be a dict {name: value}, got list
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict {{name: value}}, got {type(value).__name__}")
    return dict(value)


def check_keywords(where: str, given: Iterable[str], known: Iterable[str]) -> None:
    """`TypeError` naming every keyword of `given` not in `known`, with the
    closest known name of each (``difflib``).

    Examples
    --------
    >>> from topopt._validate import check_keywords
    >>> check_keywords("run", ["maxeval", "maxevals"], ["maxeval", "verbose"])
    Traceback (most recent call last):
    ...
    TypeError: run got unknown keyword(s) ['maxevals'] (did you mean \
'maxeval'?); known: ['maxeval', 'verbose']
    """
    known = tuple(known)
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise keyword_error(where, unknown, known)


def check_real_array(name: str, x, allow_bool: bool = False) -> np.ndarray:
    """`x` (plain values) as a float array; `TypeError` for text, objects, complex (whose
    imaginary part a cast would drop), bool (unless `allow_bool`: as 0/1) or a traced value.

    Examples
    --------
    >>> from topopt._validate import check_real_array
    >>> check_real_array("x0", "x")
    Traceback (most recent call last):
    ...
    TypeError: x0 must be a real array of numbers, got str
    """
    if ad.is_traced(x):
        raise TypeError(f"{name} is not differentiated here: pass plain values")
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be a real array of numbers, got {type(x).__name__}")
    try:
        arr = np.asarray(x)
    except ValueError as err:                 # ragged nested lists
        raise ValueError(f"{name} must be a rectangular array of numbers ({err})") from None
    if arr.dtype.kind not in ("iufb" if allow_bool else "iuf"):
        raise TypeError(f"{name} must be a real array of numbers, got dtype {arr.dtype}")
    return arr.astype(float, copy=False)


def check_finite_array(name: str, x, shape: tuple | None = None) -> np.ndarray:
    """A real array without NaN/inf (of `shape` if given), as float; plain input only."""
    if ad.is_traced(x):
        raise TypeError(f"{name} is not differentiated here: pass plain values")
    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real array, got dtype {arr.dtype}")
    if shape is not None and arr.shape != tuple(shape):
        raise ValueError(f"{name} has shape {arr.shape}; expected {tuple(map(int, shape))}")
    arr = arr.astype(float, copy=False)
    check_finite_values(name, arr, f"{name} must be finite")
    return arr


def _entries(n: int) -> str:
    return f"{n} non-finite entr{'y' if n == 1 else 'ies'}"


def check_finite_values(name: str, x, rule: str, axes: tuple = ("index",)) -> None:
    """Raise `ValueError` naming the first NaN/inf of `x` (plain or traced, real or complex).

    One pass (a sum; the entries are searched only when it is not finite).
    `axes` names the array's axes in the message (``("dof", "load case")``);
    integer and boolean arrays pass.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt._validate import check_finite_values
    >>> check_finite_values("f", np.array([0.0, np.nan, 1.0]), "loads must be finite", ("dof",))
    Traceback (most recent call last):
    ...
    ValueError: f: 1 non-finite entry (dof 1, value NaN): loads must be finite
    """
    v = np.asarray(ad.value(x))
    if v.dtype.kind in "USV":                  # text is no number (numpy would not say so)
        raise TypeError(f"{name} must be a number or an array of numbers, got {x!r:.40}")
    if v.size == 0 or v.dtype.kind not in "fc":
        return
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(v)):
            return
    bad = np.flatnonzero(~np.isfinite(v.ravel()))
    if bad.size == 0:                          # the sum overflowed; every entry is finite
        return
    pos = np.unravel_index(int(bad[0]), v.shape)
    if not pos:                                # a 0-d array: no index to name
        raise ValueError(f"{name} is {'NaN' if np.isnan(v) else v}: {rule}")
    if len(axes) < len(pos):                   # unnamed axes: the index tuple
        where = f"{axes[0]} {tuple(int(i) for i in pos)}"
    else:
        where = ", ".join(f"{a} {int(i)}" for a, i in zip(axes, pos))
    first = "" if bad.size == 1 else "first at "
    value = v.ravel()[bad[0]]
    shown = "NaN" if value != value else value            # numpy writes nan
    text = f" ({first}{where}, value {shown})"
    raise ValueError(f"{name}: {_entries(bad.size)}{text}: {rule}")


def check_load(name: str, f, ndof: int | None = None, real: bool = False) -> np.ndarray:
    """A load vector ``(ndof,)`` or ``(ndof, n_loads)`` without NaN/inf (traced values kept).

    A non-finite entry is an error at any dof, a supported one included (a
    finite load there is a reaction and does no harm; NaN would be dropped).
    With `real`, a complex load is a `TypeError` (its imaginary part would
    be dropped).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt._validate import check_load
    >>> check_load("f", np.array([0.0, 1.0, np.inf]), 3)
    Traceback (most recent call last):
    ...
    ValueError: f: 1 non-finite entry (dof 2, value inf): loads must be finite
    """
    v = np.asarray(ad.value(f))
    kinds = "iuf" if real else "iufc"
    if v.dtype.kind not in kinds:
        raise TypeError(f"{name} must be a {'real' if real else 'real or complex'} load "
                        f"vector, got dtype {v.dtype}")
    if ndof is not None and (v.ndim not in (1, 2) or v.shape[0] != ndof):
        raise ValueError(f"{name} has shape {v.shape}; expected ({ndof},) or "
                         f"({ndof}, n_loads): a load has one row per dof")
    check_finite_values(name, v, "loads must be finite", ("dof", "load case"))
    return f


def check_indices(name: str, idx, n: int, what: str = "indices") -> np.ndarray:
    """An integer array with entries in ``[0, n)`` (numpy would wrap -1 to the last).

    Examples
    --------
    >>> from topopt._validate import check_indices
    >>> check_indices("fixed", [0, 3], 3, "dofs")
    Traceback (most recent call last):
    ...
    ValueError: fixed has dofs outside [0, 3): 3 at position 1
    """
    arr = np.asarray(idx)
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integer {what}, got dtype {arr.dtype}")
    out = (arr < 0) | (arr >= n)
    if np.any(out):
        k = int(np.flatnonzero(out.ravel())[0])
        at = k if arr.ndim == 1 else tuple(map(int, np.unravel_index(k, arr.shape)))
        raise ValueError(f"{name} has {what} outside [0, {n}): {arr.ravel()[k]} at position {at}")
    return arr.astype(np.int64, copy=False)


def check_grid_index(name: str, ijk, shape, what: str = "index") -> tuple:
    """A grid index `ijk` (one integer or integer array per axis of `shape`), each entry in
    ``[0, n)`` of its axis (numpy would wrap -1 or name no argument); returns it as a tuple.

    Examples
    --------
    >>> from topopt._validate import check_grid_index
    >>> check_grid_index("ijk", (4, 0), (4, 2), "element index")
    Traceback (most recent call last):
    ...
    ValueError: ijk has element index 4 on axis 0 outside [0, 4)
    """
    if isinstance(ijk, (str, bytes)) or np.ndim(ijk) == 0 or len(ijk) != len(shape):
        raise ValueError(f"{name} must be {len(shape)} integers, one {what} per axis of the "
                         f"grid {tuple(shape)}, got {ijk!r:.60}")
    out = []
    for axis, (i, n) in enumerate(zip(ijk, shape)):
        arr = np.asarray(i)
        if arr.dtype.kind not in "iu" or isinstance(i, (bool, np.bool_)):
            raise TypeError(f"{name} must hold integers ({what} on axis {axis}), got {i!r:.40}")
        bad = (arr < 0) | (arr >= n)
        if np.any(bad):
            raise ValueError(f"{name} has {what} {arr.ravel()[np.flatnonzero(bad.ravel())[0]]} "
                             f"on axis {axis} outside [0, {n})")
        out.append(arr)
    return tuple(out)


def check_factor(name: str, factor, counts, what: str = "element count") -> int:
    """An integer factor >= 1 that divides every one of `counts` (a coarsening of a grid)."""
    factor = check_int(name, factor, 1)
    if any(int(n) % factor for n in counts):
        raise ValueError(f"{name} = {factor} must divide every {what} {tuple(counts)}")
    return factor


def check_nonempty(name: str, x, what: str = "one entry per element") -> None:
    """`ValueError` for an empty array `x` (plain or traced): a mean, maximum or norm of
    nothing has no value (numpy would give NaN or name no argument)."""
    if np.size(ad.value(x)) == 0:
        raise ValueError(f"{name} is empty: it needs at least one entry ({what})")


def check_ordered(lo_name: str, lo, hi_name: str, hi, strict: bool = False) -> None:
    """`ValueError` unless ``lo <= hi`` (``<`` if `strict`) entry by entry, without NaN (a
    lower and an upper bound, a minimum and a maximum); infinite ends pass.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt._validate import check_ordered
    >>> check_ordered("lower", np.zeros(3), "upper", np.array([1.0, -1.0, 2.0]))
    Traceback (most recent call last):
    ...
    ValueError: lower must be <= upper: lower[1] = 0 > upper[1] = -1
    """
    a, b = np.asarray(ad.value(lo), dtype=float), np.asarray(ad.value(hi), dtype=float)
    for name, v in ((lo_name, a), (hi_name, b)):
        if np.isnan(v).any():
            raise ValueError(f"{name} contains NaN (at flat index "
                             f"{int(np.flatnonzero(np.isnan(v.ravel()))[0])})")
    bad = (a >= b) if strict else (a > b)
    if np.any(bad):
        i = np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), bad.shape)
        at = f"[{', '.join(map(str, i))}]" if i else ""
        sign = "<" if strict else "<="
        raise ValueError(f"{lo_name} must be {sign} {hi_name}: {lo_name}{at} = "
                         f"{np.broadcast_to(a, bad.shape)[i]:g} {'>=' if strict else '>'} "
                         f"{hi_name}{at} = {np.broadcast_to(b, bad.shape)[i]:g}")


def check_array_range(name: str, x, lo=None, hi=None, *, tol: float = 0.0,
                      what: str = "") -> tuple[float, float]:
    """Check that a (possibly traced) real array has no NaN and lies in ``[lo, hi]``.

    Values within `tol` of an end are accepted (rounding of filters); the
    array is not converted. Returns its ``(min, max)`` (``(inf, -inf)`` if
    empty).
    """
    v = np.asarray(ad.value(x))
    if v.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real array, got dtype {v.dtype}")
    if v.size == 0:
        return np.inf, -np.inf
    vmin, vmax = float(np.min(v)), float(np.max(v))
    if np.isnan(vmin) or np.isnan(vmax):
        where_nan = np.flatnonzero(np.isnan(v.ravel()))[:5]
        raise ValueError(f"{name} contains NaN (at flat index {where_nan}...)")
    if (lo is not None and vmin < lo - tol) or (hi is not None and vmax > hi + tol):
        note = f" ({what})" if what else ""
        slack = f" up to {tol:g}" if tol else ""
        below = lo - vmin if lo is not None else -np.inf
        above = vmax - hi if hi is not None else -np.inf
        bad = vmin if below >= above else vmax          # the entry farthest outside
        index = int(np.flatnonzero(v.ravel() == bad)[0])
        raise ValueError(f"{name} must lie in {interval(lo, hi)}{slack}{note}; "
                         f"got {bad:.6g} at flat index {index} (range [{vmin:.6g}, {vmax:.6g}])")
    return vmin, vmax


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str) -> None:
    """Issue a `TopoptWarning` attributed to the first caller outside topopt."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, TopoptWarning, stacklevel=level)
