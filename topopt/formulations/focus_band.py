"""Field focusing over a band of wavelengths: the min-max (epigraph) design.

The chain of `topopt.formulations.focus` (``p -> p_f -> p_t -> eps -> u ->
g``) evaluated at wavelengths ``lambda_j``, ``j = 1..m``: the wave model's
``k_j = 2 pi / lambda_j`` and the metal's index ``n_j = n(lambda_j)``
(silver: `topopt.design.materials.silver_index`) in ``eps_j(p) = [n_air +
p (n_j - n_air)]^2``; one factorization per wavelength and design, the
filtered and projected density shared. With ``g_j0`` the intensities of
the start design, the worst normalized intensity is maximized by the bound
(epigraph) formulation over ``z = [x, t]`` (Svanberg's MMA handles the
``m`` constraints, as Meep's adjoint does for several frequencies):

``min t  subject to  -g_j(x) / g_j0 - t <= 0,  j = 1..m``  (``form="ratio"``),

so that ``-t = min_j g_j / g_j0`` at a solution: the worst gain over the
start (``scale="each"``), or with one ``g_0`` (the mean of the start's
``g_j``, ``scale="common"``) the worst intensity itself. ``form="log"``
bounds ``-ln(g_j / g_j0)`` instead: the same optimum (``ln`` is
increasing), with ``t`` in ``[-ln t_max, ln t_max]`` rather than ``[-t_max,
1]``. MMA's moves scale with the box, so `t_max` matters in the ratio
form: on em_focus's 8 nm cell (500/532/560 nm, Johnson & Christy silver,
15 evaluations per stage) the worst enhancement reached 14.6 with ``t_max
= 1e3`` and 8.4 with ``1e4``; with 40 per stage, 16.5 (ratio) and 13.5
(log). The incident wave of the
unit line source has ``|grad u| = 1/2`` at every ``k``, so ``2 sqrt(g_j)``
is the field enhancement at ``lambda_j`` (`topopt.formulations.focus.enhancement`).
"""

from __future__ import annotations

import time
from typing import Callable

import nlopt
import numpy as np

from .._validate import check_callable, check_choice, check_range, check_real_array, check_sequence
from ..design.interpolation import permittivity
from ..design.materials import silver_index
from ..io.result import RunResult, run_record
from ..design.measures import grey_level
from ..optimize.driver import minimize
from ..optimize.options import Stage
from .focus import FocusProblem, FocusSetup, enhancement, intensity

__all__ = ["FocusBand", "run_focus_band", "SCALES", "FORMS"]

#: ``g_j0`` of `FocusBand`: each wavelength's start intensity, or their mean for all.
SCALES = ("each", "common")
#: The bounded measure of `FocusBand`: ``-ln(g_j / g_j0)`` or ``-g_j / g_j0``.
FORMS = ("log", "ratio")


def _wavelengths(wavelengths) -> np.ndarray:
    lam = check_sequence("wavelengths", wavelengths)
    if not lam:
        raise ValueError("wavelengths must hold at least one wavelength (nm)")
    lam = [check_range(f"wavelengths[{i}]", v, 0.0, None, lo_open=True,
                       what="a free-space wavelength, nm") for i, v in enumerate(lam)]
    if len(set(lam)) != len(lam):
        raise ValueError(f"wavelengths must be distinct, got {lam}")
    return np.array(lam)


def _index(index: Callable, lam: float) -> complex:
    n = np.asarray(index(lam))
    if n.shape != () or n.dtype.kind not in "fc" or not np.isfinite(n):
        raise ValueError(f"index({lam:g}) must be one finite number, got {n!r}")
    if n.imag < 0:
        raise ValueError(f"index({lam:g}) = {complex(n)} has Im n < 0: an active medium "
                         "(the time convention is exp(-i omega t), absorbing Im n > 0)")
    return complex(n)


