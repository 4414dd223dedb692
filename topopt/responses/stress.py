"""Element stresses of the elasticity model: von Mises, relaxation, p-norm aggregate.

The pieces of stress-constrained topology optimization (Le, Norato, Bruns,
Ha & Tortorelli 2010, "Stress-based topology optimization for continua",
Struct. Multidisc. Optim. 41; Holmberg, Torstenfelt & Klarbring 2013):

* `ElementStress`: the stress at each element's centroid, ``sigma_e = D
  B_e(centroid) u_e`` (Voigt vector), with ``D`` the solid material's
  Hooke matrix (modulus ``E0``) -- the stress the solid would carry at the
  element's strain. ``S_e = D B_e`` is computed once per element from the
  scikit-fem basis (any element shape: triangles, quadrilaterals,
  tetrahedra, hexahedra) and applied to the gathered element displacements.
  The von Mises stress is the quadratic form ``sigma_vm^2 = sigma^T V
  sigma``.
* `relaxed_stress`: the qp relaxation ``sigma_rel = x^q sigma_vm`` (Bruggi
  2008; Le et al. 2010: ``q = 0.5`` with SIMP ``p = 3``, our
  default). It removes the singular optima of void elements whose stress
  would otherwise stay bounded away from zero.
* `stress_pnorm`: the aggregate ``PN = (sum_e sigma_rel,e^P)^(1/P)``
  (Le et al. 2010), evaluated from ``sigma_vm^2`` so that its
  derivative stays finite where an element carries no stress.
* `AdaptiveNormalization`: ``c_k = alpha max(sigma_rel) / PN + (1 - alpha)
  c_(k-1)`` (Le et al. 2010), so that ``c PN`` approaches the
  true maximum as the design converges; the constraint is ``c PN <=
  sigma_allow``.

All of it is plain numpy on traced values (`topopt.ad` differentiates it in
every mode: reverse, forward, Hessian-vector products, nested).

Examples
--------
A bar under uniaxial tension ``sigma = 1`` has ``sigma_vm = 1`` in every element:

>>> import numpy as np
>>> from topopt import fem
>>> from topopt.responses.stress import ElementStress
>>> model = fem.elasticity(fem.rectangle(4, 1), nu=0.3).fix(
...     nodes=lambda x: np.isclose(x[0], 0), components=0).fix(nodes=(0, 0))
>>> f = model.traction(lambda x: np.isclose(x[0], 4), (1.0, 0.0))
>>> u = model.solve(np.ones(4), f)
>>> np.round(ElementStress(model, nu=0.3).von_mises(u), 8)
array([1., 1., 1., 1.])
"""

from __future__ import annotations

import numpy as np
import skfem
from skfem.models.elasticity import lame_parameters, linear_elasticity

from .. import ad
from .._validate import (check_array_range, check_choice, check_int, check_nonempty, check_positive,
                         check_range)
from ..fem import Model

__all__ = ["ElementStress", "relaxed_stress", "stress_pnorm", "AdaptiveNormalization",
           "von_mises_matrix"]

#: Relative difference allowed between the model's element matrix and the one
#: rebuilt from ``nu``, ``E0``, ``plane`` (rounding of two quadratures).
KE_RTOL = 1e-8


def von_mises_matrix(dim: int, plane: str = "stress") -> np.ndarray:
    """``V`` with ``sigma_vm^2 = sigma^T V sigma`` for the Voigt stress vector.

    Voigt orders: 2-D plane stress ``(xx, yy, xy)``; plane strain ``(xx, yy,
    zz, xy)`` (``sigma_zz`` of the plane-strain state enters the von Mises
    stress); 3-D ``(xx, yy, zz, yz, xz, xy)``. ``sigma_vm^2 = 1/2 [(s1 -
    s2)^2 + (s2 - s3)^2 + (s3 - s1)^2] + 3 (shear^2)``.

    Examples
    --------
    >>> from topopt.responses.stress import von_mises_matrix
    >>> von_mises_matrix(2)
    array([[ 1. , -0.5,  0. ],
           [-0.5,  1. ,  0. ],
           [ 0. ,  0. ,  3. ]])
    """
    check_int("dim", dim, 2, 3, what="space dimension")
    check_choice("plane", plane, ("stress", "strain"))
    normal = 1.5 * np.eye(3) - 0.5               # 1/2 sum of squared differences
    if dim == 2 and plane == "stress":
        normal, n_shear = normal[:2, :2], 1      # sigma_zz = 0
    else:
        n_shear = 1 if dim == 2 else 3
    k = normal.shape[0]
    V = np.zeros((k + n_shear, k + n_shear))
    V[:k, :k] = normal
    V[k:, k:] = 3.0 * np.eye(n_shear)
    return V


