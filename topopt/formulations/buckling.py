"""Maximum buckling load with a volume limit (Ferrari & Sigmund 2019; Ferrari et al. 2021).

``x -> x_phys`` (filter, a stage's projection) ``-> E = simp(x_phys)`` (``K``)
and ``E_G = x_phys^p_G`` (``G``, no ``Emin``: void carries no stress
stiffness, Ferrari et al. 2021's stress interpolation against spurious
modes) ``-> u = K(E)^{-1} f -> lambda_1 <= ... <= lambda_J`` of ``(K(E) +
lambda G(E_G, u)) phi = 0`` (`topopt.fem.buckling.buckling_factors`; the
tape adds the prebuckling adjoint ``K w = d lambda / d u``).

The lowest factor switches mode and is often repeated at the optimum, so
the objective aggregates the ``J`` lowest with Kreisselmeier-Steinhauser
(Ferrari et al. 2021, eq. (13)), here over the logarithms ``m_j = log(lambda_ref
/ lambda_j)``::

    min  KS(m) = m_max + log(sum_j exp(rho (m_j - m_max))) / rho
    s.t. v(x_phys) <= volfrac   [and c(x_phys) <= c_max c0]

``KS >= max m_j``, so ``lambda_ref exp(-KS)`` is a smooth lower bound of
``lambda_1``, within a factor ``J^(1 / rho)`` whatever the factors' size: the
KS weights are ``(lambda_1 / lambda_j)^rho``. (Over ``mu_j = lambda_ref /
lambda_j`` themselves the gap ``log(J) / rho`` is absolute: once ``lambda_1``
had grown 2300-fold from the uniform start, ``mu`` was ~4e-4 against a gap of
0.045, the objective all but flat and the weights uniform; the column's
result then depended on rounding: lambda_1 7.3e-6 to 0.0124 over starts moved
by 1e-12.) A symmetric function of the factors, it is differentiable at
repeated ones (`topopt.fem.modal`'s rule of equal cotangents over a group).
The optional compliance constraint is the ``BCV`` problem of Ferrari et al. 2021.

With `mirror` (the elements' mirror images in a symmetry line) the
physics sees the symmetric part ``(x_tilde + x_tilde[mirror]) / 2`` of the
filtered design: the design is symmetric whatever MMA's iterates, and the
antisymmetric part that rounding puts into them has no gradient and cannot
grow into an asymmetric design (`printed`).
"""

from __future__ import annotations

import numpy as np

from .. import ad, fem
from .._validate import (check_finite_values, check_int, check_load, check_nonempty, check_positive,
                         check_range, check_real_array)
from ..design.interpolation import simp
from ..design.passive import Passive
from ..fem.buckling import BucklingSystem, buckling_factors
from ..fem.models import _check_model
from ..responses.structural import compliance, volume
from .base import DensityProblem, before_resume

__all__ = ["BucklingProblem", "ks_max"]


def ks_max(v, rho: float):
    """``max(v) + log(sum exp(rho (v - max v))) / rho``: a smooth upper bound of ``max v``.

    The shift is the plain maximum (not differentiated: the function does
    not depend on it), so the sum never overflows. Plain numpy: every mode.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.formulations.buckling import ks_max
    >>> round(float(ks_max(np.array([1.0, 1.0]), 10.0) - np.log(2) / 10), 12)
    1.0
    """
    rho = check_positive("rho", rho, "KS aggregation parameter")
    check_nonempty("v", v, "the values to aggregate")
    check_finite_values("v", v, "the values to aggregate must be finite")
    if np.iscomplexobj(ad.value(v)):
        raise TypeError("v must be real: the KS maximum of complex values has no meaning")
    c = float(np.max(ad.value(v)))
    return c + np.log(np.sum(np.exp(rho * (v - c)))) / rho


