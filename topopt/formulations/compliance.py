"""Minimum compliance with a volume constraint: the chain of top88, on any mesh.

``x -> x_tilde = F x`` (density or Helmholtz filter) ``-> x_phys`` (optionally
the tanh projection) ``-> E = simp(x_phys)`` ``-> u = K(E)^{-1} f`` ``-> c =
f^T u``, minimised by MMA subject to ``v(x_phys) <= volfrac`` (top88 eq. (1)).
A problem script sets up the mesh, supports and loads, builds the problem and
calls `run_compliance`; its command line is `compliance_options` in
`topopt.cli.script.script`.
"""

from __future__ import annotations

import json
import os
import time
from typing import Sequence

import numpy as np

from .. import fem
from .._validate import check_choice, check_load, check_mapping, check_positive, check_range
from ..fem.models import _check_model
from ..design.passive import Passive
from ..design.filters import DensityFilter, HelmholtzFilter
from ..design.interpolation import DENSITY_TOL, project, simp
from ..responses.structural import compliance, volume
from ..fem.solvers.auto import describe
from ..optimize.progress import show
from ..optimize.driver import Result, Stage, minimize
from ..cli.script import Option, at_least, open_unit, positive_float, positive_int, signals_held
from ..io.result import RUN_KEYS, RunResult, grey_level, run_record
from .._files import atomic_write_text, check_writable_file, check_writable_folder

__all__ = ["ComplianceProblem", "grey_level", "write_results", "plot_record", "write_json",
           "run_compliance", "minimize_compliance", "announce", "compliance_options", "compliance_summary", "RunResult", "RUN_KEYS"]

FILTERS = ("density", "helmholtz")


