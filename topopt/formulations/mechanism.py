"""Compliant mechanisms: the largest output displacement at a volume fraction.

``x -> x_tilde = F x`` (density or Helmholtz filter) ``-> x_phys`` (optionally
the tanh projection) ``-> E = simp(x_phys) -> u = K(E)^{-1} f -> u_out = l^T
u`` with ``K(E) = K0 + sum_e E_e K_e``, ``K0`` the input and output springs
(`topopt.fem.Model.spring`): Sigmund (1997), "On the design of compliant
mechanisms using topology optimization", Mech. Struct. Mach. 25(4); Bendsøe &
Sigmund (2003), *Topology Optimization*, the displacement inverter. MMA
minimises ``u_out / u_scale`` subject to ``v(x_phys) <= volfrac``: a negative
``u_out`` is an output moving against ``l`` (an inverter pushes back).

The gradient is the adjoint of the solve primitive (`topopt.fem.solve`):
``d u_out / d E_e = -lambda_e^T K_e u_e`` with ``K lambda = l``, one more
solve with the same factorization.

Why the port constraints (``hold``): with the volume constraint alone NLopt's
MMA cuts the ports loose within a few iterations from the uniform start (20 x
40 inverter: ``|u_out| < 1e-6`` after 30 evaluations, tests/test_mechanism.py;
on the classic 40 x 20 half model also with 2 x 2 solid pads at the ports,
move limits emulated by bounds, or the volume held as an equality), a
stationary point with no way back. pyMOTO's MMA (Svanberg's, move limit 0.1)
and the optimality criteria method do not take that path (measured on the 40
x 20 model: ``u_out = -1.03`` both, -1.038 here with the port constraints;
with move limit 1 pyMOTO's MMA cuts the ports too).
"""

from __future__ import annotations

from typing import Sequence

import nlopt
import numpy as np

from .. import fem
from .._validate import (check_finite_array, check_load, check_mapping, check_positive,
                         check_range, check_type, real)
from ..fem.models import _check_model
from ..io.folder import run_compliance
from ..io.result import RunResult, run_record
from ..design.measures import grey_level
from ..design.passive import Passive
from ..design.interpolation import blueprint, simp
from ..responses.structural import output_displacement, volume
from ..robust.projection import DESIGNS, RobustFormulation, robust_stages
from .base import DensityProblem, before_resume, timed_run

__all__ = ["MechanismProblem", "ideal_output", "port_springs", "run_mechanism", "robust_run",
           "robust_constraint_names", "MMA_OPTIONS", "ROBUST_MMA_OPTIONS"]

#: NLopt options of the mechanism runs: classic MMA steps (one solve per iteration) and
#: NLopt's own MMA dual: the SLSQP dual of `topopt.optimize` stops with
#: "roundoff_limited" after the first evaluation when the start violates a constraint
#: (the MBB beam at x0 = 0.55 > volfrac too), as a robust stage start does.
MMA_OPTIONS = {"inner_maxeval": 1, "dual_ftol_rel": 1e-10, "dual_algorithm": nlopt.LD_MMA}
#: The robust run's: NLopt's conservative MMA (inner iterations, its default). With one
#: step per iteration the robust inverter (40 x 80, 40 evaluations per beta) left the
#: feasible designs for z -> 1 and the void design in 5 of 191 evaluations, conservative
#: in 0 of 200, and its eroded blueprint reached u_out = -1.039 instead of -1.011.
ROBUST_MMA_OPTIONS = {**MMA_OPTIONS, "inner_maxeval": 0}


def ideal_output(f_in: float, k_in: float, k_out: float) -> float:
    """``|f_in| / (2 sqrt(k_in k_out))``: the output of a lossless lever, a bound on ``|u_out|``.

    A linear elastic two-port with condensed stiffness ``[[a, -b], [-b, c]]``
    (``b^2 < a c``) between springs ``k_in``, ``k_out`` moves its output by
    ``u_out = b f_in / ((a + k_in)(c + k_out) - b^2)``; at ``b^2 -> a c`` and
    by the AM-GM inequality ``|u_out| < |f_in| / (2 sqrt(k_in k_out))``. So
    ``u_out / ideal_output`` lies in (-1, 1): the scale of the inverter's
    objective.

    Examples
    --------
    >>> from topopt.formulations.mechanism import ideal_output
    >>> ideal_output(1.0, 0.1, 0.1)
    5.0
    """
    f_in = check_positive("|f_in|", abs(real("f_in", f_in)), "input force")
    k_in = check_positive("k_in", k_in, "input spring stiffness")
    k_out = check_positive("k_out", k_out, "output spring stiffness")
    return float(f_in / (2.0 * np.sqrt(k_in * k_out)))


