"""Minimum dynamic compliance under a time-harmonic load, with a volume constraint.

``x -> x_phys = F x`` (density or Helmholtz filter, optionally projected)
``-> E = simp(x_phys)``, ``rho = m(x_phys)`` ``-> Z u = f`` with ``Z = (1 + i
omega beta) K(E) - (omega^2 - i omega alpha) M(rho)`` (Rayleigh damping;
`topopt.fem.HarmonicSystem`) ``-> c_dyn = |f^H u|``
(`topopt.responses.dynamic_compliance`), minimised by MMA subject to
``v(x_phys) <= volfrac`` (Silva, Neves & Lenzi 2019, eq. (5)).

The mass interpolation ``m`` is ``"simp"`` -- the stiffness's own ``Emin +
(1 - Emin) x^penal``, as pyMOTO's ``ex_dynamic_compliance.py`` uses, so that
``E / m = 1`` in every element and void has no spurious local modes -- or
``"du_olhoff"`` (`du_olhoff_mass`: ``m = x`` above 0.1, a mass proportional
to the material). The gradient is the complex adjoint of `topopt.fem.solve`.
"""

from __future__ import annotations

import numpy as np

from .. import fem
from .._validate import check_choice, check_load, check_positive, check_range, check_real_array
from ..design.interpolation import simp
from ..design.passive import Passive
from ..fem.harmonic import HarmonicSystem
from ..fem.modal import ModalSystem, eigenvalues
from ..fem.models import _check_model
from ..responses.dynamic import dynamic_compliance
from ..responses.structural import volume
from .base import DensityProblem, StartScaled
from .eigen import du_olhoff_mass

__all__ = ["DynamicComplianceProblem", "MASS_INTERPOLATIONS"]

MASS_INTERPOLATIONS = ("simp", "du_olhoff")


