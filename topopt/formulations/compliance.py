"""Minimum compliance with a volume constraint: the chain of top88, on any mesh.

``x -> x_tilde = F x`` (density or Helmholtz filter) ``-> x_phys`` (optionally
the tanh projection) ``-> E = simp(x_phys)`` ``-> u = K(E)^{-1} f`` ``-> c =
f^T u``, minimised by MMA subject to ``v(x_phys) <= volfrac`` (top88 eq. (1)).
A problem script sets up the mesh, supports and loads, builds the problem and
calls `topopt.io.folder.run_compliance` (which writes the run folder); its
command line is `topopt.cli.options.compliance_options`.
"""

from __future__ import annotations

import numpy as np

from .. import fem
from .._validate import check_load, check_real_array
from ..design.passive import Passive
from ..design.interpolation import simp
from ..responses.structural import compliance, volume
from ..fem.models import _check_model
from .base import DensityProblem, StartScaled

__all__ = ["ComplianceProblem"]


class ComplianceProblem(StartScaled, DensityProblem):
    """Minimum compliance subject to a volume fraction.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity (or heat) model with its supports.
    f : (ndof,) or (ndof, n_loads) array
        Load vector(s); several load cases sum their compliances.
    volfrac, rmin, penal, filter, Emin, solver, eta, solver_options, passive
        The density chain of `topopt.formulations.base.DensityProblem`
        (top88: ``rmin`` in elements for unit elements, ``Emin = 1e-9``).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.compliance import ComplianceProblem
    >>> model = fem.elasticity(fem.rectangle(6, 2)).fix(nodes=lambda x: x[0] == 0)
    >>> f = model.point_load((6, 0), (0, -1))
    >>> p = ComplianceProblem(model, f, volfrac=0.5, rmin=1.5)
    >>> round(float(p.compliance(np.full(12, 0.5))), 3)
    833.599
    """

    #: Svanberg's classic MMA, one FE solve per design iteration (see `run`).
    mma_defaults = {"inner_maxeval": 1, "dual_ftol_rel": 1e-10}
    objective_name = "compliance"

    def __init__(self, model: fem.Model, f, volfrac: float, rmin: float, penal: float = 3.0,
                 filter: str = "density", Emin: float = 1e-9, solver: str = "auto",
                 eta: float = 0.5, solver_options: dict | None = None,
                 passive: Passive | None = None):
        _check_model(model)
        f = np.asarray(check_load("f", f, model.ndof, real=True), dtype=float)
        if not np.any(f):
            raise ValueError("the load vector f is zero")
        self.f, self.c0 = f, None
        super().__init__(model, volfrac, rmin, penal=penal, filter=filter, Emin=Emin,
                         solver=solver, eta=eta, solver_options=solver_options,
                         passive=passive)

    def compliance(self, x, beta: float | None = None):
        """``c(x) = f^T K(E(x_phys))^{-1} f`` (top88 eq. (2)); differentiable."""
        return compliance(fem.solve(self.system, self.stiffness(x, beta), self.f), self.f)

    def displacement(self, x_phys) -> dict:
        """Nodal state of the physical densities `x_phys`, for ``design.vtu`` (`nodal_state`)."""
        x_phys = check_real_array("x_phys", x_phys, allow_bool=True)
        u = fem.solve(self.system, simp(x_phys, self.penal, self.Emin), self.f)
        return self.nodal_state(u)

    def responses(self, x, beta: float | None = None):
        """``(c / c0, v / volfrac - 1)``: scaled objective and constraint for MMA.

        A tuple, not a stacked array: the constraint's gradient then skips the
        FE adjoint (its cotangent into the solve is None, not zeros).
        """
        x_phys = self.x_phys(x, beta)
        c = compliance(fem.solve(self.system, simp(x_phys, self.penal, self.Emin), self.f),
                       self.f)
        v = volume(x_phys, self.weights)
        return c / self.c0, v / self.volfrac - 1.0

    # ----------------------------------------------------------- the run's hooks
    def final(self, x_phys):
        """Compliance and volume of the final design, its state solved once.

        The run's metrics (`DensityProblem.run`): ``compliance``, ``volume``,
        ``grey_level``, ``fe_solves``, ``fe_solves_per_iteration``,
        ``seconds``, ``solver``, ``filter`` (and with an iterative solver
        ``cg_iterations_per_solve``, ``cg_iterations_max``). MMA runs without
        inner iterations (``inner_maxeval=1``: Svanberg's classic MMA) unless
        `mma_params` says otherwise; on the MBB beam and the cantilever it
        reaches the same compliance as the conservative (GCMMA-like) default
        of `minimize`, which harder problems need. The dual is solved to
        ``dual_ftol_rel=1e-10`` (8 ms instead of 13.5 ms per step at 19 200
        variables, the same designs to 6 digits).
        """
        u = fem.solve(self.system, simp(x_phys, self.penal, self.Emin), self.f)
        return {"compliance": float(compliance(u, self.f)),
                "volume": float(volume(x_phys, self.weights))}, u