class MechanismProblem(DensityProblem):
    """Minimum output displacement ``u_out = l^T u`` subject to a volume fraction.

    Parameters
    ----------
    model : topopt.fem.Model
        Elasticity model with its supports and the springs at the input and
        output (`Model.spring`).
    f : (ndof,) array
        The input load.
    l_out : (ndof,) array
        The output selector: ``u_out = l_out^T u`` (a unit entry at the output
        dof, in the direction the output should *not* move).
    volfrac, rmin, penal, filter, Emin, solver, eta, solver_options, passive
        As in `topopt.formulations.ComplianceProblem`.
    hold : float >= 0
        Each port must be held by the structure: its compliance along `f`
        (along `l_out`) is at most ``1 / (1 + hold)`` times that of its spring
        alone, ``1 / k``; a design cut loose at a port has exactly ``1 / k``.
        Two constraints that keep MMA off that stationary point (``u_out =
        0``, see `responses`); inactive at an inverter (0.09 and 0.12 below
        their limits at the end of ``problems/inverter.py``'s default run).
        0 drops them: the plain formulation of Sigmund (1997). Needs springs
        at both ports.
    u_scale : float, optional
        MMA minimises ``u_out / u_scale``; by default `ideal_output` of the
        springs (so the objective lies in (-1, 1)).

    Examples
    --------
    A 2 x 4 plate on a symmetry line (its left edge), pushed up at the
    bottom into a spring, its top on a spring: it transmits the push
    (``u_out > 0``).

    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.mechanism import MechanismProblem
    >>> model = fem.elasticity(fem.rectangle(2, 4))
    >>> model = model.fix(nodes=lambda x: x[0] == 0, components=0)
    >>> model = model.fix(nodes=lambda x: (x[0] == 2) & (x[1] == 0))
    >>> model = model.spring((0, 0), 1, 0.1).spring((0, 4), 1, 0.1)
    >>> p = MechanismProblem(model, model.point_load((0, 0), (0, 1)),
    ...                      model.point_load((0, 4), (0, 1)), volfrac=0.3, rmin=1.5)
    >>> round(float(p.output(np.full(8, 0.3))), 4), p.u_scale
    (0.2491, 5.0)
    """

    def __init__(self, model: fem.Model, f, l_out, volfrac: float, rmin: float,
                 penal: float = 3.0, filter: str = "density", Emin: float = 1e-9,
                 solver: str = "auto", eta: float = 0.5, solver_options: dict | None = None,
                 passive: Passive | None = None, hold: float = 0.02,
                 u_scale: float | None = None):
        _check_model(model)
        f = np.asarray(check_load("f", f, model.ndof, real=True), dtype=float)
        if f.shape != (model.ndof,):
            raise ValueError(f"f has shape {f.shape}; expected ({model.ndof},), one load case")
        l_out = np.asarray(check_load("l_out", l_out, model.ndof, real=True), dtype=float)
        if l_out.shape != (model.ndof,) or not np.all(np.isfinite(l_out)) or not np.any(l_out):
            raise ValueError(f"l_out must be a finite nonzero vector of shape ({model.ndof},), "
                             f"got shape {l_out.shape}")
        self.hold = check_range("hold", hold, 0.0, None, what="port stiffness / spring")
        if u_scale is not None:
            u_scale = check_positive("u_scale", u_scale, "displacement scale of the objective")
        super().__init__(model, volfrac, rmin, penal=penal, filter=filter, Emin=Emin,
                         solver=solver, eta=eta, solver_options=solver_options,
                         passive=passive)
        self.f, self.l_out = f, l_out
        self.k_in, self.k_out = port_springs(model, f), port_springs(model, l_out)
        if self.hold > 0 and not (self.k_in > 0 and self.k_out > 0):
            raise ValueError(f"hold={self.hold:g} needs springs at the input and the output "
                             f"(found k_in={self.k_in:g}, k_out={self.k_out:g}); add them with "
                             "Model.spring or pass hold=0")
        if u_scale is None and self.k_in > 0 and self.k_out > 0:
            u_scale = ideal_output(np.linalg.norm(f), self.k_in, self.k_out)
        self.u_scale = u_scale
        self.loads = np.column_stack([f, l_out])

    def state(self, x_phys):
        """Displacements ``u = K(simp(x_phys))^{-1} f``; differentiable."""
        return fem.solve(self.system, simp(x_phys, self.penal, self.Emin), self.f)

    def output(self, x, beta: float | None = None):
        """``u_out(x) = l_out^T u`` (Sigmund 1997); differentiable."""
        return output_displacement(self.state(self.x_phys(x, beta)), self.l_out)

    def input_displacement(self, u) -> float:
        """``f^T u / |f|``: the input's displacement along the load."""
        return float(self.f @ np.asarray(u) / np.linalg.norm(self.f))

    def analysis(self, x_phys) -> tuple:
        """``(u_out / u_scale, port constraints...)`` of the physical design; differentiable.

        One factorization for both columns of ``K^{-1} [f, l_out]``; the port
        constraints (with ``hold > 0``) are ``c k (1 + hold) - 1`` for the
        input (``c = f^T K^{-1} f / |f|^2``) and the output (``c = l^T
        K^{-1} l / |l|^2``).
        """
        if self.hold == 0:
            return (output_displacement(self.state(x_phys), self.l_out) / self.u_scale,)
        U = fem.solve(self.system, simp(x_phys, self.penal, self.Emin), self.loads)
        u, w = U[:, 0], U[:, 1]
        c_in = self.f @ u / (self.f @ self.f)
        c_out = self.l_out @ w / (self.l_out @ self.l_out)
        return (output_displacement(u, self.l_out) / self.u_scale,
                c_in * self.k_in * (1 + self.hold) - 1.0,
                c_out * self.k_out * (1 + self.hold) - 1.0)

    def responses(self, x, beta: float | None = None):
        """``(u_out / u_scale, v / volfrac - 1, port_in, port_out)`` for MMA (the ports: see
        the module's notes)."""
        x_phys = self.x_phys(x, beta)
        objective, *ports = self.analysis(x_phys)
        return (objective, volume(x_phys, self.weights) / self.volfrac - 1.0, *ports)

    @property
    def constraint_names(self) -> list:
        """The labels of the constraints of `responses`."""
        return ["volume"] + (["input port", "output port"] if self.hold > 0 else [])

    # ----------------------------------------------------------- the run's hooks
    mma_defaults = MMA_OPTIONS
    objective_name = "u_out"

    def prepare(self, x0, stages) -> np.ndarray:
        """``u_scale`` (unless set): the input's displacement at the start."""
        if self.u_scale is None:
            self.u_scale = abs(self.input_displacement(self.state(self.x_phys(x0))))
        return x0

    @property
    def objective_scale(self) -> float:
        return self.u_scale

    def final(self, x_phys):
        """`output_metrics` and ``volume`` of the final design (then `DensityProblem.run`'s,
        ``u_scale``, ``hold``); MMA with NLopt's dual (`MMA_OPTIONS`)."""
        u = np.asarray(self.state(x_phys))
        return self.output_metrics(u) | {"volume": float(volume(x_phys, self.weights))}, u

    def run_metrics(self) -> dict:
        return {"u_scale": self.u_scale, "hold": self.hold}

    def output_metrics(self, u) -> dict:
        """``u_out``, ``abs_u_out``, ``u_in`` and ``geometric_advantage`` of a solution `u`."""
        u_out = float(self.l_out @ u)
        u_in = self.input_displacement(u)
        return {"u_out": u_out, "abs_u_out": abs(u_out), "u_in": u_in,
                "geometric_advantage": -u_out / u_in if u_in else float("nan")}


