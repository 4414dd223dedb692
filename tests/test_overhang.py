"""Issue 26, item 4: the additive-manufacturing overhang filter (Langelaar 2016, 2017).

Rule tests of the primitive in every mode and build direction, the filter's
closed forms (the smooth maximum of N supports at xi_0 is xi_0, eq. (3); the
smooth minimum, eq. (4)), symmetries between directions, the violation counter,
the mesh and grid numbering of `OverhangFilter`, refusals, the printable
cantilever (Taylor test, no violation in the optimized design), and the
cross-check against pyMOTO's OverhangFilter (scripts/crosscheck/pymoto_overhang.py).
"""

import importlib.util
import os

import numpy as np
import pytest
import skfem

from topopt import ad, fem
from topopt.design.overhang import (OverhangFilter, overhang, overhang_support,
                                    overhang_violations)
from topopt.formulations.printable import PrintableCompliance
from topopt.grid import Grid

from topopt_problems import printable_cantilever

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPS = 1e-4


def _field(shape, seed=0, lo=0.05, hi=0.95):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


# ------------------------------------------------------------ rules, every mode

@pytest.mark.parametrize("shape, direction", [
    ((4, 3), "+y"), ((4, 3), "-y"), ((3, 4), "+x"), ((3, 4), "-x"),
    ((3, 3, 2), "+z"), ((3, 2, 3), "-z"), ((2, 3, 3), "+x"), ((3, 3, 2), "-y"),
])
def test_overhang_rules_every_mode(shape, direction):
    report = ad.check_modes(lambda x: overhang(x, direction), _field(shape))
    assert sorted(report) == ["forward/arg 0", "hvp/arg 0", "nested/arg 0", "reverse/arg 0"]
    assert max(report.values()) < 1e-6


def test_overhang_rules_with_options():
    """pyMOTO-like supports (rim samples, N = 8) and a partial plate, every mode."""
    w = np.concatenate([overhang_support(3), np.full((2, 3, 3), 1.0 / 9)])
    base = np.ones((5, 4)); base[0] = 0.0
    f = lambda x: overhang(x, "+y", p=20.0, eps=1e-3, xi0=0.4, support=(w, 8.0), base=base)
    assert max(ad.check_modes(f, _field((3, 3, 2), seed=1)).values()) < 1e-6


def test_filter_on_mesh_every_mode():
    flt = OverhangFilter(fem.box(2, 3, 2), "-x")
    assert max(ad.check_modes(flt, _field(12, seed=2)).values()) < 1e-6


# ------------------------------------------------------------ closed forms

def _smin(x, s):
    return 0.5 * (x + s - np.sqrt((x - s) ** 2 + EPS) + np.sqrt(EPS))       # eq. (4)


@pytest.mark.parametrize("ndim, xi0", [(2, 0.5), (3, 0.5), (2, 0.3), (3, 0.7)])
def test_smooth_maximum_of_supports_at_xi0(ndim, xi0):
    """On a plate of density xi0, the N supports (3 in 2-D, 5 in 3-D) give Xi = (N (xi0 +
    Delta)^P)^(1/Q) - Delta_b, ``Q = P + ln N / ln xi0``: xi0 up to the shift Delta =
    100 realmin^(1/P) = 2e-6; the first layer is smin(x, Xi) (Langelaar 2017, eqs. (3)-(4))."""
    shape = (5, 2) if ndim == 2 else (5, 2, 4)
    x = _field(shape, seed=3, lo=0.0, hi=1.0)
    xi = overhang(x, "+y", xi0=xi0, base=xi0)
    N, P = (3, 40.0) if ndim == 2 else (5, 40.0)
    Q = P + np.log(N) / np.log(xi0)
    shift = 100 * np.finfo(float).tiny ** (1 / P)
    Xi = (N * (xi0 + shift) ** P) ** (1 / Q) - 0.95 * N ** (1 / Q) * shift ** (P / Q)
    assert abs(Xi - xi0) < 1e-5
    inner = (slice(1, -1), 0) if ndim == 2 else (slice(1, -1), 0, slice(1, -1))
    np.testing.assert_allclose(xi[inner], _smin(x[inner], Xi), rtol=1e-13)


def _smax(s, N=3, P=40.0, xi0=0.5):
    """Eq. (3) with the shifts of the paper's code, over the last axis of `s`."""
    Q = P + np.log(N) / np.log(xi0)
    shift = 100 * np.finfo(float).tiny ** (1 / P)
    return np.sum((s + shift) ** P, axis=-1) ** (1 / Q) - 0.95 * N ** (1 / Q) * shift ** (P / Q)