class ComplianceProblem:
    """Minimum compliance subject to a volume fraction.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity (or heat) model with its supports.
    f : (ndof,) or (ndof, n_loads) array
        Load vector(s); several load cases sum their compliances.
    volfrac : float in (0, 1)
    rmin : float > 0
        Filter radius in length units (top88: in elements for unit elements).
        The Helmholtz filter uses ``r = rmin / (2 sqrt(3))``.
    penal : float >= 1
        SIMP exponent.
    filter : {"density", "helmholtz"}
    Emin : float
        Void stiffness (top88: 1e-9).
    solver : str
        Linear-solver backend (see `topopt.fem.solvers`).
    eta : float
        Threshold of the projection when a stage sets ``beta``.
    solver_options : dict, optional
        Options of an iterative solver (``rtol``, ``maxiter``, ...; see
        `topopt.fem.solvers.multigrid`).
    passive : topopt.design.Passive, optional
        Passive solid/void elements (top99 sect. 5.3). MMA then optimizes
        the ``n = passive.n_free`` free variables; the filter sees them with
        the fixed values in place and ``x_phys`` is reset to the fixed values
        after the filter (and projection). `volume` and `volfrac` refer to
        the whole domain, passive solid included; the result's ``x`` is the
        full element vector (for plots and saved designs).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.compliance import ComplianceProblem
    >>> model = fem.elasticity(fem.rectangle(6, 2)).fix(nodes=lambda x: x[0] == 0)
    >>> f = model.point_load((6, 0), (0, -1))
    >>> p = ComplianceProblem(model, f, volfrac=0.5, rmin=1.5)
    >>> round(float(p.compliance(np.full(12, 0.5))), 3)
    833.599
    """

    def __init__(self, model: fem.Model, f, volfrac: float, rmin: float, penal: float = 3.0,
                 filter: str = "density", Emin: float = 1e-9, solver: str = "auto",
                 eta: float = 0.5, solver_options: dict | None = None,
                 passive: Passive | None = None):
        _check_model(model)
        self.volfrac = check_range("volfrac", volfrac, 0.0, 1.0, lo_open=True, hi_open=True)
        rmin = check_positive("rmin", rmin, "filter radius")
        penal = check_range("penal", penal, 1.0, None, what="SIMP exponent")
        check_choice("filter", filter, FILTERS)
        Emin = check_range("Emin", Emin, 0.0, 1.0, hi_open=True, what="void stiffness; E0 = 1")
        eta = check_range("eta", eta, 0.0, 1.0, what="projection threshold")
        f = np.asarray(check_load("f", f, model.ndof, real=True), dtype=float)
        if not np.any(f):
            raise ValueError("the load vector f is zero")
        self.model, self.f = model, f
        self.rmin, self.penal, self.Emin, self.eta = rmin, penal, Emin, eta
        self.filter_name = filter
        mesh = model.mesh
        self.weights = fem.element_volumes(mesh)
        self.passive = Passive.of(passive, model.n_el)
        self.passive.check_volume(self.volfrac, self.weights)   # before filter and system
        self.n_el = model.n_el
        self.n = self.passive.n_free               # design variables of MMA
        self.filter = (DensityFilter(mesh, rmin) if filter == "density"
                       else HelmholtzFilter.from_rmin(
                           mesh, rmin, solver="petsc" if solver == "petsc" else None))
        self.passive.check_filtered_volume(self.volfrac, lambda: self.volume(np.zeros(self.n)))
        self.system = model.system(solver, solver_options=solver_options)
        self.c0 = None

    def check_design(self, x, name: str = "the design vector") -> np.ndarray:
        """The free design variables of `x` (``(n,)``, or the full element vector)."""
        return self.passive.free_design(x, name)

    def x_phys(self, x, beta: float | None = None):
        """Physical densities: filtered, then projected if `beta` is given.

        With passive elements `x` is the free variables (or the full element
        vector holding the fixed values); the passive entries of the result
        are their fixed values.
        """
        x_tilde = self.filter(self.passive.elements(x))  # the filter sees the fixed values
        if self.filter_name == "helmholtz":
            # The PDE filter (Lazarov & Sigmund 2011, eq. (5)) is not bound
            # preserving: at rmin ~ 1.5 h it returns -2e-4 .. 1.003 near sharp
            # edges. Clipped just outside [0, 1], so that values off by rounding
            # keep their derivative and simp sees a density in its range.
            x_tilde = np.clip(x_tilde, -DENSITY_TOL, 1 + DENSITY_TOL)
        x_phys = x_tilde if beta is None else project(x_tilde, beta, self.eta)
        return self.passive.fix(x_phys)

    def stiffness(self, x, beta: float | None = None):
        """Element stiffnesses ``E = simp(x_phys)`` (top88 eq. (1)); differentiable."""
        return simp(self.x_phys(x, beta), self.penal, self.Emin)

    def compliance(self, x, beta: float | None = None):
        """``c(x) = f^T K(E(x_phys))^{-1} f`` (top88 eq. (2)); differentiable."""
        return compliance(fem.solve(self.system, self.stiffness(x, beta), self.f), self.f)

    def volume(self, x, beta: float | None = None):
        return volume(self.x_phys(x, beta), self.weights)

    def displacement(self, x_phys) -> dict:
        """Nodal state of the physical densities `x_phys`, for ``design.vtu``.

        ``{"displacement": (n_points, dim)}`` (``"temperature"`` for a heat
        model); several load cases give ``displacement_1``, ``_2``, ...
        """
        u = fem.solve(self.system, simp(np.asarray(x_phys, dtype=float), self.penal,
                                        self.Emin), self.f)
        return self.nodal_state(u)

    def nodal_state(self, u) -> dict:
        """A solution `u` (one column per load case) as point fields; see `displacement`."""
        u = np.asarray(u)
        name = "displacement" if self.model.components > 1 else "temperature"
        nodal = self.model.basis.nodal_dofs                  # (components, n_points)
        fields = u[:, None] if u.ndim == 1 else u
        out = {}
        for k in range(fields.shape[1]):
            key = name if fields.shape[1] == 1 else f"{name}_{k + 1}"
            v = fields[nodal, k].T                            # (n_points, components)
            out[key] = v[:, 0] if v.shape[1] == 1 else v
        return out

    def responses(self, x, beta: float | None = None):
        """``(c / c0, v / volfrac - 1)``: scaled objective and constraint for MMA.

        A tuple, not a stacked array: the constraint's gradient then skips the
        FE adjoint (its cotangent into the solve is None, not zeros).
        """
        x_phys = self.x_phys(x, beta)
        c = compliance(fem.solve(self.system, simp(x_phys, self.penal, self.Emin), self.f),
                       self.f)
        v = volume(x_phys, self.weights)
        return c / self.c0, v / self.volfrac - 1.0

    def run(self, maxeval: int = 200, x0=None, stages: Sequence[Stage] | None = None,
            ftol_rel: float = 0.0, xtol_abs: float = 0.0, verbose: bool = True,
            checkpoint: str | None = None, resume: str | None = None,
            mma_params: dict | None = None) -> RunResult:
        """Optimize from `x0` (uniform `volfrac` by default); returns a `RunResult`.

        It says how the run ended (`topopt.cli.run_record`: ``status``,
        ``signal``, ``evaluations``, ``checkpoint``, ``resume``) and holds the
        metrics ``compliance``, ``volume``, ``grey_level``, ``fe_solves``,
        ``fe_solves_per_iteration``, ``seconds``, ``solver``, ``filter`` (and
        with an iterative solver ``cg_iterations_per_solve``,
        ``cg_iterations_max``), the design ``x``, ``x_phys`` and the history;
        an interrupted run (``status="interrupted"``) returns the last good
        design.

        MMA runs without inner iterations (``inner_maxeval=1``: Svanberg's
        classic MMA, one FE solve per design iteration) unless `mma_params`
        says otherwise; on the MBB beam and the cantilever it reaches the
        same compliance as the conservative (GCMMA-like) default of
        `minimize`, which harder problems need. The dual is solved to
        ``dual_ftol_rel=1e-10`` (8 ms instead of 13.5 ms per step at 19 200
        variables, the same designs to 6 digits).
        """
        res, seconds, fe_solves = minimize_compliance(
            self, maxeval, x0, stages, ftol_rel, xtol_abs, verbose, checkpoint, resume,
            {"inner_maxeval": 1, "dual_ftol_rel": 1e-10,
             **check_mapping("mma_params", mma_params)})
        beta = stages[-1].params.get("beta") if stages else None
        x_phys = np.asarray(self.x_phys(res.x, beta))
        x = self.passive.expand(res.x)                  # the full element vector
        # the final state, solved once: compliance here, design.vtu's point data later
        u = fem.solve(self.system, simp(x_phys, self.penal, self.Emin), self.f)
        metrics = {
            "compliance": float(compliance(u, self.f)),
            "volume": float(volume(x_phys, self.weights)),
            "grey_level": grey_level(x_phys),
            "fe_solves": fe_solves,
            "fe_solves_per_iteration": fe_solves / max(res.evaluations, 1),
            "seconds": seconds,
            "solver": self.system.solver,
            "filter": self.filter_name,
        } | self.cg_metrics()
        return RunResult.from_record(run_record(res, checkpoint), metrics, x=x,
                                     x_phys=x_phys, history=res.history,
                                     arrays={"u": np.asarray(u)})

    def cg_metrics(self) -> dict:
        """CG iterations per solve and the most in one solve (iterative solvers only)."""
        counts = self.system.counts
        if not counts.get("cg_solves"):
            return {}
        return {"cg_iterations_per_solve": counts["cg_iterations"] / counts["cg_solves"],
                "cg_iterations_max": int(max(self.system._iterative.log))}


