"""Will a mesh fit in memory? A cheap estimate, checked before anything is allocated.

The estimate is bytes per degree of freedom, measured from the peak resident
memory of real runs (`BYTES_PER_DOF`: the least over the solvers, so that no
run that fits is refused; ``scripts/benchmark_memory.py`` measures them: 2-D
MBB 1200 x 400 with mg-cg 2.5 kB per dof, 3-D cantilever 60 x 30 x 30 12.9 kB).

A size is refused only when that estimate exceeds the machine's physical memory
(`physical_memory`), never a size that might fit: `check_dofs` raises
`MeshTooLargeError` (a ValueError), naming the estimate and the limit.
`topopt.fem.elasticity` and `topopt.fem.heat` check their unknowns before any
assembly (`check_unknowns`), the problem scripts check their size options before
any work (`topopt.cli`), and `topopt.fem.rectangle` / `topopt.fem.box` refuse a
grid whose mesh arrays alone exceed memory (`check_grid`).
"""

from __future__ import annotations

import math
import os

__all__ = ["BYTES_PER_DOF", "MeshTooLargeError", "physical_memory", "estimate_bytes",
           "check_dofs", "check_samples", "check_grid", "check_unknowns"]

#: Measured peak bytes per degree of freedom of a compliance run, by dimension.
BYTES_PER_DOF = {2: 2.5e3, 3: 12.9e3}


class MeshTooLargeError(ValueError):
    """A mesh whose estimated memory exceeds the machine's physical memory."""


def physical_memory() -> int:
    """The machine's physical memory in bytes (a cgroup limit when lower; 0 if unknown)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        total = 0
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as fh:
                limit = int(fh.read().strip())
        except (OSError, ValueError):
            continue
        if 0 < limit < (total or math.inf):
            total = limit
    return int(total)


def estimate_bytes(n_dofs: float, dim: int) -> float:
    """Estimated peak memory of a run with `n_dofs` unknowns in `dim` dimensions.

    Examples
    --------
    >>> round(estimate_bytes(963_202, 2) / 1e9, 2)    # MBB 1200 x 400 (measured: 2.58 GB)
    2.41
    """
    if dim not in BYTES_PER_DOF:
        raise ValueError(f"dim must be 2 or 3, got {dim!r}")
    return float(n_dofs) * BYTES_PER_DOF[dim]


def _bytes(n: float) -> str:
    for unit, size in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30),
                       ("MiB", 2**20)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n / 2**10:.3g} KiB"


def _refuse(need: float, what: str, needs: str, fix: str, limit: int | None) -> float:
    """`need` bytes, or `MeshTooLargeError` when they exceed `limit` (physical memory)."""
    have = physical_memory() if limit is None else int(limit)
    if have and need > have:
        raise MeshTooLargeError(f"{what}: {needs}, more than the {_bytes(have)} of physical "
                                f"memory here; {fix}")
    return need


def check_dofs(n_dofs: float, dim: int, what: str, limit: int | None = None) -> float:
    """Refuse `n_dofs` unknowns whose `estimate_bytes` exceed `limit` (physical memory).

    Returns the estimate in bytes. `what` names the size in the user's terms
    (``"fem.rectangle(100000, 100000)"``, ``"--nelx 100000 --nely 100000"``).

    Examples
    --------
    >>> check_dofs(2e16, 2, "fem.rectangle(100000000, 100000000)", limit=128 * 2**30)
    Traceback (most recent call last):
    ...
    topopt.fem.budget.MeshTooLargeError: fem.rectangle(100000000, 100000000): 2e+16 degrees of freedom need an estimated 43.4 EiB (2.5 kB per dof in 2-D, measured), more than the 128 GiB of physical memory here; use a coarser mesh
    """
    need = estimate_bytes(n_dofs, dim)
    return _refuse(need, what, f"{float(n_dofs):.3g} degrees of freedom need an estimated "
                   f"{_bytes(need)} ({BYTES_PER_DOF[dim] / 1e3:g} kB per dof in {dim}-D, "
                   "measured)", "use a coarser mesh", limit)


def check_samples(n_samples: int, m: int, what: str, limit: int | None = None) -> float:
    """Refuse `n_samples` draws of `m` variables drawn at once (``(n, m)`` float64 and one
    value per draw) when they exceed `limit` (physical memory); returns the bytes.

    Examples
    --------
    >>> check_samples(10**12, 2, "n_samples = 10**12", limit=128 * 2**30)
    Traceback (most recent call last):
    ...
    topopt.fem.budget.MeshTooLargeError: n_samples = 10**12: 1e+12 draws of 2 variables need 21.8 TiB at once, more than the 128 GiB of physical memory here; use fewer samples
    """
    need = float(n_samples) * (int(m) + 1) * 8.0
    return _refuse(need, what, f"{float(n_samples):.3g} draws of {m} variables need "
                   f"{_bytes(need)} at once", "use fewer samples", limit)


def check_grid(counts, what: str, limit: int | None = None) -> float:
    """Refuse a grid of ``counts`` elements per axis whose mesh arrays alone exceed memory.

    The node coordinates (8 bytes an entry) and the element connectivity (4:
    scikit-fem's int32 at the least) are a certain lower bound of what building
    the mesh allocates, so no mesh that fits is refused; the run's own estimate (`check_dofs`) is checked
    where a model is made, with its real number of unknowns. Returns the
    bytes of those arrays.

    Examples
    --------
    >>> check_grid((60, 20), "fem.rectangle(60, 20)")
    39696.0
    >>> check_grid((10**8, 10**8), "fem.rectangle(100000000, 100000000)", limit=128 * 2**30)
    Traceback (most recent call last):
    ...
    topopt.fem.budget.MeshTooLargeError: fem.rectangle(100000000, 100000000): its node coordinates and connectivity alone need 284 PiB, more than the 128 GiB of physical memory here; use a coarser mesh
    """
    dim = len(counts)
    nodes = math.prod(int(n) + 1 for n in counts)        # Python ints: no overflow
    need = 8.0 * nodes * dim + 4.0 * math.prod(int(n) for n in counts) * 2 ** dim
    return _refuse(need, what, f"its node coordinates and connectivity alone need "
                   f"{_bytes(need)}", "use a coarser mesh", limit)


def check_unknowns(mesh, components: int, what: str) -> None:
    """`check_dofs` for a model of `components` unknowns per node of `mesh` (2-D, 3-D)."""
    dim, n_nodes = mesh.p.shape
    if dim in BYTES_PER_DOF:
        check_dofs(n_nodes * components, dim, f"{what} on a mesh of {n_nodes} nodes")
