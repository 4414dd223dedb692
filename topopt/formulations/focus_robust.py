"""Focusing that survives fabrication: the worst case over eroded, intermediate and dilated designs.

The filtered field ``p_f`` of a `FocusProblem` projected at three thresholds
``eta_e > eta_i > eta_d`` (`topopt.robust.robust_designs`; Wang, Lazarov &
Sigmund 2011, eq. (13)-(15)) gives the eroded, intermediate and dilated
metal structures: the intermediate one's edges moved by ``d(eta_e) -
d(eta_i) < 0`` and ``d(eta_d) - d(eta_i) > 0`` (`topopt.robust.edge_shift`,
nanometres for the cell's filter radius). The robust design maximises the
worst focus, ``max_p min_k E(p_k)`` with ``E = 2 sqrt(g)`` the field
enhancement (`enhancement`; increasing in ``g``, so the same optimum as the
worst ``g``, and of order 1 to 30 in the length of MMA's steps), written as
the epigraph (bound formulation, `topopt.robust.bound_formulation`; smooth,
for MMA; an aggregate such as a KS minimum is not used)

    min_(p, z) z  s.t.  -E(p_k) - z <= 0   (k = e, i, d),  -Z_MAX <= z <= 0,

``z = -min_k E_k`` at the optimum: three factorizations per design (one per
realization). No volume constraint: the focusing problem has none. From
the uniform start the eroded design is empty (``p_f = 0.4 < eta_e``) and
MMA climbs slowly (h = 8 nm, 40 evaluations per beta: worst enhancement
3.2); started from the nominal optimum at ``beta = 32`` it reached 6.4
against the nominal design's 5.1 (scripts/crosscheck/focus_robust_check.py).
"""

from __future__ import annotations

import time

import nlopt
import numpy as np

from .. import ad
from .._validate import check_int, check_positive, check_range, check_real_array
from ..design.interpolation import blueprint
from ..optimize.driver import Result, minimize
from ..optimize.options import Stage
from ..robust.edges import edge_shift, threshold_for_shift
from ..robust.projection import DESIGNS, ETAS, _check_etas, bound_formulation, robust_designs
from .focus import FocusProblem, enhancement, intensity

#: The bound of ``-z``: the largest worst-case enhancement MMA may claim.
Z_MAX = 100.0

__all__ = ["RobustFocus", "robust_focus_stages", "run_robust_focus", "epigraph_minimize"]


def epigraph_minimize(responses, start, p0, stages, n: int, count_solves, **options) -> Result:
    """MMA on ``[p, z]`` of a worst-case epigraph (``z`` in ``[-Z_MAX, 0]``, ``p`` in [0, 1]).

    `responses(pz, beta)` gives ``(z, c_1 - z, ...)``; `start(p0, beta)`
    the start ``[p0, z0]`` at the first stage's ``beta``; `stages` are
    `topopt.optimize.Stage` with params ``{"beta": ...}``; `count_solves`
    counts factorizations; `options` go to `topopt.optimize.minimize`.
    The focusing run's NLopt settings (the dual solved by MMA itself).
    """
    if not stages or any("beta" not in s.params for s in stages):
        raise ValueError("stages must be given, each with params {'beta': ...}")
    pz0 = start(p0, stages[0].params["beta"])
    lb, ub = np.append(np.zeros(n), -Z_MAX), np.append(np.ones(n), 0.0)
    opts = {"mma_params": {"dual_algorithm": nlopt.LD_MMA, "inner_gradients": 0},
            "ftol_rel": 1e-8, "objective_name": "z = -min_k E_k", "count_solves": count_solves}
    return minimize(responses, pz0, bounds=(lb, ub), stages=stages, **(opts | options))


