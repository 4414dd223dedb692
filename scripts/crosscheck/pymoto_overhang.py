"""The overhang filter of topopt against pyMOTO 2.0.1's ``OverhangFilter``: output and adjoint.

On five seeded random blueprints ``x`` (uniform in [0, 1]) with five seeded
random cotangents ``ybar`` per grid -- 2-D 16 x 12 and 3-D 7 x 6 x 5 unit
elements -- and every build direction, compared: the printed field ``xi =
F(x)`` and the vector-Jacobian product ``J^T ybar`` (our backward sweep,
pyMOTO's ``_sensitivity``), relative error ``|a - b|_inf / |b|_inf``,
accepted at 1e-8.

Both follow Langelaar (2017, 2016) with ``P = 40``, ``eps = 1e-4``, ``xi_0 =
0.5``. pyMOTO's defaults differ from the papers' filter in three details,
which our `topopt.design.overhang.overhang` takes as options (``support``,
``base``), set here to pyMOTO's:

* **supports**: besides the direct supports (3 in 2-D, 5 in 3-D) pyMOTO sums
  ``nsampling`` points on the rim of the 45-degree cone, interpolated
  bilinearly (8 in 3-D at angles ``k pi / 4``, radius 1); in 2-D its two rim
  points lie on the z axis, outside the layer, and read ~1e-16 of the element
  below (zero rows here);
* **Q**: ``Q = P + ln N / ln xi_0`` with ``N = nsampling`` (2 in 2-D, 8 in
  3-D) rather than the number of supports;
* **the plate**: a layer of ones padded with ``np.pad`` axis by axis, so the
  plate reaches beyond the domain only along the lateral axes before the
  build axis (margins of later axes are void).

pyMOTO is not a dependency of topopt: its side runs in another interpreter
(``--python``, by default ``$PYMOTO_PYTHON`` or
``/tmp/pymoto-venv/bin/python``), which needs numpy and pymoto only.

    python scripts/crosscheck/pymoto_overhang.py [--python /path/to/python-with-pymoto]
"""

from __future__ import annotations

import itertools

import numpy as np
from pymoto_bridge import case_main, rel_err, run_pymoto_side, verdict

SHAPES = {2: (16, 12), 3: (7, 6, 5)}
DIRECTIONS = {2: ("+x", "-x", "+y", "-y"), 3: ("+x", "-x", "+y", "-y", "+z", "-z")}
N_DESIGNS, SEED, RTOL = 5, 0, 1e-8


def fields(ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x, ybar)``: five seeded blueprints and cotangents on the grid of `ndim` dimensions."""
    rng = np.random.default_rng(SEED + ndim)
    shape = (N_DESIGNS,) + SHAPES[ndim]
    return rng.uniform(0.0, 1.0, shape), rng.standard_normal(shape)


# ------------------------------------------------------------------ pyMOTO's side

def pymoto_side(direction: str, x: np.ndarray, ybar: np.ndarray) -> dict:
    """pyMOTO's printed fields and ``J^T ybar`` of each blueprint (as grids)."""
    import pymoto as pym
    shape = x.shape[1:]
    domain = pym.VoxelDomain(*shape)
    el = domain.elements.reshape(shape)                 # element number of (ix, iy[, iz])
    sx = pym.Signal("x", state=np.zeros(domain.nel))
    with pym.Network() as fn:
        sy = pym.OverhangFilter(domain, direction=direction)(sx)
    ys, xbars = [], []
    for xk, yk in zip(x, ybar):
        flat = np.empty(domain.nel)
        flat[el] = xk
        sx.state = flat
        fn.response()
        ys.append(np.asarray(sy.state)[el])
        fn.reset()
        g = np.empty(domain.nel)
        g[el] = yk
        sy.sensitivity = g
        fn.sensitivity()
        xbars.append(np.asarray(sx.sensitivity)[el])
    return {"y": np.array(ys), "xbar": np.array(xbars)}