class FocusBand:
    """The focusing chain of a `FocusSetup` at several wavelengths, and its min-max form.

    Parameters
    ----------
    setup : FocusSetup
        Its ``wave_model`` takes ``wavelength=`` (nm) as a keyword
        (`topopt_problems.em_focus.wave_model`).
    wavelengths : sequence of float
        ``lambda_j`` in nm, distinct, positive.
    index : callable, default `topopt.design.materials.silver_index`
        ``index(lambda) -> complex``: the metal's refractive index
        (``Im n >= 0``); the setup's ``n_air`` is the other phase.
    h, subcell, isolated, solver
        As `FocusProblem`.
    t_max : float > 1
        The worst normalized intensity ``g_j / g_j0`` may reach `t_max`:
        ``t`` lies in ``[-ln t_max, ln t_max]`` (log form) or ``[-t_max,
        1]`` (ratio form). A run whose ``t`` ends at its lower bound says
        so (``t_at_bound``): raise `t_max`.
    scale : {"each", "common"}
        ``g_j0``: each wavelength's start intensity, or their mean.
    form : {"ratio", "log"}
        The bounded measure ``-g_j / g_j0`` or ``-ln(g_j / g_j0)``.

    Examples
    --------
    A silver ring around a focus in a 40 nm periodic cell (`topopt_problems.em_focus`
    is the full setup), at 500 and 600 nm:

    >>> import numpy as np, skfem
    >>> from topopt import fem
    >>> from topopt.formulations import FocusSetup, FocusBand
    >>> def cell(h, isolated=False):
    ...     mesh = skfem.MeshQuad.init_tensor(np.arange(0.0, 41.0, h),
    ...                                       np.arange(-100.0, 301.0, h))
    ...     r = np.linalg.norm(fem.element_centroids(mesh) - [20.0, 100.0], axis=1)
    ...     return mesh, np.flatnonzero((r > 6) & (r < 16)), np.flatnonzero(r < 6)
    >>> def wave_model(mesh, design, center, quadrature, isolated, solver, wavelength=500.0):
    ...     model = fem.WaveModel(mesh, 2 * np.pi / wavelength, pml=(0.0, 200.0, 100.0),
    ...                           design=design)
    ...     return model, model.line_source(150.0), model.focus_matrix(center, [20.0, 100.0])
    >>> setup = FocusSetup(cell, wave_model, 3.0, 0.5, None, 1.0, (8.0,), 0.4, "ring", {}, {})
    >>> band = FocusBand(setup, [500.0, 600.0], h=4.0)
    >>> band.n, np.round(band.enhancements(np.ones(band.n), 8.0), 2)
    (48, array([2.38, 1.26]))
    """

    objective_name = "t (the worst -ln(g_j / g_j0) or -g_j / g_j0)"

    def __init__(self, setup: FocusSetup, wavelengths, index: Callable = silver_index,
                 h: float = 4.0, subcell: bool = False, isolated: bool = False,
                 solver: str = "auto", t_max: float = 1e3, scale: str = "common",
                 form: str = "ratio"):
        self.wavelengths = _wavelengths(wavelengths)
        check_callable("index", index)
        self.t_max = check_range("t_max", t_max, 1.0, None, lo_open=True)
        self.scale = check_choice("scale", scale, SCALES)
        self.form = check_choice("form", form, FORMS)
        self.n_metal = [_index(index, lam) for lam in self.wavelengths]
        self.focus = f = FocusProblem(setup, h, subcell, isolated, solver)
        quadrature = (f.filter.basis.X, f.filter.basis.W) if subcell else None
        self.models = [setup.wave_model(f.mesh, f.design, f.center, quadrature, isolated,
                                        solver, wavelength=lam) for lam in self.wavelengths]
        self.setup, self.n, self.m = setup, f.n, self.wavelengths.size
        self.g_ref = None

    def g(self, p, beta=None):
        """``[g_1, ..., g_m]`` (one array) of the design projected with `beta` (None: its
        blueprint); differentiable in every mode."""
        p_t = self.focus.blueprint(p) if beta is None else self.focus.p_phys(p, beta)
        n_air = self.setup.n_air
        out = []
        for (model, b, O), n_j in zip(self.models, self.n_metal):
            a = 1.0 / permittivity(p_t, n_j, n_air) - 1.0 / n_air ** 2
            out.append(intensity(model.solve(a, b), O))
        return np.stack(out)

    def enhancements(self, p, beta=None) -> np.ndarray:
        """``|E(x0)| / |E_inc|`` at each wavelength (floats)."""
        return np.array([enhancement(float(g)) for g in self.g(p, beta)])

    def prepare(self, p0, beta) -> np.ndarray:
        """``g_j0`` of the start `p0` (unless set) and MMA's start ``z0 = [p0, t0]``."""
        p0 = check_real_array("p0", p0, allow_bool=True)
        if p0.shape != (self.n,):
            raise ValueError(f"p0 must have shape ({self.n},), got {p0.shape}")
        g0 = np.array([float(g) for g in self.g(p0, beta)])
        if self.g_ref is None:
            self.g_ref = g0 if self.scale == "each" else np.full(self.m, g0.mean())
        return np.append(p0, max(self.measure(g0[j], j) for j in range(self.m)))

    def measure(self, g_j, j: int):
        """The bounded measure of wavelength `j`: ``-ln(g_j / g_j0)`` or ``-g_j / g_j0``."""
        ratio = g_j / self.g_ref[j]
        return -np.log(ratio) if self.form == "log" else -ratio

    def responses(self, z, beta):
        """``(t, c_1 - t, ..., c_m - t)``, ``c_j`` the `measure`, for MMA (after `prepare`)."""
        if self.g_ref is None:
            raise RuntimeError("call prepare(p0, beta) first: it sets the scales g_j0")
        x, t = z[:-1], z[-1]
        g = self.g(x, beta)
        return (t, *[self.measure(g[j], j) - t for j in range(self.m)])

    def bounds(self):
        """``0 <= x <= 1`` and ``t`` in ``[-ln t_max, ln t_max]`` or ``[-t_max, 1]``."""
        lo, hi = ((-np.log(self.t_max), np.log(self.t_max)) if self.form == "log"
                  else (-self.t_max, 1.0))
        return np.append(np.zeros(self.n), lo), np.append(np.ones(self.n), hi)

    @property
    def constraint_names(self) -> list:
        c = "-ln(g/g0)" if self.form == "log" else "-g/g0"
        return [f"{c}({lam:g} nm) - t" for lam in self.wavelengths]

    def solves(self) -> int:
        """Factorizations of the band's systems so far."""
        return sum(model.system.counts["factorizations"] for model, _, _ in self.models)

    def metrics(self, x) -> dict:
        """The figures of design `x` at the last ``beta`` and of its blueprint."""
        beta = self.setup.betas[-1]
        E, E_bp = self.enhancements(x, beta), self.enhancements(x)
        return {"wavelengths_nm": self.wavelengths.tolist(),
                "n_metal": [[n.real, n.imag] for n in self.n_metal],
                "field_enhancement": E.tolist(), "worst_enhancement": float(E.min()),
                "field_enhancement_blueprint": E_bp.tolist(),
                "worst_enhancement_blueprint": float(E_bp.min()),
                "g_ref": self.g_ref.tolist(),
                "grey_level": grey_level(self.focus.p_phys(x, beta)),
                "resolution_nm": self.focus.h, "design_variables": int(self.n)}


