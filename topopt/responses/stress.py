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

import dataclasses
from typing import Sequence

import numpy as np
import skfem
from skfem.models.elasticity import lame_parameters, linear_elasticity

from .. import ad
from .._validate import (check_array_range, check_choice, check_int, check_load, check_positive,
                         check_range)
from ..design.passive import Passive
from ..fem import Model

__all__ = ["ElementStress", "relaxed_stress", "stress_pnorm", "AdaptiveNormalization",
           "MinimumVolumeStress", "von_mises_matrix"]

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
        if self.dim == 2 and self.plane == "stress":
            lam = 2 * lam * mu / (lam + 2 * mu)
        basis = self.model.basis
        mesh = basis.mesh
        one = type(mesh)(mesh.p[:, mesh.t[:, 0]], np.arange(mesh.t.shape[0])[:, None])
        Ke = linear_elasticity(lam, mu).elemental(skfem.Basis(one, basis.elem)).tolocal()[0]
        err = np.max(np.abs(Ke - self.model.Ke[0])) / np.max(np.abs(Ke))
        if not err <= KE_RTOL:
            raise ValueError(f"nu={self.nu:g}, E0={self.E0:g}, plane={self.plane!r} do not "
                             f"describe this model: its element matrix differs by {err:.2e} "
                             "(relative); pass those given to fem.elasticity")

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


def _exponent(name: str, value, lo: float, what: str) -> float:
    return check_range(name, value, lo, None, what=what)


def relaxed_stress(x_phys, von_mises, q: float = 0.5):
    """qp-relaxed stress ``x^q sigma_vm`` (Le et al. 2010; q < SIMP p).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.responses.stress import relaxed_stress
    >>> relaxed_stress(np.array([0.25, 1.0]), np.array([2.0, 2.0]), q=0.5)
    array([1., 2.])
    """
    q = _exponent("q", q, 0.0, "relaxation exponent, q < the SIMP exponent")
    _same(x_phys, von_mises)
    check_array_range("x_phys", x_phys, 0.0, 1.0, tol=1e-9, what="physical densities")
    check_array_range("von_mises", von_mises, 0.0, None)
    return np.maximum(x_phys, 0.0) ** q * von_mises


def _same(x_phys, other) -> None:
    a, b = np.shape(ad.value(x_phys)), np.shape(ad.value(other))
    if a != b or len(a) != 1:
        raise ValueError(f"x_phys has shape {a} and the stresses {b}; both must be "
                         "(n_el,), one value per element")


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
    q = _exponent("q", q, 0.0, "relaxation exponent")
    P = _exponent("P", P, 2.0, "p-norm exponent")
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


