"""Minimum compliance of a self-supporting design: the overhang filter in the density chain.

``x -> x_tilde = F x -> xi = AM(x_tilde) / peak -> x_phys`` (projection if a
stage sets ``beta``) ``-> E = simp(x_phys)``: Langelaar's additive-manufacturing
filter (2017, Struct. Multidisc. Optim. 55:871; 2016, Addit. Manuf. 12:60;
`topopt.design.overhang`) between the density filter and the projection, so
that compliance and volume see the printed densities, which no element
overhangs by more than 45 degrees from the build direction. The printed
densities exceed 1 by at most ``sqrt(eps) / 2`` (the smooth minimum's
overshoot); they are divided by that bound, ``peak = 1 + sqrt(eps) / 2``, to
stay in SIMP's [0, 1].
"""

from __future__ import annotations

import numpy as np

from .. import fem
from .._validate import check_bool
from ..design.overhang import OverhangFilter
from ..design.passive import Passive
from .compliance import ComplianceProblem

__all__ = ["PrintableCompliance"]


class PrintableCompliance(ComplianceProblem):
    """Minimum compliance subject to a volume fraction, printable in `direction`.

    Parameters
    ----------
    model : topopt.fem.Model or topopt.grid.GridModel
        On a structured mesh of equal squares or cubes (`topopt.fem.rectangle`,
        `topopt.fem.box`) or a `topopt.grid.Grid`.
    f, volfrac, rmin, penal, filter, Emin, solver, eta, solver_options, passive
        As `ComplianceProblem`.
    direction : str
        Build direction, ``"+y"`` (from the plate at ``y = 0`` up) by default;
        one of `topopt.design.overhang.BUILD_DIRECTIONS` (z in 3-D only).
    overhang : dict, optional
        Options of the filter (``p``, ``eps``, ``xi0``: `topopt.design.overhang.overhang`).
    filtered : bool
        False leaves the filter out of the chain (the plain `ComplianceProblem`,
        for contrast) and still counts the violations along `direction`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.printable import PrintableCompliance
    >>> model = fem.elasticity(fem.rectangle(6, 3)).fix(nodes=lambda x: x[0] == 0)
    >>> f = model.point_load((6, 0), (0, -1))
    >>> p = PrintableCompliance(model, f, volfrac=0.5, rmin=1.5, direction="+y")
    >>> x_phys = p.x_phys(np.full(18, 0.5))
    >>> bool(x_phys.min() > 0.49 and x_phys.max() < 0.51)
    True
    >>> floating = np.zeros((6, 3)); floating[2, 2] = 1.0     # element (i, j) is 3 i + j
    >>> p.violations(np.eye(6, 3).ravel()), p.violations(floating.ravel())
    (0, 1)
    """

    objective_name = "compliance"
    #: `minimize`'s conservative MMA (inner iterations): classic MMA (one solve per
    #: step) lets the layer-by-layer coupling of the filter empty the design.
    mma_defaults: dict = {}

    def __init__(self, model: fem.Model, f, volfrac: float, rmin: float, penal: float = 3.0,
                 filter: str = "density", Emin: float = 1e-9, solver: str = "auto",
                 eta: float = 0.5, solver_options: dict | None = None,
                 passive: Passive | None = None, direction: str = "+y",
                 overhang: dict | None = None, filtered: bool = True):
        # the overhang filter first: the base's volume checks of the filtered zero
        # design already go through `printed`
        self.overhang = OverhangFilter(model.mesh, direction, **(overhang or {}))
        self.direction, self.filtered_chain = direction, check_bool("filtered", filtered)
        super().__init__(model, f, volfrac, rmin, penal=penal, filter=filter, Emin=Emin,
                         solver=solver, eta=eta, solver_options=solver_options,
                         passive=passive)

    def printed(self, x_tilde):
        """``AM(x_tilde) / peak``: the printed densities, in [0, 1]; differentiable."""
        if not self.filtered_chain:
            return x_tilde
        return self.overhang(x_tilde) / self.overhang.peak

    def violations(self, x_phys, threshold: float = 0.5) -> int:
        """The solid elements of `x_phys` (``>= threshold``) with no solid support below
        (`topopt.design.overhang.overhang_violations`)."""
        return self.overhang.violations(x_phys, threshold)

    def final(self, x_phys):
        """`ComplianceProblem.final`'s metrics, the build direction and ``overhang_violations``
        of the printed design (thresholded at 0.5; 0 when it is self-supporting)."""
        metrics, u = super().final(x_phys)
        return metrics | {"direction": self.direction, "overhang_filter": self.filtered_chain,
                          "overhang_violations": self.violations(np.asarray(x_phys))}, u