def port_springs(model: fem.Model, direction) -> float:
    """The springs' stiffness along `direction`: ``d^T K0 d / d^T d`` (0 without springs).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.formulations.mechanism import port_springs
    >>> model = fem.elasticity(fem.rectangle(2, 2)).spring((0, 0), 1, 0.25)
    >>> port_springs(model, model.point_load((0, 0), (0, 1)))
    0.25
    """
    check_type("model", model, fem.Model, "a topopt.fem.Model")
    d = check_finite_array("direction", direction, (model.ndof,))
    if not np.any(d):
        raise ValueError("direction is zero: it must name the port's dofs (a point load)")
    K0 = model.K0
    return 0.0 if K0 is None else float(d @ (K0 @ d) / (d @ d))


def run_mechanism(name: str, problem: MechanismProblem, *, title: str, sizes: dict,
                  out: str | None = None, maxeval: int = 300, verbose: bool = False,
                  mirror: bool = False, notes: dict | None = None, **options) -> RunResult:
    """Optimize a mechanism of a problem script; write its results to `out`.

    As `topopt.formulations.run_compliance`: `sizes` and `notes` go into
    ``setup``, `options` (``markers``, ``units``, ``checkpoint``, ...) to it;
    the design's title quotes ``u_out``.
    """
    return run_compliance(name, problem, title=title, sizes=sizes, out=out, maxeval=maxeval,
                          verbose=verbose, mirror=mirror, notes=notes, plot=dict(
                              objective="u_out", symbol="u_out",
                              constraint_names=problem.constraint_names,
                              objective_scale=problem.u_scale,
                              objective_label="output displacement"), **options)


