"""``solver="auto"``: the backend for a system, by dimension and size.

The rule comes from ``scripts/benchmarks/benchmark_auto.py`` (per design iteration of
MMA on the MBB beam and the 3-D cantilever, every installed backend, the
medians of several runs; the figures are in that script's docstring and
``results/benchmark_auto.json``):

* complex or non-symmetric matrices: the first direct backend that takes
  them (UMFPACK, else SuperLU);
* real symmetric positive definite ones in 3-D on a structured hexahedral
  lattice from `ITERATIVE_MIN_DOFS` free dofs on: geometric multigrid CG
  (``"mg-cg"``), whose cost grows linearly with the size where a 3-D
  factorization's grows with its square;
* otherwise the fastest installed direct backend (CHOLMOD, else SuperLU);
  `auto_reanalysis` (from `AUTO_MIN_DOFS` free dofs in 3-D) decides whether
  its designs reuse an earlier factor (`topopt.fem.solvers.reanalysis`);
* on ``solver="petsc"``, ``pc="auto"`` is `auto_pc`: PCMG on lattices, else GAMG;
* a problem on a structured 3-D grid from `VOXEL_MIN_DOFS` dofs on takes the
  matrix-free voxel path (`auto_voxel`: `topopt.grid`, solver ``"voxel"``).

Every threshold of ``"auto"`` is here.

`describe` says what was picked and why, for the first line of a run.
"""

from __future__ import annotations

import numpy as np

from .lattice import lattice

__all__ = ["ITERATIVE_MIN_DOFS", "AUTO_MIN_DOFS", "VOXEL_MIN_DOFS", "auto_solver",
           "auto_reanalysis", "auto_pc", "auto_voxel", "auto_path", "describe"]

ITERATIVE_MIN_DOFS = {3: 7_000}
"""``"auto"`` picks ``"mg-cg"`` from these free-dof counts (by dimension) on lattices.

Between the sizes measured (``results/benchmark_auto.json``): in 3-D CHOLMOD
was faster at 16 x 8 x 8 (3 888 free dofs: 0.057 against 0.087 s per
iteration), MG-CG at 24 x 12 x 12 (12 168: 0.13 against 0.49 s) and 40 x 20 x
20 (0.86 against 5.3 s). Never in 2-D: MG-CG's first 10 iterations of the MBB
beam 300 x 100 were faster (0.38 against 0.44 s), but over 100 evaluations at
600 x 200 it took 2.28 s per evaluation against CHOLMOD's 0.79 (its CG
iterations grow with the void regions of later designs)."""


AUTO_MIN_DOFS = {3: 30_000}
"""``reanalysis="auto"`` turns it on from these free-dof counts, by spatial dimension.

Measured (``scripts/benchmarks/benchmark_reanalysis.py``, 100 MMA evaluations, CHOLMOD,
``maxiter`` 25): the 3-D cantilever 40 x 20 x 20 (52 920 free dofs) took
0.78 times as long per evaluation with reanalysis (64 factorizations instead
of 100; ``maxiter`` 8: 92, 40: 59 and no faster), 24 x 12 x 12 (12 168)
1.00 times; the MBB beam 600 x 200 (241 k dofs) 1.02 times (a 2-D
factorization costs only ~5 pairs of triangular solves): never in 2-D."""


VOXEL_MIN_DOFS = {3: 30_000}
"""``"auto"`` takes the voxel path (`topopt.grid`) on structured grids from these dof counts.

Measured by ``scripts/benchmarks/benchmark_scale.py --crossover`` (``results/benchmark_scale.json``,
median s per iteration, voxel against mesh mg-cg): 16x8x8 (4 131 dofs) 0.053 against
0.037, 24x12x12 (12 675) 0.092 against 0.056, 32x16x16 (28 611) 0.152 against 0.187,
48x24x24 (91 875) 0.35 against 0.54 (setup 0.07 against 4.3 s)."""


def auto_voxel(dim: int, ndof: int) -> bool:
    """Whether ``solver="auto"`` means the voxel path for a `dim`-D grid of `ndof` dofs.

    Examples
    --------
    >>> auto_voxel(3, 25_000_000), auto_voxel(3, 1_000), auto_voxel(2, 10**7)
    (True, False, False)
    """
    return dim in VOXEL_MIN_DOFS and ndof >= VOXEL_MIN_DOFS[dim]


def _iterative(dim, free_dofs: float) -> bool:
    """Whether a real SPD system of `free_dofs` on a `dim`-D lattice is large enough for mg-cg."""
    return dim in ITERATIVE_MIN_DOFS and free_dofs >= ITERATIVE_MIN_DOFS[dim]


