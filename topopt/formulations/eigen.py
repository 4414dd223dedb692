"""Maximum fundamental eigenfrequency with a volume constraint (Du & Olhoff 2007).

``x -> x_phys = F x`` (density or Helmholtz filter) ``-> E = simp(x_phys)``,
``m = du_olhoff_mass(x_phys)`` ``-> lambda_1 <= ... <= lambda_J`` of ``K(E)
phi = lambda M(m) phi`` (`topopt.fem.modal.eigenvalues`, a non-structural
mass in ``M0``) ``-> omega_1 = sqrt(lambda_1)``.

The fundamental eigenvalue is not differentiable where it is repeated, and
the optimum of a frequency maximisation often has ``lambda_1 = lambda_2``
(the modes switch during the run). So the problem is posed in the *bound
formulation* (Du & Olhoff 2007, eq. (7); Bendsoe & Sigmund 2003, Sec.
2.3.1): with an extra variable ``beta``::

    max beta   s.t.   beta <= lambda_j / lambda_ref   (j = 1 .. J),   v(x_phys) <= volfrac

MMA (NLopt LD_MMA) then sees J smooth constraints instead of a min of
eigenvalues; ``beta`` rises under the lowest ``J`` eigenvalues together,
whichever mode is the lowest. It is used rather than a KS aggregate because
it needs no aggregation parameter, it is exact at the optimum (the KS bound
underestimates ``lambda_1`` by up to ``log(J) / rho``) and its constraints
are each a simple eigenvalue's smooth function away from exact crossings.

A run (`EigenProblem.run`, the template of `DensityProblem`) reports
``omega1`` (final design), ``omega1_uniform``, ``omega1_stages`` (at the end
of each stage, with its filter), ``eigenvalues`` (the `n_modes` lowest,
final), ``volume``, ``grey_level``, ``eigensolves``, ``seconds``, ``solver``,
``filter``; its history's ``objective`` is ``omega1 / omega1_uniform``
(``lambda_1 / lambda_ref = beta - g_1``, exact), its ``beta`` the bound
variable. NLopt's MMA dual runs with ``LD_MMA`` (NLopt's default) unless
`mma_params` says otherwise: with `minimize`'s SLSQP dual a stage that starts
infeasible (a new filter radius lowers ``lambda_j`` under the last ``beta``)
ended at its first step with ``roundoff_limited``.
"""

from __future__ import annotations

import nlopt
import numpy as np

from .. import fem
from .._validate import check_array_range, check_int, check_range, check_real_array
from ..fem.models import _check_model
from ..design.passive import Passive
from ..fem.modal import ModalSystem, eigenvalues
from ..design.interpolation import DENSITY_TOL, simp
from ..design.measures import grey_level
from ..responses.structural import volume
from ..io.result import RunResult
from .base import DensityProblem, before_resume

__all__ = ["du_olhoff_mass", "EigenProblem", "eigen_summary"]

FILTERS = ("density", "helmholtz")


def du_olhoff_mass(x, threshold: float = 0.1, q: float = 6.0):
    """Mass coefficient ``m(x)`` that keeps ``E / m`` bounded in void (Du & Olhoff 2007).

    ``m = x`` for ``x > threshold`` and ``m = x^q / threshold^(q - 1)`` below
    (continuous at the threshold). With SIMP stiffness ``E = x^p`` and a
    linear mass, ``E / m = x^(p-1) -> 0`` in void: low-density regions carry
    mass without stiffness and give spurious localised modes of tiny
    frequency (Pedersen 2000). With ``q > p`` the ratio grows again as ``x ->
    0``. pyMOTO's eigenfrequency example uses the same two ranges (threshold
    0.1, ``q = 6``). Plain numpy operations: differentiable in every mode.

    Parameters
    ----------
    x : array_like
        Physical densities in [0, 1].
    threshold : float in (0, 1)
    q : float > 1
        Exponent of the low range.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.formulations.eigen import du_olhoff_mass
    >>> du_olhoff_mass(np.array([0.0, 0.05, 0.1, 0.5]))
    array([0.       , 0.0015625, 0.1      , 0.5      ])
    """
    threshold = check_range("threshold", threshold, 0.0, 1.0, lo_open=True, hi_open=True)
    q = check_range("q", q, 1.0, None, lo_open=True, what="exponent of the low range")
    check_array_range("x", x, 0.0, 1.0, tol=DENSITY_TOL, what="a density")
    return np.where(x > threshold, x, x ** q / threshold ** (q - 1))