def announce(system, verbose: bool) -> None:
    """Print the linear solver of a run (`topopt.fem.solvers.describe`) when `verbose`."""
    if verbose:
        show(describe(system))


def minimize_compliance(problem, maxeval: int, x0, stages, ftol_rel: float, xtol_abs: float,
                        verbose: bool, checkpoint, resume, mma_params) -> tuple[Result, float, int]:
    """The start and the MMA run of a volume-constrained compliance problem.

    `problem` has ``n``, ``volfrac``, ``check_design``, ``compliance``,
    ``responses`` (scaled by ``problem.c0``, set here to the compliance of
    `x0`, uniform `volfrac` by default) and ``system``; the checkpoint path is
    tested before the first solve. Returns ``(result of minimize, seconds,
    FE solves)``, ``c0``'s solve included.
    """
    x0 = np.full(problem.n, problem.volfrac) if x0 is None else problem.check_design(x0, "x0")
    if checkpoint is not None:                   # before c0's solve
        check_writable_file(checkpoint, "checkpoint")
    counts = problem.system.counts
    solves0 = counts["factorizations"]
    if problem.c0 is None:
        problem.c0 = float(problem.compliance(x0))
    announce(problem.system, verbose)
    t0 = time.perf_counter()
    res: Result = minimize(
        problem.responses, x0, n_constraints=1, bounds=(0.0, 1.0),
        maxeval=None if stages else maxeval, stages=stages, ftol_rel=ftol_rel,
        xtol_abs=xtol_abs, verbose=verbose, checkpoint=checkpoint, resume=resume,
        mma_params=mma_params, count_solves=lambda: counts["factorizations"],
        objective_scale=problem.c0, objective_name="compliance")
    return res, time.perf_counter() - t0, counts["factorizations"] - solves0


