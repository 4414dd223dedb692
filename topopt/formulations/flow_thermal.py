"""Forced-convection cooling: the coolest heated region under a pressure-drop limit.

The chain of `topopt.formulations.flow.FlowProblem` (``x -> x_tilde = F x ->
x_phys = rho``, 1 fluid, 0 solid ``-> w = [u, p]`` from the Brinkman-penalized
flow, `topopt.fem.solve_nonlinear`) continues one-way into the temperature
``T`` of `topopt.flow.Convection`: ``T`` solves ``R_T(T, [u, rho]) = 0``
(convection-diffusion in the velocity ``u = w[:nu]`` with the conductivity
and heat source interpolated between solid and fluid; SUPG), a second
`solve_nonlinear` whose model is affine in ``T`` (one factorization, reused
by the adjoint). MMA minimizes the mean temperature of the heated region
``T_mean = int_D T / |D|`` subject to

    int rho / |Omega| <= volfrac        (fluid fraction)
    dp(w) <= dp_max                     (mean-pressure drop, inlet to outlet)

(the problem of Alexandersen & Andreasen 2020, Fluids 5:29, sect. 4, in its
one-way coupled form: Matsumori et al. 2013, Int. J. Heat Mass Transf.
66:855, fix the pressure drop; Koga et al. 2013, Int. J. Heat Mass Transf.
64:759, the fluid's power). Every derivative (reverse, forward, hvp, nested)
runs through both implicit solves by the implicit function theorem.
"""

from __future__ import annotations

import numpy as np

from .. import fem
from .._validate import check_positive, check_real_array
from ..flow import Convection, FlowModel, convective_flux, mean_temperature, pressure_drop
from ..optimize.progress import show
from ..responses.structural import volume
from .flow import FlowProblem

__all__ = ["ConvectionProblem"]


