"""Self-weight: minimum compliance under a design-dependent body force.

Bruyneel & Duysinx (2005): the load is the sum of fixed loads and the weight
of the material, ``f(x) = f_fixed + sum_e x_phys_e f_e`` with ``f_e`` element
``e``'s consistent load ``int_e N^T (rho g) dV`` of a solid element (computed
once by scikit-fem, like the element stiffness). The compliance ``c = f(x)^T
u`` with ``u = K(E(x_phys))^{-1} f(x)`` then has the gradient

    dc/dx_e = 2 u_e^T f_e - E'(x_e) u_e^T K_e u_e        (B & D 2005, eq. (9))

which the AD chain gives on its own: the load is the linear map `BodyLoad`
(a primitive with its rules) and `topopt.fem.solve` differentiates its
right-hand side. The first term has no sign, so the compliance is not
monotonic in the design and the volume constraint may end inactive.

Interpolation: with SIMP the load-to-stiffness ratio of an element,
``x / E(x) ~ x^(1 - p)``, is unbounded as ``x -> 0`` (until ``Emin``): light
grey elements sag under their own weight (the parasitic effect). RAMP
(Stolpe & Svanberg 2001) keeps it bounded, ``x / E(x) <= (1 + q) / E0``
(`load_ratio`), so RAMP is the default here.
"""

from __future__ import annotations

import numpy as np

from .. import fem
from .._validate import check_choice, check_load, check_range, check_real_array
from ..fem.models import _check_model
from ..design.interpolation import ramp, simp
from ..responses.loads import BodyLoad, _gravity
from ..responses.structural import compliance, volume
from ..design.passive import Passive
from .base import DensityProblem, StartScaled

__all__ = ["SelfWeightProblem", "load_ratio", "save_load_ratio",
           "INTERPOLATIONS"]

INTERPOLATIONS = ("ramp", "simp")


def load_ratio(x, interpolation: str = "ramp", penal: float = 3.0, q: float = 8.0,
               Emin: float = 1e-9):
    """Load-to-stiffness ratio ``x / E(x)`` of an element (``E0 = 1``).

    Self-weight scales with ``x`` and stiffness with ``E(x)``: SIMP gives
    ``x^(1 - p)`` (unbounded as ``x -> 0`` up to ``1 / Emin``), RAMP at most
    ``1 + q``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.formulations.selfweight import load_ratio
    >>> x = np.array([1e-3, 0.5, 1.0])
    >>> np.round(load_ratio(x, "ramp", q=8.0, Emin=0.0), 3)
    array([8.992, 5.   , 1.   ])
    >>> np.round(load_ratio(x, "simp", penal=3.0, Emin=0.0), 3)
    array([1.e+06, 4.e+00, 1.e+00])
    """
    check_choice("interpolation", interpolation, INTERPOLATIONS)
    check_range("penal", penal, 1.0, what="SIMP exponent")
    check_range("q", q, 0.0, what="RAMP penalization")
    x = check_real_array("x", x, allow_bool=True)
    if Emin == 0 and np.any(x == 0):
        raise ValueError("x must be > 0 where Emin = 0: the ratio x / E(x) is 0 / 0 at x = 0")
    E = simp(x, penal, Emin) if interpolation == "simp" else ramp(x, q, Emin)
    return x / E


