"""Metallic nano-structure focusing light: the Gridap tutorial "TopOptEMFocus".

After Christiansen et al. (2020) as set up in the Gridap tutorial (lengths in
nm): H_z polarisation, ``-div(1/eps grad u) - k^2 u = f``, ``k = 2 pi /
lambda``, ``lambda = 532``. A cell of width ``L = 600``, periodic left/right;
air ``h1 = 600`` below the source line and ``h2 = 200`` above it; PML of
thickness ``d = 300`` at the bottom and top with ``sigma = sigma0 (u/d)^2``,
``sigma0 = -3/4 ln(1e-10) / d``; ``u = 0`` on the outer boundary. A plane
wave comes from the line source ``int_{y = h1} v``. The design region is the
annulus ``r_s = 10 <= |x - x0| <= r_d = 100`` around ``x0 = (0, 300)``,
silver ``n = 0.054 + 3.429i``, ``eps(p) = [1 + p (n - 1)]^2`` (Christiansen
et al. 2019). One design variable per element of the annulus, Helmholtz
filter ``r = 10 / (2 sqrt 3)``, tanh projection ``eta = 0.5`` with ``beta =
8 -> 16 -> 32``, at most 100 MMA evaluations per stage, start ``p = 0.4``.
Maximise ``g = Re(u^H O u)``, ``O = int_center grad u . grad v
exp(-|x - x0|^2 / 2) / (2 pi)``: the intensity ``|grad u|^2`` at the focus.

The mesh is a graded tensor grid: squares of size ``--h`` in and around the
design region (the tutorial's resolution is ``--h 1``), coarser in the air
and the PML. Writes ``results/em_focus/{design.png, field.png, history.png,
result.json}`` and the design with its field (`topopt.io`: ``design.npz``,
``design.vtu``). `result.json` has the enhancement of the optimized design
(projected with ``beta = 32``) and of its blueprint, the binary design
``p_f >= eta`` that the projection tends to as ``beta -> inf``.

    python problems/em_focus.py [--h 4] [--maxeval 100] [--subcell] [--isolated] [--verify]
                                [--perturb 0.01 --seed 1]
"""

from __future__ import annotations

import os
import time

import nlopt
import numpy as np

from topopt import cli
from topopt import fem
from topopt._validate import check_range, check_seed
from topopt.cli.script import Option, at_least, signals_held
from topopt.io.result import run_record
from topopt.design.filters import HelmholtzFilter
from topopt.design.interpolation import blueprint, permittivity, project
from topopt.optimize.driver import Stage, minimize
from topopt.formulations.compliance import plot_record, write_json
from topopt.io.result import RunResult, grey_level
from topopt.io import check_writable_file, check_writable_folder

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "em_focus")

WAVELENGTH = 532.0
L, H1, H2, D_PML = 600.0, 600.0, 200.0, 300.0
N_METAL, N_AIR = 0.054 + 3.429j, 1.0
X0, R_S, R_D = np.array([0.0, 300.0]), 10.0, 100.0
R_FILTER = 10.0 / (2 * np.sqrt(3))
ETA, BETAS, P_START = 0.5, (8.0, 16.0, 32.0), 0.4
OPTIONS = (
    Option("h", at_least(0.0, strict=True, high=10.0), 4.0,
           "element size in the design region, nm (tutorial: 1)"),
    Option("subcell", bool, False, "project the filtered field at quadrature points (eps "
           "varies inside elements) instead of element averages"),
    Option("isolated", bool, False, "PML at the left and right too (the tutorial's mesh): "
           "one particle instead of a periodic row"),
    Option("verify", bool, False, "also solve the binary blueprint on a mesh refined twice"),
    Option("perturb", at_least(0.0, high=P_START), 0.0,
           "start from p = 0.4 + PERTURB * U(-1, 1), U drawn with --seed"),
)
# the objective as minimized (-g) and as plotted (g)
OBJECTIVE_NAME = "-g (g = |grad u(x0)|^2 maximized)"
G_LABEL = "g = |grad u(x0)|^2"


def start(n: int, perturb: float = 0.0, seed: int = 0) -> np.ndarray:
    """The start ``p = 0.4`` (the tutorial's), plus ``perturb * U(-1, 1)`` drawn with `seed`.

    Examples
    --------
    >>> start(3).tolist(), bool(np.all(np.abs(start(3, 0.01, 1) - 0.4) <= 0.01))
    ([0.4, 0.4, 0.4], True)
    """
    p0 = np.full(n, P_START)
    if perturb:
        p0 += perturb * np.random.default_rng(seed).uniform(-1.0, 1.0, n)
    return p0


def solve_design(model, b, p_t):
    """The field of the projected density `p_t` (``1/eps - 1/n_air^2`` in the design)."""
    return model.solve(1.0 / permittivity(p_t, N_METAL, N_AIR) - 1.0 / N_AIR ** 2, b)


