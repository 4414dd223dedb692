"""Responses of a flow state: dissipated power, pressure drop, fluid volume fraction.

Each is plain numpy traced by `topopt.ad` in the state ``w`` and the design
``rho`` (every mode), so that composed with the nonlinear solve it has the
gradient of the implicit function theorem.
"""

from __future__ import annotations

import numpy as np
import skfem
from skfem.helpers import ddot, grad, transpose

from .._validate import check_choice
from .fields import at_quadrature
from .model import FlowModel
from .spaces import TaylorHood

__all__ = ["dissipated_power", "pressure_drop", "mean_pressure_weights", "fluid_fraction"]

#: The factor of ``mu int |grad u|^2`` in `dissipated_power` for each convention.
VISCOUS_FACTOR = {"borrvall-petersson": 0.5, "dolfin-adjoint": 1.0, "alexandersen": 0.5}
#: The conventions whose viscous term is ``grad u : (grad u + grad u^T)`` (symmetric gradient).
SYMMETRIC = frozenset({"alexandersen"})


@skfem.BilinearForm
def _transposed(u, v, w):
    return ddot(grad(u), transpose(grad(v)))


def _transposed_matrix(model):
    """``mu int grad u : grad v^T`` (``nu x nu``), assembled once per model (its copies share)."""
    if getattr(model, "_viscous_transposed", None) is None:
        model._viscous_transposed = (model.mu * _transposed.assemble(model.space.basis_u)).tocsr()
    return model._viscous_transposed


def _model(model):
    if not isinstance(model, FlowModel):
        raise TypeError(f"model must be a topopt.flow.FlowModel, got {type(model).__name__}")
    return model


def dissipated_power(model: FlowModel, w, rho, convention: str = "borrvall-petersson"):
    """The power dissipated by the flow, ``1/2 int alpha(rho) |u|^2 + c mu int |grad u|^2``.

    Borrvall & Petersson's objective (2003, eq. 11) has ``c = 1/2``:
    ``1/2 int alpha |u|^2 + mu/2 int grad u : grad u`` (``convention =
    "borrvall-petersson"``, the default, in which the double pipe's optimum is
    27.64 at aspect 1.5). dolfin-adjoint's ``stokes-topology`` demo uses ``c
    = 1`` (``convention = "dolfin-adjoint"``; its documented optimum 45.94).
    Alexandersen's topFlow (2023, Struct. Multidisc. Optim. 66:12, eq. 10)
    writes the viscous term with the symmetric gradient, ``1/2 int alpha |u|^2
    + mu/2 int grad u : (grad u + grad u^T)`` (``convention =
    "alexandersen"``); for a divergence-free ``u`` whose boundary terms
    ``(u . grad u) . n`` vanish (no-slip walls, inlets and outlets normal to
    straight edges) it equals the first convention, discretely up to the
    divergence error.
    For Stokes flow with zero Dirichlet data the first convention is half the
    power the boundary data puts in. Traced in `w` and `rho`.

    Parameters
    ----------
    model : FlowModel
    w : array_like, shape (model.n,)
        State ``[u, p]``.
    rho : array_like
        Design, P0 (one per element) or P1 (one per vertex).
    convention : {"borrvall-petersson", "dolfin-adjoint", "alexandersen"}
        The viscous term: ``mu/2 grad u : grad u``, ``mu grad u : grad u`` or
        ``mu/2 grad u : (grad u + grad u^T)``.

    Examples
    --------
    The rotation ``u = (-y, x)`` on the unit square with ``alpha = mu = 1``:
    ``1/2 int |u|^2 = 1/2 int (x^2 + y^2) = 1/3`` and ``|grad u|^2 = 2``, so
    ``J = 1/3 + 1/2 * 2 = 4/3`` (P2 interpolates it exactly):

    >>> import numpy as np, skfem
    >>> from topopt.flow import TaylorHood, FlowModel, dissipated_power
    >>> model = FlowModel(TaylorHood(skfem.MeshTri().refined(2)), alpha_min=1.0, alpha_max=1.0)
    >>> u = model.space.interpolate_velocity(lambda x: np.array([-x[1], x[0]]))
    >>> w = np.concatenate([u, np.zeros(model.space.np_)])
    >>> round(float(dissipated_power(model, w, np.ones(model.space.mesh.nelements))), 12)
    1.333333333333

    The rotation has ``grad u : grad u^T = -2``: Alexandersen's convention gives ``1/3``:

    >>> round(float(dissipated_power(model, w, np.ones(model.space.mesh.nelements),
    ...                              convention="alexandersen")), 12)
    0.333333333333
    """
    c = VISCOUS_FACTOR[check_choice("convention", convention, VISCOUS_FACTOR)]
    model = _model(model)
    model.space._check_state(w)
    uq, _ = model.velocity_at_quadrature(w)
    brinkman = 0.5 * np.sum(model.alpha_at_quadrature(rho) * model.dx * np.sum(uq * uq, axis=0))
    u = w[:model.nu]
    viscous = u @ (model.A @ u)
    if convention in SYMMETRIC:
        viscous = viscous + u @ (_transposed_matrix(model) @ u)
    return brinkman + c * viscous