class SelfWeightProblem(StartScaled, DensityProblem):
    """Minimum compliance under fixed loads and self-weight, subject to a volume fraction.

    The chain of `topopt.formulations.base.DensityProblem` (filter, optional
    projection, MMA) with ``E = ramp(x_phys, q)`` (or ``simp``) and the load
    ``f(x) = f + BodyLoad(x_phys)``.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity model with its supports.
    f : (ndof,) array
        Fixed (design-independent) loads; may be zero.
    gravity : (dim,) array_like
        ``rho g`` of solid material (``(0, -gamma)``).
    volfrac : float in (0, 1)
        Upper bound of the volume fraction.
    rmin : float > 0
        Filter radius (see `ComplianceProblem`).
    interpolation : {"ramp", "simp"}
    q : float >= 0
        RAMP penalization.
    penal : float >= 1
        SIMP exponent (``interpolation="simp"``).
    filter, Emin, solver, eta, solver_options, passive
        As in `topopt.formulations.ComplianceProblem`: with `passive` MMA sees the
        ``n = passive.n_free`` free variables, ``x_phys`` (and so the weight
        ``f(x)``) holds the fixed values and the result's ``x`` is the full
        element vector.

    Examples
    --------
    A 6 x 2 cantilever under its own weight (beam theory: ``q^2 L^5 / (20 E I)``):

    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.selfweight import SelfWeightProblem
    >>> model = fem.elasticity(fem.rectangle(6, 2)).fix(nodes=lambda x: x[0] == 0)
    >>> p = SelfWeightProblem(model, np.zeros(model.ndof), (0.0, -1.0), 0.5, 1.5)
    >>> parts = p.compliance_split(np.ones(12))
    >>> round(parts["self_weight"], 3), parts["point_load"]   # beam theory: 2332.8
    (2421.431, 0.0)
    """

    objective_name = "compliance"

    def __init__(self, model: fem.Model, f, gravity, volfrac: float, rmin: float,
                 interpolation: str = "ramp", q: float = 8.0, penal: float = 3.0,
                 filter: str = "density", Emin: float = 1e-9, solver: str = "auto",
                 eta: float = 0.5, solver_options: dict | None = None,
                 passive: Passive | None = None):
        _check_model(model)
        self.interpolation = check_choice("interpolation", interpolation, INTERPOLATIONS)
        self.q = check_range("q", q, 0.0, None, what="RAMP penalization")
        f = np.asarray(check_load("f", f, model.ndof, real=True), dtype=float)
        if f.shape != (model.ndof,):
            raise ValueError(f"f has shape {f.shape}; expected ({model.ndof},), the fixed loads")
        self.weight = BodyLoad(model, gravity)
        self.gravity = _gravity(model, gravity)
        self.f, self.c0 = f, None
        super().__init__(model, volfrac, rmin, penal=penal, filter=filter, Emin=Emin,
                         solver=solver, eta=eta, solver_options=solver_options,
                         passive=passive)

    # ----------------------------------------------------------- the chain
    def modulus(self, x_phys):
        """``E(x_phys)``: RAMP (Stolpe & Svanberg 2001) or SIMP; differentiable."""
        if self.interpolation == "ramp":
            return ramp(x_phys, self.q, self.Emin)
        return simp(x_phys, self.penal, self.Emin)

    def stiffness(self, x, beta: float | None = None):
        """Element stiffnesses ``E = modulus(x_phys)``; differentiable."""
        return self.modulus(self.x_phys(x, beta))

    def load(self, x_phys):
        """``f(x) = f_fixed + sum_e x_phys_e f_e`` (B & D 2005, eq. (5)); differentiable."""
        return self.f + self.weight(x_phys)

    def state(self, x_phys):
        """``(u, f)``: the displacements and the load of the physical densities."""
        f = self.load(x_phys)
        return fem.solve(self.system, self.modulus(x_phys), f), f

    def compliance(self, x, beta: float | None = None):
        """``c = f(x)^T K(E(x))^{-1} f(x)``; differentiable, the load's derivative included."""
        return compliance(*self.state(self.x_phys(x, beta)))

    def responses(self, x, beta: float | None = None):
        """``(c / c0, v / volfrac - 1)`` for MMA."""
        x_phys = self.x_phys(x, beta)
        return (compliance(*self.state(x_phys)) / self.c0,
                volume(x_phys, self.weights) / self.volfrac - 1.0)

    def compliance_split(self, x_phys) -> dict:
        """``c = f_fixed^T u + f_weight^T u``: the parts of the fixed loads and of the weight."""
        x_phys = check_real_array("x_phys", x_phys, allow_bool=True)
        u, f = self.state(x_phys)
        point, total = float(self.f @ u), float(f @ u)
        return {"point_load": point, "self_weight": total - point,
                "self_weight_share": (total - point) / total if total else 0.0}

    # ----------------------------------------------------------- the run's hooks
    def final(self, x_phys):
        """The compliance split, volume and weight of the final design; its state.

        The run's metrics add to `ComplianceProblem.run`'s the split
        (``compliance_point_load``, ``compliance_self_weight``,
        ``self_weight_share``), ``volume_constraint_active`` (``v >= volfrac
        - 1e-3``), ``weight`` and ``interpolation``. MMA runs with
        `minimize`'s conservative default (inner iterations), not the classic
        MMA of `ComplianceProblem.run`: the load's term makes the compliance
        non-monotonic, and on the arch (40 x 30 half model) classic MMA
        jumped from ``c / c0 = 0.44`` to ``3e5`` at its fourth step and never
        came back; the conservative one recovers in one step (``c = 105.9``).
        """
        u, f = self.state(x_phys)
        c, point = float(f @ u), float(self.f @ u)
        v = float(volume(x_phys, self.weights))
        return {
            "compliance": c, "compliance_point_load": point,
            "compliance_self_weight": c - point,
            "self_weight_share": (c - point) / c if c else 0.0,
            "volume": v, "volume_constraint_active": bool(v >= self.volfrac - 1e-3),
            "weight": float(np.linalg.norm(self.gravity) * v * np.sum(self.weights)),
        }, u

    def run_metrics(self) -> dict:
        return {"interpolation": self.interpolation}


def save_load_ratio(path: str, penal: float = 3.0, q: float = 8.0, Emin: float = 1e-9,
                    title: str | None = None) -> None:
    """Plot `load_ratio` of SIMP (`penal`) and RAMP (`q`) against the density to `path`.

    Why RAMP under self-weight: SIMP's ratio ``x^(1 - p)`` grows to ``1 /
    Emin``-limited values as ``x -> 0``, RAMP's stays below ``1 + q``.

    Examples
    --------
    >>> import os, tempfile
    >>> from topopt.formulations.selfweight import save_load_ratio
    >>> path = os.path.join(tempfile.mkdtemp(), "ratio.png")
    >>> save_load_ratio(path, penal=3.0, q=8.0)
    >>> open(path, "rb").read(4)[1:]
    b'PNG'
    """
    from matplotlib.figure import Figure
    from ..plot.canvas import _save
    x = np.logspace(-4, 0, 400)
    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot()
    ax.loglog(x, load_ratio(x, "simp", penal=penal, Emin=Emin), label=f"SIMP, p = {penal:g}")
    ax.loglog(x, load_ratio(x, "ramp", q=q, Emin=Emin), label=f"RAMP, q = {q:g}")
    ax.axhline(1.0 + q, color="grey", lw=0.8, ls="--")
    ax.text(x[0], (1.0 + q) * 1.3, f"1 + q = {1 + q:g}", color="grey", fontsize=8)
    ax.set_xlabel("density x")
    ax.set_ylabel("weight / stiffness  x / E(x)")
    ax.set_title(title or "Load-to-stiffness ratio of an element under self-weight")
    ax.legend()
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
