"""Minimum volume subject to a stress aggregate (Le, Norato, Bruns, Ha & Tortorelli 2010).

The element stresses, their qp relaxation, the p-norm aggregate and its
adaptive normalization are responses (`topopt.responses.stress`); this is
the formulation that minimises the volume under them, in blocks of MMA runs.

The run (`MinimumVolumeStress.run`): each block is a `topopt.optimize.Stage`
with parameters ``beta`` (the projection of that block, None for none) and
``block`` (its index: a new index updates ``c``). MMA's dual is NLopt's own
``LD_MMA``: with the project's ``LD_SLSQP`` a block that starts infeasible
(``c`` or ``beta`` went up) ended at once with ``roundoff_limited``. And MMA
accepts a design only when its approximation was conservative
(``always_improve = 0``): with NLopt's default an infeasible block took every
design of smaller volume, however infeasible, and the L-bracket's volume fell
from 0.22 to 0.05 with ``c PN`` at 1e6 ``sigma_allow``. Then up to ``settle``
more blocks at the last ``beta`` (each a new ``c``) while the largest relaxed
stress is not within ``settle_tol`` of ``sigma_allow``: the last block's ``c``
is that of its start, and the design it ends with may carry a maximum well
below (or above) ``c PN``.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import nlopt
import numpy as np

from .. import ad
from .._validate import check_int, check_load, check_positive, check_range, check_real_array
from ..design.interpolation import simp
from ..design.passive import Passive
from ..fem import Model, solve
from ..optimize.driver import minimize
from ..optimize.options import Stage
from ..optimize.ending import ending
from ..responses.stress import (AdaptiveNormalization, ElementStress, relaxed_stress,
                                stress_pnorm)
from ..responses.structural import volume
from .base import DensityProblem

__all__ = ["MinimumVolumeStress"]


class MinimumVolumeStress(DensityProblem):
    """Minimum volume subject to the normalised stress aggregate (Le et al. 2010).

    ``min v(x_phys)`` subject to ``c PN(x_phys) / sigma_allow - 1 <= 0``:
    ``x_phys`` the filtered (density filter, radius `rmin`), optionally
    projected (``beta``) design, stiffness ``simp(x_phys, penal, Emin)``,
    `stress_pnorm` of the qp-relaxed von Mises stress, ``c`` the
    `AdaptiveNormalization`.

    ``c`` changes between MMA runs, never inside one: NLopt's MMA keeps the
    constraint values of its best design, and a constraint redefined under
    it stalls the run (``roundoff_limited``). A run is therefore a sequence
    of `topopt.optimize.Stage` blocks; the first evaluation of each block
    takes the maximum and ``PN`` of its starting design (the previous block's
    result) into ``c`` (Le et al. update it every iteration). Blocks may also
    raise the projection sharpness ``beta``.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity model with its supports.
    f : (ndof,) array
        Load vector.
    sigma_allow : float > 0
        Allowed von Mises stress.
    rmin : float > 0
        Density-filter radius.
    penal, Emin : float
        SIMP exponent (>= 1) and void stiffness.
    q, P, alpha : float
        Relaxation exponent (`relaxed_stress`), p-norm exponent
        (`stress_pnorm`), damping of `AdaptiveNormalization`.
    nu, E0, plane
        Those of the model (`ElementStress` checks them).
    eta : float
        Projection threshold.
    solver : str
        Linear-solver backend.
    passive : topopt.design.Passive, optional
        Passive solid/void elements, as in `topopt.formulations.ComplianceProblem`:
        MMA sees the ``n = passive.n_free`` free variables, ``x_phys`` holds
        the fixed values (their stresses count in ``PN``) and `run`'s result
        ``x`` is the full element vector.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.fem.shapes import l_shape
    >>> from topopt.formulations.stress import MinimumVolumeStress
    >>> model = fem.elasticity(l_shape(8, 4)).fix(nodes=lambda x: np.isclose(x[1], 8))
    >>> f = model.point_load((8, 4), (0.0, -1.0))
    >>> problem = MinimumVolumeStress(model, f, sigma_allow=2.0, rmin=1.5)
    >>> volume, g = problem.responses(np.ones(model.n_el))
    >>> round(float(volume), 12), bool(g < 0)
    (1.0, True)
    """

    def __init__(self, model: Model, f, sigma_allow: float, rmin: float, penal: float = 3.0,
                 Emin: float = 1e-9, q: float = 0.5, P: float = 8.0, alpha: float = 0.5,
                 nu: float = 0.3, E0: float = 1.0, plane: str = "stress", eta: float = 0.5,
                 solver: str = "auto", passive: Passive | None = None):
        self.sigma_allow = check_positive("sigma_allow", sigma_allow, "allowed stress")
        super().__init__(model, None, rmin, penal=penal, Emin=Emin, solver=solver, eta=eta,
                         passive=passive)
        self.q = check_range("q", q, 0.0, None, what="relaxation exponent")
        if self.q >= self.penal:
            raise ValueError(f"q must be < penal (qp relaxation), got q={q:g}, penal={penal:g}")
        self.P = check_range("P", P, 2.0, None, what="p-norm exponent")
        f = np.asarray(check_load("f", f, model.ndof, real=True), dtype=float)
        if f.shape != (model.ndof,) or not np.any(f):
            raise ValueError(f"f must be a nonzero load vector of shape ({model.ndof},), "
                             f"got shape {f.shape}")
        self.stress = ElementStress(model, nu=nu, E0=E0, plane=plane)
        self.f = f
        self.norm = AdaptiveNormalization(alpha)
        self._block = None

    def check_design(self, x, name: str = "the design vector") -> np.ndarray:
        """The free design variables of `x` (``(n,)``, or the full element vector)."""
        x = check_real_array("x", x, allow_bool=True)
        if x.shape not in ((self.n,), (self.n_el,)):
            full = f" or ({self.n_el},), one value per element" if self.passive.any else ""
            raise ValueError(f"{name} has shape {x.shape}; expected ({self.n},){full}")
        return self.passive.free_design(x)

    def analysis(self, x, beta: float | None = None):
        """``(x_phys, u, sigma_vm^2)`` of the design `x`; differentiable."""
        x_phys = self.x_phys(x, beta)
        u = solve(self.system, simp(x_phys, self.penal, self.Emin), self.f)
        return x_phys, u, self.stress.von_mises_squared(u)

    def relaxed(self, x, beta: float | None = None) -> np.ndarray:
        """The relaxed von Mises stress of each element (plain values)."""
        x_phys, _, vm2 = self.analysis(check_real_array("x", x, allow_bool=True), beta)
        return relaxed_stress(x_phys, np.sqrt(vm2), self.q)

    def responses(self, x, beta: float | None = None, block=None):
        """``(v, c PN / sigma_allow - 1)``; a new `block` first updates ``c``."""
        x_phys, _, vm2 = self.analysis(x, beta)
        pn = stress_pnorm(x_phys, vm2, self.q, self.P)
        if self.norm.c is None or block != self._block:
            top = np.max(relaxed_stress(ad.value(x_phys), np.sqrt(ad.value(vm2)), self.q))
            self.norm.update(top, ad.value(pn))
            self._block = block
        return volume(x_phys, self.weights), self.norm.c * pn / self.sigma_allow - 1.0

    def run(self, betas: Sequence[float | None], block_maxeval: int = 30, x0=None,
            verbose: bool = False, checkpoint: str | None = None, resume: str | None = None,
            initial_step: float | None = None, settle: int = 0, settle_tol: float = 0.05):
        """Optimize in blocks of `block_maxeval` evaluations, one per entry of `betas`.

        Starts from `x0` (all solid by default: feasible whenever the solid's
        stresses are); the blocks, MMA's settings and the `settle` blocks are
        described in the module's notes. Returns the `topopt.optimize.Result`
        of the last run, with the history, evaluations and time of all and
        ``x`` the full element vector; `summary` gives the figures.
        """
        check_int("block_maxeval", block_maxeval, 1, what="evaluations per block")
        betas = list(betas)
        if not betas:
            raise ValueError("betas must name at least one block")
        for b in betas:
            if b is not None:
                check_positive("beta", b, "projection sharpness")
        x0 = np.ones(self.n) if x0 is None else self.check_design(x0, "x0")
        stages = [Stage(block_maxeval, params={"beta": b, "block": k})
                  for k, b in enumerate(betas)]
        check_int("settle", settle, 0, what="extra blocks")
        check_positive("settle_tol", settle_tol, "relative distance to sigma_allow")
        options = dict(n_constraints=1, bounds=(0.0, 1.0), ftol_rel=0.0, verbose=verbose,
                       initial_step=initial_step, objective_name="volume",
                       mma_params={"dual_algorithm": nlopt.LD_MMA, "always_improve": 0},
                       count_solves=lambda: self.system.counts["factorizations"])
        res = minimize(self.responses, x0, stages=stages, checkpoint=checkpoint,
                       resume=resume, **options)
        res, whole = _settle(self, res, betas, settle, settle_tol, block_maxeval, options)
        return dataclasses.replace(res, x=self.passive.expand(res.x), **whole)

    def summary(self, x, beta: float | None = None) -> dict:
        """Volume, largest relaxed stress (and its element), ``PN``, ``c`` of a design."""
        x_phys, _, vm2 = self.analysis(check_real_array("x", x, allow_bool=True), beta)
        rel = relaxed_stress(x_phys, np.sqrt(vm2), self.q)
        e = int(np.argmax(rel))
        return {"volume": float(volume(x_phys, self.weights)), "max_von_mises": float(rel[e]),
                "max_element": e, "pnorm": float(stress_pnorm(x_phys, vm2, self.q, self.P)),
                "c": self.norm.c, "sigma_allow": self.sigma_allow}


def _settle(problem, res, betas, settle, settle_tol, block_maxeval, options):
    """Up to `settle` blocks more at the last ``beta`` while the largest relaxed stress is
    off ``sigma_allow`` by more than `settle_tol`; ``(res, whole)``: the last block's
    result and the whole run's ``history``, ``evaluations``, ``seconds``, ``resumed``
    (the first run's: the settle blocks never resume), ``verdict`` and ``ending`` (from
    the first block's start)."""
    history, evaluations, seconds = list(res.history), res.evaluations, res.seconds
    resumed = res.resumed
    for k in range(len(betas), len(betas) + settle):
        top = problem.summary(res.x, betas[-1])["max_von_mises"]
        if res.status == "interrupted" or abs(top / problem.sigma_allow - 1) <= settle_tol:
            break
        res = minimize(problem.responses, res.x, stages=[
            Stage(block_maxeval, params={"beta": betas[-1], "block": k})], **options)
        history += [h | {"evaluation": evaluations + h["evaluation"], "stage": k}
                    for h in res.history]
        evaluations, seconds = evaluations + res.evaluations, seconds + res.seconds
    end = ending(res.constraints, res.fun, history[0]["objective"], history[0]["constraints"])
    return res, dict(history=history, evaluations=evaluations, seconds=seconds,
                     resumed=resumed, verdict=end["verdict"], ending=end)
