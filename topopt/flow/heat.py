"""Responses of a `topopt.flow.Convection` temperature: the heat a flow carries across
boundary facets and the mean temperature of a region; both traced."""

from __future__ import annotations

import numpy as np
import skfem

__all__ = ["convective_flux", "mean_temperature"]


def convective_flux(thermal, where):
    """``f(T, p) = int rho_c (u.n) T ds`` over the boundary facets of `thermal` (a
    `topopt.flow.Convection`) that `where` selects.

    Over the outlet it is the heat the fluid carries out; over inlet and
    outlet together (the inflow counts negative) the heat taken away.
    The returned function is traced in ``T`` and ``p``.

    Parameters
    ----------
    where : callable
        Predicate on facet midpoints, ``x -> bool array``.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt.flow import Convection, convective_flux, mean_temperature
    >>> model = Convection(skfem.MeshTri().refined(2), order=1)
    >>> u = model.basis_u.project(lambda x: np.stack([1 + 0 * x[0], 0 * x[0]]))
    >>> p = np.concatenate([u, np.ones(model.mesh.t.shape[1])])
    >>> flux = convective_flux(model, lambda x: x[0] > 1 - 1e-9)
    >>> round(float(flux(np.ones(model.n), p)), 12)    # rho_c |u| T over a unit edge
    1.0
    """
    facets = thermal.mesh.facets_satisfying(where, boundaries_only=True)
    if len(facets) == 0:
        raise ValueError("where selects no boundary facet")
    fb = skfem.FacetBasis(thermal.mesh, thermal.element, facets=facets, intorder=thermal.intorder)
    fu = skfem.FacetBasis(thermal.mesh, thermal.basis_u.elem, facets=facets,
                          quadrature=fb.quadrature)
    phi = np.stack([np.asarray(f[0]) for f in fb.basis])
    un = np.einsum("adfq,dfq->afq", np.stack([np.asarray(f[0]) for f in fu.basis]),
                   fb.normals)
    weight = thermal.rho_c * fb.dx

    def flux(T, p):
        u, _ = thermal.split(p)
        Tq = np.einsum("af,afq->fq", thermal._check_T(T)[fb.element_dofs], phi)
        uq = np.einsum("af,afq->fq", u[fu.element_dofs], un)
        return np.sum(weight * uq * Tq)
    return flux


def mean_temperature(thermal, where=None):
    """``f(T) = int_D T dx / |D|`` over the elements of `thermal` (a
    `topopt.flow.Convection`) whose midpoints `where` selects.

    Parameters
    ----------
    where : callable or None
        Predicate on element midpoints; ``None``: the whole mesh.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt.flow import Convection, convective_flux, mean_temperature
    >>> model = Convection(skfem.MeshTri().refined(2))
    >>> mean = mean_temperature(model, lambda x: x[0] < 0.5)
    >>> round(float(mean(model.basis.doflocs[0])), 12)      # T = x on [0, 1/2]
    0.25
    """
    mid = thermal.mesh.p[:, thermal.mesh.t].mean(axis=1)
    cells = np.ones(mid.shape[1], bool) if where is None else np.asarray(where(mid), bool)
    if not cells.any():
        raise ValueError("where selects no element")
    w = np.einsum("eq,aeq->ae", thermal.basis.dx * cells[:, None], thermal._phi)
    w = w / np.sum(thermal.basis.dx[cells])

    def mean(T):
        return np.sum(w * thermal._check_T(T)[thermal.basis.element_dofs])
    return mean