def mean_pressure_weights(space: TaylorHood, where) -> np.ndarray:
    """Weights ``m`` (one per pressure dof) with ``m @ p`` the mean pressure over the
    boundary facets selected by ``where(x)``.

    Examples
    --------
    >>> import skfem
    >>> from topopt.flow import TaylorHood, mean_pressure_weights
    >>> m = mean_pressure_weights(TaylorHood(skfem.MeshTri()), lambda x: x[0] < 1e-9)
    >>> m.round(3).tolist(), float(m.sum())      # vertices (0,0), (1,0), (0,1), (1,1)
    ([0.5, 0.0, 0.5, 0.0], 1.0)
    """
    facets = space.facets(where)
    if facets.size == 0:
        raise ValueError("where selects no boundary facet")
    fb = skfem.FacetBasis(space.mesh, space.basis_p.elem, facets=facets,
                          intorder=space.intorder)
    weights = skfem.LinearForm(lambda v, w: v).assemble(fb)
    return weights / weights.sum()


def pressure_drop(model: FlowModel, w, inlet, outlet):
    """Mean pressure over the `inlet` facets minus that over the `outlet` facets.

    `inlet` and `outlet` are predicates ``where(x)`` of the facet midpoints or
    weights from `mean_pressure_weights` (reuse those in a loop). Traced in `w`.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt.flow import TaylorHood, FlowModel, pressure_drop
    >>> model = FlowModel(TaylorHood(skfem.MeshTri()))
    >>> x = model.space.mesh.p[0]
    >>> w = np.concatenate([np.zeros(model.nu), 3.0 * (1.0 - x)])     # p = 3 (1 - x)
    >>> round(float(pressure_drop(model, w, lambda x: x[0] < 1e-9, lambda x: x[0] > 1 - 1e-9)), 12)
    3.0
    """
    model = _model(model)
    model.space._check_state(w)
    weights = []
    for name, where in (("inlet", inlet), ("outlet", outlet)):
        if callable(where):
            weights.append(mean_pressure_weights(model.space, where))
        elif np.shape(where) == (model.space.np_,):
            weights.append(np.asarray(where, dtype=float))
        else:
            raise TypeError(f"{name} must be a predicate of the facet midpoints or "
                            f"{model.space.np_} weights from mean_pressure_weights")
    p = w[model.nu:]
    return (weights[0] - weights[1]) @ p


def fluid_fraction(model: FlowModel, rho):
    """The fluid volume fraction ``int rho / |Omega|`` (P0 or P1 `rho`, exact), traced.

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt.flow import TaylorHood, FlowModel, fluid_fraction
    >>> model = FlowModel(TaylorHood(skfem.MeshTri().refined(1)))
    >>> round(float(fluid_fraction(model, model.space.mesh.p[0])), 12)      # rho = x
    0.5
    """
    model = _model(model)
    dx = model.dx
    return np.sum(at_quadrature(model.space.basis_p, rho) * dx) / np.sum(dx)
