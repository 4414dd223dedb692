"""Self-weight: minimum compliance under a design-dependent body force.

Bruyneel & Duysinx (2005): the load is the sum of fixed loads and the weight
of the material, ``f(x) = f_fixed + sum_e x_phys_e f_e`` with ``f_e`` element
``e``'s consistent load ``int_e N^T (rho g) dV`` of a solid element (computed
once by scikit-fem, like the element stiffness). The compliance ``c = f(x)^T
u`` with ``u = K(E(x_phys))^{-1} f(x)`` then has the gradient

    dc/dx_e = 2 u_e^T f_e - E'(x_e) u_e^T K_e u_e        (B & D 2005, eq. (9))

which the AD chain gives on its own: the load is the linear map `BodyLoad`
(a primitive with its rules) and `topopt.fem.solve` differentiates its
right-hand side. The first term has no sign, so the compliance is not
monotonic in the design and the volume constraint may end inactive.

Interpolation: with SIMP the load-to-stiffness ratio of an element,
``x / E(x) ~ x^(1 - p)``, is unbounded as ``x -> 0`` (until ``Emin``): light
grey elements sag under their own weight (the parasitic effect). RAMP
(Stolpe & Svanberg 2001) keeps it bounded, ``x / E(x) <= (1 + q) / E0``
(`load_ratio`), so RAMP is the default here.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sps
import skfem
from skfem.helpers import dot

from .. import fem
from .._validate import check_choice, check_finite_array, check_load, check_mapping, check_range
from ..fem.models import _check_model
from ..design.filters import LinearFilter
from ..design.interpolation import ramp, simp
from ..responses.structural import compliance, volume
from ..optimize.driver import Stage
from ..io.result import run_record
from ..design.passive import Passive
from .compliance import ComplianceProblem, minimize_compliance
from ..io.result import RunResult, grey_level

__all__ = ["element_loads", "BodyLoad", "SelfWeightProblem", "load_ratio", "save_load_ratio",
           "INTERPOLATIONS"]

INTERPOLATIONS = ("ramp", "simp")


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
    >>> from topopt.formulations.selfweight import element_loads
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
    >>> from topopt.formulations.selfweight import BodyLoad
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


def load_ratio(x, interpolation: str = "ramp", penal: float = 3.0, q: float = 8.0,
               Emin: float = 1e-9):
    """Load-to-stiffness ratio ``x / E(x)`` of an element (``E0 = 1``).

    Self-weight scales with ``x`` and stiffness with ``E(x)``: SIMP gives
    ``x^(1 - p)`` (unbounded as ``x -> 0`` up to ``1 / Emin``), RAMP at most
    ``1 + q``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.formulations.selfweight import load_ratio
    >>> x = np.array([1e-3, 0.5, 1.0])
    >>> np.round(load_ratio(x, "ramp", q=8.0, Emin=0.0), 3)
    array([8.992, 5.   , 1.   ])
    >>> np.round(load_ratio(x, "simp", penal=3.0, Emin=0.0), 3)
    array([1.e+06, 4.e+00, 1.e+00])
    """
    check_choice("interpolation", interpolation, INTERPOLATIONS)
    x = np.asarray(x, dtype=float)
    if Emin == 0 and np.any(x == 0):
        raise ValueError("x must be > 0 where Emin = 0: the ratio x / E(x) is 0 / 0 at x = 0")
    E = simp(x, penal, Emin) if interpolation == "simp" else ramp(x, q, Emin)
    return x / E


class SelfWeightProblem:
    """Minimum compliance under fixed loads and self-weight, subject to a volume fraction.

    The chain of `topopt.formulations.ComplianceProblem` (filter, optional
    projection, MMA) with ``E = ramp(x_phys, q)`` (or ``simp``) and the load
    ``f(x) = f + BodyLoad(x_phys)``.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity model with its supports.
    f : (ndof,) array
        Fixed (design-independent) loads; may be zero.
    gravity : (dim,) array_like
        ``rho g`` of solid material (``(0, -gamma)``).
    volfrac : float in (0, 1)
        Upper bound of the volume fraction.
    rmin : float > 0
        Filter radius (see `ComplianceProblem`).
    interpolation : {"ramp", "simp"}
    q : float >= 0
        RAMP penalization.
    penal : float >= 1
        SIMP exponent (``interpolation="simp"``).
    filter, Emin, solver, eta, solver_options, passive
        As in `topopt.formulations.ComplianceProblem`: with `passive` MMA sees the
        ``n = passive.n_free`` free variables, ``x_phys`` (and so the weight
        ``f(x)``) holds the fixed values and the result's ``x`` is the full
        element vector.

    Examples
    --------
    A 6 x 2 cantilever under its own weight (beam theory: ``q^2 L^5 / (20 E I)``):

    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.selfweight import SelfWeightProblem
    >>> model = fem.elasticity(fem.rectangle(6, 2)).fix(nodes=lambda x: x[0] == 0)
    >>> p = SelfWeightProblem(model, np.zeros(model.ndof), (0.0, -1.0), 0.5, 1.5)
    >>> parts = p.compliance_split(np.ones(12))
    >>> round(parts["self_weight"], 3), parts["point_load"]   # beam theory: 2332.8
    (2421.431, 0.0)
    """

    def __init__(self, model: fem.Model, f, gravity, volfrac: float, rmin: float,
                 interpolation: str = "ramp", q: float = 8.0, penal: float = 3.0,
                 filter: str = "density", Emin: float = 1e-9, solver: str = "auto",
                 eta: float = 0.5, solver_options: dict | None = None,
                 passive: Passive | None = None):
        _check_model(model)
        check_choice("interpolation", interpolation, INTERPOLATIONS)
        self.q = check_range("q", q, 0.0, None, what="RAMP penalization")
        f = np.asarray(check_load("f", f, model.ndof, real=True), dtype=float)
        if f.shape != (model.ndof,):
            raise ValueError(f"f has shape {f.shape}; expected ({model.ndof},), the fixed loads")
        self.weight = BodyLoad(model, gravity)
        self.gravity = _gravity(model, gravity)
        # the filter, system and validation of the compliance problem (its load
        # is the full-solid one here, only checked there, never used)
        self._base = ComplianceProblem(model, f + self.weight.G @ np.ones(model.n_el), volfrac,
                                       rmin, penal=penal, filter=filter, Emin=Emin,
                                       solver=solver, eta=eta, solver_options=solver_options,
                                       passive=passive)
        b = self._base
        self.model, self.f, self.interpolation = model, f, interpolation
        self.volfrac, self.rmin, self.penal, self.Emin = b.volfrac, b.rmin, b.penal, b.Emin
        self.filter_name, self.filter, self.system = b.filter_name, b.filter, b.system
        self.weights, self.n, self.c0 = b.weights, b.n, None
        self.passive, self.n_el = b.passive, b.n_el

    # ----------------------------------------------------------- the chain
    def check_design(self, x, name: str = "the design vector") -> np.ndarray:
        return self._base.check_design(x, name)

    def x_phys(self, x, beta: float | None = None):
        """Filtered (and projected, with `beta`) densities, as in `ComplianceProblem`."""
        return self._base.x_phys(x, beta)

    def modulus(self, x_phys):
        """``E(x_phys)``: RAMP (Stolpe & Svanberg 2001) or SIMP; differentiable."""
        if self.interpolation == "ramp":
            return ramp(x_phys, self.q, self.Emin)
        return simp(x_phys, self.penal, self.Emin)

    def load(self, x_phys):
        """``f(x) = f_fixed + sum_e x_phys_e f_e`` (B & D 2005, eq. (5)); differentiable."""
        return self.f + self.weight(x_phys)

    def state(self, x_phys):
        """``(u, f)``: the displacements and the load of the physical densities."""
        f = self.load(x_phys)
        return fem.solve(self.system, self.modulus(x_phys), f), f

    def compliance(self, x, beta: float | None = None):
        """``c = f(x)^T K(E(x))^{-1} f(x)``; differentiable, the load's derivative included."""
        return compliance(*self.state(self.x_phys(x, beta)))

    def volume(self, x, beta: float | None = None):
        return volume(self.x_phys(x, beta), self.weights)

    def responses(self, x, beta: float | None = None):
        """``(c / c0, v / volfrac - 1)`` for MMA."""
        x_phys = self.x_phys(x, beta)
        return (compliance(*self.state(x_phys)) / self.c0,
                volume(x_phys, self.weights) / self.volfrac - 1.0)

    def compliance_split(self, x_phys) -> dict:
        """``c = f_fixed^T u + f_weight^T u``: the parts of the fixed loads and of the weight."""
        x_phys = np.asarray(x_phys, dtype=float)
        u, f = self.state(x_phys)
        point, total = float(self.f @ u), float(f @ u)
        return {"point_load": point, "self_weight": total - point,
                "self_weight_share": (total - point) / total if total else 0.0}

    def nodal_state(self, u) -> dict:
        return self._base.nodal_state(u)

    # ----------------------------------------------------------- the run
    def run(self, maxeval: int = 200, x0=None, stages: Sequence[Stage] | None = None,
            ftol_rel: float = 0.0, xtol_abs: float = 0.0, verbose: bool = True,
            checkpoint: str | None = None, resume: str | None = None,
            mma_params: dict | None = None) -> RunResult:
        """Optimize from `x0` (uniform `volfrac`); a `RunResult` as `ComplianceProblem.run`'s.

        Its metrics add the compliance split (``compliance_point_load``,
        ``compliance_self_weight``, ``self_weight_share``) and
        ``volume_constraint_active`` (``v >= volfrac - 1e-3``). MMA runs with
        `minimize`'s conservative default (inner iterations), not the classic
        MMA of `ComplianceProblem.run`: the load's term makes the compliance
        non-monotonic, and on the arch (40 x 30 half model) classic MMA
        jumped from ``c / c0 = 0.44`` to ``3e5`` at its fourth step and never
        came back; the conservative one recovers in one step (``c = 105.9``).
        """
        res, seconds, fe_solves = minimize_compliance(
            self, maxeval, x0, stages, ftol_rel, xtol_abs, verbose, checkpoint, resume,
            mma_params)
        beta = stages[-1].params.get("beta") if stages else None
        x_phys = np.asarray(self.x_phys(res.x, beta))
        u, f = self.state(x_phys)
        return RunResult.from_record(
            run_record(res, checkpoint),
            self._metrics(x_phys, u, f, fe_solves, res.evaluations, seconds),
            x=self.passive.expand(res.x), x_phys=x_phys, history=res.history,
            arrays={"u": np.asarray(u)})

    def _metrics(self, x_phys, u, f, fe_solves, evaluations, seconds) -> dict:
        c, point = float(f @ u), float(self.f @ u)
        v = float(volume(x_phys, self.weights))
        return {
            "compliance": c, "compliance_point_load": point,
            "compliance_self_weight": c - point,
            "self_weight_share": (c - point) / c if c else 0.0,
            "volume": v, "volume_constraint_active": bool(v >= self.volfrac - 1e-3),
            "weight": float(np.linalg.norm(self.gravity) * v * np.sum(self.weights)),
            "grey_level": grey_level(x_phys), "fe_solves": fe_solves,
            "fe_solves_per_iteration": fe_solves / max(evaluations, 1),
            "seconds": seconds, "solver": self.system.solver, "filter": self.filter_name,
            "interpolation": self.interpolation,
        } | self._base.cg_metrics()


