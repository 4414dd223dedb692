"""Thermo-elastic compliance: a heat field's expansion load plus a mechanical load.

Gao & Zhang (2010), as pyMOTO's ``ex_thermo_mech.py`` sets it up: the heat
problem ``K_th(k(x_phys)) T = q`` gives the temperature rise ``T``; its
thermal-expansion load ``f_th = sum_e beta(x_phys,e) L_e T_e``
(`topopt.responses.thermoelastic`) adds to the fixed load ``f``, and the
compliance ``c = f(x)^T u`` of ``K(E(x_phys)) u = f(x) = f + f_th`` is
minimized under a volume fraction. ``E``, ``k`` and ``beta`` interpolate the
density by RAMP (Stolpe & Svanberg 2001): ``E = ramp(x, q, Emin)``, ``k =
ramp(x, q, kmin)``, ``beta = ramp(x, q_beta, 0)`` (``q_beta = 0``, linear,
is pyMOTO's ``x T`` load; Gao & Zhang's eq. (11) penalizes it too).

The gradient is the tape's: two `topopt.fem.solve` calls and the bilinear
primitive `topopt.responses.thermoelastic.thermal_load` between them, so
the adjoint runs through both fields (Gao & Zhang 2010, eqs. (20)-(22):
``dc/dx = 2 u^T df/dx - u^T dK/dx u - mu^T dK_th/dx T`` with ``K_th mu =
(df_th/dT)^T 2u``). The load's term makes ``c`` non-monotonic in ``x``, so
MMA runs with `minimize`'s conservative default, as under self-weight.
"""

from __future__ import annotations

import numpy as np

from .. import fem
from .._validate import check_choice, check_load, check_range
from ..design.interpolation import ramp
from ..design.passive import Passive
from ..responses.structural import compliance, volume
from ..responses.thermoelastic import TEMPERATURES, ThermalCoupling
from .base import DensityProblem, StartScaled

__all__ = ["ThermoelasticProblem"]


