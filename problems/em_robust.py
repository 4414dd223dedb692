"""Focusing that survives fabrication and a band of wavelengths, with its failure probability.

The cell of `problems/em_focus.py` (the Gridap tutorial's silver focusing
structure, lengths in nm, element size ``--h`` in the design region) and
three designs, each started from the one before:

* **nominal**: em_focus's design (``lambda = 532``, the tutorial's silver,
  ``beta = 8 -> 16 -> 32``, MAXEVAL MMA evaluations per stage);
* **robust**: the worst enhancement over edge shifts ``d`` in ``SHIFTS``
  (-2 ... 2 nm: the thresholds ``eta(d)`` of `topopt.robust.edge_shift`
  for the filter radius ``r = 10 / (2 sqrt 3) = 2.887``) times the band
  ``BAND`` = 512 / 532 / 552 nm, one epigraph (`WorstFocus`), at ``beta = 32``;
* **reliability-based**: maximum nominal enhancement with ``pf = P(E <
  E_t) <= PA = 0.01``, ``E_t`` a quarter of the nominal design's
  enhancement, ``d ~ N(0, 1 nm)``, ``lambda ~ N(532, 5 nm)``, at most
  RELIABLE_MAXEVAL = 30 evaluations from the robust design (`ReliableFocus`):
  ``--approach pma`` (default) asks ``E >= E_t`` over the disk
  ``|theta| <= beta_a = Phi^-1(1 - PA / 2) = 2.576`` of the standard-normal
  space (the dilation and erosion modes' FORM sum then at most PA), sampled
  on N_SHIFTS = 51 chords, 149 points (0.10 nm apart on the shift axis: on
  21 chords the design hid a dip of its enhancement between two of them,
  Monte Carlo pf 0.049), from the worst case over those points (at most 25
  evaluations from the robust design); ``--approach ria`` bounds FORM's
  ``ln pf`` itself (two MPP searches per evaluation, with design gradients).

Silver away from 532 nm: the natural cubic spline through Johnson &
Christy's (1972) table (`silver_jc_cubic`; at 532 nm its ``eps`` is 0.14 %
from the tutorial's ``n = 0.054 + 3.429i``). Each design is then evaluated
on the same 5 x 5 grid of edge shifts x wavelengths (``GRID_SHIFTS`` x
``GRID_WAVELENGTHS``) and its ``pf`` estimated by Monte Carlo (``--samples``
FE solves on ``--workers`` processes, `topopt.parallel`'s executor).
Writes ``results/em_robust/{designs.png, heatmap.png, designs.json}`` and,
for the reliability-based design, em_focus's files (``design.png``,
``field.png``, ``history.png``, ``result.json``, ``design.npz``).
Checkpoints: ``OUT/checkpoint.nominal.npz``, ``checkpoint.robust.npz``,
``checkpoint.disk.npz`` and ``checkpoint.npz``; ``--resume`` takes any of
them (`phase_paths`); an interrupted phase stops the run there.

Cost at 4 nm on 2 shared cores, 33 minutes in all: the nominal phase 29 s,
the robust one 5 minutes (100 evaluations of 15 factorizations), the disk's
worst case 9 minutes and the reliability-based phase 13 minutes (25 and 30
evaluations of 149 factorizations; with ``--approach ria`` about 2 minutes
per evaluation: two MPP searches of a resonant limit state), Monte Carlo
and FORM 5 minutes for the three designs. `scripts/studies/em_robust_table.py`
gives the first two designs' tables and pf alone (docs/gallery/em_robust.md).
Factorizations (N ``--maxeval``, C ``--chords``): 3 N, 15 N, min(N, 25) (3 C - 4),
min(N, 30) (3 C - 4), then 3 (25 + ``--samples``) solves: ``--maxeval 5`` alone
takes about 9 minutes (estimated); ``--quick`` (QUICK) runs every phase in 63 s of CPU.

    python problems/em_robust.py [--h 4] [--maxeval 100] [--samples 1000] [--workers 2]
                                 [--approach pma] [--chords 51] [--quick]
"""

from __future__ import annotations

import dataclasses
import os

from topopt import cli
from topopt.cli import Option, at_least
from topopt.formulations.focus_designs import FocusDesigns, run_focus_designs
from topopt.formulations.focus_reliable import APPROACHES
from topopt.io.result import RunResult
from topopt._keywords import keywords
from topopt_problems import em_focus

#: Relative: the results folder lies under the working directory.
DEFAULT_OUT = os.path.join("results", "em_robust")

