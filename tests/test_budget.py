"""Sizes that cannot fit in memory are refused before anything is allocated (issue 23)."""

import json
import os
import re

import pytest

from topopt import fem
from topopt.fem import budget
from topopt.fem.budget import (BYTES_PER_DOF, MESH_PATHS, MeshTooLargeError, check_dofs,
                               check_grid, estimate_bytes)

GiB = 2**30


@pytest.mark.parametrize("n_dofs,dim,path,measured", [
    (963_202, 2, "mg-cg", 2.58e9),       # MBB 1200 x 400: 2.58 GB measured, less the baseline
    (963_202, 2, "direct", 3.72e9),      # the same with CHOLMOD: 3.72 GB
    (1_635_075, 3, "mg-cg", 15.40e9),    # cantilever3d 128 x 64 x 64 (benchmark_scale.json)
    (1_635_075, 3, "petsc", 13.28e9),    # PCMG on 1 rank: 12 666 MiB (toip_compare.json)
    (26_206_131, 3, "voxel", 6.07e9),    # 336 x 160 x 160 through the API (benchmark_scale.json)
])
def test_estimate_is_the_measured_bytes_per_dof(n_dofs, dim, path, measured):
    """Each path's estimate is within 10 % below its measured peak (never above it)."""
    assert 0.9 * measured <= estimate_bytes(n_dofs, dim, path) <= measured


def _committed_runs():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "results", "benchmark_memory.json")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)["runs"]


@pytest.mark.parametrize("row", _committed_runs(), ids=lambda row: row["label"])
def test_estimate_is_no_more_than_the_committed_measurement(row):
    """scripts/benchmarks/benchmark_memory.py's rows: the figure of their path is at most theirs."""
    path, dim = budget.PATHS[row["solver"]], len(row["grid"])
    assert BYTES_PER_DOF[path][dim] <= row["bytes_per_dof"] * 1.01, row
    assert estimate_bytes(row["dofs"], dim, path) <= row["peak_bytes"]


@pytest.mark.parametrize("call,what", [
    (lambda: fem.rectangle(10**8, 10**8), "fem.rectangle(100000000, 100000000): its node"),
    (lambda: fem.box(10**5, 10**4, 10**4), "fem.box(100000, 10000, 10000): its node"),
])
def test_library_refuses_a_mesh_beyond_physical_memory(call, what):
    with pytest.raises(MeshTooLargeError) as info:          # at once: nothing allocated
        call()
    message = str(info.value)
    assert message.startswith(what) and "coordinates and connectivity alone need" in message
    assert re.search(r"more than the [\d.]+ \w+ of physical memory here", message)
    assert isinstance(info.value, ValueError)


def test_mesh_bound_is_its_arrays():
    """p (dim, nodes) of float64 and t (2**dim, elements) of int32: what scikit-fem holds."""
    mesh = fem.rectangle(60, 20)
    assert check_grid((60, 20), "fem.rectangle(60, 20)") == mesh.p.nbytes + mesh.t.nbytes
    mesh = fem.box(6, 4, 2)
    assert check_grid((6, 4, 2), "fem.box(6, 4, 2)") == mesh.p.nbytes + mesh.t.nbytes


def test_model_refuses_unknowns_beyond_memory(monkeypatch):
    """A mesh that fits, but whose model's estimate does not: refused before assembly."""
    mesh = fem.rectangle(60, 20)                    # 1281 nodes, 2562 dofs
    least = min(BYTES_PER_DOF[p][2] for p in MESH_PATHS if 2 in BYTES_PER_DOF[p])
    monkeypatch.setattr(budget, "physical_memory", lambda: int(2000 * least))
    with pytest.raises(MeshTooLargeError, match=r"fem.elasticity on a mesh of 1281 nodes: "
                                                r"2\.56e\+03 degrees of freedom on an "
                                                r"assembled matrix need an estimated "):
        fem.elasticity(mesh)
    assert fem.heat(mesh).Ke.shape == (1200, 4, 4)  # 1281 dofs: fits


def test_grid_model_is_checked_on_the_voxel_path(monkeypatch):
    """A grid model: the voxel path's figure, and its coarsest level's factor."""
    from topopt.grid import Grid, grid_elasticity
    per = BYTES_PER_DOF["voxel"][3]
    n = 3 * 33 * 17 * 17                            # 32 x 16 x 16: coarsens to 2 x 1 x 1
    monkeypatch.setattr(budget, "physical_memory", lambda: int(n * per * 0.99))
    with pytest.raises(MeshTooLargeError, match=r"a model on Grid\(\(32, 16, 16\), h=1\): "
                                                r"2\.86e\+04 degrees of freedom on the "
                                                r"matrix-free voxel path \(topopt.grid\)"):
        grid_elasticity(Grid((32, 16, 16)))
    monkeypatch.setattr(budget, "physical_memory", lambda: int(n * per * 1.01) + 36 * 10**5)
    assert grid_elasticity(Grid((32, 16, 16))).ndof == n
    # 61 x 31 x 31 (190 464 dofs) does not coarsen: its whole grid would be factorized
    # directly, 6.6 GB at the direct path's 34.7 kB per dof (the fine part: 44 MB)
    monkeypatch.setattr(budget, "physical_memory", lambda: 2**32)
    with pytest.raises(MeshTooLargeError, match=r"for the direct factor of its coarsest "
                                                r"multigrid level, 61 x 31 x 31 elements"):
        grid_elasticity(Grid((61, 31, 31)))
    assert grid_elasticity(Grid((64, 32, 32))).ndof == 3 * 65 * 33 * 33     # coarsens: fits


@pytest.mark.parametrize("limit,refused", [(10 * GiB, True), (100 * GiB, False)])
def test_refused_only_above_the_limit(limit, refused):
    n = 10 * GiB / 2.5e3 * 2                  # an estimate of 20 GiB in 2-D
    if refused:
        with pytest.raises(MeshTooLargeError, match="20 GiB"):
            check_dofs(n, 2, "the mesh", limit=limit, path="mg-cg")
    else:
        assert check_dofs(n, 2, "the mesh", limit=limit, path="mg-cg") == pytest.approx(20 * GiB)


def test_ordinary_sizes_pass_and_the_limit_is_known():
    assert budget.physical_memory() > 2**30
    assert check_grid((60, 20), "fem.rectangle(60, 20)") == 8 * 2 * 61 * 21 + 4 * 4 * 60 * 20
    assert fem.rectangle(60, 20).t.shape == (4, 1200)
    with pytest.raises(ValueError, match="dim must be 2 or 3"):
        estimate_bytes(10, 1)
