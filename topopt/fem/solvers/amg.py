"""The ``"amg-cg"`` backend: CG preconditioned by pyamg's smoothed aggregation.

Smoothed aggregation (Vanek, Mandel & Brezina, "Algebraic multigrid by
smoothed aggregation for second and fourth order elliptic problems",
Computing 56 (1996) 179-196) with the rigid-body modes as near-nullspace,
for unstructured meshes; optional dependency (``pip install
'topopt[fast]'``). The hierarchy is set up once per design.
"""

from __future__ import annotations

import scipy.sparse as sps

from .direct import FAST_EXTRA
from .krylov import IterativeFactor, _options
from ..supports import rigid_body_modes

__all__ = ["SmoothedAggregation"]


class SmoothedAggregation:
    """pyamg smoothed-aggregation AMG with a rigid-body near-nullspace, set up per design.

    Parameters
    ----------
    system : LinearSystem
    geometry : (p, nodal_dofs) or None
        Without it the near-nullspace is the constant vector (pyamg's default).
    options : dict

    Examples
    --------
    >>> import numpy as np, skfem
    >>> from topopt import fem
    >>> mesh = skfem.MeshTri.init_symmetric().refined(3)
    >>> model = fem.elasticity(mesh).fix(nodes=lambda x: x[0] == 0)
    >>> f = model.point_load((1.0, 1.0), (0.0, -1.0))
    >>> u = model.solve(np.ones(model.n_el), f, solver="amg-cg")
    >>> bool(np.allclose(u, model.solve(np.ones(model.n_el), f, solver="superlu")))
    True
    """

    def __init__(self, system, geometry=None, options: dict | None = None):
        try:
            import pyamg  # noqa: F401
        except ImportError as err:
            raise ImportError(f"solver='amg-cg' needs pyamg: {FAST_EXTRA}") from err
        _options(options)
        self.B = None
        if geometry is not None:
            p, nodal_dofs = geometry
            self.B = rigid_body_modes(p, nodal_dofs, system.ndof)[system.free]
        self.counts = getattr(system, "counts", None)
        self.warm: dict = {}
        self.log: list[int] = []           # CG iterations of every solve

    def factor(self, A: sps.csr_matrix, a, options: dict) -> "IterativeFactor":
        import pyamg
        options = _options(options)
        ml = pyamg.smoothed_aggregation_solver(A, B=self.B, symmetry="symmetric",
                                               max_coarse=500)
        M = ml.aspreconditioner(cycle="V")
        return IterativeFactor(A, lambda r: M @ r, options, self.counts, self.warm, self.log)
