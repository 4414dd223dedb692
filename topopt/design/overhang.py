"""The additive-manufacturing overhang filter of Langelaar (2016, 2017) and its adjoint.

The printed density ``xi`` of an element is the smooth minimum of its
blueprint density ``x`` and the smooth maximum ``Xi`` of the printed
densities of the elements that support it in the layer below (Langelaar
2017, Struct. Multidisc. Optim. 55:871, eqs. (1)-(5); in 3-D Langelaar 2016,
Addit. Manuf. 12:60, eqs. (1)-(3)). The build runs layer by layer in the
build direction (``"+y"``: from ``y = 0`` up), each layer after the one below:

* ``Sigma = sum_k (s_k + Delta)^P`` with ``s_k = sum_j w_kj xi_j`` the
  supports (the 3 elements below in 2-D, the 5 below in 3-D at 45 degrees;
  ``w`` the identity rows), ``Xi = Sigma^(1/Q) - Delta_b`` (eq. (3): smax),
  ``Q = P + ln N / ln xi_0`` so that ``N`` supports at ``xi_0`` give ``xi_0``;
* ``xi = (x + Xi - sqrt((x - Xi)^2 + eps) + sqrt(eps)) / 2`` (eq. (4): smin);

with the shift ``Delta = 100 realmin^(1/P)`` and back shift ``Delta_b =
0.95 N^(1/Q) Delta^(P/Q)`` of the paper's code. The layer under the first is
the build plate (solid, ``base = 1``) and a void margin lies beside the domain.

The adjoint is the paper's backward sweep (Langelaar 2017, eqs. (7)-(10)):
from the last layer down, ``lambda = ybar + (carried from above)``, ``xbar =
lambda dxi/dx`` and ``lambda dxi/dXi`` passed through the smooth maximum to
the supports below. The forward rule is the tangent sweep from the plate up.
Both sweeps are numpy code that the tape records when its inputs are traced,
so second derivatives (`ad.hvp`, gradient of a gradient) follow.

Supported grids: ``fem.rectangle`` / ``fem.box`` meshes of equal square or
cubic elements (any side ``h``: the 45-degree stencil depends only on the
aspect ratio) and `topopt.grid.Grid` grids, through `OverhangFilter`; the
primitive `overhang` works on the density array ``(nx, ny[, nz])`` itself.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .. import ad
from .._validate import check_choice, check_keywords, check_range, check_real_array

__all__ = ["overhang", "OverhangFilter", "overhang_violations", "overhang_support",
           "BUILD_DIRECTIONS"]

#: The build directions: the axis and its sense, ``"+y"`` builds from ``y = 0`` upward.
BUILD_DIRECTIONS = ("+x", "-x", "+y", "-y", "+z", "-z")


def overhang_support(ndim: int) -> np.ndarray:
    """The 45-degree supports of an element: weights ``w`` over the layer below.

    Row ``k`` is the support ``s_k = sum_j w_kj xi_j`` of the ``3`` (2-D) or
    ``3 x 3`` (3-D) elements below it, centre in the middle: the identity rows
    of the element straight below and of its face neighbours (3 in 2-D,
    Langelaar 2017 Fig. 2; 5 in 3-D, Langelaar 2016 Fig. 3; the diagonal ones
    of 3-D lie at 54.7 degrees, outside the 45-degree cone).

    Examples
    --------
    >>> from topopt.design.overhang import overhang_support
    >>> overhang_support(2)
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])
    >>> overhang_support(3).shape, overhang_support(3).sum(axis=0).tolist()
    ((5, 3, 3), [[0.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]])
    """
    if ndim == 2:
        return np.eye(3)
    if ndim != 3:
        raise ValueError(f"ndim must be 2 or 3, got {ndim!r}")
    w = np.zeros((5, 3, 3))
    for k, (a, b) in enumerate([(1, 1), (0, 1), (2, 1), (1, 0), (1, 2)]):
        w[k, a, b] = 1.0
    return w


@dataclass(frozen=True)
class _Plan:
    """What a sweep needs: the build axis and sense, the stencil and the constants."""
    axis: int
    sign: int
    w: np.ndarray          # (m, 3**(d-1)) support weights over the shifts of the layer below
    P: float
    Q: float
    eps: float
    shift: float           # Delta
    back: float            # Delta_b
    base: np.ndarray       # (lateral + 2) printed densities under the first layer


def _plan(shape, direction, p, eps, xi0, support, base) -> _Plan:
    """Check the options of `overhang` for a field of `shape`; the sweep's constants."""
    d = len(shape)
    check_choice("direction", direction, BUILD_DIRECTIONS[:2 * d])
    axis, sign = "xyz".index(direction[1]), (1 if direction[0] == "+" else -1)
    P = check_range("p", p, 1.0, None, lo_open=True, what="smooth-maximum exponent")
    eps = check_range("eps", eps, 0.0, None, lo_open=True, what="smooth-minimum parameter")
    xi0 = check_range("xi0", xi0, 0.0, 1.0, lo_open=True, hi_open=True,
                      what="density of exact smooth maximum")
    w, N = (overhang_support(d), None) if support is None else _support(support, d)
    N = w.shape[0] if N is None else N
    Q = P + np.log(N) / np.log(xi0)                          # eq. (3): smax(xi0, ...) = xi0
    if not Q > 0:
        raise ValueError(f"p = {P:g} is too small for N = {N:g} supports at xi0 = {xi0:g}: "
                         f"Q = p + ln N / ln xi0 = {Q:g} must be > 0")
    shift = 100.0 * np.finfo(float).tiny ** (1.0 / P)
    back = 0.95 * N ** (1.0 / Q) * shift ** (P / Q)
    lateral = tuple(n + 2 for i, n in enumerate(shape) if i != axis)
    return _Plan(axis, sign, w.reshape(w.shape[0], -1), P, Q, eps, shift, back,
                 _base(base, lateral))