def save_load_ratio(path: str, penal: float = 3.0, q: float = 8.0, Emin: float = 1e-9,
                    title: str | None = None) -> None:
    """Plot `load_ratio` of SIMP (`penal`) and RAMP (`q`) against the density to `path`.

    Why RAMP under self-weight: SIMP's ratio ``x^(1 - p)`` grows to ``1 /
    Emin``-limited values as ``x -> 0``, RAMP's stays below ``1 + q``.

    Examples
    --------
    >>> import os, tempfile
    >>> from topopt.formulations.selfweight import save_load_ratio
    >>> path = os.path.join(tempfile.mkdtemp(), "ratio.png")
    >>> save_load_ratio(path, penal=3.0, q=8.0)
    >>> open(path, "rb").read(4)[1:]
    b'PNG'
    """
    from matplotlib.figure import Figure
    from ..plot.figures import _save
    x = np.logspace(-4, 0, 400)
    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot()
    ax.loglog(x, load_ratio(x, "simp", penal=penal, Emin=Emin), label=f"SIMP, p = {penal:g}")
    ax.loglog(x, load_ratio(x, "ramp", q=q, Emin=Emin), label=f"RAMP, q = {q:g}")
    ax.axhline(1.0 + q, color="grey", lw=0.8, ls="--")
    ax.text(x[0], (1.0 + q) * 1.3, f"1 + q = {1 + q:g}", color="grey", fontsize=8)
    ax.set_xlabel("density x")
    ax.set_ylabel("weight / stiffness  x / E(x)")
    ax.set_title(title or "Load-to-stiffness ratio of an element under self-weight")
    ax.legend()
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
