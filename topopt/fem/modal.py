"""Free vibration: the smallest eigenpairs of ``K(a) phi = lambda M(m) phi`` and their derivatives.

``K(a) = K0 + sum_e a_e K_e`` is a model's stiffness (`LinearSystem`),
``M(m) = M0 + sum_e m_e M_e`` the consistent mass matrix (`element_mass`,
computed once like ``K_e``) plus a constant non-structural part ``M0``
(`point_mass`: lumped masses on the diagonal). Both live on the free dofs
(the supports are removed, not penalised).

`eigenvalues` and `eigenmodes` are the differentiable primitives. For a
simple eigenvalue with ``M``-normalised mode ``phi_j`` (``phi_j^T M phi_j =
1``), differentiating ``(K - lambda_j M) phi_j = 0`` and multiplying by
``phi_j^T`` gives (Wittrick 1962; Du & Olhoff 2007)::

    d lambda_j = phi_j^T (dK - lambda_j dM) phi_j
    d lambda_j / d a_e = phi_j^T K_e phi_j,   d lambda_j / d m_e = -lambda_j phi_j^T M_e phi_j

so the pullback is two vectorised element products per mode and no solve.
Its rules are written with `eigenmodes` (whose derivative is Nelson's
method, one bordered sparse LU per mode) and `products`, so second
derivatives (`ad.hvp`, nested gradients) of the eigenvalues are exact;
third derivatives raise `ad.NoRuleError`.

A repeated eigenvalue has no derivative of its own (only the eigenvalues of
``Phi^T (dK - lambda dM) Phi`` over the group are directional derivatives),
nor has its mode: the rules raise `ValueError` when two computed
eigenvalues lie within ``gap_tol`` of each other (relative) and the
cotangent is not the same for the whole group (a symmetric function of the
group, such as its sum, is differentiable and allowed); forward rules raise
at any repeated eigenvalue.

The eigenpairs come from Lanczos on ``K^{-1} M`` -- shift-invert about 0
-- (ARPACK through ``scipy.sparse.linalg.eigsh``, posed as ``M phi = mu K
phi`` for the largest ``mu = 1 / lambda`` so that a singular ``M`` is
allowed) whose operator ``K^{-1}`` is the stiffness system's own
factorization (`LinearSystem.factorize`, any direct backend), or from
LAPACK on small systems.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps
import scipy.sparse.linalg as spla
import skfem
from skfem.helpers import dot

from .. import ad
from .._validate import (check_array_range, check_finite_array, check_finite_values, check_int,
                         check_positive, check_range, check_real_array, check_type)
from .errors import ConvergenceError
from .models import Model, _local, _translates
from .system import LinearSystem
from .adjoint import matvec, products

__all__ = ["element_mass", "point_mass", "ModalSystem", "eigenvalues", "eigenmodes",
           "DENSE_MAX"]

DIRECT = ("auto", "cholmod", "umfpack", "superlu")

DENSE_MAX = 200
"""Free dofs up to which the eigenpairs come from dense LAPACK (``scipy.linalg.eigh``)."""


def element_mass(model: Model, rho0: float = 1.0) -> np.ndarray:
    """Consistent element mass matrices ``M_e = rho0 int N^T N dV`` at unit coefficient.

    The same basis and element order as ``model.Ke`` (plane stress: unit
    thickness); on a uniform lattice one matrix, broadcast to every element.

    Examples
    --------
    A unit square of mass 1 (bilinear element): each translational
    direction carries the whole mass, ``sum(M_e[x dofs, x dofs]) = 1``.

    >>> import numpy as np
    >>> from topopt.fem import elasticity, rectangle
    >>> from topopt.fem.modal import element_mass
    >>> model = elasticity(rectangle(1, 1))
    >>> Me = element_mass(model)[0]
    >>> ux = model.basis.nodal_dofs[0]
    >>> round(float(Me[np.ix_(ux, ux)].sum()), 12)
    1.0
    """
    check_type("model", model, Model, "a topopt.fem.Model")
    rho0 = check_positive("rho0", rho0, "mass density")
    if model.components > 1:
        form = skfem.BilinearForm(lambda u, v, w: dot(u, v))
    else:
        form = skfem.BilinearForm(lambda u, v, w: u * v)
    return _local(form, model.basis, _translates(model.mesh), rho0)


def point_mass(model: Model, where, mass: float) -> sps.csr_matrix:
    """Non-structural mass: `mass` on every translational dof of the selected node(s).

    `where` selects nodes as in `Model.dofs` (a point or a predicate of the
    coordinates); the result is a diagonal ``(ndof, ndof)`` matrix to pass
    as ``M0`` to `ModalSystem` (sum several).

    Examples
    --------
    >>> from topopt.fem import elasticity, rectangle
    >>> from topopt.fem.modal import point_mass
    >>> model = elasticity(rectangle(2, 1))
    >>> float(point_mass(model, (1.0, 0.0), 0.5).sum())    # 0.5 in x and in y
    1.0
    """
    check_type("model", model, Model, "a topopt.fem.Model")
    mass = check_range("mass", mass, 0.0, None, lo_open=True, what="non-structural mass")
    diag = np.zeros(model.ndof)
    diag[model.dofs(nodes=where)] = mass
    return sps.diags(diag, format="csr")


class ModalSystem:
    """The generalised eigenproblem ``K(a) phi = lambda M(m) phi`` of a model.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity model with its supports (``K`` must be nonsingular).
    n_modes : int >= 1
        Number of eigenvalues returned by `eigenvalues` (the smallest).
    rho0 : float > 0
        Mass density at unit mass coefficient.
    M0 : sparse (ndof, ndof), optional
        Constant symmetric positive semidefinite mass (`point_mass`).
    solver : str
        Stiffness solver backend (a direct one; its factorization is the
        shift-invert operator).
    gap_tol : float in (0, 1)
        Relative gap below which two eigenvalues count as repeated.

    Examples
    --------
    Axial vibration of a fixed-free bar of 20 x 1 unit elements (E = rho = 1,
    nu = 0): the first eigenvalue is near ``(pi / (2 L))^2``.

    >>> import numpy as np
    >>> from topopt.fem import elasticity, rectangle
    >>> from topopt.fem.modal import ModalSystem
    >>> model = elasticity(rectangle(20, 1), nu=0.0).fix(
    ...     nodes=lambda x: np.isclose(x[0], 0)).fix(nodes=lambda x: x[0] >= 0, components=1)
    >>> S = ModalSystem(model, n_modes=2)
    >>> lam, phi = S.modes(np.ones(20), np.ones(20))
    >>> round(float(lam[0] / (np.pi / 40) ** 2), 4)
    1.0005
    """

    def __init__(self, model: Model, n_modes: int = 1, rho0: float = 1.0, M0=None,
                 solver: str = "auto", gap_tol: float = 1e-8):
        check_type("model", model, Model, "a topopt.fem.Model")
        self.n_modes = check_int("n_modes", n_modes, 1, None, what="number of eigenvalues")
        self.gap_tol = check_range("gap_tol", gap_tol, 0.0, 1.0, lo_open=True, hi_open=True)
        if M0 is not None:
            M0 = sps.csr_matrix(M0 if sps.issparse(M0) else check_real_array("M0", M0))
            if M0.shape != (model.ndof, model.ndof) or np.iscomplexobj(M0.data):
                raise ValueError(f"M0 must be a real ({model.ndof}, {model.ndof}) matrix, "
                                 f"got {M0.dtype} {M0.shape}")
            check_finite_array("M0", M0.data)
            asym = abs(M0 - M0.T).data
            if np.max(asym, initial=0.0) > 1e-12 * np.max(np.abs(M0.data), initial=0.0) \
                    or np.min(M0.diagonal(), initial=0.0) < 0:
                raise ValueError("M0 must be symmetric with a non-negative diagonal")
        if solver not in DIRECT:
            raise ValueError(f"solver must be a direct backend {DIRECT} (its factorization is "
                             f"the shift-invert operator), got {solver!r}")
        self.model = model
        self.stiffness = model.system(solver)
        n_free = self.stiffness.free.size
        if self.n_modes >= n_free:
            raise ValueError(f"n_modes must be < the number of free dofs ({n_free}; the "
                             f"eigensolver finds at most {n_free - 1}), got {self.n_modes}")
        self.mass = LinearSystem(model.basis.element_dofs.T, element_mass(model, rho0),
                                 model.ndof, model.fixed, K0=M0, solver="superlu")
        self.n_el = model.n_el
        self.counts = {"eigensolves": 0}
        self._cache = None
        self._sign_probe = np.random.default_rng(1).standard_normal(model.ndof)

    def __repr__(self):
        return (f"ModalSystem({self.n_el} elements, {self.stiffness.free.size} free dofs, "
                f"n_modes={self.n_modes})")

    def check(self, a, m) -> tuple[np.ndarray, np.ndarray]:
        """Plain, checked coefficient vectors: shape ``(n_el,)``, finite, ``>= 0``."""
        out = []
        for name, v in (("a", a), ("m", m)):
            v = np.asarray(ad.value(v))
            if v.shape != (self.n_el,):
                raise ValueError(f"{name} has shape {v.shape}; expected ({self.n_el},), "
                                 "one coefficient per element")
            check_finite_values(name, v, "element coefficients must be finite", ("element",))
            check_array_range(name, v, 0.0, None, what="element coefficients")
            out.append(v.astype(float))
        return out[0], out[1]

    def modes(self, a, m) -> tuple[np.ndarray, np.ndarray]:
        """The ``n_modes + 1`` smallest eigenvalues and their ``M``-normalised modes.

        Returns ``(lam, phi)`` with ``lam`` ascending and ``phi`` of shape
        ``(ndof, n_modes + 1)``, zero at the fixed dofs (the extra pair tells
        whether the last returned eigenvalue is repeated), each with a fixed
        sign (a positive projection on a fixed random vector). Cached for
        equal ``a`` and ``m``; plain arrays, not differentiated (see
        `eigenvalues` and `eigenmodes`).
        """
        a, m = self.check(a, m)
        if self._cache is not None and np.array_equal(self._cache[0], a) \
                and np.array_equal(self._cache[1], m):
            return self._cache[2], self._cache[3]
        k = self.n_modes + 1
        n = self.stiffness.free.size
        if k >= n:
            raise ValueError(f"n_modes = {self.n_modes} needs at least {k + 1} free dofs "
                             f"(n_modes + 2); the model has {n}")
        K, M = self.stiffness.matrix(a), self.mass.matrix(m)
        lam, phi = _dense(K, M, k) if n <= DENSE_MAX else self._arpack(a, K, M, k)
        _check_pairs(K, M, lam, phi)
        phi = self.stiffness.expand(phi, np.zeros((self.model.ndof, k)))
        phi = phi * np.where(self._sign_probe @ phi < 0, -1.0, 1.0)      # a fixed sign
        self.counts["eigensolves"] += 1
        self._cache = (a.copy(), m.copy(), lam, phi, {})
        return lam, phi

    def _arpack(self, a, K, M, k):
        """Lanczos on ``M phi = mu K phi`` (``mu = 1 / lambda``, the largest) with ``K^{-1}``.

        The Krylov space of ``K^{-1} M``, as shift-invert about 0, in the
        ``K``-inner product: ``K`` is positive definite, ``M`` may be singular
        (massless void dofs; ARPACK's shift-invert mode then failed to build
        its factorization, error -9999, on a 32 x 4 beam).
        """
        F = self.stiffness.factorize(a, exact=True)
        op = spla.LinearOperator(K.shape, matvec=F.solve, dtype=float)
        v0 = np.random.default_rng(0).uniform(0.5, 1.5, K.shape[0])     # deterministic start
        try:
            mu, phi = spla.eigsh(M, k=k, M=K, Minv=op, which="LA", v0=v0, tol=0.0)
        except spla.ArpackNoConvergence as e:
            raise ConvergenceError(f"ARPACK found {len(e.eigenvalues)} of {k} eigenvalues") \
                from None
        if mu.min() <= 0:
            raise ValueError(f"only {int(np.sum(mu > 0))} dofs carry mass; {k} eigenvalues "
                             "needed")
        order = np.argsort(-mu)
        mu, phi = mu[order], phi[:, order]
        phi = phi / np.sqrt(np.einsum("ij,ij->j", phi, M @ phi))        # phi^T M phi = 1
        return 1.0 / mu, phi

    def groups(self, lam) -> list[range]:
        """Index ranges of eigenvalues within `gap_tol` of their neighbours (size > 1)."""
        close = np.abs(np.diff(lam)) <= self.gap_tol * np.abs(lam[1:])
        out, start = [], 0
        for j in range(1, lam.size + 1):
            if j == lam.size or not close[j - 1]:
                if j - start > 1:
                    out.append(range(start, j))
                start = j
        return out

    def bordered(self, a, m, j: int):
        """LU of ``[[K - lambda_j M, M phi_j], [phi_j^T M, 0]]`` (free dofs), once per design.

        Nonsingular when ``lambda_j`` is simple: the mode derivatives of
        `eigenmodes` (Nelson 1976, in bordered form).
        """
        lam, phi = self.modes(a, m)
        store = self._cache[4]
        if j not in store:
            a, m = self.check(a, m)
            K, M = self.stiffness.matrix(a), self.mass.matrix(m)
            Mp = M @ phi[self.stiffness.free, j]
            B = sps.bmat([[K - lam[j] * M, Mp[:, None]], [Mp[None, :], None]], format="csc")
            store[j] = spla.splu(B)
        return store[j]


def _dense(K, M, k):
    """Smallest `k` eigenpairs by LAPACK, as ``M phi = mu K phi`` (K is positive definite).

    Solving for the largest ``mu = 1 / lambda`` accepts a singular ``M``
    (massless dofs have ``lambda = inf`` and are never among the smallest).
    """
    n = K.shape[0]
    try:
        mu, phi = sla.eigh(M.toarray(), K.toarray(), subset_by_index=[n - k, n - 1])
    except np.linalg.LinAlgError:
        from .errors import SingularSystemError
        raise SingularSystemError("the stiffness matrix is not positive definite (a "
                                  "mechanism, or a part held by nothing)") from None
    if mu.min() <= 0:
        raise ValueError(f"only {int(np.sum(mu > 0))} dofs carry mass; {k} eigenvalues needed")
    order = np.argsort(-mu)
    mu, phi = mu[order], phi[:, order]
    return 1.0 / mu, phi / np.sqrt(mu)               # phi^T K phi = 1  ->  phi^T M phi = 1


def _check_pairs(K, M, lam, phi, tol: float = 1e-8):
    """Raise `ConvergenceError` unless every pair's normwise backward error is below `tol`.

    ``|K phi - lam M phi| / ((|K|_1 + lam |M|_1) |phi|)``: the relative size of
    the smallest perturbation of ``K`` and ``M`` for which the pair is exact
    (a converged pair has about 1e-15; the residual relative to ``|K phi|``
    alone grows with the stiffness contrast of the design).
    """
    r = np.linalg.norm(K @ phi - (M @ phi) * lam, axis=0)
    norm = lambda A: float(sps.linalg.norm(A, 1))                     # noqa: E731
    scale = (norm(K) + np.abs(lam) * norm(M)) * np.linalg.norm(phi, axis=0)
    err = r / scale
    if not np.all(err <= tol):
        raise ConvergenceError(f"eigenpair backward errors {np.array2string(err, precision=2)} "
                               f"exceed {tol:g}")


# --------------------------------------------------------------- primitives

@ad.primitive
def eigenvalues(S: ModalSystem, a, m):
    """The `n_modes` smallest eigenvalues of ``K(a) phi = lambda M(m) phi``, ascending.

    Differentiable in the stiffness coefficients `a` and the mass
    coefficients `m`, ``d lambda_j = phi_j^T (dK - lambda_j dM) phi_j``, in
    every mode: the rules are written with `eigenmodes` and `products`, so
    Hessian-vector products and nested gradients trace through them.
    Angular frequencies are ``sqrt(lambda)``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.fem import elasticity, rectangle
    >>> from topopt.fem.modal import ModalSystem, eigenvalues
    >>> model = elasticity(rectangle(8, 2)).fix(nodes=lambda x: np.isclose(x[0], 0))
    >>> S = ModalSystem(model, n_modes=2)
    >>> a, m = np.ones(16), np.ones(16)
    >>> lam = eigenvalues(S, a, m)
    >>> g = ad.gradient(lambda a: eigenvalues(S, a, m)[0], a)
    >>> bool(np.isclose(g.sum(), lam[0]))          # lambda is homogeneous of degree 1 in a
    True
    """
    return S.modes(a, m)[0][:S.n_modes]


@ad.primitive
def eigenmodes(S: ModalSystem, a, m):
    """The `n_modes` ``M``-normalised modes, ``(ndof, n_modes)``, zero at the fixed dofs.

    The sign of each is fixed (a positive projection on a fixed random
    vector), so that modes are smooth functions of `a` and `m` where the
    eigenvalues are simple. Differentiable (first order) in `a` and `m`
    (Nelson's method as a bordered system, one sparse LU per mode): for
    ``(K - lambda_j M) dphi_j = -(dK - lambda_j dM - dlambda_j M) phi_j``
    with ``phi_j^T M dphi_j = -phi_j^T dM phi_j / 2``, solved with ``[[K -
    lambda_j M, M phi_j], [phi_j^T M, 0]]``; the pullback solves the same
    (symmetric) system.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.fem import elasticity, rectangle
    >>> from topopt.fem.modal import ModalSystem, eigenmodes
    >>> model = elasticity(rectangle(8, 2)).fix(nodes=lambda x: np.isclose(x[0], 0))
    >>> S = ModalSystem(model, n_modes=2)
    >>> phi = eigenmodes(S, np.ones(16), np.ones(16))
    >>> M = S.mass.matrix(np.ones(16))
    >>> f = S.stiffness.free
    >>> np.round(phi[f].T @ M @ phi[f], 12) + 0.0
    array([[1., 0.],
           [0., 1.]])
    """
    return S.modes(a, m)[1][:, :S.n_modes]


def _no_third_order(a, m):
    if ad.is_traced(a) or ad.is_traced(m):
        raise ad.NoRuleError("derivatives of fem.modal.eigenmodes' rules (third derivatives "
                             "of the eigenvalues) are not implemented")


def _repeated(S, idx) -> ValueError:
    return ValueError(
        f"eigenvalues {', '.join(str(j + 1) for j in idx)} are repeated (relative gap <= "
        f"gap_tol = {S.gap_tol:g}): each has no derivative of its own (nor has its mode); "
        "only a symmetric function of the group, such as its sum, has. Use a bound "
        "formulation (maximise beta subject to beta <= lambda_j)")


def _check_groups(S, lam, weights=None):
    """Raise if a group of repeated eigenvalues has unequal `weights` (None: any group)."""
    for g in S.groups(lam):
        w = None if weights is None else weights[g.start:g.stop]
        if w is None or np.ptp(w) > 1e-12 * max(np.max(np.abs(w)), 1e-300):
            raise _repeated(S, g)


def _element_terms(S, phi, j):
    """``phi_j^T K_e phi_j`` and ``phi_j^T M_e phi_j`` per element (traced with `phi`)."""
    p = phi[:, j]
    return products(S.stiffness, p, p), products(S.mass, p, p)


@ad.rrule(eigenvalues)
def eigenvalues_rrule(S, a, m):
    lam_all = S.modes(a, m)[0]
    y = eigenvalues(S, a, m)                  # traced when a, m are (second derivatives)
    phi = eigenmodes(S, a, m)

    def eigenvalues_pullback(lambar):
        w = np.zeros(lam_all.size)
        w[:S.n_modes] = np.real(ad.value(lambar))
        _check_groups(S, lam_all, w)
        abar = mbar = None
        for j in range(S.n_modes):
            if w[j] == 0 and not ad.is_traced(lambar):
                continue
            gK, gM = _element_terms(S, phi, j)          # phi^T (dK - lambda dM) phi
            da, dm = lambar[j] * gK, -(lambar[j] * y[j]) * gM
            abar = da if abar is None else abar + da
            mbar = dm if mbar is None else mbar + dm
        return None, abar, mbar
    return y, eigenvalues_pullback


@ad.frule(eigenvalues)
def eigenvalues_frule(primals, tangents):
    S, a, m = primals
    _, adot, mdot = tangents
    y = eigenvalues(S, a, m)
    if adot is None and mdot is None:
        return y, None
    _check_groups(S, S.modes(a, m)[0])
    phi = eigenmodes(S, a, m)
    ydot = []
    for j in range(S.n_modes):
        gK, gM = _element_terms(S, phi, j)
        d = 0.0 if adot is None else np.sum(adot * gK)
        ydot.append(d if mdot is None else d - y[j] * np.sum(mdot * gM))
    return y, np.stack(ydot)


@ad.rrule(eigenmodes)
def eigenmodes_rrule(S, a, m):
    _no_third_order(a, m)
    lam, phi = S.modes(a, m)
    free = S.stiffness.free

    def eigenmodes_pullback(phibar):
        _no_third_order(phibar, None)
        phibar = np.asarray(phibar)
        abar, mbar = np.zeros(S.n_el), np.zeros(S.n_el)
        for j in np.flatnonzero(np.any(phibar != 0, axis=0)):
            _check_simple(S, lam, j)
            x = S.bordered(a, m, j).solve(np.append(phibar[free, j], 0.0))
            v = np.zeros(S.model.ndof)
            v[free] = x[:-1]                            # the adjoint, v^T M phi_j = 0
            p = phi[:, j]
            abar -= products(S.stiffness, v, p)
            mbar += lam[j] * products(S.mass, v, p) - 0.5 * x[-1] * products(S.mass, p, p)
        return None, abar, mbar
    return phi[:, :S.n_modes], eigenmodes_pullback


@ad.frule(eigenmodes)
def eigenmodes_frule(primals, tangents):
    S, a, m = primals
    _, adot, mdot = tangents
    _no_third_order(a, m)
    lam, phi = S.modes(a, m)
    y = phi[:, :S.n_modes]
    if adot is None and mdot is None:
        return y, None
    free = S.stiffness.free
    M = S.mass.matrix(m)
    ydot = np.zeros_like(y)
    for j in range(S.n_modes):
        _check_simple(S, lam, j)
        p = phi[:, j]
        dKp = np.zeros(S.model.ndof) if adot is None else matvec(S.stiffness, adot, p)
        dMp = np.zeros(S.model.ndof) if mdot is None else matvec(S.mass, mdot, p)
        dlam = p @ dKp - lam[j] * (p @ dMp)
        rhs = -(dKp - lam[j] * dMp)[free] + dlam * (M @ p[free])
        x = S.bordered(a, m, j).solve(np.append(rhs, -0.5 * (p @ dMp)))
        ydot[free, j] = x[:-1]
    return y, ydot


def _check_simple(S, lam, j):
    for g in S.groups(lam):
        if j in g:
            raise _repeated(S, g)
