"""The nominal and robust focusing designs at one resolution, on em_robust's 5 x 5 grid.

The first two designs of `problems/em_robust.py` without the reliability
phase and its Monte Carlo (at the tutorial's 1 nm resolution a full run
would take hours on 2 cores): em_focus's nominal design (MAXEVAL per
stage, beta 8 -> 16 -> 32), then the worst case over em_robust's SHIFTS x
BAND from it (ROBUST_MAXEVAL evaluations at beta 32), each evaluated on the
grid GRID_SHIFTS x GRID_WAVELENGTHS (projected with beta = 32, cubic Johnson
& Christy silver). Writes ``results/em_robust_<h>nm.json`` and prints
the two tables.

    python scripts/studies/em_robust_table.py [h] [maxeval] [robust_maxeval] [--nominal DIR]
                                      [--robust CHECKPOINT] [--samples N]

``--nominal DIR`` takes the nominal design from ``DIR/design.npz`` (a run of
``problems/em_focus.py --h H --maxeval MAXEVAL --out DIR``) instead of running it;
``--robust CHECKPOINT`` the robust one from the robust phase's checkpoint of
``problems/em_robust.py`` (``OUT/checkpoint.robust.npz``). ``--samples N``
adds each design's Monte Carlo ``pf = P(E < E_t)`` (em_robust's ``E_t``, ``d``
and ``lambda``; N FE solves on 2 worker processes) and FORM's (both modes).
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from topopt_problems import em_focus, em_robust  # noqa: E402
from topopt.formulations import (FocusReliability, FocusVariations,  # noqa: E402
                                 WorstFocus, robust_focus_stages)
from topopt.reliability import MPPError  # noqa: E402
from topopt.io import load_design  # noqa: E402


def nominal_design(h: float, maxeval: int, folder: str | None) -> np.ndarray:
    if folder is None:
        return em_focus.run(h=h, maxeval=maxeval).x
    saved = load_design(folder)
    assert saved["setup"]["resolution_nm"] == h, "the saved design has another resolution"
    return saved["x"][saved["cell_data"]["design"].astype(bool)]


def robust_design(var, x_n, beta, robust_maxeval: int, checkpoint: str | None):
    if checkpoint is not None:
        return np.load(checkpoint, allow_pickle=True)["x"][:-1]
    worst = WorstFocus(var, em_robust.SHIFTS, em_robust.BAND)
    res = worst.minimize(x_n, robust_focus_stages((beta,), robust_maxeval), verbose=False)
    return res.x[:-1]


def reliability(var, x, target: float, samples: int) -> dict:
    rel = FocusReliability(var, target, em_robust.SIGMA_SHIFT, em_robust.SIGMA_WAVELENGTH)
    with cf.ProcessPoolExecutor(2) as ex:
        mc = rel.monte_carlo(x, samples, seed=0, executor=ex)
    out = {"target": target, "pf_mc": mc.pf, "pf_mc_std": mc.pf_std,
           "mc_failures": int(mc.n_failures), "mc_solves": samples}
    try:
        out["pf_form"] = float(np.exp(float(rel.ln_pf(x))))
        out["form_modes"] = [None if fp.last is None else
                             {"beta": fp.last.beta, "mpp": fp.last.mpp.tolist()}
                             for fp in rel.modes]
    except MPPError as err:
        out["pf_form"], out["form_error"] = None, str(err).splitlines()[0]
    return out


def table(h: float, maxeval: int, robust_maxeval: int, folder: str | None,
          robust: str | None = None, samples: int = 0) -> dict:
    t0 = time.perf_counter()
    x_n = nominal_design(h, maxeval, folder)
    var = FocusVariations(em_focus.EMFocus(h=h))
    beta = em_focus.BETAS[-1]
    x_r = robust_design(var, x_n, beta, robust_maxeval, robust)
    target = em_robust.TARGET_FRACTION * float(var.enhancement(x_n, 0.0, None, beta))
    out = {"resolution_nm": h, "maxeval": maxeval, "robust_maxeval": robust_maxeval,
           "grid_shifts_nm": list(em_robust.GRID_SHIFTS),
           "grid_wavelengths_nm": list(em_robust.GRID_WAVELENGTHS), "designs": {}}
    for name, x in (("nominal", x_n), ("robust", x_r)):
        G = var.grid(x, em_robust.GRID_SHIFTS, em_robust.GRID_WAVELENGTHS, beta)
        E0 = float(var.enhancement(x, 0.0, None, beta))
        out["designs"][name] = {"grid": G.tolist(), "enhancement_nominal": E0,
                                "worst_on_grid": float(G.min()),
                                "loss_at_worst": 1 - float(G.min()) / E0}
        if samples:
            out["designs"][name] |= reliability(var, x, target, samples)
    out["seconds"] = time.perf_counter() - t0
    return out


def show(out: dict) -> None:
    for name, d in out["designs"].items():
        print(f"{name}, h = {out['resolution_nm']:g} nm: E(0, 532) = "
              f"{d['enhancement_nominal']:.2f}, worst {d['worst_on_grid']:.2f} "
              f"(loss {100 * d['loss_at_worst']:.0f} %)" + (
                  f"; pf(E < {d['target']:.2f}) MC {d['pf_mc']:.4f} +- {d['pf_mc_std']:.4f} "
                  f"({d['mc_solves']} solves), FORM {d['pf_form']}" if "pf_mc" in d else ""))
        print("  d \\ lambda " + " ".join(f"{v:7g}" for v in out["grid_wavelengths_nm"]))
        for d_k, row in zip(out["grid_shifts_nm"], d["grid"]):
            print(f"  {d_k:+9g}  " + " ".join(f"{v:7.2f}" for v in row))


if __name__ == "__main__":
    args = sys.argv[1:]
    flags = {}
    for flag in ("--nominal", "--robust", "--samples"):
        if flag in args:
            i = args.index(flag)
            flags[flag] = args[i + 1]
            del args[i:i + 2]
    h = float(args[0]) if args else 1.0
    maxeval = int(args[1]) if len(args) > 1 else 100
    robust_maxeval = int(args[2]) if len(args) > 2 else 50
    result = table(h, maxeval, robust_maxeval, flags.get("--nominal"), flags.get("--robust"),
                   int(flags.get("--samples", 0)))
    show(result)
    path = os.path.join(ROOT, "results", f"em_robust_{h:g}nm.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"{result['seconds']:.0f} s -> {path}")
