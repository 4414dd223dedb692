"""The density and Helmholtz filters on a `Grid`: no mesh, no sparse matrix.

Both are `topopt.design.linear_filter.LinearFilter` subclasses, so calling
one runs the primitive `apply_filter` (pullback `apply_filter_transpose`)
and gradients, tangents and second derivatives go through them as through
the mesh filters. Each is the same linear map as its mesh counterpart on
``grid.to_mesh()`` (to rounding):

* `GridDensityFilter`: top88's density filter as a correlation of the
  element array with the kernel of the radius (zero outside the box) and
  its boundary normalization, the correlation of ones; O(n_el) memory.
* `GridHelmholtzFilter`: the Helmholtz PDE filter on the Q1 nodes, whose
  matrix on a uniform tensor grid the DCT-I diagonalizes: an exact direct
  solve in O(n log n) with no stored factor.

`scripts/benchmarks/benchmark_grid_filters.py` measures both against the mesh filters.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_positive, check_type, warn
from ..design.helmholtz_filter import helmholtz_radius
from ..design.linear_filter import LinearFilter
from .grid import Grid

__all__ = ["GridDensityFilter", "GridHelmholtzFilter", "density_kernel"]

_SLAB = 1 << 20          # entries of the eigenvalue temporary per slab of x-planes


def _grid(grid) -> Grid:
    return check_type("grid", grid, Grid, "a topopt.grid.Grid (Grid(shape, h))")


def _warn_grid_radius(grid: Grid, rmin: float, label: str) -> None:
    """`TopoptWarning` when the (equivalent) radius exceeds the domain's largest side
    (the rule and message of `topopt.design.linear_filter._warn_radius`)."""
    size = grid.h * max(grid.shape)
    if rmin > size * (1.0 + 1e-12):
        warn(f"filter radius {label} = {rmin:g} is larger than the domain (largest side of "
             f"the grid: {size:g}): the filter averages the whole design into a nearly "
             "uniform grey")


def _by_parts(fun, v: np.ndarray) -> np.ndarray:
    """`fun` (real-linear, float64) applied to `v`, complex `v` by real and imaginary parts."""
    if np.iscomplexobj(v):
        return fun(np.ascontiguousarray(v.real, dtype=np.float64)) + 1j * fun(
            np.ascontiguousarray(v.imag, dtype=np.float64))
    return fun(np.asarray(v, dtype=np.float64))


def density_kernel(grid: Grid, rmin: float) -> np.ndarray:
    """The weights ``max(0, rmin - |k| h)`` of top88 eq. (6) at the element offsets ``k``.

    An array of odd side ``2 m_d + 1`` per axis, centred on offset 0, with
    ``m_d = min(m, n_d - 1)``, ``m`` the largest integer with ``m h < rmin``
    (an offset beyond the grid reaches no element). Symmetric under every
    flip of an axis.

    Examples
    --------
    >>> from topopt.grid import Grid
    >>> from topopt.grid.filters import density_kernel
    >>> density_kernel(Grid((4, 3)), 1.5).round(4)
    array([[0.0858, 0.5   , 0.0858],
           [0.5   , 1.5   , 0.5   ],
           [0.0858, 0.5   , 0.0858]])
    """
    grid = _grid(grid)
    rmin = check_positive("rmin", rmin, "filter radius, in the grid's length unit")
    m = int(np.ceil(rmin / grid.h))          # the largest m with m h < rmin: weight > 0
    while m > 0 and m * grid.h >= rmin:
        m -= 1
    offsets = [np.arange(-min(m, n - 1), min(m, n - 1) + 1) * grid.h for n in grid.shape]
    dist2 = sum(np.meshgrid(*[o ** 2 for o in offsets], indexing="ij"))
    return np.maximum(0.0, rmin - np.sqrt(dist2))       # top88 eq. (6)


class _GridFilter(LinearFilter):
    """The grid, its element count and the check of a design vector on it."""

    def __init__(self, grid):
        self.grid = _grid(grid)
        self.n = self.grid.n_el

    def _check(self, x, name: str, nan: bool) -> np.ndarray:
        shape = np.shape(x)
        if shape != (self.n,):
            raise ValueError(f"{name} has shape {shape}: expected grid.n_el = {self.n} entries "
                             f"(one value per element of {self.grid!r}, C order: "
                             f"x.reshape(grid.shape)); pass x.ravel() for an element array")
        return super()._check(x, name, nan)


class GridDensityFilter(_GridFilter):
    """top88's density filter on a grid: ``F x = (W x) / Hs``, W a correlation.

    ``(W x)_e = sum_i H_ei x_i`` with ``H_ei = max(0, rmin - |c_e - c_i|)``
    (top88 eq. (6), Andreassen et al. 2011) is the correlation of the
    element array ``x.reshape(grid.shape)`` with `density_kernel`, zero
    outside the box (`scipy.ndimage.correlate`, ``mode="constant"``), and
    ``Hs = W 1`` its row sums (the boundary normalization). The adjoint is
    exact: ``F^T y = W^T (y / Hs)`` with ``W^T`` the correlation with the
    flipped kernel, the kernel itself. The same map as
    `topopt.design.filters.DensityFilter` on ``grid.to_mesh()``; stored:
    ``Hs`` (8 bytes per element) and the kernel.

    Parameters
    ----------
    grid : Grid
        The elements (2-D or 3-D, side ``grid.h``).
    rmin : float
        Filter radius, > 0, in length units (``rmin = 1.5 * grid.h`` reaches
        the face neighbours). Larger than the domain's largest side warns
        (`topopt._validate.TopoptWarning`).

    Attributes
    ----------
    kernel : numpy.ndarray
        `density_kernel` of the radius.
    Hs : numpy.ndarray
        ``(n_el,)`` row sums of the weights.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.grid import Grid
    >>> from topopt.grid.filters import GridDensityFilter
    >>> flt = GridDensityFilter(Grid((3, 1)), rmin=1.5)
    >>> flt(np.array([1.0, 0.0, 0.0]))
    array([0.75, 0.2 , 0.  ])
    >>> ad.gradient(lambda x: flt(x)[0], np.zeros(3))
    array([0.75, 0.25, 0.  ])
    """

    def __init__(self, grid: Grid, rmin: float):
        super().__init__(grid)
        self.rmin = check_positive("rmin", rmin, "filter radius, in the grid's length unit")
        _warn_grid_radius(self.grid, self.rmin, "rmin")
        self.kernel = density_kernel(self.grid, self.rmin)
        self.Hs = self._correlate(np.ones(self.n))

    def _correlate(self, v: np.ndarray) -> np.ndarray:
        from scipy import ndimage     # here: scipy.ndimage stays out of `import topopt.grid`
        # (W v)_e = sum_k kernel[k] v[e + k], zero outside the box
        return ndimage.correlate(v.reshape(self.grid.shape), self.kernel, mode="constant",
                                 cval=0.0).ravel()

    def _forward(self, x):
        return _by_parts(self._correlate, x) / self.Hs          # top88: H x / Hs

    def _transpose(self, y):
        # top88 chain rule d x_tilde_e / d x_i = H_ei / Hs_e; W^T = W (symmetric kernel)
        return _by_parts(self._correlate, y / self.Hs)


def _eigenvalues_1d(n: int, h: float):
    """Eigenvalues ``(lam, mu)`` of ``W^-1 K1`` and ``W^-1 M1`` for the DCT-I modes.

    1-D P1 on `n` elements: ``K1 = (1/h) tridiag(-1, 2, -1)`` and ``M1 = (h/6)
    tridiag(1, 4, 1)`` with halved end entries, ``W = diag(1/2, 1, .., 1, 1/2)``.
    The mode ``v_k(j) = cos(pi k j / n)`` (even about both end nodes) gives
    ``lam_k = (2 - 2 cos t_k) / h`` and ``mu_k = h (2 + cos t_k) / 3``, ``t_k = pi k / n``.
    """
    t = np.pi * np.arange(n + 1) / n
    return (2.0 - 2.0 * np.cos(t)) / h, h * (2.0 + np.cos(t)) / 3.0


class GridHelmholtzFilter(_GridFilter):
    """The Helmholtz PDE filter on a grid, solved exactly by the DCT-I.

    ``F = D^-1 T^T Kf^-1 T`` with ``Kf = r^2 K + M`` the Q1 filter matrix
    (natural boundary conditions, Lazarov & Sigmund 2011), ``T`` the P0-to-Q1
    mass matrix (each element gives ``volume / 2^dim`` of its value to each
    corner; ``T`` and ``T^T`` are sums of `Grid.corner_slice` slices) and
    ``D`` the element volumes: `topopt.design.HelmholtzFilter` on
    ``grid.to_mesh()``. On the uniform grid ``Kf = r^2 sum_d (M1 x .. K1_d
    .. x M1) + M1 x .. x M1`` (Kronecker products of 1-D P1 matrices), and
    ``W^-1 K1``, ``W^-1 M1`` share the DCT-I modes (`_eigenvalues_1d`), so
    with ``C`` the unnormalized DCT-I (``C C = 2 n I`` per axis)::

        Kf^-1 b = C (C (W^-1 b) / Lambda) / prod_d (2 n_d),
        Lambda_k = r^2 sum_d lam_kd prod_(d' != d) mu_kd' + prod_d mu_kd,

    two `scipy.fft.dctn` of the node array per solve and no factor stored
    (exact to rounding). Measured (`scripts/benchmarks/benchmark_grid_filters.py`, one
    core): at 48x24x24 elements ``F x`` takes 0.9 ms with no setup, against
    the assembled filter's 50 ms SuperLU solve after a 12 s factorization
    (1.4 GB peak); at 64x32x32, 2 ms against 0.7 s after 63 s (4.1 GB); at
    320x160x160 (8.2 M elements) 0.4-0.5 s and 34 bytes per element.
    ``F^T = T^T Kf^-1 T D^-1``.

    Parameters
    ----------
    grid : Grid
        The elements (2-D or 3-D, side ``grid.h``).
    r : float
        Length scale, > 0 (``helmholtz_radius(rmin)`` matches a density
        filter of radius `rmin`: `from_rmin`). An equivalent radius
        ``2 sqrt(3) r`` larger than the domain warns.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.grid import Grid
    >>> from topopt.grid.filters import GridHelmholtzFilter
    >>> flt = GridHelmholtzFilter.from_rmin(Grid((8, 4, 4), h=0.5), rmin=1.0)
    >>> bool(np.allclose(flt(np.ones(128)), 1.0))
    True
    >>> x, w = np.linspace(0, 1, 128), np.arange(128.0)
    >>> bool(np.allclose(ad.gradient(lambda x: flt(x) @ w, x), flt.transpose(w)))
    True
    """

    def __init__(self, grid: Grid, r: float):
        super().__init__(grid)
        self.r = check_positive("r", r, "Helmholtz filter length scale")
        _warn_grid_radius(self.grid, 2.0 * np.sqrt(3.0) * self.r,
                          f"2 sqrt(3) r (r = {self.r:g})")
        pairs = [_eigenvalues_1d(n, self.grid.h) for n in self.grid.shape]
        self._lam_x, self._mu_x = pairs[0]
        # Lambda[i, rest] = lam_x[i] * A + mu_x[i] * B over the trailing axes:
        # A = r^2 P, B = r^2 Q + P with P = prod mu, Q = sum_d lam_d prod_(others) mu
        p, q = pairs[1][1], pairs[1][0]
        for lam, mu in pairs[2:]:
            p, q = np.multiply.outer(p, mu), np.multiply.outer(q, mu) + np.multiply.outer(p, lam)
        scale = float(np.prod([2.0 * n for n in self.grid.shape]))      # (C C = 2 n I)^dim
        self._a = scale * self.r ** 2 * p
        self._b = scale * (self.r ** 2 * q + p)

    helmholtz_radius = staticmethod(helmholtz_radius)

    @classmethod
    def from_rmin(cls, grid: Grid, rmin: float) -> "GridHelmholtzFilter":
        """The filter of ``r = helmholtz_radius(rmin)`` (Lazarov & Sigmund 2011).

        Examples
        --------
        >>> from topopt.grid import Grid
        >>> from topopt.grid.filters import GridHelmholtzFilter
        >>> round(GridHelmholtzFilter.from_rmin(Grid((4, 4)), 2 * 3 ** 0.5).r, 12)
        1.0
        """
        return cls(grid, helmholtz_radius(rmin))

    def _to_nodes(self, x: np.ndarray) -> np.ndarray:
        """``W^-1 T x`` as a node array (T: volume / 2^dim of each element to each corner)."""
        g = self.grid
        xe = x.reshape(g.shape) * (g.volume / 2 ** g.dim)
        b = np.zeros(g.nodes_shape)
        for q in range(2 ** g.dim):
            b[g.corner_slice(q)] += xe
        for d in range(g.dim):                     # W^-1: end nodes of each axis times 2
            ends = [slice(None)] * g.dim
            for j in (0, -1):
                ends[d] = j
                b[tuple(ends)] *= 2.0
        return b

    def _solve_scaled(self, b: np.ndarray) -> np.ndarray:
        """``Kf^-1 W b`` from ``W^-1``-scaled ``b`` (overwritten): the DCT-I solve."""
        import scipy.fft              # here, as scipy.ndimage: out of `import topopt.grid`
        c = scipy.fft.dctn(b, type=1, overwrite_x=True)
        plane = max(1, _SLAB // max(1, self._a.size))
        for i in range(0, c.shape[0], plane):      # c /= Lambda, in slabs of x-planes
            s = slice(i, i + plane)
            lam = np.multiply.outer(self._lam_x[s], self._a)
            lam += np.multiply.outer(self._mu_x[s], self._b)
            c[s] /= lam
        return scipy.fft.dctn(c, type=1, overwrite_x=True)

    def _to_elements(self, u: np.ndarray, weight: float) -> np.ndarray:
        """``weight * sum`` of each element's corner values (``T^T u`` for volume / 2^dim)."""
        g = self.grid
        out = np.zeros(g.shape)
        for q in range(2 ** g.dim):
            out += u[g.corner_slice(q)]
        out *= weight
        return out.ravel()

    def _apply_forward(self, x: np.ndarray) -> np.ndarray:
        # F x = D^-1 T^T Kf^-1 T x, D = volume * I: the mean of the corner values of Kf^-1 T x
        return self._to_elements(self._solve_scaled(self._to_nodes(x)), 1.0 / 2 ** self.grid.dim)

    def _apply_transpose(self, y: np.ndarray) -> np.ndarray:
        # F^T y = T^T Kf^-1 T D^-1 y (equal to F y: D = volume * I, Kf symmetric)
        g = self.grid
        u = self._solve_scaled(self._to_nodes(y / g.volume))
        return self._to_elements(u, g.volume / 2 ** g.dim)

    def _forward(self, x):
        return _by_parts(self._apply_forward, x)

    def _transpose(self, y):
        return _by_parts(self._apply_transpose, y)
