"""Minimum dissipated power (or pressure drop) of Brinkman-penalized flow: Borrvall & Petersson.

``x -> x_tilde = F x`` (density filter on the triangles, or none) ``->
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

import time

import numpy as np

from .. import ad, fem
from .._validate import check_choice, check_range, check_real_array
from ..design.filters import DensityFilter
from ..design.passive import Passive
from ..flow import FlowModel, dissipated_power, mean_pressure_weights, pressure_drop
from ..flow.responses import VISCOUS_FACTOR
from ..optimize.ending import ending
from ..optimize.progress import show
from ..responses.structural import volume
from .base import DensityProblem, StartScaled, before_resume
from ..design.measures import grey_level

__all__ = ["FlowProblem", "OBJECTIVES"]

#: The objectives of `FlowProblem`.
OBJECTIVES = ("dissipated_power", "pressure_drop")


class _Identity:
    """No filter (``rmin=None``): Borrvall & Petersson's P0 design needs none."""

    rmin = None

    def __call__(self, x):
        return x


class FlowProblem(StartScaled, DensityProblem):
    """Minimum dissipated power (or pressure drop) subject to a fluid fraction.

    Parameters
    ----------
    model : topopt.flow.FlowModel
        Stokes or Navier-Stokes flow on triangles or tetrahedra with its
        velocity data; its ``q`` is used where no stage sets one.
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
        if not isinstance(model, FlowModel):
            raise TypeError(f"model must be a topopt.flow.FlowModel, got {type(model).__name__}")
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
        self.filter = _Identity() if rmin is None else self._filter(rmin)
        self.steps = (0.25, 0.5, 1.0) if steps is None else tuple(float(s) for s in steps)
        self.newton = dict(newton or {})
        self.c0, self._models, self._w = None, {}, None
        self.final_q = model.q
        self.counts = {"solves": 0, "newton_iterations": 0, "newton_seconds": 0.0}

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

    def flow_model(self, q: float | None = None) -> FlowModel:
        """The model with Brinkman convexity `q` (the problem's model's by default), kept."""
        q = self.model.q if q is None else float(q)
        if q not in self._models:
            self._models[q] = self.model if q == self.model.q else \
                self.model.with_parameters(q=q)
        return self._models[q]

    def _monitor(self, t, it, norm):
        """Count the Newton solves that ran (a repeated design is the cache's) and steps."""
        if it > 0:
            self.counts["newton_iterations"] += 1
        elif not self._ran:
            self._ran = True
            self.counts["solves"] += 1

    def _solve(self, model, rho, w0, steps):
        kw = dict(self.newton, monitor=self._monitor)
        self._ran = False
        if steps is not None:
            kw["steps"] = steps
        return fem.solve_nonlinear(model, rho, w0, **kw)

    def state(self, x_phys, q: float | None = None):
        """``w = [u, p]`` of the physical design (traced in `x_phys`): Newton from the last
        state (Navier-Stokes), else cold with continuation in ``t``."""
        model = self.flow_model(q)
        t0 = time.perf_counter()
        if model.rho_f == 0:
            w = self._solve(model, x_phys, model.initial_state(), None)
        elif self._w is not None:
            try:
                w = self._solve(model, x_phys, self._w, (1.0,))
            except fem.NewtonError:
                w = self._solve(model, x_phys, model.initial_state(), self.steps)
        else:
            w = self._solve(model, x_phys, model.initial_state(), self.steps)
        self._w = np.array(ad.value(w), dtype=float)
        self.counts["newton_seconds"] += time.perf_counter() - t0
        return w

    def measure(self, w, x_phys, q: float | None = None):
        """The objective of the state `w` and design `x_phys` (unscaled), traced."""
        model = self.flow_model(q)
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

    def responses(self, x, q: float | None = None, beta: float | None = None):
        """``(J / J0, fluid fraction / volfrac - 1)`` for MMA at the stage's `q` and `beta`."""
        x_phys = self.x_phys(x, beta)
        try:
            J = self.measure(self.state(x_phys, q), x_phys, q)
        except fem.NewtonError as e:
            e.add_note(f"FlowProblem: the flow solve failed at q={self.flow_model(q).q:g}; "
                       "pass newton={'maxiter': ...} or more continuation steps (steps=) "
                       "and resume from the checkpoint")
            raise
        return J / self.c0, volume(x_phys, self.weights) / self.volfrac - 1.0

    # ----------------------------------------------------------- the run's hooks
    @property
    def constraint_names(self) -> list:
        return [f"fluid fraction / {self.volfrac:g} - 1"]

    def solves(self) -> int:
        """The flow solves so far that ran Newton (its continuation steps included; a design
        solved again is answered by `fem.solve_nonlinear`'s cache and not counted)."""
        return self.counts["solves"]

    def announce(self, verbose: bool) -> None:
        if verbose:
            kind = "Stokes" if self.model.rho_f == 0 else "Navier-Stokes"
            show(f"flow: {kind}, Taylor-Hood P2/P1, {self.model.n} dofs, Newton with LU")

    def counters(self) -> dict:
        return {k: v for k, v in self.counts.items()}

    def final_design(self, res, stages):
        """`DensityProblem.final_design`; with stages of several ``q`` the run's ending
        compares the final objective with the last stage's first evaluation (the
        objectives of two ``q`` are two functions: the start's, at the first ``q``,
        is no yardstick of the last)."""
        self.final_q = (stages[-1].params.get("q", self.model.q) if stages else self.model.q)
        qs = {s.params.get("q", self.model.q) for s in stages or ()}
        if len(qs) > 1 and res.history and res.ending:
            last = max(h.get("stage", 0) for h in res.history)
            first = next(h for h in res.history if h.get("stage", 0) == last)
            res.ending = ending(res.constraints, res.fun, first.get("objective"),
                                first.get("constraints"))
            res.verdict = res.ending["verdict"]
        return super().final_design(res, stages)

    def final(self, x_phys):
        """The objective (both conventions of the dissipated power), the fluid fraction and
        the state ``w`` of the final design at the last stage's ``q``; for the dissipated
        power also that of the design thresholded at 1/2 (`_thresholded`)."""
        x_phys = check_real_array("x_phys", x_phys, allow_bool=True)
        model = self.flow_model(self.final_q)
        w = self.state(x_phys, self.final_q)
        out = {self.objective_kind: float(self.measure(w, x_phys, self.final_q))}
        for c in VISCOUS_FACTOR:
            out[f"dissipated_power_{c.split('-')[0]}"] = float(
                dissipated_power(model, w, x_phys, convention=c))
        out["fluid_fraction"] = float(volume(x_phys, self.weights))
        out["q"] = self.final_q
        if self.objective_kind == "dissipated_power":
            out.update(self._thresholded(x_phys))
        return out, w

    def _thresholded(self, x_phys) -> dict:
        """The dissipated power (this problem's convention) and the fluid fraction of the
        design thresholded at 1/2 (``rho >= 1/2`` fluid, else solid), at the last stage's
        ``q`` (a 0/1 design's power does not depend on ``q``): the grey rim's share of the
        raw figure. None where the thresholded design's Newton solve fails."""
        crisp = (np.asarray(x_phys, dtype=float) >= 0.5).astype(float)
        last, self._w = self._w, None
        try:
            w = self.state(crisp, self.final_q)
            power = float(self.measure(w, crisp, self.final_q))
        except fem.NewtonError:
            power = None
        finally:
            self._w = last
        return {"dissipated_power_thresholded": power,
                "fluid_fraction_thresholded": float(volume(crisp, self.weights))}

    def metrics(self, res, x_phys, seconds: float, solves0: int):
        """``(metrics, {"u": w})``: `final`'s, the grey level, the solves and Newton
        iterations per solve, seconds per design iteration (a resumed run's included)."""
        before = before_resume(res, "counters", {}) or {}
        solves = self.solves() - solves0 + before_resume(res, "fe_solves")
        newton = self.counts["newton_iterations"] + before.get("newton_iterations", 0)
        total = self.counts["solves"] + before.get("solves", 0)
        physics, w = self.final(x_phys)
        seconds = seconds + before_resume(res, "seconds", 0.0)
        metrics = physics | {
            "grey_level": grey_level(x_phys), "fe_solves": solves,
            "fe_solves_per_iteration": solves / max(res.evaluations, 1),
            "newton_iterations_per_solve": newton / max(total, 1),
            "seconds": seconds, "seconds_per_iteration": seconds / max(res.evaluations, 1),
            "solver": "lu", "filter": self.filter_name}
        return metrics, {"u": np.asarray(w)}

    def nodal_state(self, w) -> dict:
        """``{"velocity": (n_vertices, dim), "pressure": (n_vertices,)}`` for ``design.vtu``."""
        u, p = self.model.space.split(np.asarray(w))
        nv = self.mesh.p.shape[1]
        return {"velocity": np.array(u[:nv]), "pressure": np.array(p)}