class ThermoelasticProblem(StartScaled, DensityProblem):
    """Minimum compliance under a mechanical load and a heat load's expansion.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity model with its supports.
    thermal : topopt.fem.Model
        Heat model on the same mesh, with its fixed temperatures (``T = 0``,
        the reference of the expansion).
    f : (ndof,) array
        Fixed mechanical load (may be zero).
    heat : (ndof_T,) array
        Heat load of the thermal model.
    volfrac, rmin : float
        Volume fraction bound and filter radius (`DensityProblem`).
    alpha : float > 0
        Coefficient of thermal expansion.
    nu, E0, plane
        Those of `topopt.fem.elasticity` for `model` (checked).
    q, q_beta : float >= 0
        RAMP penalization of ``E`` and ``k``, and of ``beta``.
    Emin, kmin : float in [0, 1)
        Void stiffness and conductivity.
    temperature : {"consistent", "centroid"}
        The element temperature of the load (`topopt.responses.coupling_matrices`).
    filter, solver, eta, solver_options, passive
        As in `topopt.formulations.ComplianceProblem`.

    Examples
    --------
    A bar clamped at both ends, its left end held at T = 0, heated uniformly:

    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.thermoelastic import ThermoelasticProblem
    >>> mesh = fem.rectangle(8, 2)
    >>> model = fem.elasticity(mesh).fix(nodes=lambda x: (x[0] == 0) | (x[0] == 8))
    >>> thermal = fem.heat(mesh).fix(nodes=lambda x: x[0] == 0)
    >>> p = ThermoelasticProblem(model, thermal, np.zeros(model.ndof),
    ...                          thermal.body_load((0.01,)), 0.5, 1.5)
    >>> round(float(p.compliance(np.ones(16))), 4)     # all of it the expansion's
    1.6156
    """

    objective_name = "compliance"

    def __init__(self, model: fem.Model, thermal: fem.Model, f, heat, volfrac: float,
                 rmin: float, alpha: float = 1.0, nu: float = 0.3, E0: float = 1.0,
                 plane: str = "stress", q: float = 2.0, q_beta: float = 0.0,
                 Emin: float = 1e-9, kmin: float = 1e-9, temperature: str = "consistent",
                 filter: str = "density", solver: str = "auto", eta: float = 0.5,
                 solver_options: dict | None = None, passive: Passive | None = None):
        self.coupling = ThermalCoupling(model, thermal, alpha, nu, E0, plane,
                                        check_choice("temperature", temperature, TEMPERATURES))
        self.q = check_range("q", q, 0.0, None, what="RAMP penalization")
        self.q_beta = check_range("q_beta", q_beta, 0.0, None,
                                  what="RAMP penalization of the thermal stress coefficient")
        self.kmin = check_range("kmin", kmin, 0.0, 1.0, hi_open=True,
                                what="void conductivity; k0 = 1")
        self.f = np.asarray(check_load("f", f, model.ndof, real=True), dtype=float)
        self.heat = np.asarray(check_load("heat", heat, thermal.ndof, real=True), dtype=float)
        for name, v, n in (("f", self.f, model.ndof), ("heat", self.heat, thermal.ndof)):
            if v.shape != (n,):
                raise ValueError(f"{name} has shape {v.shape}; expected ({n},), one load case")
        if not np.any(self.heat):
            raise ValueError("the heat load is zero: no temperature, no thermal load "
                             "(use ComplianceProblem)")
        self.thermal, self.c0, self._T = thermal, None, None
        super().__init__(model, volfrac, rmin, filter=filter, Emin=Emin, solver=solver,
                         eta=eta, solver_options=solver_options, passive=passive)
        self.thermal_system = thermal.system(solver, solver_options=solver_options)

    # ----------------------------------------------------------- the chain
    def modulus(self, x_phys):
        """``E = ramp(x_phys, q, Emin)``; differentiable."""
        return ramp(x_phys, self.q, self.Emin)

    def stiffness(self, x, beta: float | None = None):
        """Element stiffnesses ``E(x_phys)``; differentiable."""
        return self.modulus(self.x_phys(x, beta))

    def conductivity(self, x_phys):
        """``k = ramp(x_phys, q, kmin)``; differentiable."""
        return ramp(x_phys, self.q, self.kmin)

    def expansion(self, x_phys):
        """The thermal stress coefficient ``beta = ramp(x_phys, q_beta, 0)``; differentiable."""
        return ramp(x_phys, self.q_beta, 0.0)

    def state(self, x_phys):
        """``(u, f, T)``: displacements, total load and temperatures of `x_phys`."""
        T = fem.solve(self.thermal_system, self.conductivity(x_phys), self.heat)
        f = self.f + self.coupling(self.expansion(x_phys), T)
        return fem.solve(self.system, self.modulus(x_phys), f), f, T

    def compliance(self, x, beta: float | None = None):
        """``c = f(x)^T u``, both fields' derivatives included; differentiable."""
        u, f, _ = self.state(self.x_phys(x, beta))
        return compliance(u, f)

    def responses(self, x, beta: float | None = None):
        """``(c / c0, v / volfrac - 1)`` for MMA."""
        x_phys = self.x_phys(x, beta)
        u, f, _ = self.state(x_phys)
        return compliance(u, f) / self.c0, volume(x_phys, self.weights) / self.volfrac - 1.0

    # ----------------------------------------------------------- the run's hooks
    def solves(self) -> int:
        """Factorizations of both systems (mechanical and thermal)."""
        return super().solves() + self.thermal_system.counts["factorizations"]

    def final(self, x_phys):
        """Compliance (its mechanical and thermal parts), volume, peak temperature; ``u``.

        ``compliance_mechanical = f^T u`` (the fixed load's part), and
        ``compliance_thermal = c - f^T u``; the temperature is kept for
        `nodal_state`.
        """
        u, f, T = self.state(x_phys)
        c, mech = float(f @ u), float(self.f @ u)
        self._T = np.asarray(T)
        return {"compliance": c, "compliance_mechanical": mech, "compliance_thermal": c - mech,
                "temperature_max": float(np.max(T)),
                "volume": float(volume(x_phys, self.weights))}, u

    def nodal_state(self, u) -> dict:
        """``displacement`` and (after a run) the final design's ``temperature``."""
        out = super().nodal_state(u)
        if self._T is not None:
            out["temperature"] = self.thermal.nodal_values(self._T)[:, 0]
        return out

    def run_metrics(self) -> dict:
        return {"q": self.q, "q_beta": self.q_beta, "alpha": self.coupling.alpha,
                "temperature": self.coupling.temperature}
