"""The thermal-expansion load of a temperature field on a design (Gao & Zhang 2010).

A temperature rise ``T`` (from a heat model on the same mesh) strains the
solid by ``eps_th = alpha T (1, 1[, 1], 0...)``. With ``sigma = D (eps -
eps_th)`` the virtual work of the thermal stress is the load

    f_th(b, T) = sum_e b_e L_e T_e,   L_e = int_e B^T D eps_th(N) dV,     (1)

with ``B`` the mechanical strain-displacement matrix, ``N`` the thermal shape
functions, ``D`` Hooke's matrix of the solid and ``b_e`` the element's
thermal stress coefficient (``E alpha`` relative to the solid's, an
interpolation of the density; Gao & Zhang 2010, eq. (11)). For an isotropic
solid ``B^T D eps_th = kappa alpha T div(v)``, so

    (L_e)_ij = kappa alpha int_e div(phi_i) N_j dV,                         (2)

``kappa = E / (1 - nu)`` in plane stress, ``E / (1 - 2 nu)`` in plane strain
(the thermal strain has its out-of-plane part, ``eps_zz = alpha T``) and in
3-D. `coupling_matrices` computes ``L_e`` once by quadrature on the
scikit-fem bases; with ``temperature="centroid"`` the element's temperature
is its value at the centroid (pyMOTO's ``ElementAverage`` and
``ThermoMechanical``: ``L_e = int B^T D eps_th dV N(centroid)``).

`ThermalCoupling` applies (1); it is the primitive `thermal_load`, bilinear
in ``(b, T)``, whose rules call two more primitives (`coupling_products`,
``b_e``'s cotangent ``v_e^T L_e T_e``, and `coupling_transpose`, ``T``'s
``sum_e b_e L_e^T v_e``): the three are closed under differentiation, so
every mode works (reverse, forward, Hessian-vector products, nested).
"""

from __future__ import annotations

import numpy as np
import skfem

from .. import ad
from .._validate import (check_array_range, check_choice, check_finite_values, check_int,
                         check_positive, check_range, check_type)
from ..fem import Model
from ..fem.adjoint import _bilinear_frule
from ..fem.mesh import _translates
from .stress import _check_material

__all__ = ["TEMPERATURES", "thermal_modulus", "coupling_matrices", "ThermalCoupling",
           "thermal_load", "coupling_products", "coupling_transpose"]

#: How an element sees the temperature: the interpolated field, or its centroid value.
TEMPERATURES = ("consistent", "centroid")


def thermal_modulus(dim: int, nu: float = 0.3, E0: float = 1.0, plane: str = "stress") -> float:
    """``kappa`` with ``D eps_th = kappa alpha T`` on the normal stresses (isotropic solid).

    Examples
    --------
    >>> from topopt.responses.thermoelastic import thermal_modulus
    >>> round(thermal_modulus(2, 0.3), 6), round(thermal_modulus(2, 0.3, plane="strain"), 6)
    (1.428571, 2.5)
    """
    dim = check_int("dim", dim, 2, 3, what="space dimension")
    nu = check_range("nu", nu, -1.0, 0.5, lo_open=True, hi_open=True, what="Poisson's ratio")
    E0 = check_positive("E0", E0, "Young's modulus")
    check_choice("plane", plane, ("stress", "strain"))
    return E0 / (1.0 - nu) if dim == 2 and plane == "stress" else E0 / (1.0 - 2.0 * nu)


def _check_pair(mechanical, thermal) -> None:
    check_type("mechanical", mechanical, Model, "an elasticity topopt.fem.Model")
    check_type("thermal", thermal, Model, "a heat topopt.fem.Model (topopt.fem.heat)")
    dim = mechanical.mesh.p.shape[0]
    if mechanical.components != dim:
        raise TypeError(f"mechanical must be an elasticity model (fem.elasticity), got "
                        f"{mechanical!r}")
    if thermal.components != 1:
        raise TypeError(f"thermal must be a heat model (fem.heat), got {thermal!r}")
    same = (thermal.mesh is mechanical.mesh) or (
        thermal.mesh.t.shape == mechanical.mesh.t.shape
        and np.array_equal(thermal.mesh.t, mechanical.mesh.t)
        and np.array_equal(thermal.mesh.p, mechanical.mesh.p))
    if not same:
        raise ValueError("thermal and mechanical must be built on the same mesh")