class RobustFocus:
    """The worst focus intensity of a `FocusProblem` over three edge positions.

    Parameters
    ----------
    problem : FocusProblem
        The cell, its filter (radius ``problem.setup.r_filter``) and wave model.
    shift : float, optional
        Edge displacement of the eroded / dilated designs from the
        intermediate one, > 0, in the length unit of the cell (nm):
        ``eta_e, eta_d = threshold_for_shift(d_i -/+ shift)`` with ``d_i =
        edge_shift(eta_i)``, ``eta_i = problem.setup.eta``.
    etas : three floats, optional
        The thresholds ``(eta_e, eta_i, eta_d)`` themselves; `ETAS` (0.75,
        0.5, 0.25) when neither is given. Not both.

    Attributes
    ----------
    etas : tuple
        The thresholds.
    shifts : tuple
        Their edge displacements ``edge_shift(eta_k, r)`` (nm, outwards > 0).

    Examples
    --------
    >>> from topopt.formulations.focus_robust import RobustFocus
    >>> from topopt.formulations.focus import FocusSetup
    >>> class Cell:                                   # only the filter radius is read
    ...     setup = FocusSetup(None, None, 10 / (2 * 3 ** 0.5), 0.5, 0.05 + 3.4j, 1.0,
    ...                        (8.0,), 0.4, "x", {}, {})
    >>> robust = RobustFocus(Cell(), shift=1.0)
    >>> [round(e, 4) for e in robust.etas], [round(d, 6) for d in robust.shifts]
    ([0.6464, 0.5, 0.3536], [-1.0, 0.0, 1.0])
    """

    def __init__(self, problem: FocusProblem, shift: float | None = None, etas=None):
        self.problem = problem
        r, eta_i = problem.setup.r_filter, problem.setup.eta
        if shift is not None and etas is not None:
            raise ValueError("give shift (nm) or etas (thresholds), not both")
        if shift is not None:
            shift = check_range("shift", shift, 0.0, None, lo_open=True,
                                what="edge displacement of the eroded/dilated designs")
            d_i = edge_shift(eta_i, r)
            etas = (threshold_for_shift(d_i - shift, r), eta_i,
                    threshold_for_shift(d_i + shift, r))
        self.etas = _check_etas(ETAS if etas is None else etas)
        self.shifts = tuple(edge_shift(e, r) for e in self.etas)

    # ----------------------------------------------------------- the chain
    def designs(self, p, beta: float) -> tuple:
        """The eroded, intermediate and dilated projected densities of `p`."""
        return robust_designs(self.problem.smooth(p), beta, self.etas)

    def intensities(self, p, beta: float) -> list:
        """``[g(p_e), g(p_i), g(p_d)]``; differentiable (one solve each)."""
        prob = self.problem
        return [intensity(prob.setup.solve(prob.model, prob.b, x_k), prob.O)
                for x_k in self.designs(p, beta)]

    def worst(self, p, beta: float) -> float:
        """``min_k g(p_k)``, the worst realization's intensity (a value; not smooth)."""
        return min(float(ad.value(g)) for g in self.intensities(p, beta))

    def responses(self, pz, beta: float) -> tuple:
        """``(z, -E_e - z, -E_i - z, -E_d - z)`` for MMA, ``pz = [p, z]``."""
        p, z = pz[:-1], pz[-1]
        return bound_formulation(z, [-enhancement(g) for g in self.intensities(p, beta)])

    # ----------------------------------------------------------- the run
    def start(self, p0, beta: float) -> np.ndarray:
        """``[p0, z0]``, ``z0 = -min_k E(p0_k)`` (clipped to ``-Z_MAX``)."""
        p0 = check_real_array("p0", p0, allow_bool=True)
        if p0.shape != (self.problem.n,):
            raise ValueError(f"p0 must have shape ({self.problem.n},), got {p0.shape}")
        return np.append(p0, max(-enhancement(self.worst(p0, beta)), -Z_MAX))

    def minimize(self, p0, stages, **options) -> Result:
        """MMA (the focusing run's NLopt settings) from ``[p0, z0]``; ``x`` ends with ``z``.

        `stages` are `topopt.optimize.Stage` with params ``{"beta": ...}``;
        ``z`` lies in ``[-Z_MAX, 0]``.
        `options` go to `topopt.optimize.minimize`.
        """
        system = self.problem.model.system
        return epigraph_minimize(self.responses, self.start, p0, stages, self.problem.n,
                                 lambda: system.counts["factorizations"], **options)

    def figures(self, p, beta: float) -> dict:
        """``g`` and the enhancement of each realization (projected with `beta` and
        as blueprints ``p_f >= eta_k``), their worst, the thresholds and shifts."""
        prob = self.problem
        g = [float(v) for v in self.intensities(p, beta)]
        p_f = prob.smooth(p)
        g_bp = [float(intensity(prob.setup.solve(prob.model, prob.b, blueprint(p_f, e)),
                                prob.O)) for e in self.etas]
        out = {"etas": list(self.etas), "edge_shift_nm": list(self.shifts)}
        for name, values in (("g", g), ("g_blueprint", g_bp)):
            out[name] = dict(zip(DESIGNS, values))
            out[name.replace("g", "field_enhancement", 1)] = {
                k: float(enhancement(v)) for k, v in zip(DESIGNS, values)}
            out[name.replace("g", "worst_enhancement", 1)] = float(enhancement(min(values)))
        return out


def robust_focus_stages(betas, maxeval: int) -> list:
    """One `Stage` of `maxeval` evaluations per ``beta`` (the focusing continuation).

    Examples
    --------
    >>> from topopt.formulations.focus_robust import robust_focus_stages
    >>> [(s.maxeval, s.params) for s in robust_focus_stages((8, 16), 5)]
    [(5, {'beta': 8.0}), (5, {'beta': 16.0})]
    """
    maxeval = check_int("maxeval", maxeval, 1, what="MMA evaluations per beta")
    if not len(betas):
        raise ValueError("betas must name at least one projection sharpness")
    return [Stage(maxeval=maxeval, params={"beta": check_positive(f"betas[{i}]", b,
                                                                  "projection sharpness")})
            for i, b in enumerate(betas)]


def run_robust_focus(problem: FocusProblem, maxeval: int = 100, shift: float | None = None,
                     etas=None, p0=None, betas=None, verbose: bool = False) -> tuple:
    """Optimise the worst case, `maxeval` per ``beta``; ``(RobustFocus, Result, figures)``.

    `betas`: the continuation, ``problem.setup.betas`` by default; `p0`: the
    start, ``problem.setup.start`` by default; `shift`, `etas` as in
    `RobustFocus`. `figures` (`RobustFocus.figures` at the last ``beta``)
    gains ``seconds``.

    Examples
    --------
    >>> from topopt_problems import em_focus                       # doctest: +SKIP
    >>> robust, res, fig = run_robust_focus(em_focus.EMFocus(h=8.0), maxeval=5)  # doctest: +SKIP
    >>> fig["worst_enhancement"] > 1                        # doctest: +SKIP
    True
    """
    t0 = time.perf_counter()
    robust = RobustFocus(problem, shift, etas)
    betas = problem.setup.betas if betas is None else betas
    stages = robust_focus_stages(betas, maxeval)
    p0 = problem.setup.start(problem.n) if p0 is None else p0
    res = robust.minimize(p0, stages, verbose=verbose)
    figures = robust.figures(res.x[:-1], stages[-1].params["beta"])
    return robust, res, figures | {"seconds": time.perf_counter() - t0}
