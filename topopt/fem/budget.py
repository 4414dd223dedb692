"""Will a mesh fit in memory? A cheap estimate, checked before anything is allocated.

The estimate is bytes per degree of freedom, measured from the peak resident
memory of real runs (``/usr/bin/time -f %M`` on ``python problems/...py
--maxeval 2 --quiet``, 2 shared cores, less the 0.13 GB of a 10 x 5 run), the
least over the solvers, so that no run that fits is refused:

* 2-D, ``mbb_beam --nelx 1200 --nely 400``: 963 202 dofs, 2.58 GB peak with
  ``--solver mg-cg``: 2.5 kB per dof (CHOLMOD: 3.72 GB, 3.7 kB; 600 x 300: 4.3 kB);
* 3-D, ``cantilever3d --nelx 60 --nely 30 --nelz 30``: 175 863 dofs, 2.41 GB peak
  with CHOLMOD and with ``mg-cg``: 12.9 kB per dof (a direct solver's fill-in grows
  faster than the dofs in 3-D: for larger meshes the estimate is a lower bound).

A size is refused only when that estimate exceeds the machine's physical memory
(`physical_memory`), never a size that might fit: `check_dofs` raises
`MeshTooLargeError` (a ValueError), naming the estimate and the limit.
`topopt.fem.rectangle` and `topopt.fem.box` check their grid first, and the
problem scripts check their size options before any work (`topopt.cli`).
"""

from __future__ import annotations

import math
import os

__all__ = ["BYTES_PER_DOF", "MeshTooLargeError", "physical_memory", "estimate_bytes",
           "check_dofs", "check_samples", "check_grid"]

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
    have = physical_memory() if limit is None else int(limit)
    if have and need > have:
        raise MeshTooLargeError(
            f"{what}: {float(n_dofs):.3g} degrees of freedom need an estimated {_bytes(need)} "
            f"({BYTES_PER_DOF[dim] / 1e3:g} kB per dof in {dim}-D, measured), more than the "
            f"{_bytes(have)} of physical memory here; use a coarser mesh")
    return need


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
    have = physical_memory() if limit is None else int(limit)
    if have and need > have:
        raise MeshTooLargeError(f"{what}: {float(n_samples):.3g} draws of {m} variables need "
                                f"{_bytes(need)} at once, more than the {_bytes(have)} of "
                                "physical memory here; use fewer samples")
    return need


def check_grid(counts, what: str, dofs_per_node: int | None = None) -> float:
    """`check_dofs` for a grid of ``counts`` elements per axis (vector field by default).

    Examples
    --------
    >>> check_grid((60, 20), "fem.rectangle(60, 20)") > 0
    True
    """
    dim = len(counts)
    nodes = math.prod(int(n) + 1 for n in counts)        # Python ints: no overflow
    return check_dofs(nodes * (dim if dofs_per_node is None else dofs_per_node), dim, what)