def robust_run(problem: MechanismProblem, betas: Sequence[float] = (1, 2, 4, 8, 16),
               evaluations: int = 100, every: int = 20, x0=None, verbose: bool = True,
               checkpoint: str | None = None, resume: str | None = None,
               mma_params: dict | None = None, maxeval: int | None = None) -> RunResult:
    """The robust mechanism: min-max of ``u_out`` over the eroded/intermediate/dilated designs.

    `topopt.robust.RobustFormulation` on `problem` (its filter, ``analysis``
    with the port constraints of each design, ``u_scale``), ``z`` in (-1,
    1); `evaluations` per ``beta`` of `betas`, the dilated volume limit
    updated every `every` (`topopt.robust.robust_stages`); `maxeval` caps
    the total (None: ``len(betas) * evaluations``).

    Metrics: those of `MechanismProblem.run` for the intermediate design at
    the last ``beta`` (``u_out``, ``abs_u_out``, ...), ``designs`` (``u_out``
    and ``volume`` of the three projected designs) and ``blueprints`` (the
    same for the 0/1 designs ``x_tilde >= eta``, solved afresh:
    `topopt.design.blueprint`), ``blueprints_invert`` (``u_out < 0``
    for all three), ``volume_limits`` and ``betas``.

    The history holds every design MMA evaluated, its rejected trials too.
    At a few block starts (a new volume limit or ``beta`` leaves the start
    slightly infeasible) NLopt's MMA tries 2 to 5 designs with ``z`` near
    its bound and little material and rejects them: the block ends at the
    last good design and the next one starts there (15 of 358 evaluations
    in 4 such bursts in ``problems/robust_inverter.py``'s default run).
    """
    robust = RobustFormulation(problem.x_phys, problem.analysis, problem.volfrac,
                               problem.weights, z_bounds=(-1.0, 1.0))
    stages = robust_stages(betas, evaluations, every)
    x0 = problem.start(x0)
    res, seconds, solves0 = timed_run(problem, checkpoint, verbose, lambda _: robust.minimize(
        x0, stages, maxeval=maxeval, ftol_rel=0.0, verbose=verbose, checkpoint=checkpoint,
        resume=resume,
        mma_params={**ROBUST_MMA_OPTIONS, **check_mapping("mma_params", mma_params)},
        objective_scale=problem.u_scale, count_solves=problem.solves, objective_name="u_out"))
    x, beta = res.x[:-1], float(stages[-1].params["beta"])
    designs = [np.asarray(d) for d in robust.designs(x, beta)]
    x_tilde = np.asarray(problem.x_phys(x))
    blueprints = [blueprint(x_tilde, eta) for eta in robust.etas]
    states = [np.asarray(problem.state(d)) for d in designs + blueprints]
    fe_solves = problem.solves() - solves0 + before_resume(res, "fe_solves")   # final states'
    seconds += before_resume(res, "seconds", 0.0)    # the run before a resume too
    metrics = problem.output_metrics(states[1]) | {
        "volume": float(volume(designs[1], problem.weights)),
        "grey_level": grey_level(designs[1]),
        "designs": _robust_summary(problem, designs, states[:3]),
        "blueprints": _robust_summary(problem, blueprints, states[3:]),
        "blueprints_invert": bool(all(problem.l_out @ u < 0 for u in states[3:])),
        "betas": [float(b) for b in betas], "volume_limits": robust.volume.limits,
        "fe_solves": fe_solves, "fe_solves_per_iteration": fe_solves / max(res.evaluations, 1),
        "seconds": seconds, "solver": problem.system.solver, "filter": problem.filter_name,
        "u_scale": problem.u_scale, "hold": problem.hold, "z": float(res.x[-1]),
    }
    return RunResult.from_record(
        run_record(res, checkpoint), metrics, x=problem.passive.expand(x), x_phys=designs[1],
        history=res.history, arrays={"u": states[1], "eroded": designs[0],
                                     "dilated": designs[2], "blueprint_designs": blueprints})


def _robust_summary(problem: MechanismProblem, designs, states) -> dict:
    return {name: {"u_out": float(problem.l_out @ u),
                   "volume": float(volume(d, problem.weights))}
            for name, d, u in zip(DESIGNS, designs, states)}


def robust_constraint_names(problem: MechanismProblem) -> list:
    """The labels of the robust run's constraints (`robust_run`)."""
    ports = ["input port", "output port"] if problem.hold > 0 else []
    return ([f"u_out {d} - z" for d in DESIGNS] + ["volume (dilated)"]
            + [f"{p} ({d})" for d in DESIGNS for p in ports])
