"""The flow state of a sequence of designs: one model per ``q``, warm starts, counts."""

from __future__ import annotations

import time

import numpy as np

from .. import ad, fem
from .model import FlowModel

__all__ = ["FlowStates"]


class FlowStates:
    """Solve ``R(w, rho) = 0`` for design after design (an optimization run's states).

    Stokes solves start from the Dirichlet data (one Newton step: the
    problem is linear). Navier-Stokes solves start from the last converged
    state (a warm start); a cold start -- the first solve, or a warm start
    whose Newton failed -- climbs the convective term's ``t`` through
    `steps`. The models of several Brinkman convexities ``q`` (continuation)
    are kept, sharing the mesh data (`FlowModel.with_parameters`).

    Parameters
    ----------
    model : topopt.flow.FlowModel
        The flow; its ``q`` is the default.
    steps : sequence of float, optional
        Continuation of a cold Navier-Stokes solve (default ``(0.25, 0.5, 1.0)``).
    newton : dict, optional
        Options of `topopt.fem.solve_nonlinear` (``rtol``, ``maxiter``, ...).

    Attributes
    ----------
    counts : dict
        ``solves`` (Newton solves that ran; a design solved again is answered
        by `solve_nonlinear`'s cache), ``newton_iterations``, ``newton_seconds``.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt.flow import FlowStates, navier_stokes, parabolic_inlet
    >>> mesh = skfem.MeshTri.init_tensor(np.linspace(0, 2, 9), np.linspace(0, 1, 5))
    >>> model = navier_stokes(mesh, mu=0.1, dirichlet=[
    ...     (lambda x: (x[1] < 1e-9) | (x[1] > 1 - 1e-9), 0.0),
    ...     (lambda x: x[0] < 1e-9, parabolic_inlet([0, 0.5], 1.0))])
    >>> states = FlowStates(model)
    >>> w = states.solve(np.ones(mesh.t.shape[1]))
    >>> states.counts["solves"], states.counts["newton_iterations"]   # Poiseuille: 1 per step
    (1, 3)
    """

    def __init__(self, model: FlowModel, steps=None, newton: dict | None = None):
        if not isinstance(model, FlowModel):
            raise TypeError(f"model must be a topopt.flow.FlowModel, got {type(model).__name__}")
        self.base = model
        self.steps = (0.25, 0.5, 1.0) if steps is None else tuple(float(s) for s in steps)
        self.newton = dict(newton or {})
        if "monitor" in self.newton:
            raise ValueError("newton: 'monitor' is FlowStates' own (it counts the iterations)")
        self.counts = {"solves": 0, "newton_iterations": 0, "newton_seconds": 0.0}
        self._models, self.last, self._ran = {}, None, False

    def model(self, q: float | None = None) -> FlowModel:
        """The model with Brinkman convexity `q` (the base model's by default), kept."""
        q = self.base.q if q is None else float(q)
        if q not in self._models:
            self._models[q] = self.base if q == self.base.q else self.base.with_parameters(q=q)
        return self._models[q]

    def _monitor(self, t, it, norm):
        if it > 0:
            self.counts["newton_iterations"] += 1
        elif not self._ran:
            self._ran = True
            self.counts["solves"] += 1

    def _newton(self, model, rho, w0, steps):
        self._ran = False
        kw = dict(self.newton, monitor=self._monitor)
        if steps is not None:
            kw["steps"] = steps
        return fem.solve_nonlinear(model, rho, w0, **kw)

    def solve(self, rho, q: float | None = None, warm: bool = True):
        """``w = [u, p]`` of the design `rho` (traced or plain) at convexity `q`; `warm`
        False forgets the last state first (a cold start)."""
        model = self.model(q)
        if not warm:
            self.last = None
        t0 = time.perf_counter()
        if model.rho_f == 0:
            w = self._newton(model, rho, model.initial_state(), None)
        elif self.last is not None:
            try:
                w = self._newton(model, rho, self.last, (1.0,))
            except fem.NewtonError:
                w = self._newton(model, rho, model.initial_state(), self.steps)
        else:
            w = self._newton(model, rho, model.initial_state(), self.steps)
        self.last = np.array(ad.value(w), dtype=float)
        self.counts["newton_seconds"] += time.perf_counter() - t0
        return w
