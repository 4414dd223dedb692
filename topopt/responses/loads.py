"""Loads that depend on the design: the weight of the material (Bruyneel & Duysinx 2005).

``f(x) = sum_e x_phys,e f_e`` with ``f_e = int_e N^T (rho g) dV`` the
consistent load of solid element ``e`` (`element_loads`); `BodyLoad` is the
linear map ``x_phys -> f(x)``, differentiable in every mode.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps
import skfem
from skfem.helpers import dot

from .. import fem
from .._validate import check_finite_array
from ..design.linear_filter import LinearFilter
from ..fem.models import _check_model

__all__ = ["element_loads", "BodyLoad"]


def _gravity(model: fem.Model, gravity) -> np.ndarray:
    """The body force per unit volume of solid, one entry per displacement component."""
    g = check_finite_array("gravity", gravity)
    if g.shape != (model.components,):
        raise ValueError(f"gravity has shape {g.shape}; expected ({model.components},), the "
                         "body force per unit volume of solid (rho g) per component")
    if not np.any(g):
        raise ValueError("gravity is zero: the body force rho g needs a nonzero component")
    return g


def element_loads(model: fem.Model, gravity) -> np.ndarray:
    """Consistent load vectors ``f_e = int_e N^T (rho g) dV`` of solid elements.

    Parameters
    ----------
    model : topopt.fem.Model
        An elasticity model (`topopt.fem.elasticity`).
    gravity : (dim,) array_like
        Body force per unit volume of solid material, ``rho g`` (a weight
        density, e.g. ``(0, -rho g)``).

    Returns
    -------
    (n_el, n_loc) numpy.ndarray
        Element ``e``'s load on its dofs ``model.basis.element_dofs[:, e]``;
        they sum to ``model.body_load(gravity)``.

    Examples
    --------
    A unit square element: a quarter of its weight at each node.

    >>> from topopt import fem
    >>> from topopt.responses.loads import element_loads
    >>> element_loads(fem.elasticity(fem.rectangle(1, 1)), (0.0, -2.0))
    array([[ 0. , -0.5,  0. , -0.5,  0. , -0.5,  0. , -0.5]])
    """
    if model.components < 2:
        raise ValueError("self-weight needs an elasticity model (a vector field); got a "
                         "scalar model")
    g = _gravity(model, gravity)
    form = skfem.LinearForm(lambda v, w: dot(g[:, None, None], v))
    return np.asarray(form.elemental(model.basis).tolocal(), dtype=float)


class BodyLoad(LinearFilter):
    """The weight of the material as a linear map ``x_phys -> sum_e x_phys_e f_e``.

    A `topopt.design.LinearFilter` from element values to dofs, so calling
    it is the primitive `topopt.design.apply_filter` (pullback ``G^T``,
    forward rule itself, every mode).

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity model.
    gravity : (dim,) array_like
        ``rho g`` of solid material (see `element_loads`).

    Attributes
    ----------
    G : scipy.sparse.csc_matrix, (ndof, n_el)
        Column ``e`` is ``f_e``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad, fem
    >>> from topopt.responses.loads import BodyLoad
    >>> model = fem.elasticity(fem.rectangle(2, 1))
    >>> weight = BodyLoad(model, (0.0, -1.0))
    >>> f = weight(np.array([1.0, 0.5]))          # 1 + 0.5 unit squares of material
    >>> float(np.sum(f[0::2])), float(np.sum(f[1::2]))
    (0.0, -1.5)
    >>> ad.gradient(lambda x: np.sum(weight(x)), np.array([1.0, 0.5]))
    array([-1., -1.])
    """

    def __init__(self, model: fem.Model, gravity):
        _check_model(model)
        fe = element_loads(model, gravity)
        dofs = model.basis.element_dofs                         # (n_loc, n_el)
        self.n, self._n_out = model.n_el, model.ndof
        cols = np.broadcast_to(np.arange(self.n), dofs.shape)
        self.G = sps.csc_matrix((fe.T.ravel(), (dofs.ravel(), cols.ravel())),
                                shape=(self._n_out, self.n))
        self.G_T = self.G.T.tocsr()

    @property
    def n_out(self) -> int:
        return self._n_out

    def _forward(self, x: np.ndarray) -> np.ndarray:
        return self.G @ x

    def _transpose(self, y: np.ndarray) -> np.ndarray:
        return self.G_T @ y