def auto_path(dim: int, ndof: float, grid: bool = False, lattice: bool = True,
              spd: bool = True) -> str:
    """The path ``solver="auto"`` takes for `ndof` unknowns in `dim` dimensions, before any
    allocation: ``"voxel"``, ``"mg-cg"`` or ``"direct"``.

    The decisions of `auto_voxel` (a problem that can run on a structured `grid`)
    and `auto_solver` (a real symmetric positive definite system, `spd`, on a
    hexahedral `lattice`), taken on the total count of unknowns: the free ones,
    which `auto_solver` counts, differ by the supports only, and near
    `ITERATIVE_MIN_DOFS` either path needs a few MB. `topopt.fem.budget`
    estimates a run's memory on this path.

    Examples
    --------
    >>> auto_path(3, 25_904_775, grid=True), auto_path(3, 25_904_775), auto_path(2, 10**6)
    ('voxel', 'mg-cg', 'direct')
    >>> auto_path(3, 10**6, lattice=False), auto_path(3, 1_000, grid=True)
    ('direct', 'direct')
    """
    if grid and auto_voxel(dim, ndof):
        return "voxel"
    if spd and lattice and _iterative(dim, ndof):
        return "mg-cg"
    return "direct"


def _on_lattice(geometry, n_loc: int) -> bool:
    """Whether the mesh is a full tensor lattice of quads/hexes (multigrid applies)."""
    if geometry is None:
        return False
    p, nodal_dofs = geometry
    dim, components = np.shape(p)[0], np.shape(nodal_dofs)[0]
    return n_loc == components * 2 ** dim and lattice(np.asarray(p)) is not None


def auto_solver(direct: list[str], spd: bool, geometry, n_loc: int, free_dofs: int) -> str:
    """The backend ``"auto"`` means for such a system.

    Parameters
    ----------
    direct : list of str
        The installed direct backends that take the matrix, fastest first.
    spd : bool
        Real symmetric (positive definite) matrix.
    geometry : (p, nodal_dofs) or None
        Node coordinates and dofs per node (`LinearSystem`'s `geometry`).
    n_loc, free_dofs : int
        Dofs per element and free dofs.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> model = fem.elasticity(fem.box(30, 15, 15))
    >>> geometry = (model.mesh.p, model.basis.nodal_dofs)
    >>> auto_solver(["cholmod", "superlu"], True, geometry, 24, model.ndof)
    'mg-cg'
    >>> auto_solver(["cholmod", "superlu"], True, geometry, 24, 1000)
    'cholmod'
    """
    dim = None if geometry is None else np.shape(geometry[0])[0]
    if spd and _iterative(dim, free_dofs) and _on_lattice(geometry, n_loc):
        return "mg-cg"
    return direct[0]


def auto_reanalysis(system) -> bool:
    """Whether ``reanalysis="auto"`` turns reanalysis on for a direct-backend `system`.

    On for real symmetric systems with a mesh geometry and at least
    `AUTO_MIN_DOFS` free dofs for its dimension.

    Examples
    --------
    >>> from topopt import fem
    >>> model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda x: x[0] == 0)
    >>> auto_reanalysis(model.system("superlu"))
    False
    """
    if not (system.real and system.symmetric) or system.geometry is None:
        return False
    dim = np.shape(system.geometry[0])[0]
    return system.free.size >= AUTO_MIN_DOFS.get(dim, np.inf)


def auto_pc(p) -> str:
    """The preconditioner ``pc="auto"`` means on ``solver="petsc"``: PCMG on lattices, else GAMG.

    Examples
    --------
    >>> from topopt import fem
    >>> auto_pc(fem.rectangle(4, 2).p), auto_pc(fem.l_shape(8, 4).p)
    ('mg', 'gamg')
    """
    return "mg" if lattice(np.asarray(p, dtype=float)) else "gamg"


def describe(system) -> str:
    """One line: the backend of `system`, its size and, for ``"auto"``, why.

    Examples
    --------
    >>> from topopt import fem
    >>> model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda x: x[0] == 0)
    >>> describe(model.system("superlu"))
    'solver superlu (24 free dofs, 2-D)'
    """
    summary = getattr(system, "summary", None)
    if summary is not None:                          # the voxel path's own line
        line = summary()
        if getattr(system, "requested_solver", None) == "auto":
            line = line[:-1] + ", picked by solver='auto': a structured grid)"
        return line
    geometry = system.geometry
    dim = "" if geometry is None else f", {np.shape(geometry[0])[0]}-D"
    line = f"solver {system.solver} ({system.free.size} free dofs{dim}"
    if getattr(system, "requested_solver", None) == "auto":
        line += ", picked by solver='auto'"
    if getattr(system, "reanalysis", None) is not None:
        line += ", reanalysis on"
    if system.solver == "petsc":
        context = system._iterative
        line += f", pc {context.options['pc']}, {context.comm.size} MPI ranks"
    return line + ")"