def intensity(u, O):
    """``Re(u^H O u)``: the Gaussian-weighted ``|grad u|^2`` at the focus."""
    return np.real(np.vdot(u, O @ u))


def cell(h: float = 4.0, h_air: float = 10.0, h_pml: float = 10.0, isolated: bool = False):
    """The graded cell mesh, its design (annulus) and center (focus disk) elements.

    `isolated` adds PML of thickness ``d`` at the left and right as well (the
    tutorial's mesh file, ``x`` in ``[-L/2 - d, L/2 + d]``): one particle
    instead of a periodic row of them, ``L = 600`` apart.
    """
    if not 0 < h <= 10:
        raise ValueError(f"the design-region resolution h must lie in (0, 10] nm, got {h!r}")
    pad = R_D + 10.0
    xs = fem.graded_axis([-L / 2, -pad, pad, L / 2], [h_air, h, h, h_air])
    if isolated:
        xs = fem.graded_axis([-L / 2 - D_PML, -L / 2, -pad, pad, L / 2, L / 2 + D_PML],
                             [h_pml, h_air, h, h, h_air, h_pml])
    ys = fem.graded_axis([-D_PML, 0.0, X0[1] - pad, X0[1] + pad, H1, H1 + H2, H1 + H2 + D_PML],
                         [h_pml, h_air, h, h, h_air, h_air, h_pml])
    import skfem
    mesh = skfem.MeshQuad.init_tensor(xs, ys)
    r = np.linalg.norm(fem.element_centroids(mesh) - X0, axis=1)
    return mesh, np.flatnonzero((r >= R_S) & (r <= R_D)), np.flatnonzero(r < R_S)


def wave_model(mesh, design, center, design_quadrature=None, isolated: bool = False,
               solver: str = "auto"):
    """The wave model on `cell`'s mesh, the source line and the focus matrix.

    With `design_quadrature` (the filter basis' points), ``1/eps`` is set per
    quadrature point of the design elements, as in the Gridap tutorial.
    """
    model = fem.WaveModel(mesh, 2 * np.pi / WAVELENGTH, pml=(0.0, H1 + H2, D_PML),
                          design=design, R=1e-10, design_quadrature=design_quadrature,
                          pml_x=(-L / 2, L / 2) if isolated else None, solver=solver)
    return model, model.line_source(H1), model.focus_matrix(center, X0, width=1.0)


def setup(h: float = 4.0, h_air: float = 10.0, h_pml: float = 10.0, design_quadrature=None,
          isolated: bool = False):
    """`cell` and `wave_model`: ``(mesh, model, design, center, b, O)``."""
    mesh, design, center = cell(h, h_air, h_pml, isolated)
    model, b, O = wave_model(mesh, design, center, design_quadrature, isolated)
    return mesh, model, design, center, b, O


class EMFocus:
    """The differentiable chain ``p -> p_f -> p_t -> eps -> u -> g``.

    ``subcell=False``: the projection acts on element averages of the
    filtered field; ``True`` (the tutorial's discretization): on the nodal
    filtered field at the quadrature points, so ``eps`` varies inside the
    elements. At 1 nm the first reached ``|E(x0)|/|E_inc| = 28.1``, the
    second 22.9 (different local optima of a multimodal problem).
    """

    def __init__(self, h: float = 4.0, subcell: bool = False, isolated: bool = False,
                 solver: str = "auto"):
        self.mesh, self.design, self.center = cell(h, isolated=isolated)
        flt = self.filter = HelmholtzFilter(self.mesh.restrict(self.design), R_FILTER)
        self.model, self.b, self.O = wave_model(
            self.mesh, self.design, self.center,
            (flt.basis.X, flt.basis.W) if subcell else None, isolated, solver)
        self.smooth = flt.at_quadrature if subcell else flt
        self.h, self.subcell, self.isolated, self.solver = h, subcell, isolated, solver
        self.n = self.design.size

    def p_phys(self, p, beta):
        """Projected density where ``eps`` is evaluated (points or elements)."""
        return project(self.smooth(p), beta, ETA)

    def element_density(self, p, beta):
        """Projected density per design element (the average of its points)."""
        pt = np.asarray(self.p_phys(p, beta))
        return pt.reshape(self.n, -1).mean(axis=1)

    def blueprint(self, p):
        """The binary design ``p_f >= eta``: the projection's limit ``beta -> inf``."""
        return blueprint(self.smooth(p), ETA)

    def field(self, p, beta=None):
        """The field of the design projected with `beta`; None: of its `blueprint`."""
        p_t = self.blueprint(p) if beta is None else self.p_phys(p, beta)
        return solve_design(self.model, self.b, p_t)

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
        density = np.asarray(density, dtype=float)
        if density.shape != (self.n,):
            raise ValueError(f"density must have shape ({self.n},), got {density.shape}")
        mesh, _, center = cell(self.h / div, isolated=self.isolated)
        child, parent = fem.nested_elements(self.mesh, mesh, div, self.design)
        model, b, O = wave_model(mesh, child, center, isolated=self.isolated,
                                 solver=self.solver)
        return float(intensity(solve_design(model, b, density[parent]), O))

    def responses(self, p, beta):
        return -self.g(p, beta)                    # maximise g, as the tutorial

    @staticmethod
    def enhancement(g: float) -> float:
        """``|E(x0)| / |E_inc(x0)| = 2 sqrt(g)``.

        ``|E| ~ |grad u| / eps`` with air at ``x0``; the incident wave of the
        unit line source has ``|grad u| = 1/2``; the Gaussian weight of ``O``
        integrates to ``1 - exp(-r_s^2 / 2) = 1`` over the center disk.
        """
        return 2.0 * np.sqrt(g)


