"""Linear buckling: the lowest load factors of ``(K(a) + lambda G(g, u)) phi = 0``.

The prebuckling state ``u = K(a)^{-1} f`` (`topopt.fem.solve`) stresses each
element; its geometric (stress) stiffness is (Cook et al. 2002, Sec. 18.2;
Ferrari, Sigmund & Guest 2021, eq. (6))::

    G(g, u) = sum_e g_e G_e(sigma_e(u_e)),
    G_e(sigma) = int_e sum_k (dN/dx)^T sigma (dN/dx)  dV  (one block per component k)

with ``sigma_e(u_e) = C eps(u_e)`` the unit-modulus stress at the element's
centroid (constant over the element, as in Ferrari et al.'s code) and ``g_e``
the stress coefficient of the element (``E_e`` itself, or ``x^p`` without
``Emin``, their stress interpolation against spurious modes in void). The
element integrals of ``dN/dx_i dN/dx_j^T`` are computed once by scikit-fem;
``G_e`` is linear in ``sigma``, ``sigma`` linear in ``u_e``, so ``phi^T G
phi = sum_e g_e T_e(u_e, phi_e, phi_e)`` with ``T_e`` trilinear.

`buckling_factors` is the differentiable primitive ``(a, g, u) -> lambda_1
<= ... <= lambda_J`` (the lowest positive factors). With ``phi^T K phi = 1``
(so ``phi^T G phi = -1 / lambda``), differentiating ``(K + lambda G) phi =
0`` and multiplying by ``phi^T`` gives (Ferrari & Sigmund 2019, eq. (12))::

    d lambda = lambda (phi^T dK phi + lambda phi^T dG phi)
    d lambda / d a_e = lambda phi^T K_e phi,   d lambda / d g_e = lambda^2 T_e(u, phi, phi)
    d lambda / d u   = lambda^2 sum_e g_e dT_e(., phi, phi) / du

The last term is the adjoint load of the prebuckling state: with ``u`` from
`topopt.fem.solve` on the tape, its rule solves ``K w = d lambda / d u`` and
adds ``-w^T K_e u`` per element (Ferrari & Sigmund 2019, eq. (14)). The
rules are written with the differentiable modes
(`topopt.fem.buckling_modes.buckling_modes`, whose derivative is the
bordered system ``[[K + lambda G, K phi], [phi^T K, 0]]``), `products` and
traceable element terms, so second derivatives (`ad.hvp`, nested
gradients) of the factors are exact in every mode; third derivatives raise
`ad.NoRuleError`. A repeated factor has no derivative of its own: as in
`topopt.fem.modal`, the rules raise `ValueError` unless the cotangent is
equal over the group (a symmetric function such as a KS aggregate is
differentiable once; its second derivatives need the modes of the group,
which have none: `ValueError` too).

The pairs are the largest ``mu = 1 / lambda`` of ``-G phi = mu K phi``
(LAPACK on small systems; else Lanczos in the ``K`` inner product with the
stiffness system's own factorization, as Ferrari et al. 2021 and
`topopt.fem.modal`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps
import scipy.sparse.linalg as spla
import skfem
from skfem.models.elasticity import lame_parameters, linear_elasticity

from .. import ad
from .._validate import (check_array_range, check_choice, check_finite_values, check_int,
                         check_positive, check_range, check_type)
from .buckling_modes import buckling_modes
from .errors import ConvergenceError
from .mesh import _translates
from .modal import DENSE_MAX, DIRECT, ModalSystem, _check_groups, _check_pairs, _repeated
from .models import Model, _local
from .adjoint import products

__all__ = ["BucklingSystem", "buckling_factors", "POSITIVE_TOL"]

POSITIVE_TOL = 1e-10
"""``mu = 1 / lambda`` below this times the size of ``K^{-1} G`` counts as zero, not positive."""


class BucklingSystem:
    """The linear buckling eigenproblem ``(K(a) + lambda G(g, u)) phi = 0`` of a 2-D model.

    Parameters
    ----------
    model : topopt.fem.Model
        2-D elasticity model (`topopt.fem.elasticity`) with its supports.
    n_modes : int >= 1
        Number of load factors returned by `buckling_factors` (the lowest).
    nu, E0, plane :
        The constitutive law of `model` (`topopt.fem.elasticity`'s
        arguments; checked: ``K_e`` rebuilt from them must equal the model's).
    solver : str
        Direct stiffness solver backend (its factorization is the Lanczos operator).
    gap_tol : float in (0, 1)
        Relative gap below which two load factors count as repeated.

    Examples
    --------
    A clamped-free column 40 x 2 under a unit axial compression: Euler's
    ``pi^2 E I / (4 L^2)`` with ``I = h^3 / 12`` (plane stress, unit thickness).

    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.fem.buckling import BucklingSystem, buckling_factors
    >>> model = fem.elasticity(fem.rectangle(160, 8, h=0.25), nu=0.0)
    >>> model = model.fix(nodes=lambda x: np.isclose(x[0], 0.0))
    >>> f = model.point_load(lambda x: np.isclose(x[0], 40.0), [-1.0 / 9, 0.0])
    >>> E = np.ones(model.n_el)
    >>> u = fem.solve(model.system(), E, f)
    >>> S = BucklingSystem(model, nu=0.0)
    >>> lam = buckling_factors(S, E, E, u)
    >>> round(float(lam[0] / (np.pi ** 2 * (2.0 ** 3 / 12) / (4 * 40.0 ** 2))), 3)
    1.006
    """

    def __init__(self, model: Model, n_modes: int = 1, nu: float = 0.3, E0: float = 1.0,
                 plane: str = "stress", solver: str = "auto", gap_tol: float = 1e-8):
        check_type("model", model, Model, "a topopt.fem.Model")
        if model.components != 2 or model.mesh.p.shape[0] != 2:
            raise ValueError("model must be a 2-D elasticity model (topopt.fem.elasticity of "
                             f"a 2-D mesh), got {model.components} component(s) in "
                             f"{model.mesh.p.shape[0]}-D")
        self.n_modes = check_int("n_modes", n_modes, 1, None, what="number of load factors")
        self.gap_tol = check_range("gap_tol", gap_tol, 0.0, 1.0, lo_open=True, hi_open=True)
        if solver not in DIRECT:
            raise ValueError(f"solver must be a direct backend {DIRECT} (its factorization is "
                             f"the Lanczos operator), got {solver!r}")
        self.lam_c, self.mu_c = _constitutive(model, nu, E0, plane)
        self.model, self.n_el = model, model.n_el
        self.stiffness = model.system(solver)
        n_free = self.stiffness.free.size
        if self.n_modes + 2 > n_free:
            raise ValueError(f"n_modes must be <= the free dofs - 2 ({n_free - 2}), "
                             f"got {self.n_modes}")
        self.edofs = model.basis.element_dofs.T                       # (n_el, 2 n_nodes)
        self.Bc, self.Gk = _shape_integrals(model)
        self.counts = {"eigensolves": 0}
        self._cache = None
        self._sign_probe = np.random.default_rng(1).standard_normal(model.ndof)

    groups = ModalSystem.groups

    def __repr__(self):
        return (f"BucklingSystem({self.n_el} elements, {self.stiffness.free.size} free dofs, "
                f"n_modes={self.n_modes})")

    # ------------------------------------------------------------ element terms
    def local(self, u) -> np.ndarray:
        """Element displacements ``(n_el, n_nodes, 2)`` of a full-dof vector `u` (traceable)."""
        return _arr(u)[self.edofs].reshape(self.n_el, -1, 2)

    def stress(self, u) -> np.ndarray:
        """Unit-modulus centroid stresses ``sigma_e(u_e)``, ``(n_el, 2, 2)``."""
        grad = np.einsum("eia,eac->eci", self.Bc, self.local(u))   # du_c/dx_i
        return self._hooke(0.5 * (grad + np.swapaxes(grad, 1, 2)))

    def _hooke(self, t):
        """``lambda tr(t) I + 2 mu t`` of symmetric tensors ``(n_el, 2, 2)``."""
        tr = t[:, 0, 0] + t[:, 1, 1]
        return self.lam_c * tr[:, None, None] * np.eye(2) + 2.0 * self.mu_c * t

    def element_matrices(self, sigma) -> np.ndarray:
        """``G_e(sigma_e)``, ``(n_el, n_loc, n_loc)``, for element stresses ``(n_el, 2, 2)``."""
        g = np.einsum("eij,eijab->eab", np.asarray(sigma), self.Gk)
        out = np.zeros((self.n_el, g.shape[1], 2, g.shape[2], 2))
        for c in range(2):
            out[:, :, c, :, c] = g
        return out.reshape(self.n_el, 2 * g.shape[1], 2 * g.shape[2])

    def _Q(self, v, w) -> np.ndarray:
        """``Q_e,ij = sum_c v_e,c^T Gk_e,ij w_e,c``, ``(n_el, 2, 2)``."""
        return np.einsum("eac,eijab,ebc->eij", self.local(v), self.Gk, self.local(w))

    def trilinear(self, u, v, w) -> np.ndarray:
        """``T_e(u, v, w) = v_e^T G_e(sigma_e(u_e)) w_e`` per element."""
        return np.einsum("eij,eij->e", self.stress(u), self._Q(v, w))

    def trilinear_u(self, g, v, w) -> np.ndarray:
        """``d/du sum_e g_e T_e(u, v, w)`` on all dofs (``T`` is linear in ``u``; traceable)."""
        Q = _arr(g)[:, None, None] * self._Q(v, w)
        R = self._hooke(0.5 * (Q + np.swapaxes(Q, 1, 2)))          # C : sym(Q)
        local = np.einsum("eja,ecj->eac", self.Bc, R).reshape(-1)
        if not ad.is_traced(local):
            return np.bincount(self.edofs.ravel(), local, self.model.ndof)
        return ad.scatter_add(np.zeros(self.model.ndof), self.edofs.ravel(), local)

    def matrix(self, g, u) -> sps.csr_matrix:
        """``G(g, u)`` on the free dofs."""
        Ge = np.asarray(g)[:, None, None] * self.element_matrices(self.stress(u))
        n_loc = self.edofs.shape[1]
        rows = np.repeat(self.edofs, n_loc, axis=1).ravel()
        cols = np.tile(self.edofs, (1, n_loc)).ravel()
        n = self.model.ndof
        G = sps.csr_matrix((Ge.ravel(), (rows, cols)), shape=(n, n))
        free = self.stiffness.free
        return G[free][:, free]

    # ------------------------------------------------------------ eigenpairs
    def check(self, a, g, u):
        """Plain checked ``(a, g, u)``: ``(n_el,)`` coefficients >= 0, a finite ``(ndof,)`` state."""
        out = []
        for name, v, n in (("a", a, self.n_el), ("g", g, self.n_el), ("u", u, self.model.ndof)):
            v = np.asarray(ad.value(v))
            if v.shape != (n,) or np.iscomplexobj(v):
                raise ValueError(f"{name} must be a real array of shape ({n},), got {v.dtype} "
                                 f"{v.shape}")
            check_finite_values(name, v, "entries must be finite")
            if name != "u":
                check_array_range(name, v, 0.0, None, what="element coefficients")
            out.append(v.astype(float))
        return tuple(out)

    def modes(self, a, g, u) -> tuple[np.ndarray, np.ndarray]:
        """The ``n_modes + 1`` lowest positive load factors and their ``K``-normalised modes.

        ``(lam, phi)``, ``lam`` ascending, ``phi`` ``(ndof, n_modes + 1)`` with
        ``phi^T K phi = 1`` and zeros at the fixed dofs, each with a fixed
        sign. Cached for equal arguments; plain arrays (see `buckling_factors`).
        """
        a, g, u = self.check(a, g, u)
        c = self._cache
        if c is not None and all(np.array_equal(x, y) for x, y in zip(c[:3], (a, g, u))):
            return c[3], c[4]
        k = self.n_modes + 1
        K, G = self.stiffness.matrix(a), self.matrix(g, u)
        if K.shape[0] <= DENSE_MAX:
            mu, phi = _dense(K, G, k)
        else:
            mu, phi = self._arpack(a, K, G, k)
        positive = mu > POSITIVE_TOL * self._scale(a, K, G, mu)
        if not np.all(positive):
            raise ValueError(f"the load gives {int(np.sum(positive))} positive buckling load "
                             f"factors, {k} needed (n_modes + 1): is any part compressed?")
        lam = 1.0 / mu
        _check_pairs(K, -G, lam, phi)
        phi = self.stiffness.expand(phi, np.zeros((self.model.ndof, k)))
        phi = phi * np.where(self._sign_probe @ phi < 0, -1.0, 1.0)
        self.counts["eigensolves"] += 1
        self._cache = (a.copy(), g.copy(), u.copy(), lam, phi, {})   # {j: bordered LU}
        return lam, phi

    def _scale(self, a, K, G, mu) -> float:
        """``max(|mu|, |K^{-1} G v| / |v|)`` for a fixed random ``v``: the size of ``K^{-1} G``.

        A ``mu`` below `POSITIVE_TOL` times it is rounding in the null space of
        ``G`` (a structure in tension has no positive factor; its computed
        largest ``mu`` are +-1e-17 of it), not a load factor of 1e16.
        """
        v = self._sign_probe[self.stiffness.free]
        w = self.stiffness.factorize(a, exact=True).solve(G @ v)
        return max(float(np.max(np.abs(mu))), float(np.linalg.norm(w) / np.linalg.norm(v)))

    def _arpack(self, a, K, G, k):
        """Lanczos for the largest ``mu`` of ``-G phi = mu K phi`` with ``K^{-1}``."""
        F = self.stiffness.factorize(a, exact=True)
        op = spla.LinearOperator(K.shape, matvec=F.solve, dtype=float)
        v0 = np.random.default_rng(0).uniform(0.5, 1.5, K.shape[0])
        try:
            mu, phi = spla.eigsh(-G, k=k, M=K, Minv=op, which="LA", v0=v0, tol=1e-12,
                                  ncv=min(K.shape[0], max(2 * k + 1, 20)))
        except spla.ArpackNoConvergence as e:
            raise ConvergenceError(f"ARPACK found {len(e.eigenvalues)} of {k} buckling "
                                   "load factors") from None
        order = np.argsort(-mu)
        mu, phi = mu[order], phi[:, order]
        return mu, phi / np.sqrt(np.einsum("ij,ij->j", phi, K @ phi))


def _arr(x):
    """`x` itself when traced (the rules trace these products), else an ndarray."""
    return x if ad.is_traced(x) else np.asarray(x)


def _dense(K, G, k):
    """The `k` largest ``mu`` of ``-G phi = mu K phi`` by LAPACK (``phi^T K phi = 1``)."""
    n = K.shape[0]
    try:
        mu, phi = sla.eigh(-G.toarray(), K.toarray(), subset_by_index=[n - k, n - 1])
    except np.linalg.LinAlgError:
        from .errors import SingularSystemError
        raise SingularSystemError("the stiffness matrix is not positive definite (a "
                                  "mechanism, or a part held by nothing)") from None
    return mu[::-1], phi[:, ::-1]


def _constitutive(model, nu, E0, plane):
    """Lame parameters of the law (plane stress folded in), checked against ``model.Ke``."""
    nu = check_range("nu", nu, -1.0, 0.5, lo_open=True, hi_open=True, what="Poisson's ratio")
    E0 = check_positive("E0", E0, "Young's modulus")
    check_choice("plane", plane, ("stress", "strain"))
    lam, mu = lame_parameters(E0, nu)
    if plane == "stress":
        lam = 2 * lam * mu / (lam + 2 * mu)
    mesh = model.mesh
    one = type(mesh)(mesh.p[:, mesh.t[:, 0]], np.arange(mesh.t.shape[0])[:, None])
    Ke = _local(linear_elasticity(lam, mu), skfem.Basis(one, model.basis.elem), False)[0]
    Km = np.asarray(model.Ke[0])
    if not np.allclose(Ke, Km, rtol=1e-9, atol=1e-12 * np.max(np.abs(Km))):
        raise ValueError(f"nu = {nu:g}, E0 = {E0:g}, plane = {plane!r} are not the model's "
                         "law (its element stiffness differs): pass the arguments given to "
                         "topopt.fem.elasticity")
    return lam, mu


def _shape_integrals(model):
    """``Bc (n_el, 2, n_nodes)``: ``dN_a/dx_i`` at the centroid; ``Gk (n_el, 2, 2, n, n)``:
    ``int dN_a/dx_i dN_b/dx_j dV`` (scikit-fem; one element broadcast on a uniform lattice)."""
    mesh = model.mesh
    uniform = _translates(mesh)
    if uniform:
        mesh = type(mesh)(mesh.p[:, mesh.t[:, 0]], np.arange(mesh.t.shape[0])[:, None])
    elem = model.basis.elem.elem                                   # the scalar element
    centroid = elem.refdom.p.mean(axis=1)[:, None]
    bc = skfem.Basis(mesh, elem, quadrature=(centroid, np.ones(1)))
    Bc = np.stack([bc.basis[a][0].grad[:, :, 0] for a in range(elem.refdom.nnodes)], -1)
    full = skfem.Basis(mesh, elem, quadrature=model.basis.quadrature)
    dN = np.stack([full.basis[a][0].grad for a in range(elem.refdom.nnodes)])
    Gk = np.einsum("aieq,bjeq,eq->eijab", dN, dN, full.dx)
    Bc = np.transpose(Bc, (1, 0, 2))                                 # (n_el, 2, n_nodes)
    if uniform:
        n = model.n_el
        Bc, Gk = (np.broadcast_to(A, (n,) + A.shape[1:]) for A in (Bc, Gk))
    return Bc, Gk


# --------------------------------------------------------------- primitive

@ad.primitive
def buckling_factors(S: BucklingSystem, a, g, u):
    """The `n_modes` lowest positive load factors of ``(K(a) + lambda G(g, u)) phi = 0``.

    `a` are the stiffness coefficients (SIMP moduli), `g` the stress
    coefficients of ``G`` and `u` the prebuckling state (from
    `topopt.fem.solve`, so that the tape adds the prebuckling adjoint).
    Differentiable in `a`, `g` and `u` in every mode (``d lambda = lambda
    (phi^T dK phi + lambda phi^T dG phi)``, module notes): the rules trace
    `buckling_modes`, so Hessian-vector products and nested gradients are
    exact; third derivatives raise `ad.NoRuleError`.

    Examples
    --------
    ``lambda`` is homogeneous of degree 1 in ``a`` at a fixed ``u``, and of
    degree -1 in ``(g, u)`` together (the stress scales with both):

    >>> import numpy as np
    >>> from topopt import ad, fem
    >>> from topopt.fem.buckling import BucklingSystem, buckling_factors
    >>> model = fem.elasticity(fem.rectangle(8, 2)).fix(nodes=lambda x: np.isclose(x[0], 0))
    >>> f = model.point_load((8.0, 1.0), [-1.0, 0.0])
    >>> a = np.ones(16)
    >>> u = fem.solve(model.system(), a, f)
    >>> S = BucklingSystem(model)
    >>> lam = buckling_factors(S, a, a, u)[0]
    >>> ga = ad.gradient(lambda a: buckling_factors(S, a, np.ones(16), u)[0], a)
    >>> bool(np.isclose(ga.sum(), lam))
    True
    """
    return S.modes(a, g, u)[0][:S.n_modes]


def _check_weights(S, lam, w):
    """Raise unless the cotangent is equal over each group of repeated factors.

    Equal to 6 digits (`topopt.fem.modal` asks 12): factors count as repeated
    within a relative gap of ``gap_tol`` (1e-8), and a symmetric function of
    the group has weights that differ by its log-derivative times that gap:
    ``(1 + rho) gap_tol ~ 4e-7`` for the KS aggregate of ``log(lambda_ref /
    lambda)`` with rho = 40 (`topopt.formulations.BucklingProblem`; the
    mirrored halves of a symmetric design buckle in pairs of equal factors);
    a non-symmetric function differs in the first digits.
    """
    for grp in S.groups(lam):
        v = w[grp.start:grp.stop]
        if np.ptp(v) > 1e-6 * max(np.max(np.abs(v)), 1e-300):
            raise _repeated(S, grp)


def _terms(S, g, u, p):
    """``(phi^T K_e phi, T_e(u, phi, phi))`` per element and ``d(sum g_e T_e)/du`` of a mode
    `p` (traced with `p`, `g` and `u`: the rules' second derivatives)."""
    return products(S.stiffness, p, p), S.trilinear(u, p, p), S.trilinear_u(g, p, p)


@ad.rrule(buckling_factors)
def buckling_factors_rrule(S, a, g, u):
    lam_all = S.modes(a, g, u)[0]
    y = buckling_factors(S, a, g, u)          # traced when a, g, u are (second derivatives)
    phi = buckling_modes(S, a, g, u)

    def buckling_factors_pullback(lambar):
        w = np.zeros(lam_all.size)
        w[:S.n_modes] = np.real(ad.value(lambar))
        _check_weights(S, lam_all, w)
        bars = [np.zeros(S.n_el), np.zeros(S.n_el), np.zeros(S.model.ndof)]
        for j in range(S.n_modes):
            if w[j] == 0 and not ad.is_traced(lambar):
                continue
            pKp, T, Tu = _terms(S, g, u, phi[:, j])
            c1, c2 = lambar[j] * y[j], lambar[j] * y[j] ** 2     # d lambda = lambda phi^T
            bars = [bars[0] + c1 * pKp, bars[1] + c2 * T, bars[2] + c2 * Tu]   # (dK + lambda dG) phi
        return (None, *bars)
    return y, buckling_factors_pullback


@ad.frule(buckling_factors)
def buckling_factors_frule(primals, tangents):
    S, a, g, u = primals
    _, adot, gdot, udot = tangents
    y = buckling_factors(S, a, g, u)
    if adot is None and gdot is None and udot is None:
        return y, None
    _check_groups(S, S.modes(a, g, u)[0])
    phi = buckling_modes(S, a, g, u)
    ydot = []
    for j in range(S.n_modes):
        pKp, T, Tu = _terms(S, g, u, phi[:, j])
        d = 0.0 if adot is None else y[j] * np.sum(adot * pKp)
        d = d if gdot is None else d + y[j] ** 2 * np.sum(gdot * T)
        ydot.append(d if udot is None else d + y[j] ** 2 * np.sum(udot * Tu))
    return y, np.stack(ydot)