class MinimumVolumeStress:
    """Minimum volume subject to the normalised stress aggregate (Le et al. 2010).

    ``min v(x_phys)`` subject to ``c PN(x_phys) / sigma_allow - 1 <= 0``:
    ``x_phys`` the filtered (density filter, radius `rmin`), optionally
    projected (``beta``) design, stiffness ``simp(x_phys, penal, Emin)``,
    `stress_pnorm` of the qp-relaxed von Mises stress, ``c`` the
    `AdaptiveNormalization`.

    ``c`` changes between MMA runs, never inside one: NLopt's MMA keeps the
    constraint values of its best design, and a constraint redefined under
    it stalls the run (``roundoff_limited``). A run is therefore a sequence
    of `topopt.optimize.Stage` blocks; the first evaluation of each block
    takes the maximum and ``PN`` of its starting design (the previous block's
    result) into ``c`` (Le et al. update it every iteration). Blocks may also
    raise the projection sharpness ``beta``.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity model with its supports.
    f : (ndof,) array
        Load vector.
    sigma_allow : float > 0
        Allowed von Mises stress.
    rmin : float > 0
        Density-filter radius.
    penal, Emin : float
        SIMP exponent (>= 1) and void stiffness.
    q, P, alpha : float
        Relaxation exponent (`relaxed_stress`), p-norm exponent
        (`stress_pnorm`), damping of `AdaptiveNormalization`.
    nu, E0, plane
        Those of the model (`ElementStress` checks them).
    eta : float
        Projection threshold.
    solver : str
        Linear-solver backend.
    passive : topopt.design.Passive, optional
        Passive solid/void elements, as in `topopt.formulations.ComplianceProblem`:
        MMA sees the ``n = passive.n_free`` free variables, ``x_phys`` holds
        the fixed values (their stresses count in ``PN``) and `run`'s result
        ``x`` is the full element vector.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.fem.shapes import l_shape
    >>> from topopt.responses.stress import MinimumVolumeStress
    >>> model = fem.elasticity(l_shape(8, 4)).fix(nodes=lambda x: np.isclose(x[1], 8))
    >>> f = model.point_load((8, 4), (0.0, -1.0))
    >>> problem = MinimumVolumeStress(model, f, sigma_allow=2.0, rmin=1.5)
    >>> volume, g = problem.responses(np.ones(model.n_el))
    >>> round(float(volume), 12), bool(g < 0)
    (1.0, True)
    """

    def __init__(self, model: Model, f, sigma_allow: float, rmin: float, penal: float = 3.0,
                 Emin: float = 1e-9, q: float = 0.5, P: float = 8.0, alpha: float = 0.5,
                 nu: float = 0.3, E0: float = 1.0, plane: str = "stress", eta: float = 0.5,
                 solver: str = "auto", passive: Passive | None = None):
        from ..fem import element_volumes
        from ..design.filters import DensityFilter
        self.sigma_allow = check_positive("sigma_allow", sigma_allow, "allowed stress")
        self.rmin = check_positive("rmin", rmin, "filter radius")
        self.penal = check_range("penal", penal, 1.0, None, what="SIMP exponent")
        self.Emin = check_range("Emin", Emin, 0.0, 1.0, hi_open=True, what="void stiffness")
        self.q = _exponent("q", q, 0.0, "relaxation exponent")
        if self.q >= self.penal:
            raise ValueError(f"q must be < penal (qp relaxation), got q={q:g}, penal={penal:g}")
        self.P = _exponent("P", P, 2.0, "p-norm exponent")
        self.eta = check_range("eta", eta, 0.0, 1.0, what="projection threshold")
        f = np.asarray(check_load("f", f, model.ndof, real=True), dtype=float)
        if f.shape != (model.ndof,) or not np.any(f):
            raise ValueError(f"f must be a nonzero load vector of shape ({model.ndof},), "
                             f"got shape {f.shape}")
        self.stress = ElementStress(model, nu=nu, E0=E0, plane=plane)
        self.model, self.f = model, f
        self.norm = AdaptiveNormalization(alpha)
        self.filter = DensityFilter(model.mesh, self.rmin)
        self.system = model.system(solver)
        self.weights = element_volumes(model.mesh)
        self.passive = Passive.of(passive, model.n_el)
        self.n_el = model.n_el
        self.n = self.passive.n_free               # design variables of MMA
        self._block = None

    def check_design(self, x, name: str = "the design vector") -> np.ndarray:
        """The free design variables of `x` (``(n,)``, or the full element vector)."""
        x = np.asarray(x, dtype=float)
        if x.shape not in ((self.n,), (self.n_el,)):
            full = f" or ({self.n_el},), one value per element" if self.passive.any else ""
            raise ValueError(f"{name} has shape {x.shape}; expected ({self.n},){full}")
        return self.passive.free_design(x)

    def x_phys(self, x, beta: float | None = None):
        """Filtered (and, with `beta`, projected) densities, passive ones fixed; differentiable.

        `x` is the free variables or the full element vector (see
        `topopt.design.Passive.elements`).
        """
        from ..design.interpolation import project
        x_tilde = self.filter(self.passive.elements(x))
        return self.passive.fix(x_tilde if beta is None else project(x_tilde, beta, self.eta))

    def analysis(self, x, beta: float | None = None):
        """``(x_phys, u, sigma_vm^2)`` of the design `x`; differentiable."""
        from ..fem import solve
        from ..design.interpolation import simp
        x_phys = self.x_phys(x, beta)
        u = solve(self.system, simp(x_phys, self.penal, self.Emin), self.f)
        return x_phys, u, self.stress.von_mises_squared(u)

    def relaxed(self, x, beta: float | None = None) -> np.ndarray:
        """The relaxed von Mises stress of each element (plain values)."""
        x_phys, _, vm2 = self.analysis(np.asarray(x, dtype=float), beta)
        return relaxed_stress(x_phys, np.sqrt(vm2), self.q)

    def responses(self, x, beta: float | None = None, block=None):
        """``(v, c PN / sigma_allow - 1)``; a new `block` first updates ``c``."""
        from .structural import volume
        x_phys, _, vm2 = self.analysis(x, beta)
        pn = stress_pnorm(x_phys, vm2, self.q, self.P)
        if self.norm.c is None or block != self._block:
            top = np.max(relaxed_stress(ad.value(x_phys), np.sqrt(ad.value(vm2)), self.q))
            self.norm.update(top, ad.value(pn))
            self._block = block
        return volume(x_phys, self.weights), self.norm.c * pn / self.sigma_allow - 1.0

    def run(self, betas: Sequence[float | None], block_maxeval: int = 30, x0=None,
            verbose: bool = False, checkpoint: str | None = None, resume: str | None = None,
            initial_step: float | None = None, settle: int = 0, settle_tol: float = 0.05):
        """Optimize in blocks of `block_maxeval` evaluations, one per entry of `betas`.

        Each block is a `topopt.optimize.Stage` with parameters ``beta`` (the
        projection of that block, None for none) and ``block`` (its index: a
        new index updates ``c``). MMA's dual is NLopt's own ``LD_MMA``: with
        the project's ``LD_SLSQP`` a block that starts infeasible (``c`` or
        ``beta`` went up) ended at once with ``roundoff_limited``. And MMA
        accepts a design only when its approximation was conservative
        (``always_improve = 0``): with NLopt's default an infeasible block
        took every design of smaller volume, however infeasible, and the
        L-bracket's volume fell from 0.22 to 0.05 with ``c PN`` at 1e6
        ``sigma_allow``. Starts from
        `x0` (all solid by default: feasible whenever the solid's stresses
        are).

        Then up to `settle` more blocks at the last ``beta`` (each a new ``c``)
        while the largest relaxed stress is not within `settle_tol` of
        ``sigma_allow``: the last block's ``c`` is that of its start, and the
        design it ends with may carry a maximum well below (or above) ``c PN``.
        Returns the `topopt.optimize.Result` of the last run, with the history,
        evaluations and time of all and ``x`` the full element vector (with
        passive elements: the free variables expanded); `summary` gives the figures.
        """
        import nlopt

        from ..optimize.driver import Stage, minimize
        check_int("block_maxeval", block_maxeval, 1, what="evaluations per block")
        betas = list(betas)
        if not betas:
            raise ValueError("betas must name at least one block")
        for b in betas:
            if b is not None:
                check_positive("beta", b, "projection sharpness")
        x0 = np.ones(self.n) if x0 is None else self.check_design(x0, "x0")
        stages = [Stage(block_maxeval, params={"beta": b, "block": k})
                  for k, b in enumerate(betas)]
        check_int("settle", settle, 0, what="extra blocks")
        check_positive("settle_tol", settle_tol, "relative distance to sigma_allow")
        options = dict(n_constraints=1, bounds=(0.0, 1.0), ftol_rel=0.0, verbose=verbose,
                       initial_step=initial_step, objective_name="volume",
                       mma_params={"dual_algorithm": nlopt.LD_MMA, "always_improve": 0},
                       count_solves=lambda: self.system.counts["factorizations"])
        res = minimize(self.responses, x0, stages=stages, checkpoint=checkpoint,
                       resume=resume, **options)
        history, evaluations, seconds = list(res.history), res.evaluations, res.seconds
        for k in range(len(betas), len(betas) + settle):
            top = self.summary(res.x, betas[-1])["max_von_mises"]
            if res.status == "interrupted" or abs(top / self.sigma_allow - 1) <= settle_tol:
                break
            res = minimize(self.responses, res.x, stages=[
                Stage(block_maxeval, params={"beta": betas[-1], "block": k})], **options)
            history += [h | {"evaluation": evaluations + h["evaluation"], "stage": k}
                        for h in res.history]
            evaluations, seconds = evaluations + res.evaluations, seconds + res.seconds
        return dataclasses.replace(res, x=self.passive.expand(res.x), history=history,
                                   evaluations=evaluations, seconds=seconds)

    def summary(self, x, beta: float | None = None) -> dict:
        """Volume, largest relaxed stress (and its element), ``PN``, ``c`` of a design."""
        from .structural import volume
        x_phys, _, vm2 = self.analysis(np.asarray(x, dtype=float), beta)
        rel = relaxed_stress(x_phys, np.sqrt(vm2), self.q)
        e = int(np.argmax(rel))
        return {"volume": float(volume(x_phys, self.weights)), "max_von_mises": float(rel[e]),
                "max_element": e, "pnorm": float(stress_pnorm(x_phys, vm2, self.q, self.P)),
                "c": self.norm.c, "sigma_allow": self.sigma_allow}