def _local(mb: skfem.CellBasis, tb_elem, centroid: bool) -> np.ndarray:
    """``int_e div(phi_i) N_j dV`` (or ``int_e div(phi_i) dV N_j(centroid)``), (n_el, i, j)."""
    mesh = mb.mesh
    tb = skfem.Basis(mesh, tb_elem, quadrature=(mb.X, mb.W))
    div = np.stack([np.trace(phi[0].grad) for phi in mb.basis], axis=1)   # (n_el, i, n_q)
    if centroid:
        c = tb_elem.refdom.p.mean(axis=1)[:, None]
        at = skfem.Basis(mesh, tb_elem, quadrature=(c, np.ones(1)))
        N = np.stack([np.asarray(phi[0])[:, 0] for phi in at.basis], axis=1)    # (n_el, j)
        return np.einsum("eiq,eq,ej->eij", div, mb.dx, N)
    N = np.stack([np.asarray(phi[0]) for phi in tb.basis], axis=1)              # (n_el, j, n_q)
    return np.einsum("eiq,ejq,eq->eij", div, N, mb.dx)


def coupling_matrices(mechanical: Model, thermal: Model, alpha: float = 1.0, nu: float = 0.3,
                      E0: float = 1.0, plane: str = "stress",
                      temperature: str = "consistent") -> np.ndarray:
    """The element coupling matrices ``L_e`` of eq. (2), ``(n_el, n_loc_u, n_loc_T)``.

    Parameters
    ----------
    mechanical : topopt.fem.Model
        Elasticity model (`topopt.fem.elasticity`).
    thermal : topopt.fem.Model
        Heat model (`topopt.fem.heat`) on the same mesh.
    alpha : float > 0
        Coefficient of thermal expansion.
    nu, E0, plane
        Those given to `topopt.fem.elasticity` (checked against its element
        matrix: a mismatch raises `ValueError`).
    temperature : {"consistent", "centroid"}
        ``T`` interpolated by the thermal shape functions, or the centroid
        value per element (pyMOTO's ``ElementAverage``).

    Returns
    -------
    numpy.ndarray
        ``L[e] @ T[thermal dofs of e]`` is the load on the mechanical dofs of
        ``e`` (``basis.element_dofs`` orders); a read-only broadcast of one
        matrix on a uniform lattice.

    Examples
    --------
    A unit square heated by 1 pushes its four corners outward by ``kappa / 2``
    in each direction (``kappa = 1 / 0.7`` in plane stress):

    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.responses.thermoelastic import coupling_matrices
    >>> mesh = fem.rectangle(1, 1)
    >>> L = coupling_matrices(fem.elasticity(mesh), fem.heat(mesh))
    >>> f = (L[0] @ np.ones(4)).reshape(4, 2) * 1.4      # (x, y) at each corner
    >>> corners = mesh.p[:, mesh.t[:, 0]].T               # (0, 0), (0, 1), ...
    >>> bool(np.allclose(f, 2 * corners - 1))             # -1/2 or 1/2, times kappa
    True
    """
    _check_pair(mechanical, thermal)
    alpha = check_positive("alpha", alpha, "coefficient of thermal expansion")
    _check_material(mechanical, nu, E0, plane)
    check_choice("temperature", temperature, TEMPERATURES)
    mesh, mb = mechanical.mesh, mechanical.basis
    kappa = thermal_modulus(mesh.p.shape[0], nu, E0, plane)
    centroid = temperature == "centroid"
    if _translates(mesh):                    # one element, broadcast (as the stiffness)
        one = type(mesh)(mesh.p[:, mesh.t[:, 0]], np.arange(mesh.t.shape[0])[:, None])
        L = _local(skfem.Basis(one, mb.elem, quadrature=(mb.X, mb.W)), thermal.basis.elem,
                   centroid)
        return np.broadcast_to(kappa * alpha * L, (mechanical.n_el,) + L.shape[1:])
    return kappa * alpha * _local(mb, thermal.basis.elem, centroid)


