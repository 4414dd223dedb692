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
import numpy as np

from topopt import cli, fem
from topopt.cli import Option, at_least
from topopt.formulations.focus import FocusProblem, FocusSetup, run_focus
from topopt.io.result import RunResult
from topopt._keywords import keywords

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


def cell(h: float = 4.0, h_air: float = 10.0, h_pml: float = 10.0, isolated: bool = False):
    """The graded cell mesh, its design (annulus) and center (focus disk) elements;
    `isolated`: PML at the left and right too (one particle, not a periodic row)."""
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
               solver: str = "auto", wavelength: float = WAVELENGTH):
    """The wave model on `cell`'s mesh, the source line and the focus matrix (`1/eps` per
    point of `design_quadrature`, the filter basis', if given: the tutorial's), at
    `wavelength` nm (``k = 2 pi / wavelength``)."""
    model = fem.WaveModel(mesh, 2 * np.pi / wavelength, pml=(0.0, H1 + H2, D_PML),
                          design=design, R=1e-10, design_quadrature=design_quadrature,
                          pml_x=(-L / 2, L / 2) if isolated else None, solver=solver)
    return model, model.line_source(H1), model.focus_matrix(center, X0, width=1.0)


def setup(h: float = 4.0, h_air: float = 10.0, h_pml: float = 10.0, design_quadrature=None,
          isolated: bool = False):
    """`cell` and `wave_model`: ``(mesh, model, design, center, b, O)``."""
    mesh, design, center = cell(h, h_air, h_pml, isolated)
    model, b, O = wave_model(mesh, design, center, design_quadrature, isolated)
    return mesh, model, design, center, b, O


SETUP = FocusSetup(
    cell, wave_model, R_FILTER, ETA, N_METAL, N_AIR, BETAS, P_START, "em_focus",
    window=dict(xlim=(-R_D - 10, R_D + 10), ylim=(X0[1] - R_D - 10, X0[1] + R_D + 10)),
    record={"wavelength_nm": WAVELENGTH, "L": L, "h1": H1, "h2": H2, "d_pml": D_PML,
            "n_metal": [N_METAL.real, N_METAL.imag], "r_s": R_S, "r_d": R_D,
            "filter_r": R_FILTER, "eta": ETA, "betas": list(BETAS), "p_start": P_START})
start, solve_design = SETUP.start, SETUP.solve


def EMFocus(h: float = 4.0, subcell: bool = False, isolated: bool = False,    # noqa: N802
            solver: str = "auto") -> FocusProblem:
    """The chain of this cell (`FocusProblem`); 1 nm: |E(x0)|/|E_inc| 28.1, subcell 22.9."""
    return FocusProblem(SETUP, h, subcell, isolated, solver)


@keywords
def run(h: float = 4.0, maxeval: int = 100, out: str | None = None, verbose: bool = False,
        checkpoint: str | None = None, resume: str | None = None, subcell: bool = False,
        isolated: bool = False, verify: bool = False, solver: str = "auto",
        perturb: float = 0.0, seed: int = 0) -> RunResult:
    """Optimize with the tutorial's continuation (`maxeval` per stage): `run_focus`."""
    return run_focus(SETUP, h, maxeval, out, verbose, checkpoint, resume, subcell, isolated,
                     verify, solver, perturb, seed)


def summary(result: RunResult) -> str:
    """The line the script prints after its run."""
    return (f"h = {result['resolution_nm']} nm: g = {result['g']:.4g}, |E(x0)|/|E_inc| = "
            f"{result['field_enhancement']:.2f} (blueprint "
            f"{result['field_enhancement_blueprint']:.2f}), grey level "
            f"{result['grey_level']:.3f}, {result.evaluations} evaluations, "
            f"{result['seconds']:.0f} s")


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=100, seed=0,
                    maxeval_help="MMA evaluations per stage; 3 stages (beta 8, 16, 32): up to "
                                 "3 N in all", solvers=cli.DIRECT_SOLVERS,
                    summary=summary, check=_check,
                    # memory check: 100 800 complex unknowns (two reals each) at h = 1 nm
                    size=lambda kw: (2 * 100_800 / min(kw["h"], 1.0) ** 2, 2))


def _check(kwargs: dict) -> None:
    if kwargs["verify"] and kwargs["subcell"]:
        raise ValueError("--verify needs one density per element (not --subcell)")


if __name__ == "__main__":
    main()