class ConvectionProblem(FlowProblem):
    """Minimum mean temperature of a heated region by forced convection, dp-limited.

    Parameters
    ----------
    model : topopt.flow.FlowModel
        Stokes or Navier-Stokes flow with its velocity data (the inflow).
    thermal : topopt.flow.Convection
        The temperature on the same mesh, with its prescribed dofs
        (``thermal.fixed``, values from `T0`), conductivities and sources.
    volfrac : float in (0, 1)
        The largest fluid fraction.
    rmin : float > 0 or None
        Density filter radius (length units); None: no filter.
    heated : callable
        Predicate of the element midpoints selecting the region ``D`` whose
        mean temperature is minimized.
    inlet, outlet : callable
        Predicates of the boundary facet midpoints between which the mean
        pressure drops.
    dp_max : float > 0
        The largest pressure drop (`empty_pressure_drop` gives the all-fluid
        domain's, a scale for it).
    T0 : array_like or float
        The temperature's Dirichlet data (at ``thermal.fixed``): a vector of
        ``thermal.n`` values or one value; 0 by default.
    steps, newton, passive, eta
        As `FlowProblem`.

    Examples
    --------
    A channel 2 x 1 in Stokes flow, cold inflow T = 0, heated middle:

    >>> import numpy as np, skfem
    >>> from topopt.flow import stokes, parabolic_inlet, Convection
    >>> from topopt.formulations.flow_thermal import ConvectionProblem
    >>> mesh = skfem.MeshTri.init_tensor(np.linspace(0, 2, 9), np.linspace(0, 1, 5))
    >>> left, right = (lambda x: x[0] < 1e-9), (lambda x: x[0] > 2 - 1e-9)
    >>> model = stokes(mesh, dirichlet=[(lambda x: (x[1] < 1e-9) | (x[1] > 1 - 1e-9), 0.0),
    ...                                 (left, parabolic_inlet([0, 0.5], 1.0))])
    >>> thermal = Convection(mesh, fixed=left, order=1, k=(1.0, 0.1), source=(1.0, 1.0))
    >>> p = ConvectionProblem(model, thermal, 0.5, heated=lambda x: abs(x[0] - 1) < 0.5,
    ...                       inlet=left, outlet=right, dp_max=100.0)
    >>> round(float(p.empty_pressure_drop()), 6)        # Poiseuille: 12 mu U L / h^2
    16.0
    >>> f, fluid, drop = p.responses_at(np.ones(p.n))
    >>> round(float(fluid), 6), round(float(drop), 6)
    (1.0, 16.0)
    """

    objective_name = "mean_temperature"
    #: The classic MMA, one evaluation per iteration (FlowProblem's conservative inner
    #: iterations found two wall channels, mean T 0.567, where this finds the branches
    #: around the heated block, 0.254: `problems/heat_sink_flow.py` at n = 20).
    mma_defaults = {"inner_maxeval": 1, "dual_ftol_rel": 1e-10}
    #: The history's axis label and the symbol of the objective.
    objective_label, objective_symbol = "mean temperature of the heated region", "T_mean"

    def __init__(self, model: FlowModel, thermal: Convection, volfrac: float,
                 rmin: float | None = None, *, heated, inlet, outlet, dp_max: float,
                 T0=0.0, steps=None, newton: dict | None = None, passive=None,
                 eta: float = 0.5):
        super().__init__(model, volfrac, rmin, objective="pressure_drop", inlet=inlet,
                         outlet=outlet, steps=steps, newton=newton, passive=passive, eta=eta)
        if not isinstance(thermal, Convection):
            raise TypeError(f"thermal must be a topopt.flow.Convection, got {type(thermal)}")
        if thermal.mesh is not self.mesh and not (thermal.mesh.t.shape == self.mesh.t.shape
                                                  and np.array_equal(thermal.mesh.p, self.mesh.p)):
            raise ValueError("thermal must live on the flow model's mesh")
        if not callable(heated):
            raise TypeError(f"heated must be a predicate of the element midpoints, got {heated!r}")
        self.thermal = thermal
        self.objective_kind = self.objective_name = "mean_temperature"
        self.dp_max = check_positive("dp_max", dp_max, "largest pressure drop")
        T0 = np.broadcast_to(check_real_array("T0", T0), (thermal.n,)) if np.ndim(T0) == 0 \
            else check_real_array("T0", T0)
        if np.shape(T0) != (thermal.n,):
            raise ValueError(f"T0 has shape {np.shape(T0)}; give one value or {thermal.n}")
        self.T0 = np.array(T0, dtype=float)
        self.heated = heated
        self._mean = mean_temperature(thermal, heated)
        self.final_temperature = None
        self.counts["thermal_solves"] = 0

    # ----------------------------------------------------------- the chain
    def temperature(self, w, x_phys):
        """``T`` of the velocity ``w[:nu]`` and the design `x_phys` (traced in both)."""
        self.counts["thermal_solves"] += 1
        p = np.concatenate([w[:self.model.nu], x_phys])
        return fem.solve_nonlinear(self.thermal, p, self.T0, **self.states.newton)

    def pressure_drop(self, w):
        """The mean-pressure drop of the state `w`, inlet to outlet (traced)."""
        return pressure_drop(self.model, w, *self._drop)

    def measure(self, w, x_phys, q: float | None = None):
        """The mean temperature of the heated region of the flow `w` over `x_phys` (traced)."""
        return self._mean(self.temperature(w, x_phys))

    def responses_at(self, x_phys, q: float | None = None):
        """``(T_mean, fluid fraction, dp)`` of a physical design (unscaled, traced)."""
        w = self.state(x_phys, q)
        return (self.measure(w, x_phys, q), volume(x_phys, self.weights),
                self.pressure_drop(w))

    def empty_pressure_drop(self) -> float:
        """The pressure drop of the all-fluid domain (at the model's ``q``)."""
        return float(self.pressure_drop(self.states.solve(np.ones(self.n_el), warm=False)))

    def responses(self, x, q: float | None = None, beta: float | None = None):
        """``(T_mean / T0, fluid / volfrac - 1, dp / dp_max - 1)`` for MMA."""
        x_phys = self.x_phys(x, beta)
        T, fluid, dp = self._solved(lambda: self.responses_at(x_phys, q), q)
        return T / self.c0, fluid / self.volfrac - 1.0, dp / self.dp_max - 1.0

    # ----------------------------------------------------------- the run's hooks
    @property
    def constraint_names(self) -> list:
        return [f"fluid fraction / {self.volfrac:g} - 1", f"dp / {self.dp_max:.4g} - 1"]

    def announce(self, verbose: bool) -> None:
        super().announce(verbose)
        if verbose:
            show(f"temperature: P{self.thermal.order}, {self.thermal.n} dofs, "
                 f"SUPG {'on' if self.thermal.supg else 'off'}, one LU per solve")

    def final(self, x_phys):
        """`FlowProblem.final`'s and the mean temperature, the pressure drop against
        ``dp_max``, the heat put in and the heat the outflow carries away."""
        out, w = super().final(x_phys)
        x_phys = np.asarray(x_phys, dtype=float)
        T = np.asarray(self.temperature(w, x_phys))
        self.final_temperature = T
        th = self.thermal
        source = th.heat_source(x_phys[:, None])
        p = np.concatenate([w[:self.model.nu], x_phys])
        boundary = lambda y: np.ones(y.shape[1], bool)             # noqa: E731
        dp = float(self.pressure_drop(w))
        out |= {"pressure_drop": dp, "dp_max": self.dp_max, "dp_ratio": dp / self.dp_max,
                "max_temperature": float(T.max()),
                "heat_input": float(np.sum(source * th.basis.dx)),
                "heat_convected": float(convective_flux(th, boundary)(T, p))}
        return out, w

    def nodal_state(self, w) -> dict:
        """`FlowProblem.nodal_state` and the ``temperature`` at the vertices (of `final`)."""
        out = super().nodal_state(w)
        if self.final_temperature is not None:
            out["temperature"] = np.array(self.final_temperature[:self.mesh.p.shape[1]])
        return out
