"""A PDE filter's matrix on ``solver="petsc"``: the one place outside the state solve that needs it.

`HelmholtzFilter` (`topopt.design.filters`) solves ``Kf y = T x`` once per
design; on ``solver="petsc"`` problems that solve runs by CG across the MPI
ranks as the state solve does. `filter_solver` maps a problem's state solver
to the filter's, `lattice_filter_system` builds the filter's system.
"""

from __future__ import annotations

import numpy as np

__all__ = ["filter_solver", "lattice_filter_system"]


def filter_solver(solver: str) -> str | None:
    """The `HelmholtzFilter` solver for a problem whose state solver is `solver`.

    ``"petsc"`` for ``"petsc"`` (the filter's PDE on the ranks too), else None
    (SuperLU on this process).

    Examples
    --------
    >>> filter_solver("petsc"), filter_solver("auto")
    ('petsc', None)
    """
    return "petsc" if solver == "petsc" else None


def lattice_filter_system(basis, form, rtol: float = 1e-10, **params):
    """``Kf = sum_e K_e`` of the bilinear `form` as a `LinearSystem` on ``"petsc"``, and its factor.

    The mesh must be a uniform quad or hex lattice (every element a translate
    of the first: one element matrix); no fixed dofs; CG to `rtol` with PCMG
    on the lattice hierarchy, set up once (all coefficients 1).

    Raises
    ------
    ValueError
        If the mesh is not a uniform lattice (use ``solver=None``).
    """
    from ..models import _local, _translates
    from ..system import LinearSystem
    mesh = basis.mesh
    if not _translates(mesh):
        raise ValueError("HelmholtzFilter(solver='petsc') needs a uniform quadrilateral or "
                         "hexahedral lattice (fem.rectangle, fem.box); use solver=None")
    Ke = _local(form, basis, True, **params)
    system = LinearSystem(basis.element_dofs.T, Ke, basis.N, np.zeros(0, dtype=np.int64),
                          solver="petsc", geometry=(mesh.p, basis.nodal_dofs),
                          solver_options={"rtol": rtol})
    return system, system.factorize(np.ones(mesh.t.shape[1]))
