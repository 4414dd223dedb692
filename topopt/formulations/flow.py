"""Minimum dissipated power (or pressure drop) of Brinkman-penalized flow: Borrvall & Petersson.

``x -> x_tilde = F x`` (density filter on the elements, or none) ``->
x_phys = rho`` (1 fluid, 0 solid) ``-> alpha(rho)`` (`topopt.flow.alpha`,
convexity ``q`` set per stage) ``-> w = [u, p]`` from ``R(w, rho) = 0``
(`topopt.fem.solve_nonlinear`; Stokes or Navier-Stokes, `topopt.flow.FlowModel`)
``-> J(w, rho)``, minimized by MMA subject to the fluid fraction ``int rho /
|Omega| <= volfrac`` (Borrvall & Petersson 2003, Int. J. Numer. Meth. Fluids
41:77, eqs. 11-16). Continuation in ``q`` runs through `topopt.optimize.Stage`
params (``Stage(40, {"q": 0.01}), Stage(40, {"q": 0.1})``, as theirs).

Navier-Stokes solves start from the last converged state (warm start); a cold
start (the first solve, or a warm start that failed) climbs the convective
term's ``t`` through `steps`. A Newton failure during a run propagates as
`topopt.fem.NewtonError` after `minimize` wrote its checkpoint (the last good
design and the history; the exception's notes name the checkpoint and how to
resume: a problem script's ``--resume PATH``).
"""

from __future__ import annotations

from .. import fem
from .._validate import check_choice, check_range, check_real_array
from ..design.filters import DensityFilter
from ..design.passive import Passive
from ..flow import FlowModel, FlowStates, dissipated_power, mean_pressure_weights, pressure_drop
from ..flow.responses import VISCOUS_FACTOR
from ..responses.structural import volume
from .base import DensityProblem, StartScaled
from .flow_hooks import FlowRunHooks

__all__ = ["FlowProblem", "OBJECTIVES"]

#: The objectives of `FlowProblem`.
OBJECTIVES = ("dissipated_power", "pressure_drop")


class _Identity:
    """No filter (``rmin=None``): Borrvall & Petersson's P0 design needs none."""

    rmin = None

    def __call__(self, x):
        return x


