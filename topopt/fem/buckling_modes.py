"""The buckling modes ``phi_j`` of ``(K(a) + lambda_j G(g, u)) phi_j = 0`` and their derivative.

`buckling_modes` is the differentiable primitive ``(a, g, u) -> phi`` of a
`topopt.fem.buckling.BucklingSystem` (``phi_j^T K phi_j = 1``, zeros at the
fixed dofs, a fixed sign). `topopt.fem.buckling.buckling_factors` writes its
rules with it, so second derivatives of the load factors (`ad.hvp`, nested
gradients) are exact, as `topopt.fem.modal.eigenmodes` does for the
eigenfrequencies.

Differentiating ``(K + lambda G) phi = 0`` and ``phi^T K phi = 1``::

    (K + lambda G) dphi = -(dK + lambda dG) phi - dlambda G phi
    phi^T K dphi        = -phi^T dK phi / 2

with ``dK = sum_e da_e K_e`` and ``dG = G(dg, u) + G(g, du)`` (``G`` is
linear in each). ``K + lambda G`` is singular with null vector ``phi``
(simple factor), and ``G phi = -K phi / lambda``: bordered with the column
``K phi`` (``phi^T K phi = 1 != 0``, Nelson 1976 in bordered form),

    [[K + lambda G, K phi], [phi^T K, 0]] [dphi; s] = [-(dK + lambda dG) phi; -phi^T dK phi / 2]

is nonsingular, and its border absorbs the ``dlambda G phi`` term (``s =
-dlambda / lambda``), so no ``dlambda`` enters the right-hand side. The
matrix is symmetric: the pullback of ``phibar`` solves it for ``[v; t]``
with ``[phibar; 0]`` and returns::

    abar_e = -v^T K_e phi - t phi^T K_e phi / 2
    gbar_e = -lambda T_e(u, v, phi),   ubar = -lambda d(sum_e g_e T_e(u, v, phi)) / du

(``T_e`` the trilinear form of `BucklingSystem.trilinear`). One sparse LU
per mode and design. First order only: derivatives of these rules (third
derivatives of the load factors) raise `ad.NoRuleError`; a repeated factor's
mode has no derivative (`ValueError`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps
import scipy.sparse.linalg as spla

from .. import ad
from .modal import _check_simple
from .adjoint import matvec, products

__all__ = ["buckling_modes"]


def _bordered(S, a, g, u, j: int):
    """LU of ``[[K + lambda_j G, K phi_j], [phi_j^T K, 0]]`` (free dofs), once per design."""
    lam, phi = S.modes(a, g, u)
    store = S._cache[5]
    if j not in store:
        a, g, u = S.check(a, g, u)
        K, G = S.stiffness.matrix(a), S.matrix(g, u)
        Kp = K @ phi[S.stiffness.free, j]
        B = sps.bmat([[K + lam[j] * G, Kp[:, None]], [Kp[None, :], None]], format="csc")
        store[j] = spla.splu(B)
    return store[j]


@ad.primitive
def buckling_modes(S, a, g, u):
    """The `n_modes` buckling modes of a `BucklingSystem`, ``(ndof, n_modes)``, ``phi^T K phi = 1``.

    Zeros at the fixed dofs; the sign of each is fixed (a positive
    projection on a fixed random vector), so that the modes are smooth where
    the factors are simple. Differentiable (first order) in `a`, `g` and `u`
    (module notes: one bordered sparse LU per mode).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.fem.buckling import BucklingSystem
    >>> from topopt.fem.buckling_modes import buckling_modes
    >>> model = fem.elasticity(fem.rectangle(8, 2)).fix(nodes=lambda x: np.isclose(x[0], 0))
    >>> a = np.ones(16)
    >>> u = fem.solve(model.system(), a, model.point_load((8.0, 1.0), [-1.0, 0.0]))
    >>> S = BucklingSystem(model, n_modes=2)
    >>> phi = buckling_modes(S, a, a, u)[S.stiffness.free]
    >>> np.round(phi.T @ S.stiffness.matrix(a) @ phi, 12) + 0.0
    array([[1., 0.],
           [0., 1.]])
    """
    return S.modes(a, g, u)[1][:, :S.n_modes]


def _no_third_order(*xs):
    if any(ad.is_traced(x) for x in xs):
        raise ad.NoRuleError("derivatives of fem.buckling_modes' rules (third derivatives of "
                             "the buckling load factors) are not implemented")


@ad.rrule(buckling_modes)
def buckling_modes_rrule(S, a, g, u):
    _no_third_order(a, g, u)
    lam, phi = S.modes(a, g, u)
    free = S.stiffness.free

    def buckling_modes_pullback(phibar):
        _no_third_order(phibar)
        phibar = np.real(np.asarray(phibar))
        abar, gbar, ubar = np.zeros(S.n_el), np.zeros(S.n_el), np.zeros(S.model.ndof)
        for j in np.flatnonzero(np.any(phibar != 0, axis=0)):
            _check_simple(S, lam, j)
            x = _bordered(S, a, g, u, j).solve(np.append(phibar[free, j], 0.0))
            v = np.zeros(S.model.ndof)
            v[free] = x[:-1]
            p = phi[:, j]
            abar -= products(S.stiffness, v, p) + 0.5 * x[-1] * products(S.stiffness, p, p)
            gbar -= lam[j] * S.trilinear(u, v, p)
            ubar -= lam[j] * S.trilinear_u(g, v, p)
        return None, abar, gbar, ubar
    return phi[:, :S.n_modes].copy(), buckling_modes_pullback


@ad.frule(buckling_modes)
def buckling_modes_frule(primals, tangents):
    S, a, g, u = primals
    _, adot, gdot, udot = tangents
    _no_third_order(a, g, u, adot, gdot, udot)
    lam, phi = S.modes(a, g, u)
    y = phi[:, :S.n_modes].copy()
    if adot is None and gdot is None and udot is None:
        return y, None
    free = S.stiffness.free
    dG = sps.csr_matrix((free.size, free.size))
    if gdot is not None:
        dG = S.matrix(np.real(gdot), S.check(a, g, u)[2])
    if udot is not None:
        dG = dG + S.matrix(S.check(a, g, u)[1], np.real(udot))
    ydot = np.zeros_like(y)
    for j in range(S.n_modes):
        _check_simple(S, lam, j)
        p = phi[:, j]
        dKp = np.zeros(S.model.ndof) if adot is None else matvec(S.stiffness, np.real(adot), p)
        rhs = -dKp[free] - lam[j] * (dG @ p[free])
        x = _bordered(S, a, g, u, j).solve(np.append(rhs, -0.5 * (p @ dKp)))
        ydot[free, j] = x[:-1]
    return y, ydot
