"""Robust designs by projection: eroded, intermediate and dilated (Wang, Lazarov & Sigmund 2011).

The filtered field ``x_tilde`` projected at three thresholds (`project`,
``eta = 0.75 / 0.5 / 0.25``) gives the eroded, intermediate (blueprint) and
dilated designs, a uniform manufacturing error of the blueprint's edges
(Wang, Lazarov & Sigmund 2011, "On projection methods, convergence and
robust formulations in topology optimization", Struct. Multidisc. Optim.
43, eq. (13)-(15)). The robust problem is the min-max over the three,

    min_x max_k r(x_k)  s.t.  v(x_dilated) <= V*,

written with a bound variable ``z`` appended to the design (Svanberg's
bound formulation; smooth, so MMA takes it):

    min_(x, z) z  s.t.  r(x_k) - z <= 0 (k = eroded, intermediate, dilated).

The volume is constrained on the dilated design, the largest; its limit
``V*`` is updated every few iterations so that the intermediate design
keeps the volume fraction, ``V* = volfrac v(x_dilated) / v(x_intermediate)``
(Wang et al. 2011, Sect. 5). Continuation on ``beta`` and the update
blocks are `robust_stages`; the blueprint of the optimised design has the
minimum length scale of the eroded/dilated pair.

Examples
--------
>>> import numpy as np
>>> from topopt.robust import robust_designs
>>> eroded, blueprint, dilated = robust_designs(np.array([0.3, 0.5, 0.7]), beta=8.0)
>>> bool(np.all(eroded <= blueprint) and np.all(blueprint <= dilated))
True
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .. import ad
from .._validate import (check_array_range, check_callable, check_finite_values, check_int,
                         check_nonempty, check_positive, check_range, check_real_array)
from ..design.interpolation import project
from ..responses.structural import volume
from ..optimize.driver import Result, minimize
from ..optimize.options import Stage

__all__ = ["ETAS", "DESIGNS", "robust_designs", "bound_formulation", "robust_stages",
           "DilatedVolume", "RobustFormulation"]

#: Thresholds of the eroded, intermediate and dilated designs (Wang et al. 2011, Sect. 6).
ETAS = (0.75, 0.5, 0.25)
#: Their names, in the order of `ETAS`.
DESIGNS = ("eroded", "intermediate", "dilated")


def _check_etas(etas) -> tuple:
    etas = tuple(check_range(f"etas[{k}]", e, 0.0, 1.0, lo_open=True, hi_open=True,
                             what="projection threshold") for k, e in enumerate(etas))
    if len(etas) != 3 or not etas[0] > etas[1] > etas[2]:
        raise ValueError(f"etas must be three thresholds eroded > intermediate > dilated, "
                         f"got {etas}")
    return etas


def robust_designs(x_tilde, beta: float, etas: Sequence[float] = ETAS) -> tuple:
    """The eroded, intermediate and dilated designs of a filtered field; differentiable.

    ``x_k = project(x_tilde, beta, eta_k)`` for ``eta = etas`` (Wang et al.
    2011, eq. (13)); the eroded design is the thinnest (largest threshold).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.robust import robust_designs
    >>> x = np.array([0.2, 0.5, 0.8])
    >>> [np.round(d, 3).tolist() for d in robust_designs(x, beta=4.0)]
    [[0.011, 0.133, 0.679], [0.068, 0.5, 0.932], [0.321, 0.867, 0.989]]
    >>> g = ad.gradient(lambda x: sum(np.sum(d) for d in robust_designs(x, 4.0)), x)
    >>> g.shape
    (3,)
    """
    beta = check_positive("beta", beta, "projection sharpness")
    return tuple(project(x_tilde, beta, eta) for eta in _check_etas(etas))


def bound_formulation(z, values: Sequence, constraints: Sequence = ()) -> tuple:
    """``(z, v_1 - z, ..., v_m - z, *constraints)``: min-max as a smooth problem.

    Minimising `z` subject to ``v_k - z <= 0`` minimises ``max_k v_k``
    (the bound formulation); `constraints` (``<= 0``) follow unchanged.

    Examples
    --------
    >>> from topopt.robust import bound_formulation
    >>> [round(v, 6) for v in bound_formulation(0.5, [0.2, 0.7], [-0.1])]
    [0.5, -0.3, 0.2, -0.1]
    """
    if len(values) == 0:
        raise ValueError("bound_formulation needs at least one value to bound")
    for name, v in (("z", z), *((f"values[{k}]", v) for k, v in enumerate(values)),
                    *((f"constraints[{k}]", c) for k, c in enumerate(constraints))):
        check_finite_values(name, v, "the bound formulation needs finite responses")
    return (z, *(v - z for v in values), *constraints)


def robust_stages(betas: Sequence[float], evaluations: int, every: int) -> list:
    """Continuation stages: `evaluations` per ``beta``, in blocks of `every`.

    Each block is a `Stage` with params ``{"beta": beta, "block": index}``:
    the volume limit of `DilatedVolume` is updated at each block's first
    design, and MMA restarts there (fresh asymptotes, as after a ``beta``
    step).

    Examples
    --------
    >>> from topopt.robust import robust_stages
    >>> [(s.maxeval, s.params) for s in robust_stages([1, 2], 40, 20)][1:3]
    [(20, {'beta': 1.0, 'block': 1}), (20, {'beta': 2.0, 'block': 2})]
    """
    evaluations = check_int("evaluations", evaluations, 1, what="evaluations per beta")
    every = check_int("every", every, 1, what="evaluations between volume updates")
    if not len(betas):
        raise ValueError("betas must name at least one projection sharpness")
    stages = []
    for i, beta in enumerate(betas):
        beta = check_positive(f"betas[{i}]", beta, "projection sharpness")
        left = evaluations
        while left > 0:
            stages.append(Stage(min(every, left), {"beta": beta, "block": len(stages)}))
            left -= every
    return stages


class DilatedVolume:
    """The volume constraint on the dilated design, its limit following the intermediate one.

    ``v(x_dilated) / V* - 1 <= 0`` with ``V* = volfrac v(x_dilated) /
    v(x_intermediate)`` taken at the first design of each block (Wang et
    al. 2011, Sect. 5): within a block ``V*`` is a constant (not
    differentiated); between blocks it moves so that the intermediate
    design keeps `volfrac`. `limits` records ``(block, V*)``.

    ``V*`` is at least ``(1 - max_cut) v(x_dilated)``: a block starts at
    most `max_cut` (relative) outside the constraint, and the intermediate
    volume reaches `volfrac` over a few blocks. Without the floor the
    robust inverter (40 x 80, beta = 1) began its second block 14 % above
    the new limit, and NLopt's MMA, restoring feasibility, raised ``z`` to
    its bound and emptied the design (``u_out = 0``) for the whole block;
    with it (and conservative MMA steps) 0 of 200 evaluations did so at 40
    evaluations per beta, 5 of 182 without.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.robust import DilatedVolume
    >>> g = DilatedVolume(0.3)
    >>> round(float(g(np.full(4, 0.4), np.full(4, 0.3), block=0)), 6)   # V* = 0.4
    0.0
    >>> round(float(g(np.full(4, 0.5), np.full(4, 0.3), block=0)), 6)   # same block
    0.25
    """

    def __init__(self, volfrac: float, weights=None, max_cut: float = 0.02):
        self.volfrac = check_range("volfrac", volfrac, 0.0, 1.0, lo_open=True, hi_open=True)
        self.max_cut = check_range("max_cut", max_cut, 0.0, 1.0, hi_open=True,
                                   what="largest relative cut of the dilated volume per block")
        if weights is not None:
            check_nonempty("weights", weights, "one volume per element")
            check_array_range("weights", weights, 0.0, None, what="element volumes")
        self.weights = weights
        self.block = None
        self.limit = None
        self.limits: list = []

    def __call__(self, x_dilated, x_intermediate, block):
        v_dil = volume(x_dilated, self.weights)
        if block is None or block != self.block:
            v_int = float(ad.value(volume(x_intermediate, self.weights)))
            if not v_int > 0:
                raise ValueError("the intermediate design is empty: its volume is 0")
            v = float(ad.value(v_dil))
            self.limit = max(self.volfrac * v / v_int, (1.0 - self.max_cut) * v)
            self.block = block
            self.limits.append((block, self.limit))
        return v_dil / self.limit - 1.0


class RobustFormulation:
    """``min z`` s.t. ``r(x_k) <= z`` over the eroded/intermediate/dilated designs.

    Parameters
    ----------
    x_tilde : callable
        ``x -> x_tilde``: the design variables to the filtered field in [0, 1]
        (differentiable; e.g. ``problem.x_phys`` without ``beta``).
    response : callable
        ``x_k -> value`` or ``x_k -> (value, g_1, ...)``: the (scaled)
        response to bound and constraints ``g <= 0`` of one projected design.
    volfrac : float in (0, 1)
        Volume fraction of the intermediate design (`DilatedVolume`).
    weights : array, optional
        Element volumes.
    etas : three floats
        Thresholds, `ETAS` by default.
    z_bounds : (float, float)
        Bounds of the bound variable: the range of the scaled responses.
    max_cut : float in [0, 1)
        Of `DilatedVolume`.
        Examples
    --------
    >>> import numpy as np
    >>> from topopt.robust import RobustFormulation
    >>> robust = RobustFormulation(lambda x: x, lambda xk: np.sum(xk), volfrac=0.5)
    >>> values = robust(np.array([0.2, 0.8, 3.0]), beta=1.0, block=0)
    >>> len(values), round(float(values[0]), 3)     # z, three bounds, the volume
    (5, 3.0)
    """

    def __init__(self, x_tilde: Callable, response: Callable, volfrac: float, weights=None,
                 etas: Sequence[float] = ETAS, z_bounds: tuple = (-1.0, 1.0),
                 max_cut: float = 0.02):
        self.x_tilde = check_callable("x_tilde", x_tilde)
        self.response = check_callable("response", response)
        self.etas = _check_etas(etas)
        if isinstance(z_bounds, str) or np.ndim(z_bounds) != 1 or len(z_bounds) != 2:
            raise ValueError(f"z_bounds must be (lower, upper), got {z_bounds!r}")
        lo, hi = (check_range("z_bounds", z, what="bound of z") for z in z_bounds)
        if not lo < hi:
            raise ValueError(f"z_bounds must be (lower, upper) with lower < upper, got {z_bounds}")
        self.z_bounds = (lo, hi)
        self.volume = DilatedVolume(volfrac, weights, max_cut)

    def designs(self, x, beta: float) -> tuple:
        """The three projected designs of the design variables `x` (without ``z``)."""
        return robust_designs(self.x_tilde(x), beta, self.etas)

    def parts(self, x, beta: float) -> tuple:
        """``([r(x_k)], [constraints of each x_k], designs)``; differentiable."""
        designs = self.designs(x, beta)
        values, constraints = [], []
        for x_k in designs:
            out = self.response(x_k)
            out = out if isinstance(out, tuple) else (out,)
            values.append(out[0])
            constraints.extend(out[1:])
        return values, constraints, designs

    def __call__(self, xz, beta: float, block=None) -> tuple:
        """``(z, r_e - z, r_i - z, r_d - z, v_d / V* - 1, constraints...)`` for MMA.

        The constraints of `response` follow, design by design.
        """
        x, z = xz[:-1], xz[-1]
        values, constraints, (_, x_int, x_dil) = self.parts(x, beta)
        return bound_formulation(z, values, [self.volume(x_dil, x_int, block), *constraints])

    def start(self, x0, beta: float) -> np.ndarray:
        """``[x0, z0]`` with ``z0 = max_k r(x0_k)`` (clipped into `z_bounds`)."""
        x0 = check_real_array("x0", x0, allow_bool=True)
        values, _, _ = self.parts(x0, beta)
        z0 = float(np.clip(max(float(ad.value(v)) for v in values), *self.z_bounds))
        return np.append(x0, z0)

    def minimize(self, x0, stages: Sequence[Stage], **options) -> Result:
        """`topopt.optimize.minimize` of the bound formulation from ``[x0, z0]``.

        `options` go to `minimize` (``mma_params``, ``checkpoint``, ...);
        the result's ``x`` ends with ``z``.
        """
        if not stages:
            raise ValueError("stages must be given: robust_stages(betas, evaluations, every)")
        xz0 = self.start(x0, stages[0].params["beta"])
        n = xz0.size - 1
        lb = np.append(np.zeros(n), self.z_bounds[0])
        ub = np.append(np.ones(n), self.z_bounds[1])
        return minimize(self, xz0, bounds=(lb, ub), stages=stages, **options)