def test_second_layer_by_hand():
    """One solid element on the plate, a solid row above it: the row above is printed
    only over the element and its two face neighbours (eqs. (3)-(4) evaluated here)."""
    x = np.zeros((5, 2)); x[2, 0] = 1.0
    x[:, 1] = 1.0
    xi = overhang(x, "+y")
    first = _smin(x[:, 0], _smax(np.ones(3)))                    # on the plate (ones)
    np.testing.assert_allclose(xi[:, 0], first, rtol=1e-13)
    padded = np.concatenate([[0.0], first, [0.0]])               # void beside the domain
    supports = np.stack([padded[:-2], padded[1:-1], padded[2:]], axis=-1)
    np.testing.assert_allclose(xi[:, 1], _smin(1.0, _smax(supports)), rtol=1e-13)
    assert np.all(xi[1:4, 1] > 0.99) and xi[0, 1] < 0.01 and xi[4, 1] < 0.01


def test_printed_bounds():
    """0 <= xi <= 1 + sqrt(eps)/2 (`OverhangFilter.peak`) for blueprints in [0, 1]."""
    x = _field((30, 20), seed=4, lo=0.0, hi=1.0)
    x[x > 0.7] = 1.0
    xi = overhang(x, "-x")
    assert xi.min() >= 0.0 and xi.max() <= 1.0 + 0.5 * np.sqrt(EPS)
    assert xi.max() > 1.0                                        # the overshoot is real


def test_staircase_kept_and_overhang_removed():
    """A 45-degree staircase prints (xi > 0.99), and so does the top row over its
    supports; the rest of that row overhangs and is removed (xi < 0.01)."""
    x = np.zeros((8, 6))
    for j in range(6):
        x[j, j] = 1.0                                            # 45 degrees from the plate
    x[2:8, 5] = 1.0                                              # a row at the top
    xi = overhang(x, "+y")
    assert np.all(xi[np.arange(6), np.arange(6)] > 0.99)
    assert np.all(xi[3:6, 5] > 0.99)                             # over (4, 4): supported
    assert np.all(xi[[2, 6, 7], 5] < 0.01)                       # nothing below them


@pytest.mark.parametrize("direction, to_plus_y, back", [
    ("-y", lambda a: a[:, ::-1], lambda a: a[:, ::-1]),
    ("+x", lambda a: a.T, lambda a: a.T),
    ("-x", lambda a: a[::-1].T, lambda a: a.T[::-1]),
])
def test_directions_are_rotations(direction, to_plus_y, back):
    x = _field((6, 5), seed=5)
    np.testing.assert_allclose(overhang(x, direction), back(overhang(to_plus_y(x), "+y")),
                               rtol=1e-13)


def test_3d_directions_are_permutations():
    x = _field((3, 4, 5), seed=6)
    np.testing.assert_allclose(overhang(x, "+z"),
                               np.moveaxis(overhang(np.moveaxis(x, 2, 1), "+y"), 1, 2),
                               rtol=1e-13)
    np.testing.assert_allclose(overhang(x, "-x"), overhang(x[::-1], "+x")[::-1], rtol=1e-13)


# ------------------------------------------------------------ the violation counter

@pytest.mark.parametrize("rows, direction, count", [
    (["#..", "...", "#.#"], "+y", 2),    # 2-D rows are y from the plate up: first row y = 0
    (["#..", ".#.", "..#"], "+y", 0),    # 45-degree staircase
    (["#..", "..#"], "+y", 1),           # two elements aside: unsupported
    (["...", "###"], "+y", 3),           # a floating bar
    (["...", "###"], "-y", 0),           # the same bar on the plate at the top
    (["#.", "#.", ".#"], "+y", 0),
])
def test_violations_2d(rows, direction, count):
    x = np.array([[c == "#" for c in row] for row in rows], dtype=float).T    # x[i, j]
    assert overhang_violations(x, direction) == count


def test_violations_3d_diagonal_is_unsupported():
    """In 3-D the corner neighbour below lies at 54.7 degrees: it does not support."""
    x = np.zeros((3, 3, 2)); x[0, 0, 0] = 1.0; x[1, 1, 1] = 1.0
    assert overhang_violations(x, "+z") == 1
    x[1, 0, 0] = 1.0                                              # a face neighbour below
    assert overhang_violations(x, "+z") == 0
    assert overhang_violations(x, "-z") == 1                     # (0, 0, 0) under nothing
    assert overhang_violations(x, "+z", threshold=0.9) == 0


def test_violations_threshold():
    x = np.array([[0.0, 0.6]])
    assert overhang_violations(x, "+y") == 1 and overhang_violations(x, "+y", 0.7) == 0


# ------------------------------------------------------------ meshes and grids