def write_results(out: str, mesh, result: RunResult, setup: dict, title: str,
                  mirror: bool = False, point_data: dict | None = None,
                  objective: str = "compliance", symbol: str = "c",
                  constraint_names: Sequence[str] | None = None, *,
                  objective_scale: float | None = None, objective_label: str | None = None,
                  supports=None, loads=None) -> dict:
    """Write ``design.png``, ``history.png``, ``result.json`` (no arrays) and the design to `out`.

    Parameters
    ----------
    out, mesh, result, setup, title
        The folder, the mesh, the run, the problem's parameters and the
        pictures' title.
    mirror : bool
        Draw the whole structure of a half-symmetric model (`topopt.plot.design_figure`).
    point_data : dict, optional
        The state fields of ``design.vtu``.
    objective, symbol : str
        The metric of `result` quoted in the design's title as ``symbol = value``.
    constraint_names : list of str, optional
        The history's constraints (``g1``, ``g2``, ... by default).
    objective_scale : float, optional
        The history holds the minimized objective; times `objective_scale` it
        is the metric in the user's unit (a compliance problem minimizes ``c /
        c0``: ``objective_scale=c0``, as `minimize`'s). Without it the history
        plot says "objective as minimized".
    objective_label : str, optional
        The history's axis label; default ``"compliance c"`` from `objective`
        and `symbol` when `objective_scale` is given.
    supports, loads : arrays, optional
        `topopt.plot.boundary_markers` of the model: drawn on the design.

    The design is kept by `topopt.io.save_design`: ``design.npz`` (``x``,
    ``x_phys``, the mesh, `setup`), ``design.vtu`` (with the state fields
    `point_data`) and, in 3-D, ``design.stl``. ``result.json`` holds the
    histories and these plot settings too (`plot_record`), so that ``topopt
    show`` draws the same pictures.

    ``result.json`` says how the run ended at its top level (`RUN_KEYS`:
    ``"status": "interrupted"``, the signal, the evaluations, the checkpoint
    and the option that resumes it); the pictures and metrics are those of
    the last good design. A SIGINT/SIGTERM while they are written takes
    effect once they are complete (`topopt.cli.signals_held`).
    """
    if mirror and mesh.p.shape[0] != 2:
        raise ValueError(f"mirror=True draws a 2-D half model whole; the mesh is "
                         f"{mesh.p.shape[0]}-D")
    if objective_label is None:
        name = objective.replace("_", " ")
        objective_label = ("objective as minimized" if objective_scale is None else
                           symbol if name == symbol else f"{name} {symbol}")
    record = plot_record(result.history, objective_label,
                         1.0 if objective_scale is None else objective_scale,
                         constraint_names, mirror, supports, loads)
    with signals_held():
        return _write_results(out, mesh, result, setup, title, point_data, objective, symbol,
                              record)