def _support(support, d) -> tuple:
    """``(w, N)`` of a `support` option ``(weights, N)``, checked."""
    if not (isinstance(support, tuple) and len(support) == 2):
        raise TypeError("support must be a tuple (weights, N) or None")
    w = np.asarray(support[0], dtype=float)
    if w.ndim != d or w.shape[1:] != (3,) * (d - 1) or w.shape[0] < 1 \
            or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"support weights must be a non-negative array of shape (m, "
                         f"{', '.join(['3'] * (d - 1))}) with m >= 1, got shape {w.shape}")
    return w, check_range("support N", support[1], 1.0, None, what="supports in Q")


def _base(base, lateral) -> np.ndarray:
    """The build plate: a scalar density or an array of the layer's shape plus 2 per axis."""
    if np.ndim(base) == 0:
        return np.full(lateral, check_range("base", base, 0.0, None))
    arr = check_real_array("base", base, allow_bool=True)
    if arr.shape != lateral or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"base must be a density >= 0 or a finite array of shape "
                         f"{lateral} (the layer and one element beyond each side), "
                         f"got shape {arr.shape}")
    return arr


def _check_field(x) -> tuple:
    """The shape of a 2-D or 3-D real field `x` without NaN (traced values looked through)."""
    v = np.asarray(ad.value(x))
    if v.dtype.kind not in "iuf" or v.ndim not in (2, 3) or min(v.shape) < 1:
        raise ValueError(f"x must be a real 2-D or 3-D array of densities (axes x, y[, z]), "
                         f"got dtype {v.dtype} and shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("x contains NaN or inf")
    return v.shape


# ------------------------------------------------------------- the sweeps

def _layers(a, plan: _Plan) -> list:
    """The layers of `a` in build order (traced values stay traced)."""
    a = np.moveaxis(a, plan.axis, 0)
    n = np.shape(a)[0]
    return [a[i] for i in (range(n) if plan.sign > 0 else range(n - 1, -1, -1))]


def _unlayers(layers: list, plan: _Plan):
    """The field of `layers` (in build order): the inverse of `_layers`."""
    a = np.stack(layers if plan.sign > 0 else layers[::-1])
    return np.moveaxis(a, 0, plan.axis)


def _shifts(below) -> list:
    """The ``3**(d-1)`` shifted views of the padded layer `below` onto the layer above."""
    lat = tuple(n - 2 for n in np.shape(below))
    return [below[tuple(slice(o, o + n) for o, n in zip(off, lat))]
            for off in itertools.product(range(3), repeat=len(lat))]


def _supports(below, plan: _Plan):
    """``s_k = sum_j w_kj xi_j`` for every element of the layer above, shape ``(m, *lat)``."""
    return np.tensordot(plan.w, np.stack(_shifts(below)), axes=1)


def _pad(layer, value=0.0):
    """`layer` with one element of `value` (void) beside it on each lateral axis."""
    for ax in range(np.ndim(layer)):
        shape = list(np.shape(layer))
        shape[ax] = 1
        edge = np.full(shape, value)
        layer = np.concatenate([edge, layer, edge], axis=ax)
    return layer


def _place(blocks: list):
    """``sum_j`` of the shifted blocks put back on the padded layer: the transpose of
    `_shifts` (the lateral margins dropped: void beside the domain has no derivative)."""
    lat = np.shape(blocks[0])
    total = 0.0
    for off, blk in zip(itertools.product(range(3), repeat=len(lat)), blocks):
        for ax, o in enumerate(off):          # pad with zeros to offset o of 0, 1, 2
            before, after = list(np.shape(blk)), list(np.shape(blk))
            before[ax], after[ax] = o, 2 - o
            blk = np.concatenate([np.zeros(before), blk, np.zeros(after)], axis=ax)
        total = total + blk
    return total[tuple(slice(1, -1) for _ in lat)]


def _forward_sweep(x, plan: _Plan):
    """``(xi, residuals)``: the printed field layer by layer from the plate (eqs. (3)-(4))."""
    below, out, res = plan.base, [], []
    for layer in _layers(x, plan):
        s = _supports(below, plan)
        sigma = np.sum((s + plan.shift) ** plan.P, axis=0)
        Xi = sigma ** (1.0 / plan.Q) - plan.back                 # eq. (3): smooth maximum
        r = layer - Xi
        root = np.sqrt(r * r + plan.eps)
        xi = 0.5 * (layer + Xi - root + np.sqrt(plan.eps))      # eq. (4): smooth minimum
        out.append(xi)
        res.append((s, sigma, r / root))
        below = _pad(xi)
    return _unlayers(out, plan), res


def _backward_sweep(res, ybar, plan: _Plan):
    """``xbar``: the adjoint sweep from the last layer down (Langelaar 2017, eqs. (7)-(10))."""
    xbar, carry = [], 0.0
    for (s, sigma, t), yb in zip(res[::-1], _layers(ybar, plan)[::-1]):
        lam = yb + carry                                         # eq. (8): lambda of the layer
        xbar.append(0.5 * lam * (1.0 - t))                       # d smin / d x
        dsigma = 0.5 * lam * (1.0 + t) * sigma ** (1.0 / plan.Q - 1.0) / plan.Q
        sbar = plan.P * dsigma * (s + plan.shift) ** (plan.P - 1.0)    # d smax / d s_k
        carry = _place(list(np.tensordot(plan.w.T, sbar, axes=1)))
    return _unlayers(xbar[::-1], plan)


def _tangent_sweep(res, xdot, plan: _Plan):
    """``xi_dot``: the tangent sweep from the plate up (the plate is fixed)."""
    out, below = [], None
    for (s, sigma, t), xd in zip(res, _layers(xdot, plan)):
        Xi_dot = 0.0
        if below is not None:
            s_dot = _supports(below, plan)
            sig_dot = np.sum(plan.P * (s + plan.shift) ** (plan.P - 1.0) * s_dot, axis=0)
            Xi_dot = sigma ** (1.0 / plan.Q - 1.0) / plan.Q * sig_dot
        xi_dot = 0.5 * (1.0 - t) * xd + 0.5 * (1.0 + t) * Xi_dot
        out.append(xi_dot)
        below = _pad(xi_dot)
    return _unlayers(out, plan)


# ------------------------------------------------------------- the primitive

@ad.primitive
def overhang(x, direction: str = "+y", *, p: float = 40.0, eps: float = 1e-4,
             xi0: float = 0.5, support: tuple | None = None, base=1.0) -> np.ndarray:
    """The printed densities of the blueprint `x`: Langelaar's overhang filter.

    Parameters
    ----------
    x : (nx, ny) or (nx, ny, nz) array
        Blueprint densities on a grid of equal square or cubic elements, axis
        ``i`` along coordinate ``i``. Differentiated (every mode).
    direction : {"+x", "-x", "+y", "-y", "+z", "-z"}
        Build direction (z in 3-D only): ``"+y"`` prints from the plate at
        ``y = 0`` upward, ``"-y"`` from ``y = ny`` downward.
    p : float > 1
        Exponent ``P`` of the smooth maximum (the paper's 40).
    eps : float > 0
        Smoothing ``epsilon`` of the smooth minimum (the paper's 1e-4).
    xi0 : float in (0, 1)
        The density the smooth maximum of ``N`` equal supports returns exactly.
    support : tuple (weights, N), optional
        Other supports than the 45-degree ones of `overhang_support`: weights
        of shape ``(m, 3)`` (2-D) or ``(m, 3, 3)`` (3-D) over the layer below
        and the ``N`` of ``Q`` (by default ``m``).
    base : float >= 0 or array
        Printed density of the layer under the first (the build plate, 1), or
        an array of the layer's shape plus 2 along each lateral axis.

    Returns
    -------
    numpy.ndarray
        The printed densities ``xi``, the shape of `x`: in ``[0, 1 + sqrt(eps)
        / 2]`` for `x` in [0, 1] (the smooth minimum's overshoot).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.design.overhang import overhang
    >>> x = np.zeros((3, 3)); x[1, 2] = 1.0              # a floating element
    >>> bool(overhang(x, "+y")[1, 2] < 0.01)             # is removed
    True
    >>> bool(overhang(x, "-y")[1, 2] > 0.99)             # lies on the plate at y = 3
    True
    >>> report = ad.check_modes(lambda x: overhang(x, "+x"), np.full((3, 2), 0.6))
    >>> max(report.values()) < 1e-6
    True
    """
    plan = _plan(_check_field(x), direction, p, eps, xi0, support, base)
    return _forward_sweep(check_real_array("x", x, allow_bool=True), plan)[0]


@ad.rrule(overhang)
def overhang_rrule(x, direction="+y", *, p=40.0, eps=1e-4, xi0=0.5, support=None, base=1.0):
    plan = _plan(_check_field(x), direction, p, eps, xi0, support, base)
    xi, res = _forward_sweep(x, plan)

    def overhang_pullback(ybar):
        return (_backward_sweep(res, ybar, plan),)
    return xi, overhang_pullback


@ad.frule(overhang)
def overhang_frule(primals, tangents, *, p=40.0, eps=1e-4, xi0=0.5, support=None, base=1.0):
    x, direction = (tuple(primals) + ("+y",))[:2]
    plan = _plan(_check_field(x), direction, p, eps, xi0, support, base)
    xi, res = _forward_sweep(x, plan)
    xdot = tangents[0]
    return xi, None if xdot is None else _tangent_sweep(res, xdot, plan)


def overhang_violations(x, direction: str = "+y", threshold: float = 0.5) -> int:
    """The solid elements of `x` (``x >= threshold``) that no solid element supports.

    The 45-degree rule of Langelaar (2017, 2016): an element of a layer is
    printable when one of its supports in the layer below (`overhang_support`:
    the element straight below and its face neighbours) is solid; the first
    layer lies on the build plate.

    Parameters
    ----------
    x : (nx, ny) or (nx, ny, nz) array
        Densities (a printed design), plain values.
    direction : str
        Build direction (`BUILD_DIRECTIONS`).
    threshold : float in (0, 1)
        Densities at or above it are solid.

    Returns
    -------
    int
        The number of unsupported solid elements.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.design.overhang import overhang_violations
    >>> x = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    >>> overhang_violations(x, "+y"), overhang_violations(x, "+x")
    (1, 3)
    """
    shape = _check_field(x)
    if ad.is_traced(x):
        raise TypeError("x is not differentiated here: pass plain values")
    threshold = check_range("threshold", threshold, 0.0, 1.0, lo_open=True, hi_open=True)
    plan = _plan(shape, direction, 40.0, 1e-4, 0.5, None, 1.0)
    solid = [np.asarray(layer) >= threshold for layer in _layers(np.asarray(x), plan)]
    count = 0
    for below, layer in zip(solid[:-1], solid[1:]):
        held = _supports(_pad(below.astype(float)), plan).max(axis=0) > 0.5
        count += int(np.sum(layer & ~held))
    return count


# ------------------------------------------------------------- on meshes and grids

class OverhangFilter:
    """The overhang filter of element vectors on a structured mesh or grid.

    Parameters
    ----------
    mesh : skfem.MeshQuad, skfem.MeshHex or topopt.grid.Grid
        A tensor grid of equal square or cubic elements (`topopt.fem.rectangle`,
        `topopt.fem.box`, any side ``h``); a `Grid` numbers its elements in C
        order. Other meshes raise ``ValueError``.
    direction : str
        Build direction (`BUILD_DIRECTIONS`; z in 3-D only).
    **options
        ``p``, ``eps``, ``xi0``, ``support``, ``base`` of `overhang`.

    Attributes
    ----------
    shape : tuple
        Elements per axis; ``cell[e]`` is element ``e``'s index in the C-ordered grid.
    peak : float
        ``1 + sqrt(eps) / 2``, the largest printed density of a blueprint in
        [0, 1]: ``flt(x) / flt.peak`` lies in [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad, fem
    >>> from topopt.design.overhang import OverhangFilter
    >>> flt = OverhangFilter(fem.rectangle(4, 3), "+y")
    >>> x = np.full(12, 0.5)
    >>> print(np.round(flt(x).reshape(4, 3), 3))
    [[0.505 0.5   0.497]
     [0.505 0.502 0.501]
     [0.505 0.502 0.501]
     [0.505 0.5   0.497]]
    >>> g = ad.gradient(lambda x: np.sum(flt(x)), x)
    >>> g.shape, flt.violations(np.eye(4, 3).ravel())
    ((12,), 0)
    """

    def __init__(self, mesh, direction: str = "+y", **options):
        check_keywords("OverhangFilter", options, ("p", "eps", "xi0", "support", "base"))
        self.shape, self.cell = _grid_cells(mesh)
        self.direction, self.options = direction, options
        _plan(self.shape, direction, **{"p": 40.0, "eps": 1e-4, "xi0": 0.5, "support": None,
                                       "base": 1.0, **options})       # checked now
        self.order = np.argsort(self.cell)        # grid cell -> element
        self.peak = 1.0 + 0.5 * np.sqrt(options.get("eps", 1e-4))
        self.n = len(self.cell)

    def _check(self, x):
        if np.shape(x) != (self.n,):
            raise ValueError(f"x has shape {np.shape(x)}: expected ({self.n},), one value "
                             "per element")
        return x

    def field(self, x):
        """The element vector `x` as the grid array of shape `shape` (differentiable)."""
        return np.reshape(self._check(x)[self.order], self.shape)

    def __call__(self, x):
        """Printed densities of the element vector `x` (differentiable, every mode)."""
        xi = overhang(self.field(x), self.direction, **self.options)
        return np.reshape(xi, (-1,))[self.cell]

    def violations(self, x, threshold: float = 0.5) -> int:
        """`overhang_violations` of the element vector `x` (plain values)."""
        x = check_real_array("x", x, allow_bool=True)
        return overhang_violations(self.field(x), self.direction, threshold)


def _grid_cells(mesh) -> tuple:
    """``(shape, cell)`` of a tensor mesh of equal squares/cubes or of a `Grid`."""
    if not hasattr(mesh, "t") and isinstance(getattr(mesh, "shape", None), tuple) \
            and hasattr(mesh, "h"):
        n = int(np.prod(mesh.shape))
        return tuple(mesh.shape), np.arange(n)             # topopt.grid.Grid: C order
    t, pts = getattr(mesh, "t", None), getattr(mesh, "p", None)
    if t is None or pts is None or (pts.shape[0], t.shape[0]) not in ((2, 4), (3, 8)):
        raise ValueError("mesh must be a structured quadrilateral or hexahedral mesh "
                         "(fem.rectangle, fem.box) or a topopt.grid.Grid")
    lo, hi = pts[:, t].min(axis=1), pts[:, t].max(axis=1)      # (dim, n_el) element boxes
    side = hi - lo
    h = float(side[0, 0])
    if not np.allclose(side, h, rtol=1e-9, atol=0.0):
        raise ValueError("mesh must have equal square or cubic elements (the 45-degree "
                         "supports are the neighbours below): its element sides differ")
    ijk = (lo - lo.min(axis=1, keepdims=True)) / h
    idx = np.rint(ijk).astype(np.int64)
    shape = tuple(int(n) for n in idx.max(axis=1) + 1)
    if not np.allclose(ijk, idx, atol=1e-6) or int(np.prod(shape)) != t.shape[1]:
        raise ValueError("mesh must be a full tensor grid of elements (fem.rectangle, "
                         "fem.box): its elements do not fill a box of equal cells")
    cell = np.ravel_multi_index(tuple(idx), shape)
    if len(np.unique(cell)) != t.shape[1]:
        raise ValueError("mesh has overlapping elements")
    return shape, cell