class EigenProblem(DensityProblem):
    """Maximise the smallest eigenvalue (bound formulation) subject to a volume fraction.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity model with its supports.
    volfrac : float in (0, 1)
    rmin : float > 0
        Filter radius (length units); a stage may set another (``rmin=``).
    M0 : sparse (ndof, ndof), optional
        Non-structural mass (`topopt.fem.modal.point_mass`).
    n_modes : int >= 1
        ``J``, the eigenvalues bounded by ``beta``.
    penal, Emin : float
        SIMP stiffness ``E = Emin + (1 - Emin) x^penal``.
    mass_threshold, mass_exponent : float
        `du_olhoff_mass`'s parameters.
    rho0 : float > 0
        Mass density of the solid.
    filter : {"density", "helmholtz"}
    solver : str
        Direct solver backend of the shift-invert.
    beta_max : float > 1
        Upper bound of ``beta = lambda / lambda_ref``.
    passive : topopt.design.Passive, optional
        Passive solid/void elements, as in `topopt.formulations.ComplianceProblem`:
        the design is ``z = [x, beta]`` with ``x`` the ``n = passive.n_free``
        free variables, ``x_phys`` holds the fixed values and the result's
        ``x`` is the full element vector.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.eigen import EigenProblem
    >>> model = fem.elasticity(fem.rectangle(8, 2)).fix(nodes=lambda x: np.isclose(x[0], 0))
    >>> p = EigenProblem(model, volfrac=0.5, rmin=1.5, n_modes=2)
    >>> lam = p.eigenvalues(np.full(16, 0.5))
    >>> lam.shape, bool(lam[0] < lam[1])
    ((2,), True)
    """

    objective_name = "-beta"
    mma_defaults = {"dual_algorithm": nlopt.LD_MMA}

    def __init__(self, model: fem.Model, volfrac: float, rmin: float, M0=None,
                 n_modes: int = 3, penal: float = 3.0, Emin: float = 1e-9,
                 mass_threshold: float = 0.1, mass_exponent: float = 6.0, rho0: float = 1.0,
                 filter: str = "density", solver: str = "auto", beta_max: float = 20.0,
                 passive: Passive | None = None):
        _check_model(model)
        self.mass_threshold = check_range("mass_threshold", mass_threshold, 0.0, 1.0,
                                          lo_open=True, hi_open=True)
        self.mass_exponent = check_range("mass_exponent", mass_exponent, 1.0, None,
                                         lo_open=True)
        self.beta_max = check_range("beta_max", beta_max, 1.0, None, lo_open=True)
        self.n_modes = check_int("n_modes", n_modes, 1, None, what="bounded eigenvalues")
        self._modal_options = dict(n_modes=self.n_modes, rho0=rho0, M0=M0, solver=solver)
        self.lam_ref = None
        super().__init__(model, volfrac, rmin, penal=penal, filter=filter, Emin=Emin,
                         solver=solver, passive=passive)
        self.modal = self.system

    def _system(self, solver, solver_options):
        return ModalSystem(self.model, **self._modal_options)

    def x_phys(self, x, rmin: float | None = None):
        """Filtered densities (the stage's `rmin`, else the problem's), passive ones fixed."""
        return self.passive.fix(self.filtered(x, rmin))

    def coefficients(self, x_phys):
        """``(E, m)``: SIMP stiffness and `du_olhoff_mass` of the physical densities."""
        E = simp(x_phys, self.penal, self.Emin)
        m = du_olhoff_mass(np.maximum(x_phys, 0.0), self.mass_threshold, self.mass_exponent)
        return E, m

    def eigenvalues(self, x, rmin: float | None = None):
        """The `n_modes` smallest eigenvalues of design `x`; differentiable."""
        return eigenvalues(self.modal, *self.coefficients(self.x_phys(x, rmin)))

    def omega1(self, x_phys) -> float:
        """The fundamental angular frequency ``sqrt(lambda_1)`` of physical densities."""
        E, m = self.coefficients(check_real_array("x_phys", x_phys, allow_bool=True))
        return float(np.sqrt(eigenvalues(self.modal, E, m)[0]))

    def responses(self, z, rmin: float | None = None):
        """``(-beta, beta - lambda_j / lambda_ref (j = 1..J), v / volfrac - 1)`` for MMA."""
        x, beta = z[:-1], z[-1]
        x_phys = self.x_phys(x, rmin)
        lam = eigenvalues(self.modal, *self.coefficients(x_phys))
        bounds = [beta - lam[j] / self.lam_ref for j in range(self.n_modes)]
        return (-beta, *bounds, volume(x_phys, self.weights) / self.volfrac - 1.0)

    def solves(self) -> int:
        return self.modal.counts["eigensolves"]

    def announce(self, verbose: bool) -> None:
        """An eigenproblem run prints no solver line."""

    @property
    def constraint_names(self) -> list:
        return [f"beta - lambda_{j + 1} / lambda_ref" for j in range(self.n_modes)] + ["volume"]

    def bounds(self):
        """``0 <= x <= 1`` and ``0 <= beta <= beta_max``."""
        return np.zeros(self.n + 1), np.append(np.ones(self.n), self.beta_max)

    def prepare(self, x0, stages) -> np.ndarray:
        """``lambda_ref`` (the uniform design's ``lambda_1``, unless set); ``z0 = [x0, beta0]``."""
        self._lam0 = np.asarray(self.eigenvalues(np.full(self.n, self.volfrac)))
        if self.lam_ref is None:
            self.lam_ref = float(self._lam0[0])
        z0 = np.append(x0, float(np.min(self.eigenvalues(x0, _rmin(stages, 0))))
                       / self.lam_ref)
        return np.minimum(z0, self.bounds()[1])

    def final_design(self, res, stages):
        return (self.passive.expand(res.x[:-1]),
                np.asarray(self.x_phys(res.x[:-1], _rmin(stages, -1))))

    def metrics(self, res, x_phys, seconds: float, solves0: int):
        """``omega1``, ``omega1_uniform``, ``omega1_stages``, ``eigenvalues``, ... (module notes)."""
        lam = np.asarray(eigenvalues(self.modal, *self.coefficients(x_phys)))
        return {
            "omega1": float(np.sqrt(lam[0])),
            "omega1_uniform": float(np.sqrt(self._lam0[0])),
            "omega1_stages": [float(np.sqrt(self.lam_ref * (-s["fun"] - s["constraints"][0])))
                              for s in res.stages],
            "eigenvalues": [float(v) for v in lam],
            "volume": float(volume(x_phys, self.weights)),
            "grey_level": grey_level(x_phys),
            "eigensolves": self.solves() - solves0 + before_resume(res, "fe_solves"),
            "seconds": seconds + before_resume(res, "seconds", 0.0),
            "solver": self.modal.stiffness.solver,
            "filter": self.filter_name,
        }, {}

    def history(self, res) -> list:
        """``objective``: ``omega1 / omega1_uniform``; ``beta``: the bound variable."""
        return [h | {"beta": -h["objective"],
                     "objective": float(np.sqrt(max(-h["objective"] - h["constraints"][0],
                                                    0.0)))}
                for h in res.history]

    def mode_shape(self, x_phys) -> dict:
        """The first mode of physical densities `x_phys` as point data for ``design.vtu``."""
        E, m = self.coefficients(check_real_array("x_phys", x_phys, allow_bool=True))
        phi = self.modal.modes(E, m)[1][:, 0]
        return {"mode_1": phi[self.model.basis.nodal_dofs].T}


def _rmin(stages, i):
    """The filter radius stage `i` sets (None: the problem's)."""
    return None if not stages else stages[i].params.get("rmin")


def eigen_summary(result: RunResult) -> str:
    """The line an eigenfrequency problem script prints after its run."""
    stages = ", ".join(f"{w:.4g}" for w in result["omega1_stages"])
    return (f"omega1 {result['omega1']:.5g} (uniform {result['omega1_uniform']:.5g}; "
            f"stage ends {stages})  volume {result['volume']:.4f}  evaluations "
            f"{result.evaluations}  {result['seconds']:.1f} s")