def plot_record(history: Sequence[dict], objective_label: str, objective_scale: float = 1.0,
                constraint_names: Sequence[str] | None = None, mirror: bool = False,
                supports=None, loads=None, xlim=None, ylim=None) -> dict:
    """The histories and plot settings that ``result.json`` keeps (``topopt show``).

    ``objective_history`` (as minimized), ``constraint_history``,
    ``stage_history`` (continuation runs) and ``plot``: the keywords of
    `topopt.plot.history_figure` and `topopt.plot.design_figure` (``mirror``,
    ``supports``, ``loads``, the window ``xlim``, ``ylim``).

    Examples
    --------
    >>> r = plot_record([{"objective": 0.5, "constraints": [0.0]}], "compliance c", 400.0,
    ...                 ["V / 0.5 - 1"])
    >>> r["objective_history"], r["plot"]["objective_scale"], r["plot"]["constraint_names"]
    ([0.5], 400.0, ['V / 0.5 - 1'])
    """
    scale = float(objective_scale)
    if not np.isfinite(scale) or scale == 0:
        raise ValueError(f"objective_scale must be finite and non-zero, got {objective_scale!r}")
    record = {"objective_history": [h["objective"] for h in history],
              "constraint_history": [list(h.get("constraints") or []) for h in history]}
    stages = [h.get("stage", 0) for h in history]
    if any(stages):
        record["stage_history"] = stages
    arrays = {k: np.asarray(v, dtype=float).tolist() for k, v in
              (("supports", supports), ("loads", loads), ("xlim", xlim), ("ylim", ylim))
              if v is not None}
    record["plot"] = {"objective_label": objective_label, "objective_scale": scale,
                      "constraint_names": None if constraint_names is None else
                      list(constraint_names), "mirror": bool(mirror), **arrays}
    return record


def _write_results(out, mesh, result, setup, title, point_data, objective, symbol, record):
    from ..io.designs import save_design as keep_design
    from ..plot.figures import save_design, save_design_3d, save_history

    os.makedirs(out, exist_ok=True)
    if result.status == "interrupted":
        title = f"{title} (interrupted after {result.evaluations} evaluations)"
    plot = record["plot"]
    half = " (half model, drawn whole)" if plot["mirror"] else ""
    label = f"{title}{half}: {symbol} = {result[objective]:.4g}"
    markers = {k: plot[k] for k in ("supports", "loads") if k in plot}
    path = os.path.join(out, "design.png")
    if mesh.p.shape[0] == 2:
        save_design(mesh, result.x_phys, path, title=label, mirror=plot["mirror"], **markers)
    else:
        save_design_3d(mesh, result.x_phys, path, title=label, **markers)
    save_history(result.history, os.path.join(out, "history.png"), title=title,
                 objective_label=plot["objective_label"],
                 constraint_names=plot["constraint_names"],
                 objective_scale=plot["objective_scale"])
    payload = {**result.record(), "setup": setup, "result": result.summary(), **record}
    write_json(os.path.join(out, "result.json"), payload)
    keep_design(out, mesh, result.x, result.x_phys, setup, point_data=point_data)
    return payload


