"""The base of the linear filters and the primitive pair behind ``flt(x)``.

A filter is a linear map ``x -> F x`` of element values (one per column of
``mesh.t``). Calling a filter runs the primitive `apply_filter`, whose
pullback is the primitive `apply_filter_transpose` and vice versa, so a
gradient through a filter costs one application of ``F^T`` and second
derivatives (`ad.hvp`) go through it too.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse.linalg as spla
from numpy.typing import ArrayLike
from skfem import Mesh

from .. import ad
from .._validate import check_type, warn
from ..fem.mesh import check_mesh

__all__ = ["LinearFilter", "apply_filter", "apply_filter_transpose", "domain_size"]


def _mesh(mesh) -> int:
    """The number of elements of `mesh`, checked by `topopt.fem.mesh.check_mesh`."""
    return int(check_mesh(check_type("mesh", mesh, Mesh, "a scikit-fem Mesh")).t.shape[1])


def domain_size(mesh: Mesh) -> float:
    """Largest side of the bounding box of the mesh's nodes.

    Examples
    --------
    >>> from skfem import MeshQuad
    >>> from topopt.design import domain_size
    >>> domain_size(MeshQuad.init_tensor([0.0, 3.0, 6.0], [0.0, 2.0]))
    6.0
    """
    return float(np.max(np.ptp(mesh.p, axis=1)))


def _warn_radius(mesh: Mesh, rmin: float, label: str) -> None:
    """`TopoptWarning` when the (equivalent) radius `rmin` exceeds the domain size."""
    size = domain_size(mesh)
    if rmin > size * (1.0 + 1e-12):       # equal sizes (up to rounding) do not warn
        warn(f"filter radius {label} = {rmin:g} is larger than the domain (largest side of "
             f"the mesh's bounding box: {size:g}): the filter averages the whole design "
             "into a nearly uniform grey")


class LinearFilter:
    """Base class of the linear filters: validation and the primitive pair.

    Subclasses set ``n`` (number of elements) and implement ``_forward(x)``
    and ``_transpose(y)`` on plain 1-D arrays (real or complex); calls,
    validation of the design vector and differentiation come from here.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.design import LinearFilter
    >>> class Shift(LinearFilter):  # y_i = x_(i+1), cyclic
    ...     n = 3
    ...     def _forward(self, x):
    ...         return np.roll(x, -1)
    ...     def _transpose(self, y):
    ...         return np.roll(y, 1)
    >>> ad.gradient(lambda x: Shift()(x) @ np.array([1.0, 2.0, 3.0]), np.zeros(3))
    array([3., 1., 2.])
    """

    n: int
    seconds: float = 0.0      # time spent applying F and F^T (for benchmarks)

    def __call__(self, x: ArrayLike) -> np.ndarray:
        """Filtered element values ``F x``; differentiable in `x`."""
        return apply_filter(self, x)

    def transpose(self, y: ArrayLike) -> np.ndarray:
        """``F^T y``, the pullback of the filter; differentiable in `y`."""
        return apply_filter_transpose(self, y)

    @property
    def operator(self) -> spla.LinearOperator:
        """The filter as a scipy ``LinearOperator`` (``matvec`` F, ``rmatvec`` F^T)."""
        return spla.LinearOperator((self.n_out, self.n), matvec=self._forward,
                                   rmatvec=self._transpose, dtype=float)

    @property
    def n_out(self) -> int:
        """Length of the output (``n`` for element-to-element filters)."""
        return self.n

    def _check(self, x, name: str, nan: bool) -> np.ndarray:
        x = np.asarray(x)
        if x.dtype.kind not in "iufc":
            raise TypeError(f"{name} must be a numeric array, got dtype {x.dtype}")
        size = self.n if name == "x" else self.n_out
        if x.shape != (size,):
            what = ("mesh.t.shape[1]", "one value per element") if size == self.n else \
                ("the output size", "one value per output point")
            raise ValueError(
                f"{name} has shape {x.shape}: expected {what[0]} = {size} entries ({what[1]})")
        if nan and not np.isfinite(x).all():
            raise ValueError(f"{name} contains NaN or inf (at element "
                             f"{np.flatnonzero(~np.isfinite(x))[:5]}...)")
        return x if x.dtype.kind in "fc" else x.astype(float)

    def _forward(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _transpose(self, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError


# ------------------------------------------------------- the primitive pair

def _check_filter(flt) -> None:
    if not isinstance(flt, LinearFilter):
        raise TypeError(f"flt must be a LinearFilter (DensityFilter, HelmholtzFilter, ...), "
                        f"got {type(flt).__name__}")


def _timed(flt, method: str, v, name: str, nan: bool) -> np.ndarray:
    """``flt.<method>(v)`` for the checked argument `name` of a filter primitive, its time
    added to ``flt.seconds`` (`flt` checked first: a non-filter is a TypeError naming it)."""
    _check_filter(flt)
    t0 = time.perf_counter()
    out = getattr(flt, method)(flt._check(v, name, nan=nan))
    flt.seconds += time.perf_counter() - t0
    return out


@ad.primitive
def apply_filter(flt: LinearFilter, x: ArrayLike) -> np.ndarray:
    """``F x`` for a linear filter `flt`: the primitive behind ``flt(x)``.

    Its pullback is `apply_filter_transpose`, its forward rule itself.

    Examples
    --------
    >>> import numpy as np
    >>> from skfem import MeshTri
    >>> from topopt import ad
    >>> from topopt.design import HelmholtzFilter, apply_filter
    >>> flt = HelmholtzFilter(MeshTri().refined(1), r=0.1)
    >>> x = np.linspace(0.0, 1.0, 8)
    >>> report = ad.check_rule(apply_filter, flt, x)
    >>> report["arg 1 reverse"] < 1e-8
    True
    """
    return _timed(flt, "_forward", x, "x", nan=True)


@ad.primitive
def apply_filter_transpose(flt: LinearFilter, y: ArrayLike) -> np.ndarray:
    """``F^T y`` for a linear filter `flt` (the pullback of `apply_filter`).

    Its pullback is `apply_filter`, its forward rule itself.

    Examples
    --------
    >>> import numpy as np
    >>> from skfem import MeshQuad
    >>> from topopt.design import DensityFilter, apply_filter, apply_filter_transpose
    >>> flt = DensityFilter(MeshQuad().refined(2), rmin=0.3)
    >>> x, y = np.arange(16.0), np.cos(np.arange(16.0))
    >>> bool(np.isclose(apply_filter(flt, x) @ y, x @ apply_filter_transpose(flt, y)))
    True
    """
    return _timed(flt, "_transpose", y, "y", nan=False)


def _linear_rules(primitive, transpose):
    """Register the rules of `primitive`, a linear map of its second argument whose
    pullback is `transpose` (``(F x)' = F x'``, ``xbar = F^T ybar``)."""
    @ad.rrule(primitive)
    def rrule(flt, x):
        def pullback(ybar):
            return None, transpose(flt, ybar)
        pullback.__name__ = pullback.__qualname__ = f"{primitive.__name__}_pullback"
        return primitive(flt, x), pullback

    @ad.frule(primitive)
    def frule(primals, tangents):
        flt, x = primals
        xdot = tangents[1]
        return primitive(flt, x), None if xdot is None else primitive(flt, xdot)

    return rrule, frule


apply_filter_rrule, apply_filter_frule = _linear_rules(apply_filter, apply_filter_transpose)
apply_filter_transpose_rrule, apply_filter_transpose_frule = _linear_rules(
    apply_filter_transpose, apply_filter)