class BucklingProblem(DensityProblem):
    """Maximise the lowest buckling load factors (KS of ``lambda_ref / lambda_j``).

    Parameters
    ----------
    model : topopt.fem.Model
        2-D elasticity model with its supports.
    f : (ndof,) array
        The reference load (``lambda f`` buckles the structure).
    volfrac, rmin, penal, filter, Emin, solver, eta, passive
        The density chain of `topopt.formulations.base.DensityProblem`.
    n_modes : int >= 1
        ``J``, the aggregated load factors.
    rho : float > 0
        KS parameter (on ``mu = lambda_ref / lambda``, of order 1).
    penal_G : float >= 1, optional
        Exponent of the stress interpolation ``E_G = x^penal_G`` (`penal` if None).
    c_max : float > 0, optional
        Compliance limit relative to the start design's (None: no limit).
    mirror : (n_el,) int array, optional
        A design symmetric in a line: ``mirror[e]`` is element ``e``'s mirror
        image (a permutation that is its own inverse; the passive elements
        mirrored onto passive elements of their kind). None: no symmetry.
    nu, E0 : float
        The model's law (`topopt.fem.elasticity`'s arguments).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.buckling import BucklingProblem
    >>> model = fem.elasticity(fem.rectangle(12, 4)).fix(nodes=lambda x: x[0] == 0)
    >>> f = model.point_load((12, 2), (-1, 0))
    >>> p = BucklingProblem(model, f, volfrac=0.5, rmin=1.5, n_modes=2)
    >>> lam = p.factors(np.full(48, 0.5))
    >>> lam.shape, bool(0 < lam[0] < lam[1])
    ((2,), True)
    """

    objective_name = "KS(ln λref/λ)"
    #: MMA's move limit at each stage's start (NLopt's default: 0.5). On the column
    #: (``problems/buckling_column.py``) over starts moved by 1e-12, lambda_1 spread
    #: 0.4 % with 0.1, 42 % with 0.2 and 11 % with 0.5 (``scripts/site/reproduce_gallery.py``).
    initial_step = 0.1

    def __init__(self, model: fem.Model, f, volfrac: float, rmin: float, n_modes: int = 6,
                 rho: float = 40.0, penal: float = 3.0, penal_G: float | None = None,
                 c_max: float | None = None, filter: str = "density", Emin: float = 1e-6,
                 solver: str = "auto", eta: float = 0.5, passive: Passive | None = None,
                 nu: float = 0.3, E0: float = 1.0, mirror=None):
        _check_model(model)
        f = np.asarray(check_load("f", f, model.ndof, real=True), dtype=float)
        if f.ndim != 1 or not np.any(f):
            raise ValueError("f must be one nonzero load vector of shape (ndof,)")
        self.f = f
        self.n_modes = check_int("n_modes", n_modes, 1, None, what="aggregated load factors")
        self.rho = check_positive("rho", rho, "KS aggregation parameter")
        self.penal_G = None if penal_G is None else check_range("penal_G", penal_G, 1.0, None)
        self.c_max = None if c_max is None else check_positive("c_max", c_max,
                                                               "relative compliance limit")
        self.lam_ref = self.c0 = None
        super().__init__(model, volfrac, rmin, penal=penal, filter=filter, Emin=Emin,
                         solver=solver, eta=eta, passive=passive)
        self.penal_G = self.penal if self.penal_G is None else self.penal_G
        self.mirror = None if mirror is None else _check_mirror(mirror, self.passive)
        self.buckling = BucklingSystem(model, self.n_modes, nu=nu, E0=E0, solver=solver)

    def printed(self, x_tilde):
        """The symmetric part ``(x_tilde + x_tilde[mirror]) / 2`` (`x_tilde` without `mirror`)."""
        if getattr(self, "mirror", None) is None:         # None too while the base is built
            return x_tilde
        return 0.5 * (x_tilde + x_tilde[self.mirror])

    def coefficients(self, x_phys):
        """``(E, E_G)``: SIMP stiffness and the stress interpolation ``x^penal_G``."""
        return simp(x_phys, self.penal, self.Emin), np.maximum(x_phys, 0.0) ** self.penal_G

    def analysis(self, x_phys):
        """``(lambda, u)``: the `n_modes` lowest factors and the prebuckling state; differentiable."""
        E, EG = self.coefficients(x_phys)
        u = fem.solve(self.system, E, self.f)
        return buckling_factors(self.buckling, E, EG, u), u

    def factors(self, x, beta: float | None = None):
        """The `n_modes` lowest buckling load factors of design `x`; differentiable."""
        return self.analysis(self.x_phys(x, beta))[0]

    def responses(self, x, beta: float | None = None):
        """``(KS(log(lambda_ref / lambda)), v / volfrac - 1[, c / (c_max c0) - 1])`` for MMA."""
        x_phys = self.x_phys(x, beta)
        lam, u = self.analysis(x_phys)
        out = (ks_max(np.log(self.lam_ref / lam), self.rho), volume(x_phys, self.weights)
               / self.volfrac - 1.0)
        if self.c_max is not None:
            out += (compliance(u, self.f) / (self.c_max * self.c0) - 1.0,)
        return out

    @property
    def constraint_names(self) -> list:
        return ["volume"] + ([] if self.c_max is None else ["compliance"])

    def prepare(self, x0, stages) -> np.ndarray:
        """``lambda_ref`` and ``c0``: the start design's ``lambda_1`` and compliance (unless set)."""
        beta = stages[0].params.get("beta") if stages else None
        lam, u = self.analysis(self.x_phys(x0, beta))
        self._start = (float(lam[0]), float(compliance(u, self.f)))
        if self.lam_ref is None:
            self.lam_ref = self._start[0]
        if self.c0 is None:
            self.c0 = self._start[1]
        return x0

    def final(self, x_phys):
        """``lambda`` (the `n_modes` lowest), ``lambda1``, ``lambda1_start``, ``compliance``, ..."""
        lam, u = self.analysis(check_real_array("x_phys", x_phys, allow_bool=True))
        return {"lambda": [float(v) for v in lam], "lambda1": float(lam[0]),
                "lambda1_start": self._start[0], "compliance": float(compliance(u, self.f)),
                "compliance_start": self._start[1],
                "volume": float(volume(x_phys, self.weights))}, u

    def run_metrics(self) -> dict:
        return {"eigensolves": self.buckling.counts["eigensolves"], "n_modes": self.n_modes,
                "rho": self.rho, "penal_G": self.penal_G, "symmetric": self.mirror is not None}

    def counters(self) -> dict:
        """CG's counters and the eigensolves, carried across a resume."""
        return super().counters() | {"eigensolves": self.buckling.counts["eigensolves"]}

    def metrics(self, res, x_phys, seconds: float, solves0: int):
        """The base's metrics; ``eigensolves`` of the whole run (those before a resume too)."""
        metrics, arrays = super().metrics(res, x_phys, seconds, solves0)
        metrics["eigensolves"] += int(before_resume(res, "counters", {}).get("eigensolves", 0))
        return metrics, arrays

    def mode_shape(self, x_phys) -> dict:
        """The first buckling mode and the prebuckling state as point data for ``design.vtu``."""
        x_phys = check_real_array("x_phys", x_phys, allow_bool=True)
        E, EG = self.coefficients(x_phys)
        u = fem.solve(self.system, E, self.f)
        phi = self.buckling.modes(E, EG, u)[1][:, 0]
        return self.nodal_state(u) | {"mode_1": self.model.nodal_values(phi)}


def _check_mirror(mirror, passive: Passive) -> np.ndarray:
    """`mirror` as an index array: an involution of the elements that keeps `passive`."""
    m = np.asarray(mirror)
    n = passive.n_el
    if m.shape != (n,) or m.dtype.kind not in "iu":
        raise ValueError(f"mirror must be an integer array of shape ({n},), one mirror "
                         f"element per element; got dtype {m.dtype}, shape {m.shape}")
    if m.min() < 0 or m.max() >= n or np.any(m[m] != np.arange(n)):
        raise ValueError("mirror must map the elements onto each other in pairs "
                         "(mirror[mirror[e]] == e for every element e, indices in "
                         f"[0, {n}))")
    for kind in ("solid", "void"):
        fixed = getattr(passive, kind)
        if not np.array_equal(np.sort(m[fixed]), fixed):
            raise ValueError(f"mirror maps passive {kind} elements onto others; the "
                             "passive regions must be symmetric too")
    return m.astype(np.int64)