def write_json(path: str, payload: dict) -> None:
    """Write `payload` as indented JSON, atomically (numpy scalars as floats).

    Examples
    --------
    >>> import json, os, tempfile, numpy as np
    >>> from topopt.formulations.compliance import write_json
    >>> path = os.path.join(tempfile.mkdtemp(), "r.json")
    >>> write_json(path, {"c": np.float64(1.5)})
    >>> json.load(open(path))
    {'c': 1.5}
    """
    atomic_write_text(path, json.dumps(payload, indent=2, default=float))


def run_compliance(name: str, problem: ComplianceProblem, *, title: str, sizes: dict,
                   out: str | None = None, maxeval: int = 300, verbose: bool = False,
                   mirror: bool = False, notes: dict | None = None, plot: dict | None = None,
                   **options) -> RunResult:
    """Optimize a compliance problem of a problem script; write its results to `out`.

    Parameters
    ----------
    name : str
        The problem's name in ``result.json`` (``"mbb_beam"``).
    problem : ComplianceProblem
    title : str
        Title of the pictures (the filter is appended).
    sizes : dict
        The mesh counts (``{"nelx": 60, "nely": 20}``), recorded in ``setup``.
    out : str, optional
        Results folder; created and write-tested before the first solve.
    maxeval, verbose, options
        Passed to `ComplianceProblem.run` (``checkpoint``, ``resume``, ...).
    mirror : bool
        Draw the design mirrored about its left edge (a half-symmetric model).
    notes : dict, optional
        More ``setup`` entries (how the load is applied, ...).
    plot : dict, optional
        `write_results` keywords that replace the compliance's (``objective``,
        ``symbol``, ``constraint_names``, ``objective_scale``, ...): a subclass
        such as `topopt.formulations.MechanismProblem` reports its own response.

    The pictures show the supports and loads (`topopt.plot.boundary_markers`),
    the history the compliance ``c = c0 * (c / c0)`` and the volume constraint.
    """
    if out is not None:
        check_writable_folder(out, "out")
    result = problem.run(maxeval=maxeval, verbose=verbose, **options)
    if out is not None:
        setup = dict(problem=name, **sizes, volfrac=problem.volfrac, rmin=problem.rmin,
                     penal=problem.penal, filter=problem.filter_name, maxeval=maxeval,
                     **(notes or {}))
        from ..plot.figures import boundary_markers
        supports, loads = boundary_markers(problem.model, problem.f)
        labels = dict(constraint_names=[f"volume V / {problem.volfrac:g} - 1"],
                      objective_scale=problem.c0, objective_label=None
                      if problem.model.components > 1 else "thermal compliance c")
        write_results(out, problem.model.mesh, result, setup=setup, mirror=mirror,
                      title=f"{title}, {problem.filter_name} filter",
                      point_data=problem.nodal_state(result["u"]), supports=supports,
                      loads=loads, **(labels | (plot or {})))
    return result


def compliance_options(sizes: dict, volfrac: float, rmin: float) -> tuple[Option, ...]:
    """The command-line parameters of a compliance problem: mesh counts, volfrac, rmin, ...

    Examples
    --------
    >>> [o.name for o in compliance_options({"nelx": 60, "nely": 20}, 0.5, 2.4)]
    ['nelx', 'nely', 'volfrac', 'rmin', 'penal', 'filter']
    """
    return (*(Option(k, positive_int, v, f"elements along {k[-1]}") for k, v in sizes.items()),
            Option("volfrac", open_unit, volfrac, "volume fraction"),
            Option("rmin", positive_float, rmin, "filter radius (element widths)"),
            Option("penal", at_least(1.0), 3.0, "SIMP exponent"),
            Option("filter", str, "density", "density or Helmholtz (PDE) filter",
                   choices=FILTERS))


def compliance_summary(result: RunResult) -> str:
    """The line a compliance problem script prints after its run."""
    return (f"compliance {result['compliance']:.4f}  volume {result['volume']:.4f}  "
            f"evaluations {result.evaluations}  FE solves/iteration "
            f"{result['fe_solves_per_iteration']:.3f}  {result['seconds']:.1f} s")
