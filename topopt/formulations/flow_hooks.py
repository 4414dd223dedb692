"""The run's hooks of the flow problems (`FlowProblem`, `ConvectionProblem`): counts,
the solver line, the staged ending, the metrics, the vertex fields of ``design.vtu``."""

from __future__ import annotations

import numpy as np

from ..design.measures import grey_level
from ..fem import NewtonError
from ..responses.structural import volume
from ..optimize.ending import last_stage_ending
from ..optimize.progress import show
from .base import before_resume

__all__ = ["FlowRunHooks"]


class FlowRunHooks:
    """`topopt.formulations.base.DensityProblem.run`'s hooks for a problem whose states
    come from `topopt.flow.FlowStates` (``self.states``, ``self.counts``): Newton solves
    instead of factorizations, the Brinkman ``q`` of the last stage for the final design."""

    def solves(self) -> int:
        """The flow solves that ran Newton (a design solved again is the solver's cache's)."""
        return self.counts["solves"]

    def announce(self, verbose: bool) -> None:
        if verbose:
            kind = "Stokes" if self.model.rho_f == 0 else "Navier-Stokes"
            pair = "P2/P1" if self.mesh.t.shape[0] == self.mesh.dim() + 1 else "Q2/Q1"
            show(f"flow: {kind}, Taylor-Hood {pair}, {self.model.n} dofs, Newton with LU")

    def counters(self) -> dict:
        return dict(self.counts)

    def final_design(self, res, stages):
        """`DensityProblem.final_design`; with stages of several parameters (``q``, a
        projection's ``beta``) the ending is judged against the last stage's first
        evaluation (`topopt.optimize.ending.last_stage_ending`): the first stage's objective
        is another function, and a flow problem's uniform start is no design (a porous
        medium, infeasible under a pressure-drop limit)."""
        self.final_q = (stages[-1].params.get("q", self.model.q) if stages else self.model.q)
        if len({tuple(sorted(s.params.items())) for s in stages or ()}) > 1:
            last_stage_ending(res)
        return super().final_design(res, stages)

    def metrics(self, res, x_phys, seconds: float, solves0: int):
        """``(metrics, {"u": w})``: `final`'s, the grey level, the solves and Newton
        iterations per solve, seconds per design iteration (a resumed run's included)."""
        before = before_resume(res, "counters", {}) or {}
        solves = self.solves() - solves0 + before_resume(res, "fe_solves")
        newton = self.counts["newton_iterations"] + before.get("newton_iterations", 0)
        total = self.counts["solves"] + before.get("solves", 0)
        physics, w = self.final(x_phys)
        if self.objective_kind == "dissipated_power":
            physics |= self._thresholded(x_phys)
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
        (u, p), nv = self.model.space.split(np.asarray(w)), self.mesh.p.shape[1]
        return {"velocity": np.array(u[:nv]), "pressure": np.array(p)}

    def _thresholded(self, x_phys) -> dict:
        """The dissipated power (the problem's convention) and the fluid fraction of the
        design thresholded at 1/2 (``rho >= 1/2`` fluid, else solid), at the last stage's
        ``q`` (a 0/1 design's power does not depend on ``q``): the grey rim's share of the
        raw figure. None where the thresholded design's Newton solve fails."""
        crisp = (np.asarray(x_phys, dtype=float) >= 0.5).astype(float)
        last = self.states.last
        try:
            w = self.states.solve(crisp, self.final_q, warm=False)
            power = float(self.measure(w, crisp, self.final_q))
        except NewtonError:
            power = None
        finally:
            self.states.last = last
        return {"dissipated_power_thresholded": power,
                "fluid_fraction_thresholded": float(volume(crisp, self.weights))}
