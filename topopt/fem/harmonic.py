"""Forced vibration under a time-harmonic load: the dynamic stiffness ``Z`` and its solve.

A load ``f e^{i omega t}`` on a structure with stiffness ``K(E) = sum_e E_e
K_e``, consistent mass ``M(rho) = sum_e rho_e M_e`` (`element_mass`) and
Rayleigh damping ``C = alpha M + beta K`` has the steady response ``u
e^{i omega t}`` with (Silva, Neves & Lenzi 2019, eq. (2))::

    Z u = f,   Z = K - omega^2 M + i omega C
             = (1 + i omega beta) K(E) - (omega^2 - i omega alpha) M(rho).

``Z`` is complex symmetric (``Z^T = Z``), not Hermitian, and indefinite
above the first resonance. It is a `LinearSystem` whose elements are the
design elements twice -- the first ``n_el`` carry ``K_e``, the next
``n_el`` carry ``M_e`` -- with the complex coefficients::

    a = [(1 + i omega beta) E,  -(omega^2 - i omega alpha) rho]

so `topopt.fem.solve` gives ``u`` and, by its rules, the complex adjoint:
for a real ``J(u)``, ``lambda = Z^{-H} dJ/du`` (one solve with ``Z``'s
factorization, conjugate-transposed) and the cotangent of ``a_e`` is
``-conj(lambda_e^H K_e u_e)`` with ``K_e`` the element's stiffness or mass
matrix; the chain rule through `coefficients` turns it into ``dJ/dE`` and
``dJ/drho``. Forward, Hessian-vector and nested derivatives follow from
the same rules.

A direct backend factorizes ``Z``: ``"auto"`` is UMFPACK (cvxopt) when
installed, else SuperLU in its symmetric mode (``Z^T = Z``: diagonal
pivots, and the adjoint solve is ``conj(Z^{-1} conj(g))``), which agreed
with UMFPACK to 1e-10 above resonance (tests/test_dynamic.py) but took 4.5 s
per solve against UMFPACK's 0.25 s on 80 x 40 elements (6 560 dofs).
CHOLMOD and the CG backends take only real positive definite matrices and
are refused.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from .. import ad
from .._validate import check_finite_values, check_range, check_type
from .adjoint import solve
from .modal import element_mass
from .models import Model
from .system import LinearSystem

__all__ = ["HarmonicSystem"]


class HarmonicSystem(LinearSystem):
    """The dynamic stiffness ``Z = (1 + i w beta) K(E) - (w^2 - i w alpha) M(rho)`` of a model.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity (or heat) model with its supports; springs of ``model.K0``
        enter ``Z`` undamped.
    omega : float >= 0
        Angular frequency of the load (rad per unit time).
    alpha, beta : float >= 0
        Rayleigh damping ``C = alpha M + beta K``.
    rho0 : float > 0
        Mass density at unit mass coefficient (`element_mass`).
    solver : {"auto", "umfpack", "superlu"}
        Direct backend for the complex matrix.

    Attributes
    ----------
    n_design : int
        Design elements (``n_el`` of the `LinearSystem` is twice that).

    Examples
    --------
    A fixed-free bar of 20 unit elements (E = rho = 1, nu = 0, no damping)
    pulled at its end: ``f^T u = tan(omega L) / omega`` (axial waves of speed
    1; 20, 31.15, -21.85), above the first resonance ``omega_1 = pi / 40``
    the response is out of phase.

    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.fem.harmonic import HarmonicSystem
    >>> model = fem.elasticity(fem.rectangle(20, 1), nu=0.0).fix(
    ...     nodes=lambda x: np.isclose(x[0], 0)).fix(nodes=lambda x: x[0] >= 0, components=1)
    >>> f = model.point_load((20, 0), (0.5, 0)) + model.point_load((20, 1), (0.5, 0))
    >>> ones = np.ones(20)
    >>> [round(float(np.real(f @ HarmonicSystem(model, w).solve(ones, ones, f))), 2)
    ...  for w in (0.0, 0.05, 0.1)]
    [20.0, 31.14, -21.91]
    """

    def __init__(self, model: Model, omega: float, alpha: float = 0.0, beta: float = 0.0,
                 rho0: float = 1.0, solver: str = "auto"):
        check_type("model", model, Model, "a topopt.fem.Model (fem.elasticity or fem.heat)")
        self.omega = check_range("omega", omega, 0.0, None, what="angular frequency")
        self.alpha = check_range("alpha", alpha, 0.0, None, what="mass-proportional damping")
        self.beta = check_range("beta", beta, 0.0, None, what="stiffness-proportional damping")
        if solver not in ("auto", "umfpack", "superlu"):
            raise ValueError(f"solver must be 'auto', 'umfpack' or 'superlu' (a direct "
                             f"backend for the complex dynamic stiffness), got {solver!r}")
        n = model.n_el
        Ke, Me = (np.broadcast_to(k, (n,) + np.shape(k)[-2:])
                  for k in (model.Ke, element_mass(model, rho0)))
        edofs = model.basis.element_dofs.T
        # a complex constant part: the system is complex whatever its coefficients
        K0 = sps.csr_matrix((model.ndof, model.ndof), dtype=complex)
        if model.K0 is not None:
            K0 = K0 + model.K0
        super().__init__(np.vstack([edofs, edofs]), np.concatenate([Ke, Me]), model.ndof,
                         model.fixed, K0=K0, symmetric=True, solver=solver,
                         requires_support=self.omega == 0.0,
                         solver_options={"reanalysis": False})
        self.n_design = n

    def __repr__(self):
        return (f"HarmonicSystem({self.n_design} elements, {self.free.size} free dofs, "
                f"omega={self.omega:g}, solver={self.solver!r})")

    def coefficients(self, E, rho):
        """``a = [(1 + i w beta) E, -(w^2 - i w alpha) rho]``; differentiable in `E` and `rho`."""
        for name, v in (("E", E), ("rho", rho)):
            value = np.asarray(ad.value(v))
            if value.shape != (self.n_design,) or np.iscomplexobj(value):
                raise ValueError(f"{name} must be a real vector of shape ({self.n_design},), "
                                 f"one entry per element; got {value.dtype} {value.shape}")
            check_finite_values(name, value, "element coefficients must be finite",
                                ("element",))
        w = self.omega
        return np.concatenate([(1.0 + 1j * w * self.beta) * E,
                               -(w ** 2 - 1j * w * self.alpha) * rho])

    def solve(self, E, rho, f):
        """The complex amplitude ``u = Z(E, rho)^{-1} f``; differentiable in `E`, `rho`, `f`."""
        return solve(self, self.coefficients(E, rho), f)