class ThermalCoupling:
    """The thermal-expansion load ``f_th(b, T) = sum_e b_e L_e T_e`` (eq. (1)).

    Parameters
    ----------
    mechanical, thermal, alpha, nu, E0, plane, temperature
        As in `coupling_matrices`.

    Attributes
    ----------
    L : (n_el, n_loc_u, n_loc_T) array
        `coupling_matrices`.
    kappa : float
        `thermal_modulus` of the solid.

    Examples
    --------
    A free bar 4 x 1 heated uniformly by ``dT = 2`` lengthens by ``alpha dT L``:

    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.responses.thermoelastic import ThermalCoupling
    >>> mesh = fem.rectangle(4, 1)
    >>> bar = fem.elasticity(mesh).fix(nodes=lambda x: x[0] == 0, components=0)
    >>> bar = bar.fix(nodes=(0, 0), components=1)
    >>> load = ThermalCoupling(bar, fem.heat(mesh), alpha=0.01)
    >>> u = bar.solve(np.ones(4), load(np.ones(4), np.full(10, 2.0)))
    >>> round(float(u[bar.dofs(nodes=(4, 1), components=0)][0]), 12)   # 0.01 * 2 * 4
    0.08
    """

    def __init__(self, mechanical: Model, thermal: Model, alpha: float = 1.0, nu: float = 0.3,
                 E0: float = 1.0, plane: str = "stress", temperature: str = "consistent"):
        self.L = coupling_matrices(mechanical, thermal, alpha, nu, E0, plane, temperature)
        self.kappa = thermal_modulus(mechanical.mesh.p.shape[0], nu, E0, plane)
        self.alpha, self.temperature = alpha, temperature
        self.n_el, self.n_u, self.n_T = mechanical.n_el, mechanical.ndof, thermal.ndof
        self.u_dofs = np.ascontiguousarray(mechanical.basis.element_dofs.T)
        self.T_dofs = np.ascontiguousarray(thermal.basis.element_dofs.T)
        self._L0 = self.L[0] if self.L.strides[0] == 0 else None

    def __call__(self, b, T):
        """`thermal_load` of the element coefficients `b` and temperatures `T`."""
        for name, v, n, what in (("b", b, self.n_el, "one thermal stress coefficient per "
                                  "element"), ("T", T, self.n_T, "one temperature per dof")):
            shape = np.shape(ad.value(v))
            if shape != (n,):
                raise ValueError(f"{name} has shape {shape}; expected ({n},), {what}")
            check_array_range(name, v)
        return thermal_load(self, b, T)

    @staticmethod
    def _plain(name: str, v, n: int) -> np.ndarray:
        """`v` as a real array of shape ``(n,)`` without NaN/inf (`ValueError`/`TypeError`)."""
        v = np.asarray(v)
        if v.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be a real array, got dtype {v.dtype}")
        if v.shape != (n,):
            raise ValueError(f"{name} has shape {v.shape}; expected ({n},)")
        check_finite_values(name, v, f"{name} must be finite")
        return v

    # ---------------------------------------------------------- the kernels
    def _apply(self, Te):
        """``L_e T_e`` per element."""
        return Te @ self._L0.T if self._L0 is not None else np.einsum("eij,ej->ei", self.L, Te)

    def _apply_T(self, ve):
        """``L_e^T v_e`` per element."""
        return ve @ self._L0 if self._L0 is not None else np.einsum("eij,ei->ej", self.L, ve)

    def load(self, b, T) -> np.ndarray:
        """``sum_e b_e L_e T_e`` on the mechanical dofs (plain arrays)."""
        b, T = self._plain("b", b, self.n_el), self._plain("T", T, self.n_T)
        local = b[:, None] * self._apply(T[self.T_dofs])
        return np.bincount(self.u_dofs.ravel(), local.ravel(), self.n_u)

    def products(self, v, T) -> np.ndarray:
        """``v_e^T L_e T_e`` per element (plain arrays)."""
        v, T = self._plain("v", v, self.n_u), self._plain("T", T, self.n_T)
        return np.sum(v[self.u_dofs] * self._apply(T[self.T_dofs]), 1)

    def transpose(self, b, v) -> np.ndarray:
        """``sum_e b_e L_e^T v_e`` on the thermal dofs (plain arrays)."""
        b, v = self._plain("b", b, self.n_el), self._plain("v", v, self.n_u)
        local = b[:, None] * self._apply_T(v[self.u_dofs])
        return np.bincount(self.T_dofs.ravel(), local.ravel(), self.n_T)