class FlowProblem(FlowRunHooks, StartScaled, DensityProblem):
    """Minimum dissipated power (or pressure drop) subject to a fluid fraction.

    Parameters
    ----------
    model : topopt.flow.FlowModel
        Stokes or Navier-Stokes flow (P2/P1 on triangles or tetrahedra, Q2/Q1
        on quadrilaterals or hexahedra) with its velocity data; its ``q`` is
        used where no stage sets one.
    volfrac : float in (0, 1)
        The largest fluid fraction.
    rmin : float > 0 or None
        Density filter radius (length units, on the element centroids); None
        (default) filters nothing, as Borrvall & Petersson.
    objective : {"dissipated_power", "pressure_drop"}
        `topopt.flow.dissipated_power` (in `convention`) or the mean-pressure
        drop between the `inlet` and `outlet` facets (`topopt.flow.pressure_drop`).
    convention : {"borrvall-petersson", "dolfin-adjoint"}
        The viscous factor of the dissipated power (``mu/2`` or ``mu``).
    inlet, outlet : callable, optional
        Predicates of the facet midpoints; needed for ``"pressure_drop"``.
    steps : sequence of float, optional
        Continuation of the convective term for a cold Navier-Stokes solve
        (default ``(0.25, 0.5, 1.0)``); ignored for Stokes.
    newton : dict, optional
        Options of `topopt.fem.solve_nonlinear` (``rtol``, ``maxiter``, ...).
    passive : topopt.design.Passive, optional
        Fixed fluid (1) or solid (0) elements.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt.flow import stokes, parabolic_inlet
    >>> from topopt.formulations.flow import FlowProblem
    >>> mesh = skfem.MeshTri.init_tensor(np.linspace(0, 1, 5), np.linspace(0, 1, 5))
    >>> model = stokes(mesh, dirichlet=[(lambda x: x[0] > -1, 0.0),
    ...                                 (lambda x: x[0] < 1e-9, parabolic_inlet([0, 0.5], 1.0)),
    ...                                 (lambda x: x[0] > 1 - 1e-9, parabolic_inlet([1, 0.5], 1.0))])
    >>> p = FlowProblem(model, volfrac=0.5)
    >>> J = p.objective(np.ones(p.n))          # an open channel: Poiseuille, 1/2 * 16/3
    >>> round(float(J), 6)
    2.666667
    """

    objective_name = "dissipated_power"
    #: NLopt MMA with its inner (conservative) iterations: the classic one-evaluation MMA
    #: (``inner_maxeval=1``) oscillates at q = 0.01 and ends in the two-pipe local optimum at
    #: aspect 1.5 (J = 36.6 at n = 30), the conservative one finds the merged channel.
    mma_defaults: dict = {}

    def __init__(self, model: FlowModel, volfrac: float, rmin: float | None = None, *,
                 objective: str = "dissipated_power", convention: str = "borrvall-petersson",
                 inlet=None, outlet=None, steps=None, newton: dict | None = None,
                 passive: Passive | None = None, eta: float = 0.5):
        self.states = FlowStates(model, steps, newton)     # checks model, steps, newton
        self.model, self.mesh = model, model.space.mesh
        self.volfrac = check_range("volfrac", volfrac, 0.0, 1.0, lo_open=True, hi_open=True,
                                   what="fluid fraction")
        self.objective_kind = check_choice("objective", objective, OBJECTIVES)
        self.objective_name = self.objective_kind
        self.convention = check_choice("convention", convention, VISCOUS_FACTOR)
        if self.objective_kind == "pressure_drop":
            if inlet is None or outlet is None:
                raise ValueError("objective='pressure_drop' needs inlet and outlet predicates")
            self._drop = tuple(mean_pressure_weights(model.space, w) for w in (inlet, outlet))
        self.eta = check_range("eta", eta, 0.0, 1.0, what="projection threshold")
        self.filter_name = "none" if rmin is None else "density"
        self.rmin, self.penal = rmin, None
        self.weights = fem.element_volumes(self.mesh)
        self.n_el = self.mesh.t.shape[1]
        self.passive = Passive.of(passive, self.n_el)
        self.passive.check_volume(self.volfrac, self.weights)
        self.n = self.passive.n_free
        self._filters = {}
        self.filter = self._filter(rmin)
        self.c0, self.final_q, self.counts = None, model.q, self.states.counts

    # ----------------------------------------------------------- the chain
    def _filter(self, rmin):
        if rmin is None:
            return _Identity()
        if rmin not in self._filters:
            self._filters[rmin] = DensityFilter(self.mesh, rmin)
        return self._filters[rmin]

    def filtered(self, x, rmin: float | None = None):
        """``x_tilde``: the density filter of `x` (the identity without one)."""
        return self._filter(self.rmin if rmin is None else rmin)(self.passive.elements(x))

    def state(self, x_phys, q: float | None = None):
        """``w = [u, p]`` of the physical design, traced (`topopt.flow.FlowStates.solve`)."""
        return self.states.solve(x_phys, q)

    def measure(self, w, x_phys, q: float | None = None):
        """The objective of the state `w` and design `x_phys` (unscaled), traced."""
        model = self.states.model(q)
        if self.objective_kind == "pressure_drop":
            return pressure_drop(model, w, *self._drop)
        return dissipated_power(model, w, x_phys, convention=self.convention)

    def objective(self, x, q: float | None = None, beta: float | None = None):
        """The unscaled objective of the design variables `x`; differentiable."""
        x_phys = self.x_phys(x, beta)
        return self.measure(self.state(x_phys, q), x_phys, q)

    def start_objective(self, x0):
        return self.objective(x0, self._first_q)

    def prepare(self, x0, stages):
        self._first_q = (stages[0].params.get("q") if stages else None)
        return super().prepare(x0, stages)

    def _solved(self, responses, q):
        """``responses()`` with a Newton failure's note: what to pass, how to resume."""
        try:
            return responses()
        except fem.NewtonError as e:
            e.add_note(f"{type(self).__name__}: a solve failed at q={self.states.model(q).q:g}; "
                       "pass newton={'maxiter': ...} or more continuation steps (steps=) "
                       "and resume from the checkpoint")
            raise

    def responses(self, x, q: float | None = None, beta: float | None = None):
        """``(J / J0, fluid fraction / volfrac - 1)`` for MMA at the stage's `q` and `beta`."""
        x_phys = self.x_phys(x, beta)
        J = self._solved(lambda: self.measure(self.state(x_phys, q), x_phys, q), q)
        return J / self.c0, volume(x_phys, self.weights) / self.volfrac - 1.0

    # ----------------------------------------------------------- the run's hooks
    @property
    def constraint_names(self) -> list:
        return [f"fluid fraction / {self.volfrac:g} - 1"]

    def final(self, x_phys):
        """The objective (both conventions of the dissipated power), the fluid fraction and
        the state ``w`` of the final design at the last stage's ``q``; for the dissipated
        power also that of the design thresholded at 1/2 (`_thresholded`)."""
        x_phys = check_real_array("x_phys", x_phys, allow_bool=True)
        model = self.states.model(self.final_q)
        w = self.state(x_phys, self.final_q)
        out = {self.objective_kind: float(self.measure(w, x_phys, self.final_q))}
        for c in VISCOUS_FACTOR:
            out[f"dissipated_power_{c.split('-')[0]}"] = float(
                dissipated_power(model, w, x_phys, convention=c))
        out |= {"fluid_fraction": float(volume(x_phys, self.weights)), "q": self.final_q}
        return out, w
