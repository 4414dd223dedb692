"""Sizes that cannot fit in memory are refused before anything is allocated (issue 23)."""

import re

import pytest

from topopt import fem
from topopt.fem import budget
from topopt.fem.budget import MeshTooLargeError, check_dofs, check_grid, estimate_bytes

GiB = 2**30


@pytest.mark.parametrize("n_dofs,dim,expected", [
    (963_202, 2, 963_202 * 2.5e3),      # MBB 1200 x 400: 2.58 GB measured (mg-cg)
    (175_863, 3, 175_863 * 12.9e3),     # cantilever3d 60 x 30 x 30: 2.41 GB measured
])
def test_estimate_is_the_measured_bytes_per_dof(n_dofs, dim, expected):
    assert estimate_bytes(n_dofs, dim) == pytest.approx(expected)


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
    mesh = fem.rectangle(60, 20)                    # 1281 nodes, 2562 dofs: 6.4 MB estimated
    monkeypatch.setattr(budget, "physical_memory", lambda: 5 * 2**20)
    with pytest.raises(MeshTooLargeError, match=r"fem.elasticity on a mesh of 1281 nodes: "
                                                r"2\.56e\+03 degrees of freedom need an "
                                                r"estimated 6\.11 MiB"):
        fem.elasticity(mesh)
    assert fem.heat(mesh).Ke.shape == (1200, 4, 4)  # 1281 dofs: 3.05 MiB, fits


@pytest.mark.parametrize("limit,refused", [(10 * GiB, True), (100 * GiB, False)])
def test_refused_only_above_the_limit(limit, refused):
    n = 10 * GiB / 2.5e3 * 2                  # an estimate of 20 GiB in 2-D
    if refused:
        with pytest.raises(MeshTooLargeError, match="20 GiB"):
            check_dofs(n, 2, "the mesh", limit=limit)
    else:
        assert check_dofs(n, 2, "the mesh", limit=limit) == pytest.approx(20 * GiB)


def test_ordinary_sizes_pass_and_the_limit_is_known():
    assert budget.physical_memory() > 2**30
    assert check_grid((60, 20), "fem.rectangle(60, 20)") == 8 * 2 * 61 * 21 + 4 * 4 * 60 * 20
    assert fem.rectangle(60, 20).t.shape == (4, 1200)
    with pytest.raises(ValueError, match="dim must be 2 or 3"):
        estimate_bytes(10, 1)
