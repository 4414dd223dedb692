"""Minimum compliance with void and ``m`` solid phases: ordered SIMP, one volume limit per phase.

One density per element (Zuo & Saitou 2017, Struct. Multidisc. Optim.
55:477): ``x -> x_tilde = F x -> x_phys`` (the chain of `DensityProblem`)
``-> E = ordered_simp(x_phys; rho, E, p)`` ``-> c = f^T K(E)^{-1} f``. The
phases are ordered by normalized density ``rho_1 < ... < rho_m = 1``;
between two neighbours the modulus is a power law through both.

The volume of phase ``i`` is ``V_i = sum_e v_e phi_i(x_e) / sum_e v_e``
with ``phi_i`` its hat (`topopt.design.phase_fraction`): the paper's mass
interpolation split by phase (``sum_i rho_i V_i`` is the mass fraction
``sum_e v_e x_e / sum_e v_e``). There is one constraint per solid phase
(the paper has a mass and a cost limit, two for any ``m``):

* ``limits="cumulative"`` (default): ``V_i + ... + V_m <= Vmax_i + ... +
  Vmax_m``, the volume of phase ``i`` and the heavier ones. The share of
  phases ``>= i`` is nondecreasing in ``x`` (as the paper's mass and cost
  are), so MMA meets no barrier between void and a heavy phase; the last
  limit is phase ``m``'s own, and where the heavier phases are the stiffer
  (their limits active at the optimum) the others are the per-phase limits.
  The run reports each ``V_i`` so that this can be read off.
* ``limits="phase"``: ``V_i <= Vmax_i``. ``phi_i`` rises to 1 at
  ``rho_i`` and falls beyond, so a lighter phase's active limit stands
  between void and the heavier phases: on the 2-material MBB beam 120 x 40
  (`problems/multimaterial_beam.py`, 300 evaluations) MMA first empties the
  beam (c up to 2.7e10 from 6685) and ends at c = 431.8, against the
  cumulative limits' 333.6 (no such detour); both end with each ``V_i``
  at its limit.

As in SIMP a linear resource against a convex modulus makes intermediate
densities uneconomic.
"""

from __future__ import annotations

import numpy as np

from .. import fem
from .._validate import check_choice, check_finite_array, check_load, check_real_array
from ..design.multimaterial import check_phases, ordered_simp, phase_fraction, phase_index
from ..design.passive import Passive
from ..fem.models import _check_model
from ..responses.structural import compliance, volume
from .base import DensityProblem, StartScaled

__all__ = ["MultiMaterialCompliance", "write_phases", "PHASE_COLOURS", "LIMITS"]

LIMITS = ("cumulative", "phase")