def run_focus_band(band: FocusBand, maxeval: int = 100, p0=None, verbose: bool = False,
                   checkpoint: str | None = None) -> RunResult:
    """The min-max design over `band`'s wavelengths, the setup's ``beta`` continuation.

    `maxeval` MMA evaluations per stage from `p0` (default: the setup's
    uniform start); ``x`` of the result is the design (``t`` dropped).
    """
    if isinstance(maxeval, bool) or not isinstance(maxeval, (int, np.integer)) or maxeval < 1:
        raise ValueError(f"maxeval must be an integer >= 1, got {maxeval!r}")
    setup = band.setup
    p0 = setup.start(band.n) if p0 is None else p0
    t0 = time.perf_counter()
    z0 = band.prepare(p0, setup.betas[0])
    stages = [Stage(maxeval=maxeval, params={"beta": beta}) for beta in setup.betas]
    res = minimize(band.responses, z0, bounds=band.bounds(), stages=stages, ftol_rel=1e-8,
                   verbose=verbose, checkpoint=checkpoint, n_constraints=band.m,
                   mma_params={"dual_algorithm": nlopt.LD_MMA, "inner_gradients": 0},
                   count_solves=band.solves, objective_name=band.objective_name)
    x = res.x[:-1]
    t_lo = band.bounds()[0][-1]
    metrics = band.metrics(x) | {"t": float(res.x[-1]), "fe_solves": band.solves(),
                                 "t_at_bound": bool(res.x[-1] <= t_lo + 1e-9 * abs(t_lo)),
                                 "seconds": time.perf_counter() - t0}
    return RunResult.from_record(run_record(res, checkpoint), metrics, x=x,
                                 x_phys=band.focus.element_density(x, setup.betas[-1]),
                                 history=res.history)
