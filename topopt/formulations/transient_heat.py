"""Minimum temperature over time of transient heat conduction (Theulings et al. 2024).

``x -> x_phys = F x`` (density or Helmholtz filter) ``-> k = c = simp(x_phys)``
(conductivity and heat capacity interpolated alike, as pyMOTO's
``ex_transient_thermal.py``) ``-> T_1 .. T_N`` of ``(M(c)/dt + theta K(k))
T_{n+1} = (M(c)/dt - (1 - theta) K(k)) T_n + r_{n+1}`` (`topopt.fem.transient`,
one primitive whose reverse rule checkpoints every ``ceil(sqrt N)``-th state)
``-> J = scale sum_n sum_j (L^T T_n)_j``: the observed temperatures (pyMOTO:
the sum over the heated nodes) summed over the steps ``n = 0 .. N``,
minimized by MMA subject to ``v(x_phys) <= volfrac``.
"""

from __future__ import annotations

import numpy as np

from .. import ad, fem
from .._validate import check_positive, check_real_array
from ..design.interpolation import simp
from ..design.passive import Passive
from ..fem.transient import TransientSystem, temperatures, transient
from ..responses.structural import volume
from .base import DensityProblem, StartScaled

__all__ = ["TransientHeatProblem"]


class TransientHeatProblem(StartScaled, DensityProblem):
    """Minimum observed temperature summed over the time steps, under a volume fraction.

    Parameters
    ----------
    model : topopt.fem.Model
        Heat model (``fem.heat``) with its supports (``T = 0``).
    Q : (ndof,) or (ndof, n_src) array
        Heat sources; ``q_n = Q s_n``.
    s : (N + 1,) or (N + 1, n_src) array
        Their signals at ``t_n = n dt`` (N steps).
    L : (ndof,) or (ndof, m) array
        Observed combinations of nodal temperatures (an indicator of the
        heated nodes).
    dt : float > 0
        Time step.
    volfrac, rmin, penal, filter, Emin, solver, eta, passive
        The density chain of `topopt.formulations.base.DensityProblem`;
        `Emin` is the void's conductivity and capacity (``k0 = 1``,
        ``capacity`` at ``x = 1``).
    theta : float in [0, 1]
        1: implicit Euler, 0.5: Crank-Nicolson.
    capacity : float > 0
        Volumetric heat capacity ``rho c`` of the solid.
    scale : float > 0
        The objective's factor (pyMOTO's example: 100).
    every : int, optional
        Checkpoint interval (default ``ceil(sqrt N)``).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.transient_heat import TransientHeatProblem
    >>> model = fem.heat(fem.rectangle(4, 4)).fix(nodes=lambda x: x[1] == 0)
    >>> q = model.point_load((2.0, 4.0), (1.0,))
    >>> p = TransientHeatProblem(model, q, np.ones(6), q, dt=1.0, volfrac=0.5, rmin=1.5)
    >>> J, g = p.objective(np.full(16, 0.5)), p.gradient(np.full(16, 0.5))
    >>> bool(J > 0), bool(np.all(g < 0))
    (True, True)
    """

    mma_defaults = {"inner_maxeval": 1, "dual_ftol_rel": 1e-10}
    objective_name = "temperature"

    def __init__(self, model: fem.Model, Q, s, L, dt: float, volfrac: float, rmin: float,
                 theta: float = 1.0, capacity: float = 1.0, scale: float = 1.0,
                 penal: float = 3.0, filter: str = "density", Emin: float = 1e-6,
                 solver: str = "auto", eta: float = 0.5, every: int | None = None,
                 passive: Passive | None = None):
        self.transient = TransientSystem(model, dt, theta=theta, capacity=capacity,
                                         every=every, solver=solver)
        self.Q, self.s, self.L = self.transient.data(Q, s, L)
        if not np.any(self.Q) or not np.any(self.s):
            raise ValueError("the heat input Q s is zero: nothing to conduct")
        if not np.any(self.L[self.transient.A.free]):
            raise ValueError("L observes only fixed dofs (T = 0 there): the objective is 0")
        self.scale, self.c0 = check_positive("scale", scale, "objective factor"), None
        self.f = self.Q @ np.max(np.abs(self.s), axis=0)      # the heaters, for the pictures
        super().__init__(model, volfrac, rmin, penal=penal, filter=filter, Emin=Emin,
                         solver=solver, eta=eta, passive=passive)

    def _system(self, solver, solver_options):
        """The stepping matrix ``A = M/dt + theta K`` (the one factorized per design)."""
        return self.transient.A

    @property
    def n_steps(self) -> int:
        return self.s.shape[0] - 1

    def coefficients(self, x_phys):
        """``k = c = simp(x_phys)`` (pyMOTO's example: one SIMP for both); differentiable."""
        return simp(x_phys, self.penal, self.Emin)

    def observations(self, x, beta: float | None = None):
        """``Y_n = L^T T_n``, ``(N + 1, m)``; differentiable."""
        k = self.coefficients(self.x_phys(x, beta))
        return transient(self.transient, k, k, self.Q, self.s, self.L)

    def objective(self, x, beta: float | None = None):
        """``J = scale sum_n sum_j Y_nj``; differentiable."""
        return self.scale * np.sum(self.observations(x, beta))

    def gradient(self, x, beta: float | None = None) -> np.ndarray:
        """``dJ/dx`` by the checkpointed adjoint (`topopt.ad.gradient`)."""
        x = check_real_array("x", x, allow_bool=True)
        return ad.gradient(lambda z: self.objective(z, beta), x)

    def responses(self, x, beta: float | None = None):
        """``(J / J0, v / volfrac - 1)``: scaled objective and volume constraint for MMA."""
        x_phys = self.x_phys(x, beta)
        k = self.coefficients(x_phys)
        J = self.scale * np.sum(transient(self.transient, k, k, self.Q, self.s, self.L))
        return J / self.c0, volume(x_phys, self.weights) / self.volfrac - 1.0

    # ----------------------------------------------------------- the run's hooks
    def start_objective(self, x0):
        """``J`` of the start: the objective's scale ``J0`` (`StartScaled`'s ``c0``)."""
        return self.objective(x0)

    @property
    def J0(self):                                              # noqa: N802 -- the paper's J0
        """The start objective ``J0`` (None until the run's start; settable)."""
        return self.c0

    @J0.setter
    def J0(self, value):                                       # noqa: N802
        self.c0 = value

    def solves(self) -> int:
        """The time-step solves so far (forward, recomputed and adjoint)."""
        return self.transient.counts["solves"]

    def final(self, x_phys):
        """``temperature`` (J), ``volume``, the steps' count and checkpoint figures; ``T_N``."""
        k = simp(check_real_array("x_phys", x_phys, allow_bool=True), self.penal, self.Emin)
        J = float(self.scale * np.sum(transient(self.transient, k, k, self.Q, self.s, self.L)))
        T = temperatures(self.transient, k, k, self.Q, self.s, [self.n_steps])[:, 0]
        S = self.transient
        return {"temperature": J, "volume": float(volume(x_phys, self.weights)),
                "n_steps": self.n_steps, "dt": S.dt, "theta": S.theta,
                "checkpoint_interval": S.interval(self.n_steps),
                "states_held": S.counts["states"], "T_max_final": float(np.max(T))}, T
