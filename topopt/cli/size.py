"""A problem script's size check: its unknowns, on the solver path its run takes.

`main` (`topopt.cli.script`) calls `size_line` before any work: a size whose
memory estimate (`topopt.fem.budget`) on the path that ``--solver`` takes
exceeds the machine's is a usage error naming the path, the estimate and the
fix; ``--dry-run`` prints its line and stops.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

__all__ = ["grid_dofs", "size_line"]

def grid_dofs(kwargs: Mapping) -> tuple[int, int] | None:
    """``(n_dofs, dim)`` of a grid script's ``nelx``, ``nely`` (, ``nelz``): a vector field.

    Examples
    --------
    >>> grid_dofs({"nelx": 60, "nely": 20}), grid_dofs({"n": 4})
    ((2562, 2), None)
    """
    axes = [kwargs[k] for k in ("nelx", "nely", "nelz") if k in kwargs]
    if len(axes) < 2:
        return None
    return len(axes) * math.prod(int(n) + 1 for n in axes), len(axes)


def size_line(size: Callable, kwargs: Mapping, solvers: Sequence[str] | None = None) -> str:
    """Refuse a size whose memory estimate on the run's solver path exceeds the machine's.

    `size` is the script's ``size(kwargs) -> (n_dofs, dim)`` (`grid_dofs`);
    the path is the one the script's ``--solver`` takes (`topopt.fem.budget.run_path`:
    ``auto`` resolved as the run resolves it; the voxel path where the
    script's `solvers` offer it). A refusal (`MeshTooLargeError`) names the
    options, the path, the estimate, the physical memory and the fix: another
    ``--solver`` of the script that fits, else how many dofs fit. Returns one
    line: the size, the path and its estimate.

    Examples
    --------
    >>> size_line(grid_dofs, {"nelx": 60, "nely": 20, "nelz": 4, "solver": "auto"},
    ...           ("auto", "mg-cg", "voxel")).split(", an estimated")[0]
    '--nelx 60 --nely 20 --nelz 4 --solver auto: 19215 dofs in 3-D on multigrid CG on the assembled matrix (mg-cg)'
    >>> size_line(grid_dofs, {"nelx": 324, "nely": 162, "nelz": 162, "solver": "auto"},
    ...           ("auto", "mg-cg", "voxel")).split(", an estimated")[0]
    '--nelx 324 --nely 162 --nelz 162 --solver auto: 25904775 dofs in 3-D on the voxel path'
    """
    try:
        found = size(kwargs)
    except (ZeroDivisionError, OverflowError):        # a size beyond float range: h = 1e-320
        found = (math.inf, 2)
    names = [k for k in ("nelx", "nely", "nelz", "n", "h") if k in kwargs]
    what = " ".join(f"--{k} {kwargs[k]}" for k in names + ["solver"] if k in kwargs)
    if found is None:
        return f"{what or 'the options'}: no size estimate"
    from ..fem import budget
    n_dofs, dim = found
    solver = kwargs.get("solver", "auto")
    path = budget.run_path(solver, dim, n_dofs, grid="voxel" in (solvers or ()))
    coarse = (0, "")
    if "voxel" in (solvers or ()):        # the voxel path factorizes its coarsest level
        from ..grid.multigrid import coarsest
        coarse = coarsest([kwargs[k] for k in ("nelx", "nely", "nelz")[:dim]], dim)
    need = budget.estimate_bytes(n_dofs, dim, path, coarse[0] if path == "voxel" else 0)
    have = budget.physical_memory()
    if have and need > have:                       # refused: the other paths the script has
        from ..fem.solvers.table import available_solvers
        installed = set(available_solvers(iterative=True)) | {"voxel"}
        others = sorted((budget.estimate_bytes(n_dofs, dim, budget.PATHS[s]), s)
                        for s in (solvers or ()) if s in installed and budget.PATHS[s] != path)
        budget.check_dofs(n_dofs, dim, what or "the mesh", path=path, coarse=coarse,
                          others=[(budget.PATHS[s], f"--solver {s}") for _, s in others])
    short = "the voxel path" if path == "voxel" else budget.PATH_NAMES[path]
    return (f"{what or 'the mesh'}: {n_dofs:.0f} dofs in {dim}-D on {short}, an estimated "
            f"{need / 2**30:.3g} GiB of the {have / 2**30:.3g} GiB here")
