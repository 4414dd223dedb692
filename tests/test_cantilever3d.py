"""The 3-D cantilever (top3d setup): multigrid CG against a direct solver, command line."""

import os
import subprocess
import sys

import numpy as np
import pytest

from topopt_problems import cantilever3d

HERE = os.path.dirname(os.path.abspath(__file__))

SIZE = dict(nelx=24, nely=8, nelz=2)


def test_setup_load_and_supports():
    mesh, model, f = cantilever3d.setup(6, 2, 2)
    assert np.isclose(f.sum(), -1.0)                          # unit total load, -y
    loaded = np.flatnonzero(f)
    assert np.allclose(mesh.p[:, loaded // 3][:2].T, [6.0, 0.0])   # the end's bottom edge
    assert np.allclose(f[loaded], [-0.25, -0.5, -0.25])       # consistent line load
    assert model.fixed.size == 3 * 3 * 3                       # the x = 0 face, clamped


def test_mg_cg_matches_direct_within_one_percent():
    direct = cantilever3d.run(**SIZE, maxeval=30, solver="cholmod" if _cholmod() else "superlu")
    mg = cantilever3d.run(**SIZE, maxeval=30, solver="mg-cg",
                          solver_options={"coarse_size": 100})
    assert mg["solver"] == "mg-cg" and mg["cg_iterations_max"] <= 60
    assert abs(mg["compliance"] - direct["compliance"]) <= 0.01 * direct["compliance"]
    assert abs(mg["volume"] - 0.3) < 0.01


def _cholmod() -> bool:
    from topopt import fem
    return "cholmod" in fem.available_solvers()


def test_writes_results(tmp_path):
    out = tmp_path / "c3d"
    res = cantilever3d.main(["--nelx", "6", "--nely", "2", "--nelz", "2", "--maxeval", "3",
                             "--solver", "mg-cg", "--out", str(out), "--quiet"])
    assert res["evaluations"] == 3
    assert {p.name for p in out.iterdir()} >= {"design.png", "history.png", "result.json"}


def test_help():
    script = os.path.join(HERE, "..", "problems", "cantilever3d.py")
    proc = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    for option in ("--nelx", "--nely", "--nelz", "--volfrac", "--solver", "--maxeval"):
        assert option in proc.stdout


@pytest.mark.parametrize("sizes", [(0, 4, 2), (12, -1, 2), (12, 4, 2.5)])
def test_bad_sizes_raise(sizes):
    with pytest.raises(ValueError):
        cantilever3d.run(*sizes, maxeval=1)