def run(h: float = 4.0, maxeval: int = 100, out: str | None = None, verbose: bool = False,
        checkpoint: str | None = None, resume: str | None = None, subcell: bool = False,
        isolated: bool = False, verify: bool = False, solver: str = "auto",
        perturb: float = 0.0, seed: int = 0) -> RunResult:
    """Optimize with the tutorial's continuation (`maxeval` per stage); a `RunResult`.

    Its metrics: ``g`` and ``field_enhancement`` of the design projected
    with ``beta = 32`` and of its blueprint, ``g`` per stage, ``grey_level``,
    ``fe_solves``, ``seconds``; ``x`` is the design, ``x_phys`` the projected
    density per design element. `verify` also solves the blueprint on the
    cell refined twice (`EMFocus.refined_g`): its enhancement at half the
    element size. An interrupted run (``status="interrupted"``) returns and
    writes the metrics of its last good design. `perturb` > 0 starts from
    ``p = 0.4 + perturb * U(-1, 1)`` per variable, ``U`` drawn with `seed`
    (how much the result depends on the start: README).
    """
    perturb = check_range("perturb", perturb, 0.0, P_START, what="start perturbation")
    seed = check_seed("seed", seed)
    if isinstance(maxeval, bool) or not isinstance(maxeval, (int, np.integer)) or maxeval < 1:
        raise ValueError(f"maxeval must be an integer >= 1, got {maxeval!r}")
    if verify and subcell:
        raise ValueError("verify needs one density per element (not subcell)")
    if out is not None:
        check_writable_folder(out, "out")                    # before any work
    if checkpoint is not None:
        check_writable_file(checkpoint, "checkpoint")
    t0 = time.perf_counter()
    prob = EMFocus(h, subcell, isolated, solver)
    S = prob.model.system
    p0 = start(prob.n, perturb, seed)
    g_initial = float(prob.g(p0, BETAS[0]))
    stages = [Stage(maxeval=maxeval, params={"beta": beta}) for beta in BETAS]
    # NLopt's own MMA settings, as the tutorial (NLopt.jl defaults): raw g,
    # conservative inner iterations and NLopt's dual solver; inner_gradients=0
    # leaves the iterates unchanged and skips the adjoint of rejected designs
    res = minimize(prob.responses, p0, bounds=(0.0, 1.0), stages=stages, ftol_rel=1e-8,
                   verbose=verbose, checkpoint=checkpoint, resume=resume,
                   mma_params={"dual_algorithm": nlopt.LD_MMA, "inner_gradients": 0},
                   count_solves=lambda: S.counts["factorizations"],
                   objective_name=OBJECTIVE_NAME)
    p_phys = prob.element_density(res.x, BETAS[-1])
    u = prob.field(res.x, BETAS[-1])
    g = float(intensity(u, prob.O))
    x_bin = prob.blueprint(res.x)
    g_blueprint = float(intensity(solve_design(prob.model, prob.b, x_bin), prob.O))
    metrics = {
        "resolution_nm": h,
        "subcell": subcell,
        "isolated": isolated,
        "design_variables": int(prob.n),
        "elements": int(prob.mesh.t.shape[1]),
        "g_initial": g_initial,
        "g": g,
        "g_per_stage": [-s["fun"] for s in res.stages],
        "field_enhancement": prob.enhancement(g),
        "g_blueprint": g_blueprint,
        "field_enhancement_blueprint": prob.enhancement(g_blueprint),
        "grey_level": grey_level(prob.p_phys(res.x, BETAS[-1])),
        "fe_solves": int(S.counts["factorizations"]),
        "seconds": time.perf_counter() - t0,
    }
    if verify:
        g_fine = prob.refined_g(x_bin, 2)
        metrics["blueprint_refined"] = {"resolution_nm": h / 2, "g": g_fine,
                                        "field_enhancement": prob.enhancement(g_fine)}
    result = RunResult.from_record(run_record(res, checkpoint), metrics, x=res.x,
                                   x_phys=p_phys, history=res.history)
    if out is not None:
        with signals_held():                     # a signal waits for complete files
            write(out, prob, result, u)
    return result