class MultiMaterialCompliance(StartScaled, DensityProblem):
    """Minimum compliance of void and ``m`` ordered solid phases, one volume limit each.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity model (``E0 = 1``) with its supports.
    f : (ndof,) or (ndof, n_loads) array
        Load vector(s).
    rho : sequence of float
        Normalized densities of the solid phases, increasing, the last 1
        (`topopt.design.check_phases`).
    E : sequence of float
        Their Young's moduli over ``E0``, each > `Emin`.
    vmax : sequence of float
        The largest volume fraction of each phase, > 0, summing to < 1.
    limits : {"cumulative", "phase"}
        The constraints (the module's text): ``V_i + ... + V_m <= Vmax_i +
        ... + Vmax_m`` or ``V_i <= Vmax_i``, for each ``i``.
    rmin, penal, filter, Emin, solver, eta, solver_options, passive
        The density chain of `DensityProblem`; `penal` is the exponent of
        every segment of `ordered_simp`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.multimaterial import MultiMaterialCompliance
    >>> model = fem.elasticity(fem.rectangle(6, 2)).fix(nodes=lambda x: x[0] == 0)
    >>> p = MultiMaterialCompliance(model, model.point_load((6, 0), (0, -1)), rho=(0.5, 1.0),
    ...                             E=(0.3, 1.0), vmax=(0.2, 0.2), rmin=1.5)
    >>> x = np.full(12, 0.5)                           # every element of phase 1
    >>> [round(float(v), 12) for v in p.phase_volumes(x)]
    [1.0, 0.0]
    """

    #: `minimize`'s conservative MMA: the classic one (``inner_maxeval=1``, as
    #: `ComplianceProblem`'s) empties the MBB beam in its first steps (c from 6685
    #: to 3.7e9, the 2-material beam 120 x 40, cumulative limits).
    mma_defaults: dict = {}
    objective_name = "compliance"

    def __init__(self, model: fem.Model, f, rho, E, vmax, rmin: float, penal: float = 3.0,
                 filter: str = "density", Emin: float = 1e-9, solver: str = "auto",
                 eta: float = 0.5, solver_options: dict | None = None,
                 passive: Passive | None = None, limits: str = "cumulative"):
        _check_model(model)
        self.limits = check_choice("limits", limits, LIMITS)
        self.rho, self.E = check_phases(rho, E)
        self.vmax = check_finite_array("vmax", vmax, shape=self.rho.shape)
        if np.any(self.vmax <= 0.0) or self.vmax.sum() >= 1.0:
            raise ValueError(f"vmax must be > 0 for each phase and sum to < 1 (void needs "
                             f"room), got {self.vmax.tolist()}")
        if np.any(self.E <= Emin):
            raise ValueError(f"E must exceed Emin = {Emin:g} for every phase, got "
                             f"{self.E.tolist()}")
        f = np.asarray(check_load("f", f, model.ndof, real=True), dtype=float)
        if not np.any(f):
            raise ValueError("the load vector f is zero")
        self.f, self.c0 = f, None
        # suffix sums: the bound of phases i..m together
        self.gmax = (np.cumsum(self.vmax[::-1])[::-1] if limits == "cumulative"
                         else self.vmax)
        super().__init__(model, float(self.vmax.sum()), rmin, penal=penal, filter=filter,
                         Emin=Emin, solver=solver, eta=eta, solver_options=solver_options,
                         passive=passive)

    @property
    def m(self) -> int:
        """The number of solid phases."""
        return self.rho.size

    def stiffness(self, x, beta: float | None = None):
        """``E(x_phys)``, ordered SIMP (Zuo & Saitou 2017, Sec. 2); differentiable."""
        return ordered_simp(self.x_phys(x, beta), self.rho, self.E, self.penal, self.Emin)

    def compliance(self, x, beta: float | None = None):
        """``c(x) = f^T K(E(x_phys))^{-1} f``; differentiable."""
        return compliance(fem.solve(self.system, self.stiffness(x, beta), self.f), self.f)

    def phase_volumes(self, x, beta: float | None = None) -> list:
        """``[V_1, ..., V_m]``: the volume fraction of each solid phase; differentiable."""
        return self.phase_volumes_of(self.x_phys(x, beta))

    def phase_volumes_of(self, x_phys) -> list:
        """``[V_1, ..., V_m]`` of physical densities `x_phys`: ``sum_e v_e phi_i / sum_e v_e``."""
        return [volume(phase_fraction(x_phys, self.rho, i + 1), self.weights)
                for i in range(self.m)]

    def limited(self, x_phys) -> list:
        """The constrained volumes: ``V_i + ... + V_m`` (cumulative) or ``V_i``, each ``i``."""
        if self.limits == "phase":
            return self.phase_volumes_of(x_phys)
        heavier = np.tril(np.ones((self.m, self.m)))      # column i: phases >= i
        return [volume(ordered_simp(x_phys, self.rho, heavier[:, i], 1.0, 0.0), self.weights)
                for i in range(self.m)]

    def responses(self, x, beta: float | None = None):
        """``(c / c0, G_1 / Gmax_1 - 1, ..., G_m / Gmax_m - 1)`` for MMA (`limited`)."""
        x_phys = self.x_phys(x, beta)
        E = ordered_simp(x_phys, self.rho, self.E, self.penal, self.Emin)
        c = compliance(fem.solve(self.system, E, self.f), self.f)
        return (c / self.c0, *(g / b - 1.0 for g, b in zip(self.limited(x_phys),
                                                             self.gmax)))

    def phases(self, x_phys) -> np.ndarray:
        """The nearest phase of each element, 0 (void) to ``m`` (`topopt.design.phase_index`)."""
        return phase_index(x_phys, self.rho)

    # ----------------------------------------------------------- the run's hooks
    def start(self, x0=None) -> np.ndarray:
        """`x0` checked, or ``rho_1 sum_i Vmax_i``: the lightest phase filling the solid volume."""
        if x0 is None:
            return np.full(self.n, float(self.rho[0] * self.vmax.sum()))
        return self.check_design(x0, "x0")

    @property
    def constraint_names(self) -> list:
        if self.limits == "phase":
            return [f"V{i + 1} / {v:g} - 1" for i, v in enumerate(self.vmax)]
        return [f"V{i + 1}{f'..{self.m}' if i + 1 < self.m else ''} / {b:g} - 1"
                for i, b in enumerate(self.gmax)]

    def final(self, x_phys):
        """Compliance, each phase's volume (of the hats and of `phases`) and the mass."""
        x_phys = check_real_array("x_phys", x_phys, allow_bool=True)
        u = fem.solve(self.system, ordered_simp(x_phys, self.rho, self.E, self.penal,
                                                self.Emin), self.f)
        w = self.weights / self.weights.sum()
        nearest = self.phases(x_phys)
        return {"compliance": float(compliance(u, self.f)),
                "phase_volumes": [float(v) for v in self.phase_volumes_of(x_phys)],
                "phase_volumes_nearest": [float(w[nearest == i + 1].sum())
                                          for i in range(self.m)],
                "mass": float(w @ x_phys)}, u

    def run_metrics(self) -> dict:
        return {"rho": self.rho.tolist(), "E": self.E.tolist(), "vmax": self.vmax.tolist(),
                "limits": self.limits}


#: Void white, then the Okabe-Ito colours (told apart by colour-blind readers too).
PHASE_COLOURS = ("white", "#e69f00", "#0072b2", "#009e73", "#cc79a7", "#d55e00", "#56b4e9",
                 "#f0e442", "#000000")


def write_phases(out: str, problem: MultiMaterialCompliance, result, title: str,
                 mirror: bool = False) -> str:
    """Draw ``out/design.png`` with one colour per phase (the nearest, `phases`).

    The run folder's other files are `topopt.io.folder.run_compliance`'s (its
    grey ``x_phys`` picture is kept as ``density.png``). Returns the path.
    """
    import os
    import shutil
    from ..plot.figures import save_design
    from ..plot.markers import boundary_markers
    path = os.path.join(out, "design.png")
    shutil.copyfile(path, os.path.join(out, "density.png"))
    supports, loads = boundary_markers(problem.model, problem.f)
    labels = [("void", PHASE_COLOURS[0])] + [
        (f"ρ={r:g}, E={e:g}", PHASE_COLOURS[i + 1])
        for i, (r, e) in enumerate(zip(problem.rho, problem.E))]
    return save_design(problem.model.mesh, problem.phases(result.x_phys).astype(float), path,
                       title=f"{title}: c = {result['compliance']:.4g}", mirror=mirror,
                       supports=supports, loads=loads, phases=labels, label="nearest phase")