# ------------------------------------------------------------------ our side

def pymoto_support(ndim: int) -> tuple:
    """pyMOTO's supports as our ``(weights, N)``: the direct ones and the cone's rim samples."""
    from topopt.design.overhang import overhang_support
    direct = overhang_support(ndim)
    if ndim == 2:                               # its 2 rim points fall outside the layer
        return np.concatenate([direct, np.zeros((2, 3))]), 2.0
    rim = []
    for t in 2 * np.pi * np.arange(8) / 8:      # bilinear weights of (sin t, cos t)
        u, v = np.sin(t), np.cos(t)
        a = np.maximum(1.0 - np.abs(np.arange(-1, 2) - u), 0.0)
        b = np.maximum(1.0 - np.abs(np.arange(-1, 2) - v), 0.0)
        rim.append(np.outer(a, b))
    return np.concatenate([direct, np.array(rim)]), 8.0


def pymoto_plate(shape: tuple, direction: str) -> np.ndarray:
    """pyMOTO's plate: ones, void in the margins of the lateral axes after the build axis."""
    axis = "xyz".index(direction[1])
    lateral = [i for i in range(len(shape)) if i != axis]
    base = np.ones(tuple(shape[i] + 2 for i in lateral))
    for k, i in enumerate(lateral):
        if i > axis:                            # np.pad pads axis i after the build axis
            index = [slice(None)] * len(lateral)
            for edge in (0, -1):
                index[k] = edge
                base[tuple(index)] = 0.0
    return base


def our_side(direction: str, x: np.ndarray, ybar: np.ndarray) -> dict:
    """Our printed fields and ``J^T ybar`` (the backward sweep) of each blueprint."""
    from topopt import ad
    from topopt.design.overhang import overhang
    ndim = x.ndim - 1
    options = dict(support=pymoto_support(ndim), base=pymoto_plate(x.shape[1:], direction))
    ys, xbars = [], []
    for xk, yk in zip(x, ybar):
        y, back = ad.pullback(lambda v: overhang(v, direction, **options), xk)
        ys.append(ad.value(y))
        xbars.append(back(yk)[0])
    return {"y": np.array(ys), "xbar": np.array(xbars)}


# ------------------------------------------------------------------ comparison

def compare(ndim: int, direction: str, python: str | None = None) -> list[dict]:
    """Per blueprint: the relative errors of ``xi`` and ``J^T ybar`` against pyMOTO."""
    x, ybar = fields(ndim)
    theirs = run_pymoto_side(__file__, python, {"x": x, "ybar": ybar},
                             "dir" + direction)            # not read as an option
    ours = our_side(direction, x, ybar)
    return [{"design": k, "err_y": rel_err(ours["y"][k], theirs["y"][k]),
             "err_xbar": rel_err(ours["xbar"][k], theirs["xbar"][k]),
             "mean_y": float(np.mean(ours["y"][k]))} for k in range(N_DESIGNS)]


def main(argv=None) -> dict:
    python = case_main(__doc__, argv, lambda direction, a: pymoto_side(direction[3:], a["x"], a["ybar"]))
    if python is None:                               # the pyMOTO side served its case
        return {}
    results, worst = {}, 0.0
    for ndim, direction in itertools.chain(*(itertools.product([d], DIRECTIONS[d])
                                             for d in (2, 3))):
        rows = results[(ndim, direction)] = compare(ndim, direction, python)
        shape = " x ".join(map(str, SHAPES[ndim]))
        errs = "  ".join(f"{r['err_y']:.1e}/{r['err_xbar']:.1e}" for r in rows)
        print(f"{ndim}-D {shape} {direction}: rel. err xi / J^T ybar per design: {errs}")
        worst = max(worst, *(max(r["err_y"], r["err_xbar"]) for r in rows))
    print(verdict(worst, RTOL))
    return results


if __name__ == "__main__":
    main()