@pytest.mark.parametrize("mesh, shape", [
    (fem.rectangle(5, 3), (5, 3)), (fem.rectangle(4, 2, h=0.25), (4, 2)),
    (fem.box(3, 2, 4), (3, 2, 4)), (Grid((3, 2, 2)), (3, 2, 2)), (Grid((4, 3)), (4, 3)),
])
def test_filter_numbering(mesh, shape):
    """The filter of an element vector is the primitive of its grid array."""
    flt = OverhangFilter(mesh, "+y")
    assert flt.shape == shape
    x = _field(int(np.prod(shape)), seed=7)
    centres = (fem.element_centroids(mesh) if hasattr(mesh, "t")
               else mesh.element_centers())
    h = 1.0 if not hasattr(mesh, "t") else (0.25 if shape == (4, 2) else 1.0)
    idx = tuple(np.floor(centres / h).astype(int).T)
    grid = np.zeros(shape); grid[idx] = x
    np.testing.assert_allclose(flt(x), overhang(grid, "+y")[idx], rtol=1e-14)


@pytest.mark.parametrize("call, error, match", [
    (lambda: overhang(np.ones((3, 3)), "+z"), ValueError, "direction"),
    (lambda: overhang(np.ones((3, 3)), "y"), ValueError, "direction"),
    (lambda: overhang(np.ones((3, 3)), p=1.0), ValueError, "p must be > 1"),
    (lambda: overhang(np.ones((3, 3)), eps=0.0), ValueError, "eps must be > 0"),
    (lambda: overhang(np.ones((3, 3)), xi0=1.0), ValueError, "xi0 must be in"),
    (lambda: overhang(np.ones(3)), ValueError, "2-D or 3-D"),
    (lambda: overhang(np.full((2, 2), np.nan)), ValueError, "NaN"),
    (lambda: overhang(np.ones((3, 3)), base=np.ones(4)), ValueError, "base must be"),
    (lambda: overhang(np.ones((3, 3)), base=-1.0), ValueError, "base must be >= 0"),
    (lambda: overhang(np.ones((3, 3)), support=(np.eye(3), 0.5)), ValueError, "support N"),
    (lambda: overhang(np.ones((3, 3)), support=(np.ones((2, 2)), 2)), ValueError,
     "support weights"),
    (lambda: overhang(np.ones((3, 3)), support=np.eye(3)), TypeError, "support must be"),
    (lambda: OverhangFilter(fem.rectangle(3, 2), "+y", q=2), TypeError, "unknown keyword"),
    (lambda: OverhangFilter(skfem.MeshTri().refined(1)), ValueError, "structured"),
    (lambda: OverhangFilter(skfem.MeshQuad.init_tensor([0, 1, 2], [0, 2])), ValueError,
     "equal square"),
    (lambda: OverhangFilter(fem.rectangle(3, 2))(np.ones(5)), ValueError, "shape"),
    (lambda: overhang_violations(np.ones((2, 2)), threshold=1.0), ValueError, "threshold"),
])
def test_refusals(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ------------------------------------------------------------ the printable cantilever

def test_taylor_printable_compliance():
    _, model, f = printable_cantilever.setup(24, 8)
    p = PrintableCompliance(model, f, 0.5, 1.5, direction="-x")
    rng = np.random.default_rng(8)
    x, dx = rng.uniform(0.2, 0.9, p.n), rng.standard_normal(p.n)
    assert ad.taylor_test(p.compliance, x, dx) >= 1.9
    assert ad.taylor_test(p.volume, x, dx) >= 1.9
    assert ad.taylor_test(lambda x: p.compliance(x, beta=4.0), x, dx) >= 1.9


def test_printable_cantilever_has_no_overhang(tmp_path):
    """A short run: the printed design has no unsupported element; without the filter
    the same run leaves some (flat roofs of its holes)."""
    kw = dict(nelx=60, nely=20, maxeval=100, out=str(tmp_path / "a"))
    printed = printable_cantilever.run(**kw)
    plain = printable_cantilever.run(**kw | dict(unfiltered=True, out=str(tmp_path / "b")))
    assert printed["overhang_violations"] == 0 and printed["direction"] == "+y"
    assert plain["overhang_violations"] > 0
    assert printed["volume"] == pytest.approx(0.5, abs=5e-3)
    assert printed["compliance"] > plain["compliance"]          # printability costs stiffness


# ------------------------------------------------------------ pyMOTO cross-check

def _pymoto_python():
    path = os.environ.get("PYMOTO_PYTHON", "/tmp/pymoto-venv/bin/python")
    return path if os.access(path, os.X_OK) else None


@pytest.mark.skipif(_pymoto_python() is None, reason="no interpreter with pymoto "
                    "(set PYMOTO_PYTHON)")
@pytest.mark.parametrize("ndim, direction", [(2, "-x"), (3, "+y")])
def test_matches_pymoto(monkeypatch, ndim, direction):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "scripts", "crosscheck"))  # its pymoto_bridge
    spec = importlib.util.spec_from_file_location(
        "pymoto_overhang", os.path.join(ROOT, "scripts", "crosscheck", "pymoto_overhang.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.compare(ndim, direction, _pymoto_python())
    assert len(rows) == 5
    assert max(max(r["err_y"], r["err_xbar"]) for r in rows) <= 1e-8
