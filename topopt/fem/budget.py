"""Will a run fit in memory? A cheap estimate by solver path, checked before anything is allocated.

The estimate is bytes per degree of freedom of the path the run takes
(`BYTES_PER_DOF`: a direct factorization, multigrid or smoothed-aggregation CG
on the assembled matrix, PETSc, the matrix-free voxel path of `topopt.grid`),
measured from the peak resident memory of real runs at the largest size
measured, where the fixed costs weigh least (``scripts/benchmarks/benchmark_memory.py``
measures them; ``results/benchmark_memory.json``). ``solver="auto"`` is
resolved first by the decision the run makes (`run_path`,
`topopt.fem.solvers.auto.auto_path`).

A size is refused only when that estimate exceeds the machine's physical memory
(`physical_memory`), never a size that might fit: `check_dofs` raises
`MeshTooLargeError` (a ValueError) naming the size, the path, the estimate,
the limit and the fix (another path that fits, else a coarser mesh).
The problem scripts check their size options on the path their ``--solver``
takes before any work (`topopt.cli`); `topopt.fem.elasticity` and
`topopt.fem.heat` check their unknowns on the least of the mesh paths before
any assembly (`check_unknowns`), `topopt.grid`'s models on the voxel path;
`topopt.fem.rectangle` / `topopt.fem.box` refuse a grid whose mesh arrays
alone exceed memory (`check_grid`).
"""

from __future__ import annotations

import math
import os

__all__ = ["BYTES_PER_DOF", "DIRECT_MEASURED_AT", "PATHS", "MESH_PATHS", "MeshTooLargeError", "physical_memory",
           "run_path", "estimate_bytes", "check_dofs", "check_samples", "check_grid",
           "check_unknowns"]

#: The path each solver name takes (``"auto"``: `run_path`).
PATHS = {"cholmod": "direct", "umfpack": "direct", "superlu": "direct", "mg-cg": "mg-cg",
         "amg-cg": "amg-cg", "petsc": "petsc", "voxel": "voxel"}

#: The paths of a scikit-fem model (`topopt.fem.Model`): all but the voxel path.
MESH_PATHS = ("direct", "mg-cg", "amg-cg", "petsc")

#: Measured peak bytes per degree of freedom of a compliance run, by path and dimension:
#: the least per dof over the sizes measured (``scripts/benchmarks/benchmark_memory.py``, whose
#: docstring and ``results/benchmark_memory.json`` give each run; amg-cg in 3-D takes
#: mg-cg's figure, a lower bound: see there).
BYTES_PER_DOF = {
    "direct": {2: 3.7e3, 3: 34.7e3},
    "mg-cg": {2: 2.5e3, 3: 9.4e3},
    "amg-cg": {2: 2.7e3, 3: 9.4e3},
    "petsc": {3: 8.1e3},
    "voxel": {2: 258.0, 3: 231.0},
}

#: The dofs at which the direct figures were measured: a factor's fill per dof grows with
#: the size, so they are lower bounds from there on only (`estimate_bytes`' `coarse_dofs`).
DIRECT_MEASURED_AT = {2: 963_202, 3: 175_863}

#: How a message names each path.
PATH_NAMES = {"direct": "a direct solver (the assembled matrix and its factor)",
              "mg-cg": "multigrid CG on the assembled matrix (mg-cg)",
              "amg-cg": "smoothed-aggregation CG on the assembled matrix (amg-cg)",
              "petsc": "PETSc on the assembled matrix",
              "voxel": "the matrix-free voxel path (topopt.grid)"}


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


def run_path(solver: str, dim: int, n_dofs: float, grid: bool = False,
             lattice: bool = True) -> str:
    """The path a run of `n_dofs` unknowns with `solver` takes (a key of `BYTES_PER_DOF`).

    ``"auto"`` is `topopt.fem.solvers.auto.auto_path`: the voxel path for a
    problem that can run on a structured `grid` from `VOXEL_MIN_DOFS` on,
    mg-cg on a 3-D `lattice` from `ITERATIVE_MIN_DOFS` on, else a direct solver.

    Examples
    --------
    >>> run_path("auto", 3, 25_904_775, grid=True), run_path("auto", 2, 10**6)
    ('voxel', 'direct')
    >>> run_path("cholmod", 3, 10**6), run_path("mg-cg", 2, 10**6)
    ('direct', 'mg-cg')
    """
    if solver == "auto":
        from .solvers.auto import auto_path
        return auto_path(dim, n_dofs, grid=grid, lattice=lattice)
    if solver not in PATHS:
        raise ValueError(f"solver must be 'auto' or one of {', '.join(PATHS)}, got {solver!r}")
    return PATHS[solver]


