"""Field focusing by a metallic nano-structure: the chain ``p -> p_f -> p_t -> eps -> u -> g``.

After Christiansen et al. (2019, 2020) and the Gridap tutorial TopOptEMFocus:
H_z polarisation on the waves model (`topopt.fem.WaveModel`), a Helmholtz
filter, tanh projection, ``eps(p) = [n_air + p (n_metal - n_air)]^2``
(`topopt.design.interpolation.permittivity`) and the focus intensity ``g =
Re(u^H O u)`` maximized by MMA over a continuation in ``beta``. The cell
(mesh, design and focus elements, source and focus matrix) is the problem's:
a `FocusSetup` carries it with the materials and the schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import nlopt
import numpy as np

from .. import fem
from .._validate import check_array_range, check_range, check_real_array, check_seed
from ..design.helmholtz_filter import HelmholtzFilter
from ..design.interpolation import blueprint, permittivity, project
from ..optimize.driver import minimize
from ..optimize.options import Stage
from ..io.result import RunResult
from ..design.measures import grey_level
from .focus_output import write_focus
from .base import before_resume
from .run_template import GalleryRun

__all__ = ["FocusSetup", "FocusProblem", "intensity", "enhancement", "run_focus"]

#: The objective as minimized (``-g``).
OBJECTIVE_NAME = "-g (g = |grad u(x0)|^2 maximized)"


def intensity(u, O):
    """``Re(u^H O u)``: the Gaussian-weighted ``|grad u|^2`` at the focus.

    Examples
    --------
    >>> float(intensity(np.array([1j, 2.0]), np.eye(2)))
    5.0
    """
    return np.real(np.vdot(u, O @ u))


def enhancement(g: float) -> float:
    """``|E(x0)| / |E_inc(x0)| = 2 sqrt(g)``.

    ``|E| ~ |grad u| / eps`` with air at ``x0``; the incident wave of the
    unit line source has ``|grad u| = 1/2``; the Gaussian weight of ``O``
    integrates to ``1 - exp(-r_s^2 / 2) = 1`` over the center disk.

    Examples
    --------
    >>> float(enhancement(0.25))
    1.0
    """
    check_array_range("g", g, 0.0, what="an intensity |grad u|^2")
    return 2.0 * np.sqrt(g)


@dataclass(frozen=True)
class FocusSetup:
    """The cell, materials and continuation of a focusing problem.

    Parameters
    ----------
    cell : callable
        ``cell(h, isolated=...) -> (mesh, design, center)``: the mesh of
        resolution `h`, its design and focus-disk elements.
    wave_model : callable
        ``wave_model(mesh, design, center, design_quadrature, isolated, solver)
        -> (model, b, O)``: the wave model, its source and focus matrix.
    r_filter, eta : float
        Helmholtz filter radius and projection threshold.
    n_metal, n_air : complex
        Refractive indices of the design's two phases.
    betas : tuple of float
        Projection sharpness of each MMA stage.
    p_start : float
        The uniform start.
    name : str
        The problem's name in the design file.
    window : dict
        ``xlim``, ``ylim`` of the pictures.
    record : dict
        The setup written to ``result.json``.

    Examples
    --------
    >>> s = FocusSetup(None, None, 1.0, 0.5, 0.05 + 3.4j, 1.0, (8.0,), 0.4, "x", {}, {})
    >>> s.start(3).tolist(), bool(np.all(np.abs(s.start(3, 0.01, 1) - 0.4) <= 0.01))
    ([0.4, 0.4, 0.4], True)
    """

    cell: Callable
    wave_model: Callable
    r_filter: float
    eta: float
    n_metal: complex
    n_air: float
    betas: tuple
    p_start: float
    name: str
    window: dict
    record: dict

    def start(self, n: int, perturb: float = 0.0, seed: int = 0) -> np.ndarray:
        """The start ``p_start``, plus ``perturb * U(-1, 1)`` drawn with `seed`."""
        p0 = np.full(n, self.p_start)
        if perturb:
            p0 += perturb * np.random.default_rng(seed).uniform(-1.0, 1.0, n)
        return p0

    def solve(self, model, b, p_t):
        """The field of the projected density `p_t` (``1/eps - 1/n_air^2`` in the design)."""
        return model.solve(1.0 / permittivity(p_t, self.n_metal, self.n_air)
                           - 1.0 / self.n_air ** 2, b)


class FocusProblem:
    """The differentiable chain ``p -> p_f -> p_t -> eps -> u -> g`` of a `FocusSetup`.

    ``subcell=False``: the projection acts on element averages of the
    filtered field; ``True`` (the tutorial's discretization): on the nodal
    filtered field at the quadrature points, so ``eps`` varies inside the
    elements.
    """

    def __init__(self, setup: FocusSetup, h: float = 4.0, subcell: bool = False,
                 isolated: bool = False, solver: str = "auto"):
        self.setup = setup
        self.mesh, self.design, self.center = setup.cell(h, isolated=isolated)
        flt = self.filter = HelmholtzFilter(self.mesh.restrict(self.design), setup.r_filter)
        self.model, self.b, self.O = setup.wave_model(
            self.mesh, self.design, self.center,
            (flt.basis.X, flt.basis.W) if subcell else None, isolated, solver)
        self.smooth = flt.at_quadrature if subcell else flt
        self.h, self.subcell, self.isolated, self.solver = h, subcell, isolated, solver
        self.n = self.design.size

    def p_phys(self, p, beta):
        """Projected density where ``eps`` is evaluated (points or elements)."""
        return project(self.smooth(p), beta, self.setup.eta)

    def element_density(self, p, beta):
        """Projected density per design element (the average of its points)."""
        pt = np.asarray(self.p_phys(p, beta))
        return pt.reshape(self.n, -1).mean(axis=1)

    def blueprint(self, p):
        """The binary design ``p_f >= eta``: the projection's limit ``beta -> inf``."""
        return blueprint(self.smooth(p), self.setup.eta)

    def field(self, p, beta=None):
        """The field of the design projected with `beta`; None: of its `blueprint`."""
        p_t = self.blueprint(p) if beta is None else self.p_phys(p, beta)
        return self.setup.solve(self.model, self.b, p_t)

    def g(self, p, beta=None):
        """Intensity at the focus ``Re(u^H O u)`` (`beta` as in `field`)."""
        return intensity(self.field(p, beta), self.O)

    def refined_g(self, density, div: int = 2) -> float:
        """``g`` of an element-wise design on the cell refined `div` times.

        Each design element is split into ``div x div`` squares that keep
        its density: the same pixelated geometry, resolved finer (a check
        of the figures' mesh convergence).
        """
        if self.subcell:
            raise ValueError("refined_g takes one density per element (subcell=False)")
        if isinstance(div, bool) or not isinstance(div, int) or div < 1:
            raise ValueError(f"div must be an integer >= 1, got {div!r}")
        density = check_real_array("density", density, allow_bool=True)
        if density.shape != (self.n,):
            raise ValueError(f"density must have shape ({self.n},), got {density.shape}")
        mesh, _, center = self.setup.cell(self.h / div, isolated=self.isolated)
        child, parent = fem.nested_elements(self.mesh, mesh, div, self.design)
        model, b, O = self.setup.wave_model(mesh, child, center, None, self.isolated,
                                            self.solver)
        return float(intensity(self.setup.solve(model, b, density[parent]), O))

    def responses(self, p, beta):
        return -self.g(p, beta)                    # maximise g, as the tutorial


def _metrics(prob: FocusProblem, res, g_initial: float, u) -> dict:
    """The figures of the optimized design ``res.x`` and of its blueprint."""
    beta = prob.setup.betas[-1]
    g = float(intensity(u, prob.O))
    x_bin = prob.blueprint(res.x)
    g_blueprint = float(intensity(prob.setup.solve(prob.model, prob.b, x_bin), prob.O))
    return {
        "resolution_nm": prob.h,
        "subcell": prob.subcell,
        "isolated": prob.isolated,
        "design_variables": int(prob.n),
        "elements": int(prob.mesh.t.shape[1]),
        "g_initial": g_initial,
        "g": g,
        "g_per_stage": [-s["fun"] for s in res.stages],
        "field_enhancement": enhancement(g),
        "g_blueprint": g_blueprint,
        "field_enhancement_blueprint": enhancement(g_blueprint),
        "grey_level": grey_level(prob.p_phys(res.x, beta)),
        "fe_solves": int(prob.model.system.counts["factorizations"]),
    }


class _FocusRun(GalleryRun):
    """`run_focus` on the run template: one phase, MMA over the ``beta`` continuation."""

    PHASES = ("focus",)

    def __init__(self, setup, h, maxeval, out, verbose, checkpoint, resume, subcell, isolated,
                 verify, solver, perturb, seed):
        super().__init__(out, verbose, checkpoint, resume)
        self.setup, self.h, self.maxeval, self.subcell = setup, h, maxeval, subcell
        self.isolated, self.verify, self.solver = isolated, verify, solver
        self.perturb, self.seed = perturb, seed

    def check(self) -> None:
        self.perturb = check_range("perturb", self.perturb, 0.0, self.setup.p_start,
                                   what="start perturbation")
        self.seed = check_seed("seed", self.seed)
        maxeval = self.maxeval
        if isinstance(maxeval, bool) or not isinstance(maxeval, (int, np.integer)) or maxeval < 1:
            raise ValueError(f"maxeval must be an integer >= 1, got {maxeval!r}")
        if self.verify and self.subcell:
            raise ValueError("verify needs one density per element (not subcell)")

    def build(self) -> None:
        setup = self.setup
        self.prob = FocusProblem(setup, self.h, self.subcell, self.isolated, self.solver)
        self.p0 = setup.start(self.prob.n, self.perturb, self.seed)
        self.g_initial = float(self.prob.g(self.p0, setup.betas[0]))

    def phase(self, name, checkpoint, resume):
        prob, S = self.prob, self.prob.model.system
        stages = [Stage(maxeval=self.maxeval, params={"beta": beta})
                  for beta in self.setup.betas]
        # NLopt's own MMA settings, as the tutorial (NLopt.jl defaults): raw g,
        # conservative inner iterations and NLopt's dual solver; inner_gradients=0
        # leaves the iterates unchanged and skips the adjoint of rejected designs
        return minimize(prob.responses, self.p0, bounds=(0.0, 1.0), stages=stages,
                        ftol_rel=1e-8, verbose=self.verbose, checkpoint=checkpoint,
                        resume=resume,
                        mma_params={"dual_algorithm": nlopt.LD_MMA, "inner_gradients": 0},
                        count_solves=lambda: S.counts["factorizations"],
                        objective_name=OBJECTIVE_NAME)

    def result(self) -> RunResult:
        prob, beta, res = self.prob, self.setup.betas[-1], self.outcomes["focus"]
        p_phys = prob.element_density(res.x, beta)
        self.u = prob.field(res.x, beta)
        metrics = _metrics(prob, res, self.g_initial, self.u)
        metrics["fe_solves"] += before_resume(res, "fe_solves")        # the whole run
        metrics["seconds"] = self.elapsed()
        if self.verify:
            g_fine = prob.refined_g(prob.blueprint(res.x), 2)
            metrics["blueprint_refined"] = {"resolution_nm": self.h / 2, "g": g_fine,
                                            "field_enhancement": enhancement(g_fine)}
        return RunResult.from_record(self.record("focus"), metrics, x=res.x, x_phys=p_phys,
                                     history=res.history)

    def write(self, result: RunResult) -> None:
        write_focus(self.out, self.prob, result, self.u)


def run_focus(setup: FocusSetup, h: float = 4.0, maxeval: int = 100, out: str | None = None,
              verbose: bool = False, checkpoint: str | None = None, resume: str | None = None,
              subcell: bool = False, isolated: bool = False, verify: bool = False,
              solver: str = "auto", perturb: float = 0.0, seed: int = 0) -> RunResult:
    """Maximise ``g`` over `setup`'s continuation (`maxeval` per stage); a `RunResult`.

    Its metrics: ``g`` and ``field_enhancement`` of the design projected
    with the last ``beta`` and of its blueprint, ``g`` per stage,
    ``grey_level``, ``fe_solves``, ``seconds``; ``x`` is the design,
    ``x_phys`` the projected density per design element. `verify` also
    solves the blueprint on the cell refined twice (`FocusProblem.refined_g`).
    An interrupted run returns and writes the metrics of its last good design.
    The run follows `topopt.formulations.run_template.GalleryRun` (one phase).
    """
    return _FocusRun(setup, h, maxeval, out, verbose, checkpoint, resume, subcell, isolated,
                     verify, solver, perturb, seed).run()