def _hooke(dim: int, plane: str, lam: float, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """``(D, T)``: Voigt stress ``D (T eps)`` from the engineering strain ``T eps``.

    ``T`` picks the strain components (xx, yy[, zz], shear) out of the
    displacement gradient ``G`` flattened row-wise: shears are ``G_ij + G_ji``.
    """
    if dim == 2:
        # engineering strains (xx, yy, gamma_xy) from G = [[g00, g01], [g10, g11]]
        T = np.array([[1, 0, 0, 0], [0, 0, 0, 1], [0, 1, 1, 0]], dtype=float)
        if plane == "stress":
            lam = 2 * lam * mu / (lam + 2 * mu)  # plane-stress Lame constant
            D = lam * np.outer([1, 1, 0], [1, 1, 0]) + mu * np.diag([2.0, 2.0, 1.0])
        else:                                    # plane strain: sigma_zz = lam tr(eps)
            D = np.array([[lam + 2 * mu, lam, 0], [lam, lam + 2 * mu, 0], [lam, lam, 0],
                          [0, 0, mu]])
        return D, T
    T = np.zeros((6, 9))
    for row, (i, j) in enumerate([(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)]):
        T[row, 3 * i + j] += 1.0
        if i != j:
            T[row, 3 * j + i] += 1.0
    normal = np.array([1, 1, 1, 0, 0, 0], dtype=float)
    D = lam * np.outer(normal, normal) + mu * np.diag([2.0, 2.0, 2.0, 1.0, 1.0, 1.0])
    return D, T


def _check_material(model: Model, nu: float, E0: float, plane: str) -> None:
    """`ValueError` unless `nu`, `E0`, `plane` rebuild `model`'s first element matrix."""
    nu = check_range("nu", nu, -1.0, 0.5, lo_open=True, hi_open=True, what="Poisson's ratio")
    E0 = check_positive("E0", E0, "Young's modulus")
    check_choice("plane", plane, ("stress", "strain"))
    lam, mu = lame_parameters(E0, nu)
    if model.mesh.p.shape[0] == 2 and plane == "stress":
        lam = 2 * lam * mu / (lam + 2 * mu)
    basis = model.basis
    mesh = basis.mesh
    one = type(mesh)(mesh.p[:, mesh.t[:, 0]], np.arange(mesh.t.shape[0])[:, None])
    Ke = linear_elasticity(lam, mu).elemental(skfem.Basis(one, basis.elem)).tolocal()[0]
    err = np.max(np.abs(Ke - model.Ke[0])) / np.max(np.abs(Ke))
    if not err <= KE_RTOL:
        raise ValueError(f"nu={nu:g}, E0={E0:g}, plane={plane!r} do not describe this model: "
                         f"its element matrix differs by {err:.2e} (relative); pass those "
                         "given to fem.elasticity")


class ElementStress:
    """Stresses at the element centroids of an elasticity `Model`.

    ``sigma_e = D B_e u_e`` with ``B_e`` the strain-displacement matrix at
    the element's centroid and ``D`` Hooke's matrix of the solid (modulus
    `E0`): the stress of the solid material at the element's strain. The
    interpolated stiffness does not enter; `relaxed_stress` scales it.

    Parameters
    ----------
    model : topopt.fem.Model
        An elasticity model (2-D or 3-D, any element shape).
    nu, E0, plane
        Those of `topopt.fem.elasticity` for this model. They are checked
        against the model's element matrix (rebuilt for its first element):
        a mismatch raises `ValueError`, never a silently wrong stress.

    Attributes
    ----------
    S : (n_el, n_stress, n_loc) array
        ``D B_e`` of each element.
    V : (n_stress, n_stress) array
        `von_mises_matrix`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.responses.stress import ElementStress
    >>> model = fem.elasticity(fem.rectangle(2, 1))
    >>> stress = ElementStress(model)
    >>> stress.S.shape
    (2, 3, 8)
    >>> ElementStress(model, nu=0.25)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: nu=0.25, E0=1, plane='stress' do not describe this model: ...
    """

    def __init__(self, model: Model, nu: float = 0.3, E0: float = 1.0, plane: str = "stress"):
        if not isinstance(model, Model) or model.components not in (2, 3) \
                or model.components != model.mesh.p.shape[0]:
            raise TypeError(f"model must be an elasticity Model (topopt.fem.elasticity), "
                            f"got {model!r}")
        self.nu = check_range("nu", nu, -1.0, 0.5, lo_open=True, hi_open=True,
                              what="Poisson's ratio")
        self.E0 = check_positive("E0", E0, "Young's modulus")
        self.plane = check_choice("plane", plane, ("stress", "strain"))
        self.model, self.dim = model, model.components
        lam, mu = lame_parameters(self.E0, self.nu)
        self._check_model(lam, mu)
        D, T = _hooke(self.dim, self.plane, lam, mu)
        self.S = np.einsum("sk,ekl->esl", D @ T, self._gradients())
        self.V = von_mises_matrix(self.dim, self.plane)
        self.element_dofs = np.ascontiguousarray(model.basis.element_dofs.T)

    def _gradients(self) -> np.ndarray:
        """``(n_el, dim*dim, n_loc)``: the flattened gradient of each local basis
        function at the element centroid."""
        basis = self.model.basis
        centroid = basis.elem.refdom.p.mean(axis=1)[:, None]
        at_centre = skfem.Basis(basis.mesh, basis.elem, quadrature=(centroid, np.ones(1)))
        grads = [phi[0].grad[..., 0] for phi in at_centre.basis]       # (dim, dim, n_el)
        return np.stack([g.reshape(self.dim * self.dim, -1).T for g in grads], axis=-1)

    def _check_model(self, lam: float, mu: float) -> None:
        _check_material(self.model, self.nu, self.E0, self.plane)

    @property
    def n_el(self) -> int:
        return self.S.shape[0]

    def _displacement(self, u):
        shape = np.shape(ad.value(u))
        if shape != (self.model.ndof,):
            raise ValueError(f"u has shape {shape}; expected ({self.model.ndof},), one "
                             "displacement per dof (one load case)")
        check_array_range("u", u)
        return u

    def components(self, u):
        """Voigt stresses ``(n_el, n_stress)`` at the centroids; differentiable in `u`."""
        u = self._displacement(u)
        return np.einsum("esl,el->es", self.S, u[self.element_dofs])

    def von_mises_squared(self, u):
        """``sigma_vm^2 = sigma^T V sigma`` per element; differentiable in `u`."""
        sigma = self.components(u)
        # V is positive semidefinite: a negative value is rounding (of ~1e-16 sigma^2)
        return np.maximum(np.einsum("es,st,et->e", sigma, self.V, sigma), 0.0)

    def von_mises(self, u):
        """The von Mises stress per element (``sqrt`` of `von_mises_squared`).

        Differentiable where it is positive; the aggregate `stress_pnorm`
        uses the square, which is smooth everywhere.
        """
        return np.sqrt(self.von_mises_squared(u))


def relaxed_stress(x_phys, von_mises, q: float = 0.5):
    """qp-relaxed stress ``x^q sigma_vm`` (Le et al. 2010; q < SIMP p).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.responses.stress import relaxed_stress
    >>> relaxed_stress(np.array([0.25, 1.0]), np.array([2.0, 2.0]), q=0.5)
    array([1., 2.])
    """
    q = check_range("q", q, 0.0, None, what="relaxation exponent, q < the SIMP exponent")
    _same(x_phys, von_mises)
    check_array_range("x_phys", x_phys, 0.0, 1.0, tol=1e-9, what="physical densities")
    check_array_range("von_mises", von_mises, 0.0, None)
    return np.maximum(x_phys, 0.0) ** q * von_mises


def _same(x_phys, other) -> None:
    a, b = np.shape(ad.value(x_phys)), np.shape(ad.value(other))
    if a != b or len(a) != 1:
        raise ValueError(f"x_phys has shape {a} and the stresses {b}; both must be "
                         "(n_el,), one value per element")
    check_nonempty("x_phys", x_phys)


def stress_pnorm(x_phys, von_mises_squared, q: float = 0.5, P: float = 8.0):
    """``PN = (sum_e (x_e^q sigma_vm,e)^P)^(1/P)`` from ``sigma_vm^2`` (Le et al. 2010).

    Written ``(sum_e x_e^(qP) (sigma_vm,e^2)^(P/2))^(1/P)``: smooth where an
    element has no stress (``P >= 2``) or no material (``qP >= 1``). The
    stresses are divided by the largest one, a constant (``PN`` is
    homogeneous of degree one), so large ``P`` or stresses do not overflow.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.responses.stress import stress_pnorm
    >>> round(float(stress_pnorm(np.ones(2), np.array([9.0, 16.0]), P=2.0)), 12)
    5.0
    """
    q = check_range("q", q, 0.0, None, what="relaxation exponent")
    P = check_range("P", P, 2.0, None, what="p-norm exponent")
    if q * P < 1.0:
        raise ValueError(f"q * P must be >= 1 (the aggregate is not differentiable at "
                         f"x = 0 otherwise), got q={q:g}, P={P:g}")
    _same(x_phys, von_mises_squared)
    check_array_range("x_phys", x_phys, 0.0, 1.0, tol=1e-9, what="physical densities")
    check_array_range("von_mises_squared", von_mises_squared, 0.0, None)
    x_phys = np.maximum(x_phys, 0.0)
    # the largest squared relaxed stress, a constant: PN = m (sum (s_e / m)^P)^(1/P)
    m2 = float(np.max(np.asarray(ad.value(x_phys)) ** (2 * q)
                      * np.asarray(ad.value(von_mises_squared))))
    if m2 == 0.0:
        raise ValueError("every relaxed stress is zero: the aggregate has no derivative")
    terms = x_phys ** (q * P) * (von_mises_squared / m2) ** (P / 2)
    return np.sqrt(m2) * np.sum(terms) ** (1.0 / P)


class AdaptiveNormalization:
    """``c_k = alpha max(sigma_rel) / PN + (1 - alpha) c_(k-1)`` (Le et al. 2010).

    The first `update` sets ``c = max / PN``. ``alpha = 1`` follows the
    current ratio; smaller values damp the oscillation the updates cause
    (Le et al. use ``alpha`` in ``(0, 1]``). ``c`` is a constant of each
    evaluation: its derivative is not taken.

    Examples
    --------
    >>> from topopt.responses.stress import AdaptiveNormalization
    >>> norm = AdaptiveNormalization(alpha=0.5)
    >>> norm.update(max_stress=2.0, pnorm=4.0), norm.update(max_stress=3.0, pnorm=3.0)
    (0.5, 0.75)
    """

    def __init__(self, alpha: float = 0.5):
        self.alpha = check_range("alpha", alpha, 0.0, 1.0, lo_open=True, what="damping")
        self.c: float | None = None

    def update(self, max_stress: float, pnorm: float) -> float:
        """Take the maximum and the aggregate of the latest design; returns ``c``."""
        max_stress = check_range("max_stress", ad.value(max_stress), 0.0, None)
        pnorm = check_positive("pnorm", ad.value(pnorm), "p-norm aggregate")
        ratio = max_stress / pnorm
        self.c = ratio if self.c is None else self.alpha * ratio + (1 - self.alpha) * self.c
        return self.c