def _per_dof(path, dim: int) -> tuple[float, str]:
    """The bytes per dof of `path` (or the least of several) in `dim`-D, and that path."""
    paths = (path,) if isinstance(path, str) else tuple(path)
    unknown = [p for p in paths if p not in BYTES_PER_DOF]
    if unknown or not paths:
        raise ValueError(f"path must be one of {', '.join(BYTES_PER_DOF)}, got {path!r}")
    if dim not in (2, 3):
        raise ValueError(f"dim must be 2 or 3, got {dim!r}")
    measured = [(BYTES_PER_DOF[p][dim], p) for p in paths if dim in BYTES_PER_DOF[p]]
    if not measured:         # PETSc in 2-D: not measured; the least of the others
        measured = [(min(b[dim] for b in BYTES_PER_DOF.values() if dim in b), paths[0])]
    return min(measured)


def estimate_bytes(n_dofs: float, dim: int, path=MESH_PATHS, coarse_dofs: float = 0) -> float:
    """Estimated peak memory of a run with `n_dofs` unknowns in `dim` dimensions on `path`.

    `path` is a key of `BYTES_PER_DOF` (`run_path` gives a solver's), or a
    sequence of them for the least (default: the paths of a scikit-fem mesh).
    `coarse_dofs`: the voxel path's coarsest multigrid level, factorized
    directly (``BYTES_PER_DOF["direct"]`` each from `DIRECT_MEASURED_AT` dofs
    on, below which the figure is no lower bound and nothing is counted;
    `topopt.grid.grid_levels`: large only where the element counts do not coarsen).

    Examples
    --------
    >>> round(estimate_bytes(963_202, 2, "mg-cg") / 1e9, 2)   # MBB 1200 x 400 (measured: 2.58 GB)
    2.41
    >>> round(estimate_bytes(25_904_775, 3, "voxel") / 2**30, 2)  # cantilever3d 324 x 162 x 162
    5.57
    """
    return float(n_dofs) * _per_dof(path, dim)[0] + _factor_bytes(coarse_dofs, dim)


def _factor_bytes(n_dofs: float, dim: int) -> float:
    """A direct factor's bytes for `n_dofs`, counted from `DIRECT_MEASURED_AT` on (else 0)."""
    if dim not in DIRECT_MEASURED_AT or n_dofs < DIRECT_MEASURED_AT[dim]:
        return 0.0
    return float(n_dofs) * BYTES_PER_DOF["direct"][dim]


def _bytes(n: float) -> str:
    for unit, size in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30),
                       ("MiB", 2**20)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n / 2**10:.3g} KiB"


def _per(b: float) -> str:
    return f"{b / 1e3:.3g} kB" if b >= 1e3 else f"{b:.3g} B"


def _refuse(need: float, what: str, needs: str, fix: str, limit: int | None) -> float:
    """`need` bytes, or `MeshTooLargeError` when they exceed `limit` (physical memory)."""
    have = physical_memory() if limit is None else int(limit)
    if have and need > have:
        raise MeshTooLargeError(f"{what}: {needs}, more than the {_bytes(have)} of physical "
                                f"memory here; {fix}")
    return need