@ad.primitive
def thermal_load(C: ThermalCoupling, b, T):
    """``sum_e b_e L_e T_e`` (`ThermalCoupling`, eq. (1)); bilinear in `b` and `T`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad, fem
    >>> from topopt.responses.thermoelastic import ThermalCoupling, thermal_load
    >>> mesh = fem.rectangle(2, 1)
    >>> C = ThermalCoupling(fem.elasticity(mesh), fem.heat(mesh))
    >>> g = ad.gradient(lambda b: np.sum(thermal_load(C, b, np.ones(6)) ** 2), np.ones(2))
    >>> g.shape
    (2,)
    """
    return C.load(b, T)


@ad.rrule(thermal_load)
def thermal_load_rrule(C, b, T):
    def thermal_load_pullback(ybar):
        return (None, ad.thunk(lambda: coupling_products(C, ybar, T)),
                ad.thunk(lambda: coupling_transpose(C, b, ybar)))
    return thermal_load(C, b, T), thermal_load_pullback


@ad.primitive
def coupling_products(C: ThermalCoupling, v, T):
    """``v_e^T L_e T_e`` per element: the cotangent of `thermal_load`'s ``b``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.responses.thermoelastic import ThermalCoupling, coupling_products
    >>> mesh = fem.rectangle(2, 1)
    >>> C = ThermalCoupling(fem.elasticity(mesh), fem.heat(mesh))
    >>> coupling_products(C, np.zeros(12), np.ones(6))
    array([0., 0.])
    """
    return C.products(v, T)


@ad.rrule(coupling_products)
def coupling_products_rrule(C, v, T):
    def coupling_products_pullback(ybar):
        return (None, ad.thunk(lambda: thermal_load(C, ybar, T)),
                ad.thunk(lambda: coupling_transpose(C, ybar, v)))
    return coupling_products(C, v, T), coupling_products_pullback


@ad.primitive
def coupling_transpose(C: ThermalCoupling, b, v):
    """``sum_e b_e L_e^T v_e`` on the thermal dofs: the cotangent of `thermal_load`'s ``T``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.responses.thermoelastic import ThermalCoupling, coupling_transpose
    >>> mesh = fem.rectangle(2, 1)
    >>> C = ThermalCoupling(fem.elasticity(mesh), fem.heat(mesh))
    >>> coupling_transpose(C, np.ones(2), np.zeros(12)).shape
    (6,)
    """
    return C.transpose(b, v)


@ad.rrule(coupling_transpose)
def coupling_transpose_rrule(C, b, v):
    def coupling_transpose_pullback(ybar):
        return (None, ad.thunk(lambda: coupling_products(C, v, ybar)),
                ad.thunk(lambda: thermal_load(C, b, ybar)))
    return coupling_transpose(C, b, v), coupling_transpose_pullback


for _fun in (thermal_load, coupling_products, coupling_transpose):
    ad.frule(_fun)(_bilinear_frule(_fun))