class DynamicComplianceProblem(StartScaled, DensityProblem):
    """Minimum dynamic compliance ``|f^H u|`` at the angular frequency `omega`.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity model with its supports.
    f : (ndof,) array
        Load amplitude (real).
    omega : float >= 0
        Angular frequency of the load (0: static compliance).
    volfrac, rmin, penal, filter, Emin, eta, passive
        The density chain of `topopt.formulations.base.DensityProblem`.
    alpha, beta : float >= 0
        Rayleigh damping ``C = alpha M + beta K``.
    rho0 : float > 0
        Mass density of the solid.
    mass : {"simp", "du_olhoff"}
        Mass interpolation (module notes).
    solver : {"auto", "umfpack", "superlu"}

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.dynamic import DynamicComplianceProblem
    >>> model = fem.elasticity(fem.rectangle(8, 4)).fix(nodes=lambda x: x[0] == 0)
    >>> f = model.point_load((8, 2), (0, -1))
    >>> static = DynamicComplianceProblem(model, f, 0.0, volfrac=0.5, rmin=1.5)
    >>> dynamic = DynamicComplianceProblem(model, f, 0.02, volfrac=0.5, rmin=1.5)
    >>> x = np.full(32, 0.5)
    >>> bool(dynamic.dynamic_compliance(x) > static.dynamic_compliance(x))
    True
    """

    mma_defaults = {"inner_maxeval": 1, "dual_ftol_rel": 1e-10}
    objective_name = "dynamic compliance"

    def __init__(self, model: fem.Model, f, omega: float, volfrac: float, rmin: float,
                 alpha: float = 0.0, beta: float = 0.0, rho0: float = 1.0,
                 mass: str = "simp", penal: float = 3.0, filter: str = "density",
                 Emin: float = 1e-9, solver: str = "auto", eta: float = 0.5,
                 passive: Passive | None = None):
        _check_model(model)
        f = np.asarray(check_load("f", f, model.ndof, real=True), dtype=float)
        if f.ndim != 1 or not np.any(f):
            raise ValueError("f must be one nonzero load vector of shape (ndof,)")
        self.mass = check_choice("mass", mass, MASS_INTERPOLATIONS)
        self.omega = check_range("omega", omega, 0.0, None, what="angular frequency")
        self.damping = (check_range("alpha", alpha, 0.0, None), check_range("beta", beta, 0.0, None))
        self.rho0 = check_positive("rho0", rho0, "mass density")
        self.f, self.c0, self._modal = f, None, None
        super().__init__(model, volfrac, rmin, penal=penal, filter=filter, Emin=Emin,
                         solver=solver, eta=eta, passive=passive)

    def _system(self, solver, solver_options):
        return HarmonicSystem(self.model, self.omega, *self.damping, rho0=self.rho0,
                              solver=solver)

    def coefficients(self, x_phys):
        """``(E, m)``: SIMP stiffness and the mass interpolation of physical densities."""
        E = simp(x_phys, self.penal, self.Emin)
        if self.mass == "simp":
            return E, E
        return E, du_olhoff_mass(np.maximum(x_phys, 0.0))

    def amplitude(self, x_phys):
        """The complex response ``u`` of physical densities; differentiable."""
        return self.system.solve(*self.coefficients(x_phys), self.f)

    def dynamic_compliance(self, x, beta: float | None = None):
        """``c_dyn(x) = |f^H Z(x_phys)^{-1} f|``; differentiable."""
        return dynamic_compliance(self.amplitude(self.x_phys(x, beta)), self.f)

    def responses(self, x, beta: float | None = None):
        """``(c_dyn / c0, v / volfrac - 1)``: scaled objective and constraint for MMA."""
        x_phys = self.x_phys(x, beta)
        c = dynamic_compliance(self.amplitude(x_phys), self.f)
        return c / self.c0, volume(x_phys, self.weights) / self.volfrac - 1.0

    def eigenfrequencies(self, x_phys, n_modes: int = 3) -> np.ndarray:
        """The `n_modes` lowest undamped angular frequencies ``omega_j`` of `x_phys`."""
        if self._modal is None or self._modal.n_modes != n_modes:
            self._modal = ModalSystem(self.model, n_modes=n_modes, rho0=self.rho0)
        E, m = self.coefficients(check_real_array("x_phys", x_phys, allow_bool=True))
        return np.sqrt(np.asarray(eigenvalues(self._modal, E, m)))

    def frequency_response(self, x_phys, omegas) -> np.ndarray:
        """``|f^H u|`` of physical densities at each frequency of `omegas` (same damping)."""
        omegas = check_real_array("omegas", omegas, allow_bool=True)
        if omegas.ndim != 1 or not np.all(np.isfinite(omegas)) or np.any(omegas < 0):
            raise ValueError("omegas must be a 1-D array of finite frequencies >= 0")
        E, m = self.coefficients(check_real_array("x_phys", x_phys, allow_bool=True))
        return np.array([float(dynamic_compliance(HarmonicSystem(
            self.model, w, *self.damping, rho0=self.rho0, solver=self.system.solver).solve(
                E, m, self.f), self.f)) for w in omegas])

    # ----------------------------------------------------------- the run's hooks
    def start_objective(self, x0):
        """The dynamic compliance: its start value is ``c0`` (`StartScaled`)."""
        return self.dynamic_compliance(x0)

    def final(self, x_phys):
        """``dynamic_compliance``, ``volume``, ``omega``, ``eigenfrequencies`` (3 lowest); ``u``.

        ``u`` is the complex amplitude of the final design (``result.arrays["u"]``).
        """
        u = np.asarray(self.amplitude(x_phys))
        return {"dynamic_compliance": float(dynamic_compliance(u, self.f)),
                "volume": float(volume(x_phys, self.weights)), "omega": self.omega,
                "eigenfrequencies": [float(w) for w in self.eigenfrequencies(x_phys)]}, u

    def run_metrics(self) -> dict:
        return {"mass_interpolation": self.mass, "alpha": self.damping[0],
                "beta": self.damping[1]}