def check_dofs(n_dofs: float, dim: int, what: str, limit: int | None = None,
               path=MESH_PATHS, others=(), coarse: tuple = (0, "")) -> float:
    """Refuse `n_dofs` unknowns whose `estimate_bytes` on `path` exceed `limit` (physical memory).

    Returns the estimate in bytes. `what` names the size in the user's terms
    (``"fem.rectangle(100000, 100000)"``, ``"--nelx 100000 --nely 100000"``).
    `others` are ``(path, how)`` pairs, the other paths the caller can take
    and how the user asks for each (``("voxel", "--solver voxel")``): a refusal
    names the first that fits as the fix, else it says how many dofs fit.
    `coarse` is ``(dofs, shape)`` of the voxel path's coarsest multigrid level
    (`estimate_bytes`' `coarse_dofs`); where its factor is most of the
    estimate the message says so and the fix is element counts that coarsen.

    Examples
    --------
    >>> check_dofs(2e16, 2, "fem.rectangle(100000000, 100000000)", limit=128 * 2**30,
    ...            path="mg-cg")
    Traceback (most recent call last):
    ...
    topopt.fem.budget.MeshTooLargeError: fem.rectangle(100000000, 100000000): 2e+16 degrees of freedom on multigrid CG on the assembled matrix (mg-cg) need an estimated 43.4 EiB (2.5 kB per dof in 2-D, measured), more than the 128 GiB of physical memory here; use a coarser mesh: about 5.5e+07 dofs fit on this path here
    >>> check_dofs(25_904_775, 3, "--nelx 324 --nely 162 --nelz 162 --solver mg-cg",
    ...            limit=24 * 2**30, path="mg-cg", others=[("voxel", "--solver voxel")])
    Traceback (most recent call last):
    ...
    topopt.fem.budget.MeshTooLargeError: --nelx 324 --nely 162 --nelz 162 --solver mg-cg: 2.59e+07 degrees of freedom on multigrid CG on the assembled matrix (mg-cg) need an estimated 227 GiB (9.4 kB per dof in 3-D, measured), more than the 24 GiB of physical memory here; --solver voxel needs an estimated 5.57 GiB
    """
    per_dof, taken = _per_dof(path, dim)
    coarse_need = _factor_bytes(coarse[0], dim) if path == "voxel" else 0.0
    need = float(n_dofs) * per_dof + coarse_need
    have = physical_memory() if limit is None else int(limit)
    fix = f"use a coarser mesh: about {have / per_dof:.2g} dofs fit on this path here"
    note = ""
    if coarse_need > 0.5 * need:
        note = (f", and {_bytes(coarse_need)} for the direct factor of its coarsest multigrid "
                f"level, {coarse[1]} elements ({float(coarse[0]):.3g} dofs)")
        fix = ("use element counts that coarsen by 4, 3 or 2 down to a small grid (multiples "
               "of 8 or 12)")
    for other, how in others:
        other_need = estimate_bytes(n_dofs, dim, other, coarse[0] if other == "voxel" else 0)
        if other_need <= have:
            fix = f"{how} needs an estimated {_bytes(other_need)}"
            break
    if isinstance(path, str):
        where, per = PATH_NAMES[taken], f"{_per(per_dof)} per dof in {dim}-D, measured"
    else:
        where = "an assembled matrix"
        per = f"{_per(per_dof)} per dof in {dim}-D, measured: the least of its solvers, {taken}"
    per += note
    return _refuse(need, what, f"{float(n_dofs):.3g} degrees of freedom on {where} need an "
                   f"estimated {_bytes(need)} ({per})", fix, have)


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
    the mesh allocates, so no mesh that fits is refused; the run's own estimate
    (`check_dofs`) is checked where a model is made, with its real number of
    unknowns. Returns the bytes of those arrays.

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
    fix = "use a coarser mesh"
    if dim == 3:
        fix += " (on a box, the voxel path, topopt.grid, builds no mesh)"
    return _refuse(need, what, f"its node coordinates and connectivity alone need "
                   f"{_bytes(need)}", fix, limit)


def check_unknowns(mesh, components: int, what: str) -> None:
    """`check_dofs` for a model of `components` unknowns per node of `mesh` (2-D, 3-D), on
    the least of the mesh paths (`MESH_PATHS`: the model does not know its solver yet)."""
    dim, n_nodes = mesh.p.shape
    if dim in (2, 3):
        others = [("voxel", "on a box or rectangle, the voxel path (topopt.grid: Grid, "
                   "grid_elasticity, solver='voxel')")]
        check_dofs(n_nodes * components, dim, f"{what} on a mesh of {n_nodes} nodes",
                   path=MESH_PATHS, others=others)
