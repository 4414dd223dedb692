"""A Helmholtz-filtered field at the quadrature points (`HelmholtzFilter.at_quadrature`)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from .linear_filter import LinearFilter

__all__ = ["QuadratureField"]


class QuadratureField(LinearFilter):
    """``x -> N(x_q) Kf^-1 T x``: a Helmholtz-filtered field at quadrature points.

    Built by `HelmholtzFilter.at_quadrature`; its transpose reuses the
    filter's factorization. Output order: element by element, points within.

    Examples
    --------
    >>> import numpy as np
    >>> from skfem import MeshQuad
    >>> from topopt.design import HelmholtzFilter
    >>> q = HelmholtzFilter(MeshQuad().refined(2), r=0.1).at_quadrature
    >>> q.n_out, bool(np.allclose(q(np.full(16, 0.3)), 0.3))
    (144, True)
    """

    def __init__(self, flt: HelmholtzFilter):
        if not (isinstance(flt, LinearFilter) and hasattr(flt, "basis")):
            raise TypeError(f"flt must be a topopt.design.HelmholtzFilter, got "
                            f"{type(flt).__name__}")
        self.flt, self.n = flt, flt.n
        basis = flt.basis
        n_el, n_q = basis.nelems, basis.X.shape[-1]
        rows = np.arange(n_el * n_q).reshape(n_el, n_q)
        blocks = [sps.csr_matrix((np.asarray(basis.basis[i][0]).ravel(),
                                  (rows.ravel(), np.repeat(basis.element_dofs[i], n_q))),
                                 shape=(n_el * n_q, basis.N)) for i in range(basis.Nbfun)]
        self.Q = sum(blocks[1:], blocks[0]).tocsr()
        self.points_per_element = n_q

    @property
    def n_out(self) -> int:
        return self.Q.shape[0]

    def _forward(self, x):
        return self.Q @ self.flt._solve(self.flt.T @ x, "N")

    def _transpose(self, y):
        return self.flt.T.T @ self.flt._solve(self.Q.T @ y, "T")
