"""The nominal and robust focusing designs at one resolution, on em_robust's 5 x 5 grid.

The first two designs of `problems/em_robust.py` without the reliability
phase and its Monte Carlo (at the tutorial's 1 nm resolution a full run
would take hours on 2 cores): em_focus's nominal design (MAXEVAL per
stage, beta 8 -> 16 -> 32), then the worst case over em_robust's SHIFTS x
BAND from it (ROBUST_MAXEVAL evaluations at beta 32), each evaluated on the
grid GRID_SHIFTS x GRID_WAVELENGTHS (projected with beta = 32, cubic Johnson
& Christy silver). Writes ``results/em_robust/table_<h>nm.json`` and prints
the two tables.

    python scripts/em_robust_table.py [h] [maxeval] [robust_maxeval] [--nominal DIR]

``--nominal DIR`` takes the nominal design from ``DIR/design.npz`` (a run of
``problems/em_focus.py --h H --maxeval MAXEVAL --out DIR``) instead of running it.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from problems import em_focus, em_robust  # noqa: E402
from topopt.formulations import (FocusVariations, WorstFocus,  # noqa: E402
                                 robust_focus_stages)
from topopt.io import load_design  # noqa: E402


def nominal_design(h: float, maxeval: int, folder: str | None) -> np.ndarray:
    if folder is None:
        return em_focus.run(h=h, maxeval=maxeval).x
    saved = load_design(folder)
    assert saved["setup"]["resolution_nm"] == h, "the saved design has another resolution"
    return saved["x"][saved["cell_data"]["design"].astype(bool)]


def table(h: float, maxeval: int, robust_maxeval: int, folder: str | None) -> dict:
    t0 = time.perf_counter()
    x_n = nominal_design(h, maxeval, folder)
    var = FocusVariations(em_focus.EMFocus(h=h))
    beta = em_focus.BETAS[-1]
    worst = WorstFocus(var, em_robust.SHIFTS, em_robust.BAND)
    res = worst.minimize(x_n, robust_focus_stages((beta,), robust_maxeval), verbose=False)
    x_r = res.x[:-1]
    out = {"resolution_nm": h, "maxeval": maxeval, "robust_maxeval": robust_maxeval,
           "grid_shifts_nm": list(em_robust.GRID_SHIFTS),
           "grid_wavelengths_nm": list(em_robust.GRID_WAVELENGTHS), "designs": {}}
    for name, x in (("nominal", x_n), ("robust", x_r)):
        G = var.grid(x, em_robust.GRID_SHIFTS, em_robust.GRID_WAVELENGTHS, beta)
        E0 = float(var.enhancement(x, 0.0, None, beta))
        out["designs"][name] = {"grid": G.tolist(), "enhancement_nominal": E0,
                                "worst_on_grid": float(G.min()),
                                "loss_at_worst": 1 - float(G.min()) / E0}
    out["seconds"] = time.perf_counter() - t0
    return out


def show(out: dict) -> None:
    for name, d in out["designs"].items():
        print(f"{name}, h = {out['resolution_nm']:g} nm: E(0, 532) = "
              f"{d['enhancement_nominal']:.2f}, worst {d['worst_on_grid']:.2f} "
              f"(loss {100 * d['loss_at_worst']:.0f} %)")
        print("  d \\ lambda " + " ".join(f"{v:7g}" for v in out["grid_wavelengths_nm"]))
        for d_k, row in zip(out["grid_shifts_nm"], d["grid"]):
            print(f"  {d_k:+9g}  " + " ".join(f"{v:7.2f}" for v in row))


if __name__ == "__main__":
    args = sys.argv[1:]
    folder = None
    if "--nominal" in args:
        i = args.index("--nominal")
        folder = args[i + 1]
        del args[i:i + 2]
    h = float(args[0]) if args else 1.0
    maxeval = int(args[1]) if len(args) > 1 else 100
    robust_maxeval = int(args[2]) if len(args) > 2 else 50
    result = table(h, maxeval, robust_maxeval, folder)
    show(result)
    os.makedirs(os.path.join(ROOT, "results", "em_robust"), exist_ok=True)
    path = os.path.join(ROOT, "results", "em_robust", f"table_{h:g}nm.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"{result['seconds']:.0f} s -> {path}")