SHIFTS, BAND = (-2.0, -1.0, 0.0, 1.0, 2.0), (512.0, 532.0, 552.0)
GRID_SHIFTS, GRID_WAVELENGTHS = SHIFTS, (512.0, 522.0, 532.0, 542.0, 552.0)
TARGET_FRACTION, PA, SIGMA_SHIFT, SIGMA_WAVELENGTH, RELIABLE_MAXEVAL = 0.25, 0.01, 1.0, 5.0, 30
N_SHIFTS = 51
#: ``--quick``: every phase once over, coarse and short (a smoke run, not a result)
QUICK = {"h": 8.0, "maxeval": 3, "chords": 5, "samples": 50}
DEFAULTS = {"h": 4.0, "maxeval": 100, "chords": N_SHIFTS, "samples": 1000}
SPEC = FocusDesigns(SHIFTS, BAND, GRID_SHIFTS, GRID_WAVELENGTHS, TARGET_FRACTION, PA,
                    SIGMA_SHIFT, SIGMA_WAVELENGTH, RELIABLE_MAXEVAL, "pma", N_SHIFTS)
SETUP = dataclasses.replace(em_focus.SETUP, name="em_robust", record={
    **em_focus.SETUP.record, "shifts": SHIFTS, "band": BAND, "target_fraction": TARGET_FRACTION,
    "pa": PA, "sigma_shift": SIGMA_SHIFT, "sigma_wavelength": SIGMA_WAVELENGTH})
OPTIONS = (
    Option("h", at_least(0.0, strict=True, high=10.0), 4.0,
           "element size in the design region, nm (tutorial: 1)"),
    Option("samples", at_least(1, int), 1000, "Monte Carlo FE solves per design, on "
           "--workers processes (3 designs: 3000 solves, about 5 minutes at --h 4)"),
    Option("workers", at_least(0, int), 2, "worker processes of the Monte Carlo (0: this one)"),
    Option("approach", str, "pma", "reliability-based design: performance measure or "
           "reliability index approach", choices=APPROACHES),
    Option("chords", at_least(2, int), N_SHIFTS, "chords of the PMA disk: 3 C - 4 points, "
           "each one factorization per evaluation of the disk and reliability-based phases "
           "(about 0.15 s at --h 4)"),
    Option("quick", bool, False, "a smoke run of every phase (63 s of CPU): --h 8 "
           "--maxeval 3 --chords 5 --samples 50 (give none of those with it)"),
)


@keywords
def run(h: float = 4.0, maxeval: int = 100, samples: int = 1000, workers: int = 2,
        approach: str = "pma", chords: int = N_SHIFTS, quick: bool = False, seed: int = 0,
        out: str | None = None, verbose: bool = False, checkpoint: str | None = None,
        resume: str | None = None, solver: str = "auto") -> RunResult:
    """The three designs, their grids and pf (`run_focus_designs`); `quick`: QUICK's values."""
    if quick_values(dict(h=h, maxeval=maxeval, samples=samples, chords=chords, quick=quick)):
        h, maxeval, samples, chords = (QUICK[k] for k in ("h", "maxeval", "samples", "chords"))
    spec = dataclasses.replace(SPEC, approach=approach, n_shifts=chords)
    return run_focus_designs(SETUP, h, maxeval, spec, samples, workers, seed, out,
                             verbose, checkpoint, resume, solver)


def quick_values(kw: dict) -> bool:
    """Whether `kw` asks for ``--quick``; ValueError when it also sets what QUICK sets."""
    if not isinstance(kw.get("quick", False), bool):
        raise ValueError(f"quick must be True or False, got {kw['quick']!r}")
    if not kw.get("quick"):
        return False
    given = " ".join(f"--{k} {kw[k]}" for k in QUICK if kw.get(k, DEFAULTS[k]) != DEFAULTS[k])
    if given:
        raise ValueError(f"--quick sets {' '.join(f'--{k} {v}' for k, v in QUICK.items())} "
                         f"itself; drop {given} or --quick")
    return True


def summary(result: RunResult) -> str:
    """The lines the script prints after its run."""
    lines = []
    for name, f in result["designs"].items():
        pf = "n/a" if f["pf_form"] is None else f"{f['pf_form']:.3f}"
        lines.append(f"{name:18s} E = {f['enhancement_nominal']:5.2f}, worst on the grid "
                     f"{f['worst_on_grid']:5.2f}, pf(MC) = {f['pf_mc']:.3f} +- "
                     f"{f['pf_mc_std']:.3f}, FORM {pf}")
    return "\n".join(lines) + f"\n{result['seconds']:.0f} s"


def main(argv=None) -> RunResult:
    return cli.main(argv, __doc__, run, OPTIONS, out=DEFAULT_OUT, maxeval=100, seed=0,
                    maxeval_help="MMA evaluations per stage and phase: 3 stages of the "
                                 "nominal design (1 factorization each), one of the robust "
                                 "(15 each), the disk's worst case (at most 25) and the "
                                 "reliability-based (at most 30; 3 C - 4 each, C = --chords):"
                                 " up to 6 N evaluations in all; at --h 4 a factorization "
                                 "takes about 0.15 s on 2 cores, N = 5 about 4 minutes "
                                 "before the Monte Carlo",
                    check=quick_values,
                    solvers=cli.DIRECT_SOLVERS, summary=summary,
                    size=lambda kw: (2 * 100_800 / min(kw["h"], 1.0) ** 2, 2))


if __name__ == "__main__":
    main()
