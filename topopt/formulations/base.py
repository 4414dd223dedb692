"""The density problem: ``x -> x_tilde = F x -> x_phys`` and the run template.

Every formulation of this package optimizes element densities ``x`` through
the chain of top88 (Andreassen et al. 2011, eqs. (1)-(3)): a filter ``F``
(density or Helmholtz), optionally the tanh projection of a stage's ``beta``
(Wang, Lazarov & Sigmund 2011, eq. (1)), passive elements fixed after both
(top99 sect. 5.3). `DensityProblem` holds that chain and the run of MMA
around the formulation's responses; a subclass holds only its physics: its
responses, its objective's scale and name, its constraints, its MMA defaults
and its metrics (the hooks of `DensityProblem.run`). `timed_run` is the part
of the run that code driving `minimize` itself shares (`robust_run`). The
gallery's runs, which build their model, run phases and write their folder,
follow the template beside it (`topopt.formulations.run_template.GalleryRun`).
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from .. import fem
from .._files import check_writable_file
from .._validate import (check_callable, check_choice, check_mapping, check_positive,
                         check_range)
from ..design.filters import DensityFilter
from ..design.helmholtz_filter import HelmholtzFilter
from ..design.interpolation import DENSITY_TOL, project, simp
from ..design.measures import grey_level
from ..design.passive import Passive
from ..fem.models import _check_model
from ..fem.solvers.auto import describe
from ..grid.filters import GridDensityFilter, GridHelmholtzFilter
from ..grid.model import GridModel
from ..io.result import RunResult, run_record
from ..optimize.driver import Result, minimize
from ..optimize.options import OPTIMIZERS, Stage
from ..optimize.progress import show
from ..responses.structural import volume

__all__ = ["DensityProblem", "StartScaled", "timed_run", "with_callback", "announce",
           "before_resume", "cg_counters", "cg_metrics", "FILTERS"]

FILTERS = ("density", "helmholtz")


def announce(system, verbose: bool) -> None:
    """Print the linear solver of a run (`topopt.fem.solvers.describe`) when `verbose`."""
    if verbose:
        show(describe(system))


def with_callback(callback, problem, stages, run: Callable):
    """``run(callback)``, `callback` checked and, if it has them, its hooks called around.

    `callback` is None or ``callback(record, x)`` (`minimize`'s: after each
    evaluation, the evaluation's history record and MMA's design variables;
    True stops the run). A callback object with ``start`` and ``finish``
    methods (`topopt.plot.live`) gets ``start(problem, stages)`` before the
    first evaluation and ``finish()`` after the last, also when `run` fails.

    Examples
    --------
    >>> class Watch:
    ...     def start(self, problem, stages): print("start", problem, stages)
    ...     def __call__(self, record, x): pass
    ...     def finish(self): print("finish")
    >>> with_callback(Watch(), "problem", None, lambda cb: "result")
    start problem None
    finish
    'result'
    """
    check_callable("callback", callback, allow_none=True)
    start, finish = (getattr(callback, name, None) for name in ("start", "finish"))
    if callable(start):
        start(problem, stages)
    try:
        return run(callback)
    finally:
        if callable(finish):
            finish()


def before_resume(res, key: str, default=0):
    """What the checkpoint of a resumed run carried of `key`: the run before the resume.

    `key` is ``"seconds"``, ``"fe_solves"``, ``"evaluations"`` or
    ``"counters"`` (`topopt.optimize.Result.resumed`); `default` for a run
    that did not resume (or a checkpoint without the figure). A run's figures
    counted in this process (its solves, its time) plus these cover the
    whole run.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> before_resume(SimpleNamespace(resumed={"seconds": 3.5, "fe_solves": 204}), "fe_solves")
    204
    >>> before_resume(SimpleNamespace(resumed=None), "seconds", 0.0)
    0.0
    """
    value = (getattr(res, "resumed", None) or {}).get(key)
    return default if value is None else value


def cg_counters(system) -> dict:
    """CG iterations and solves of `system` so far and the most in one solve ({} unless CG ran)."""
    counts = system.counts
    if not counts.get("cg_solves"):
        return {}
    return {"cg_iterations": int(counts["cg_iterations"]), "cg_solves": int(counts["cg_solves"]),
            "cg_iterations_max": int(max(system._iterative.log))}


def cg_metrics(now: dict, before: dict | None = None) -> dict:
    """CG iterations per solve and the most in one solve of the `cg_counters` `now` and
    `before` (a resumed run's, from its checkpoint) together; {} without CG solves.

    Examples
    --------
    >>> cg_metrics({"cg_iterations": 30, "cg_solves": 10, "cg_iterations_max": 5},
    ...            {"cg_iterations": 10, "cg_solves": 10, "cg_iterations_max": 7})
    {'cg_iterations_per_solve': 2.0, 'cg_iterations_max': 7}
    """
    before = before or {}
    solves = now.get("cg_solves", 0) + before.get("cg_solves", 0)
    if not solves:
        return {}
    return {"cg_iterations_per_solve":
            (now.get("cg_iterations", 0) + before.get("cg_iterations", 0)) / solves,
            "cg_iterations_max": int(max(now.get("cg_iterations_max", 0),
                                         before.get("cg_iterations_max", 0)))}


def timed_run(problem, checkpoint: str | None, verbose: bool, drive: Callable,
              prepare: Callable | None = None) -> tuple[Result, float, int]:
    """The frame of a run: checkpoint path, solve count, solver line, time.

    The checkpoint path is tested before the first solve; then ``start =
    prepare()`` (the solves that scale the responses, counted), the solver
    is announced, and ``drive(start)`` runs `minimize` and is timed.
    Returns ``(result, seconds of drive, solves before prepare)``: the
    caller counts the solves it wants (`problem.solves()` minus these).
    """
    if checkpoint is not None:                   # before the first solve
        check_writable_file(checkpoint, "checkpoint")
    solves0 = problem.solves()
    start = None if prepare is None else prepare()
    problem.announce(verbose)
    t0 = time.perf_counter()
    res = drive(start)
    return res, time.perf_counter() - t0, solves0


class StartScaled:
    """The objective scaled by its value at the start: ``c0``, the metric's unit.

    A formulation lists it before `DensityProblem` and says which objective
    sets the scale (`start_objective`; the compliance by default); `prepare`
    evaluates it once at MMA's start unless ``c0`` is already set, and
    `objective_scale` turns the minimized ``c / c0`` back into the metric.
    """

    def start_objective(self, x0):
        """The objective whose start value is ``c0``."""
        return self.compliance(x0)

    def prepare(self, x0, stages) -> np.ndarray:
        """``c0``: `start_objective` at the start (unless set), the objective's scale."""
        if self.c0 is None:
            self.c0 = float(self.start_objective(x0))
        return x0

    @property
    def objective_scale(self) -> float:
        return self.c0


class DensityProblem:
    """Element densities through a filter (and projection) to ``x_phys``, and their run.

    Parameters
    ----------
    model : topopt.fem.Model
        The model with its supports.
    volfrac : float in (0, 1) or None
        The volume fraction (of the whole domain, passive solid included);
        None for a formulation without a volume limit (`MinimumVolumeStress`).
    rmin : float > 0
        Filter radius in length units (Helmholtz filter: ``r = rmin / (2 sqrt(3))``).
    penal : float >= 1
        SIMP exponent.
    filter : {"density", "helmholtz"}
    Emin : float in [0, 1)
        Void stiffness (``E0 = 1``).
    solver, solver_options : str, dict (optional)
        Linear-solver backend (`topopt.fem.solvers`) and an iterative solver's options.
    eta : float
        Threshold of the projection when a stage sets ``beta``.
    passive : topopt.design.Passive, optional
        Passive elements: MMA sees the ``n = passive.n_free`` free variables,
        ``x_phys`` holds the fixed values, a result's ``x`` is the full vector.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.base import DensityProblem
    >>> p = DensityProblem(fem.elasticity(fem.rectangle(4, 2)), volfrac=0.5, rmin=1.5)
    >>> p.n, round(float(p.volume(np.full(8, 0.5))), 12)
    (8, 0.5)
    """

    #: The objective's name in the progress lines and the history.
    objective_name = "objective"
    #: MMA's options of `run` (`mma_params` overrides them).
    mma_defaults: dict = {}
    #: MMA's move limit at each stage's start (`minimize`'s; None: half the bounds' width).
    initial_step: float | None = None

    def __init__(self, model: fem.Model, volfrac: float, rmin: float, penal: float = 3.0,
                 filter: str = "density", Emin: float = 1e-9, solver: str = "auto",
                 eta: float = 0.5, solver_options: dict | None = None,
                 passive: Passive | None = None):
        _check_model(model)
        self.volfrac = None if volfrac is None else check_range(
            "volfrac", volfrac, 0.0, 1.0, lo_open=True, hi_open=True)
        self.rmin = check_positive("rmin", rmin, "filter radius")
        self.penal = check_range("penal", penal, 1.0, None, what="SIMP exponent")
        check_choice("filter", filter, FILTERS)
        self.Emin = check_range("Emin", Emin, 0.0, 1.0, hi_open=True,
                                what="void stiffness; E0 = 1")
        self.eta = check_range("eta", eta, 0.0, 1.0, what="projection threshold")
        self.model, self.filter_name = model, filter
        mesh = model.mesh
        self.weights = (np.full(model.n_el, mesh.volume) if isinstance(model, GridModel)
                        else fem.element_volumes(mesh))
        self.passive = Passive.of(passive, model.n_el)
        if self.volfrac is not None:
            self.passive.check_volume(self.volfrac, self.weights)   # before filter and system
        self.n_el = model.n_el
        self.n = self.passive.n_free               # design variables of MMA
        self._pde_solver, self._filters = ("petsc" if solver == "petsc" else None), {}
        self.filter = self._filter(self.rmin)
        if self.volfrac is not None:
            self.passive.check_filtered_volume(self.volfrac,
                                               lambda: self.volume(np.zeros(self.n)))
        self.system = self._system(solver, solver_options)

    def _filter(self, rmin: float):
        """The density or Helmholtz filter of radius `rmin`, built once (a stage may set one)."""
        rmin = check_positive("rmin", rmin, "filter radius")
        if rmin not in self._filters:
            mesh = self.model.mesh
            if isinstance(self.model, GridModel):
                self._filters[rmin] = (GridDensityFilter(mesh, rmin) if self.filter_name ==
                                       "density" else GridHelmholtzFilter.from_rmin(mesh, rmin))
            else:
                self._filters[rmin] = (
                    DensityFilter(mesh, rmin) if self.filter_name == "density"
                    else HelmholtzFilter.from_rmin(mesh, rmin, solver=self._pde_solver))
        return self._filters[rmin]

    def _system(self, solver: str, solver_options: dict | None):
        """The linear system of the state equation (`topopt.fem.Model.system`)."""
        return self.model.system(solver, solver_options=solver_options)

    # ----------------------------------------------------------- the chain
    def check_design(self, x, name: str = "the design vector") -> np.ndarray:
        """The free design variables of `x` (``(n,)``, or the full element vector)."""
        return self.passive.free_design(x, name)

    def x_phys(self, x, beta: float | None = None):
        """Physical densities: filtered, `printed`, then projected if `beta` is given.

        With passive elements `x` is the free variables (or the full element
        vector holding the fixed values); the passive entries of the result
        are their fixed values.
        """
        x_tilde = self.printed(self.filtered(x))
        x_phys = x_tilde if beta is None else project(x_tilde, beta, self.eta)
        return self.passive.fix(x_phys)

    def filtered(self, x, rmin: float | None = None):
        """``x_tilde``: the filter (radius `rmin`, else the problem's) of the elements of `x`."""
        x_tilde = self._filter(self.rmin if rmin is None else rmin)(self.passive.elements(x))
        if self.filter_name == "helmholtz":
            # The PDE filter (Lazarov & Sigmund 2011, eq. (5)) is not bound
            # preserving: at rmin ~ 1.5 h it returns -2e-4 .. 1.003 near sharp
            # edges. Clipped just outside [0, 1], so that values off by rounding
            # keep their derivative and simp sees a density in its range.
            x_tilde = np.clip(x_tilde, -DENSITY_TOL, 1 + DENSITY_TOL)
        return x_tilde

    def printed(self, x_tilde):
        """The densities built from `x_tilde`: itself here; an overhang filter in a
        printable formulation (`topopt.formulations.printable`)."""
        return x_tilde

    def stiffness(self, x, beta: float | None = None):
        """Element stiffnesses ``E = simp(x_phys)`` (top88 eq. (1)); differentiable."""
        return simp(self.x_phys(x, beta), self.penal, self.Emin)

    def volume(self, x, beta: float | None = None):
        """``v(x_phys) = sum_e w_e x_phys,e / sum_e w_e``; differentiable."""
        return volume(self.x_phys(x, beta), self.weights)

    def nodal_state(self, u) -> dict:
        """A solution `u` (one column per load case) as point fields for ``design.vtu``.

        ``{"displacement": (n_points, dim)}`` (``"temperature"`` for a heat
        model); several load cases give ``displacement_1``, ``_2``, ...
        """
        u = np.asarray(u)
        name = "displacement" if self.model.components > 1 else "temperature"
        fields = u[:, None] if u.ndim == 1 else u
        out = {}
        for k in range(fields.shape[1]):
            key = name if fields.shape[1] == 1 else f"{name}_{k + 1}"
            v = self.model.nodal_values(fields[:, k])          # (n_points, components)
            out[key] = v[:, 0] if v.shape[1] == 1 else v
        return out

    def solves(self) -> int:
        """The factorizations of the problem's system so far (a run counts its own)."""
        return self.system.counts["factorizations"]

    def announce(self, verbose: bool) -> None:
        """Print the linear solver of a run when `verbose` (`announce`)."""
        announce(self.system, verbose)

    def counters(self) -> dict:
        """What a checkpoint carries across a resume (`minimize`'s ``counters``): `cg_counters`."""
        return cg_counters(self.system)

    # ----------------------------------------------------------- the run's hooks
    def start(self, x0=None) -> np.ndarray:
        """`x0` checked, or the uniform design (the free variables) at `volfrac`."""
        if x0 is None:
            return np.full(self.n, self.volfrac)
        return self.check_design(x0, "x0")

    def prepare(self, x0, stages) -> np.ndarray:
        """Set the responses' scales at the start `x0` (solves counted); MMA's start."""
        return x0

    @property
    def constraint_names(self) -> list:
        """The labels of the constraints of `responses`."""
        return ["volume"]

    @property
    def objective_scale(self) -> float:
        """The minimized objective times this is the metric (`minimize`'s)."""
        return 1.0

    def bounds(self):
        """MMA's bounds of the design variables."""
        return (0.0, 1.0)

    def final(self, x_phys) -> tuple[dict, np.ndarray]:
        """``(metrics, u)`` of the final physical design: the physics' metrics, its state."""
        raise NotImplementedError

    def run_metrics(self) -> dict:
        """The metrics after the solver and filter (the problem's parameters)."""
        return {}

    def final_design(self, res: Result, stages) -> tuple[np.ndarray, np.ndarray]:
        """``(x, x_phys)``: the full element vector and the physical design of `res`."""
        beta = stages[-1].params.get("beta") if stages else None
        return self.passive.expand(res.x), np.asarray(self.x_phys(res.x, beta))

    def metrics(self, res: Result, x_phys, seconds: float, solves0: int):
        """``(metrics, arrays)`` of the run (counts and time: this process's and those a
        resumed run's checkpoint carried, `before_resume`); `final`'s state is ``arrays["u"]``."""
        fe_solves = self.solves() - solves0 + before_resume(res, "fe_solves")
        physics, u = self.final(x_phys)                 # fe_solves: before its solve
        metrics = physics | {
            "grey_level": grey_level(x_phys),
            "fe_solves": fe_solves,
            "fe_solves_per_iteration": fe_solves / max(res.evaluations, 1),
            "seconds": seconds + before_resume(res, "seconds", 0.0),
            "solver": self.system.solver, "filter": self.filter_name,
        } | self.run_metrics() | cg_metrics(self.counters(), before_resume(res, "counters", {}))
        return metrics, {"u": np.asarray(u)}

    def history(self, res: Result) -> list:
        """The run's history as ``result.json`` keeps it."""
        return res.history

    # ----------------------------------------------------------- the run
    def run(self, maxeval: int = 200, x0=None, stages: Sequence[Stage] | None = None,
            ftol_rel: float = 0.0, xtol_abs: float = 0.0, verbose: bool = True,
            checkpoint: str | None = None, resume: str | None = None,
            mma_params: dict | None = None, callback: Callable | None = None,
            optimizer: str = "nlopt") -> RunResult:
        """Optimize from `x0` (uniform `volfrac` by default); returns a `RunResult`.

        It says how the run ended (`topopt.io.run_record`: ``status``,
        ``signal``, ``evaluations``, ``checkpoint``, ``resume``) and holds the
        formulation's metrics (`metrics`), the design ``x`` (the full element
        vector), ``x_phys`` and the history; an interrupted run
        (``status="interrupted"``) returns the last good design. MMA (NLopt's, or
        ours with ``optimizer="mma"``) runs with the formulation's `mma_defaults`
        updated by `mma_params`. ``callback(record, x)`` follows each evaluation,
        as in `minimize` (`with_callback`: a `topopt.plot.live` is started and finished).
        """
        x0 = self.start(x0)
        options = {**self.mma_defaults, **check_mapping("mma_params", mma_params)}
        check_callable("callback", callback, allow_none=True)     # before the first solve
        check_choice("optimizer", optimizer, OPTIMIZERS)

        def drive(z0):
            return with_callback(callback, self, stages, lambda cb: minimize(
                self.responses, z0, n_constraints=len(self.constraint_names),
                bounds=self.bounds(), maxeval=None if stages else maxeval, stages=stages,
                ftol_rel=ftol_rel, xtol_abs=xtol_abs, verbose=verbose, checkpoint=checkpoint,
                resume=resume, mma_params=options, count_solves=self.solves, callback=cb,
                objective_scale=self.objective_scale, objective_name=self.objective_name,
                counters=self.counters, optimizer=optimizer, initial_step=self.initial_step))

        res, seconds, solves0 = timed_run(self, checkpoint, verbose, drive,
                                          lambda: self.prepare(x0, stages))
        x, x_phys = self.final_design(res, stages)
        metrics, arrays = self.metrics(res, x_phys, seconds, solves0)
        return RunResult.from_record(run_record(res, checkpoint), metrics, x=x, x_phys=x_phys,
                                     history=self.history(res), arrays=arrays)