def write(out: str, prob: EMFocus, result: RunResult, u) -> None:
    """The design, its field `u` (|E|/|E_inc| map), the history and the metrics.

    ``design.npz`` / ``design.vtu`` (`topopt.io.save_design`) hold ``x`` and
    ``x_phys`` on the whole mesh (0 outside the design region, cell data
    ``design`` marks it), ``E_abs`` = |E|/|E_inc| per element and the field
    ``u`` at the points (``u_real``, ``u_imag``, ``u_abs``).
    """
    from topopt.io.designs import save_design as keep_design
    from topopt.plot.figures import save_design, save_history
    os.makedirs(out, exist_ok=True)
    window = dict(xlim=(-R_D - 10, R_D + 10), ylim=(X0[1] - R_D - 10, X0[1] + R_D + 10))
    density = np.zeros(prob.mesh.t.shape[1])
    density[prob.design] = result.x_phys
    save_design(prob.mesh, density, os.path.join(out, "design.png"),
                title=f"projected density, h = {result['resolution_nm']} nm: |E(x0)|/|E_inc| = "
                      f"{result['field_enhancement']:.2f}",
                label="density (0 air, 1 silver)", **window)
    eps = np.ones(prob.mesh.t.shape[1], dtype=complex)
    eps[prob.design] = permittivity(result.x_phys, N_METAL, N_AIR)
    E = 2.0 * np.linalg.norm(np.abs(prob.model.element_gradients(u)), axis=1) / np.abs(eps)
    save_design(prob.mesh, E, os.path.join(out, "field.png"), cmap="hot", vmin=0.0, vmax=30.0,
                title=f"|E| / |E_inc|, enhancement at x0 = {result['field_enhancement']:.1f}",
                label="|E| / |E_inc|", **window)
    record = plot_record(result.history, G_LABEL, objective_scale=-1.0, **window)  # -g
    save_history(result.history, os.path.join(out, "history.png"),
                 title="EM focusing, stages beta = " + ", ".join(f"{b:g}" for b in BETAS),
                 objective_label=G_LABEL, objective_scale=-1.0)
    setup = {"wavelength_nm": WAVELENGTH, "L": L, "h1": H1, "h2": H2, "d_pml": D_PML,
             "n_metal": [N_METAL.real, N_METAL.imag], "r_s": R_S, "r_d": R_D,
             "filter_r": R_FILTER, "eta": ETA, "betas": list(BETAS), "p_start": P_START}
    write_json(os.path.join(out, "result.json"),
               {**result.record(), "setup": setup, "result": result.metrics | result.record(),
                **record})
    x = np.zeros(prob.mesh.t.shape[1])
    x[prob.design] = result.x
    u_nodes = prob.model.full(u)[prob.model.basis.nodal_dofs[0]]     # periodic dofs unfolded
    keep_design(out, prob.mesh, x, density, {"problem": "em_focus", **setup,
                                             "resolution_nm": result["resolution_nm"],
                                             "subcell": result["subcell"],
                                             "isolated": result["isolated"]},
                point_data={"u_real": u_nodes.real, "u_imag": u_nodes.imag,
                            "u_abs": np.abs(u_nodes)},
                cell_data={"E_abs": E, "design": np.isin(np.arange(x.size), prob.design)})


def summary(result: RunResult) -> str:
    """The line the script prints after its run."""
    return (f"h = {result['resolution_nm']} nm: g = {result['g']:.4g}, |E(x0)|/|E_inc| = "
            f"{result['field_enhancement']:.2f} (blueprint "
            f"{result['field_enhancement_blueprint']:.2f}), grey level "
            f"{result['grey_level']:.3f}, {result.evaluations} evaluations, "
            f"{result['seconds']:.0f} s")


def _check(kwargs: dict) -> None:
    if kwargs["verify"] and kwargs["subcell"]:
        raise ValueError("--verify needs one density per element (not --subcell)")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=100, seed=0,
                    maxeval_help="MMA evaluations per stage; 3 stages (beta 8, 16, 32): up to "
                                 "3 N in all", solvers=cli.DIRECT_SOLVERS,
                    summary=summary, check=_check, size=_size)


def _size(kw) -> tuple[float, int]:
    """About the complex unknowns of `setup`'s mesh (100 800 elements at h = 1 nm), counted
    twice (real and imaginary parts), for the memory check."""
    return 2 * 100_800 / min(kw["h"], 1.0) ** 2, 2


if __name__ == "__main__":
    main()
