"""Fast assembly of the flow Jacobian: element matrices by einsum, one fixed CSR pattern.

The Jacobian of `model.FlowModel` is a constant matrix ``K`` (viscous and
pressure blocks) plus a velocity-velocity part that changes with the design
and the state: the Brinkman mass ``int alpha phi_a phi_b`` and the Newton
derivative of the convective term. Vector quadratic functions are scalar
ones times unit vectors, so these element matrices are scalar ``(6 x 6)``
(P2 triangles), ``(10 x 10)`` (P2 tetrahedra) or ``(9 x 9)`` (Q2
quadrilaterals) arrays per element,
one einsum each, summed into the data of a CSR pattern fixed at set-up
(``K``'s pattern joined with the element blocks) by one `numpy.bincount`.
The same matrices as scikit-fem's forms (the tests compare them), several
times faster: no per-pair loop, no COO-to-CSR conversion per call.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps

__all__ = ["BlockAssembler"]


class BlockAssembler:
    """``K + (element blocks)`` into one CSR matrix with a pattern computed once.

    Parameters
    ----------
    K : scipy.sparse matrix, (n, n)
        The constant part.
    dofs_u : numpy.ndarray, (nb, dim, nel)
        Velocity dofs of each element: local scalar function ``a``, component ``c``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sps
    >>> from topopt.flow.assembly import BlockAssembler
    >>> dofs = np.array([[[0], [1]], [[2], [3]]])        # 2 nodes x 2 components, 1 element
    >>> asm = BlockAssembler(sps.identity(5, format="csr"), dofs)
    >>> asm.assemble(diagonal=np.ones((2, 2, 1))).toarray()[:4, :4]
    array([[2., 0., 1., 0.],
           [0., 2., 0., 1.],
           [1., 0., 2., 0.],
           [0., 1., 0., 2.]])
    """

    def __init__(self, K, dofs_u: np.ndarray):
        K = sps.csr_matrix(K)
        K.sum_duplicates()
        K.sort_indices()
        n = K.shape[0]
        nb, dim, ne = dofs_u.shape
        self.shape, self.nb, self.dim = K.shape, nb, dim
        rows = np.broadcast_to(dofs_u[:, :, None, None, :], (nb, dim, nb, dim, ne))
        cols = np.broadcast_to(dofs_u[None, None, :, :, :], (nb, dim, nb, dim, ne))
        keys = rows.astype(np.int64).ravel() * n + cols.ravel()
        kr = np.repeat(np.arange(n, dtype=np.int64), np.diff(K.indptr))
        kkeys = kr * n + K.indices
        allkeys = np.concatenate([keys, kkeys])
        order = np.argsort(allkeys)                            # (numpy's unique is slower)
        sk = allkeys[order]
        new = np.empty(sk.size, dtype=bool)
        new[:1], new[1:] = True, sk[1:] != sk[:-1]
        where = np.empty(sk.size, dtype=np.int64)
        where[order] = np.cumsum(new) - 1                      # entry -> position in the pattern
        pattern = sk[new]                                      # sorted: CSR order
        self.indices = (pattern % n).astype(np.int32 if n < 2 ** 31 else np.int64)
        self.indptr = np.searchsorted(pattern, np.arange(n + 1, dtype=np.int64) * n)
        self.nnz = pattern.size
        self.pos = where[:keys.size].reshape(nb, dim, nb, dim, ne)
        # the diagonal-block entries (c == d), for a component-diagonal matrix
        self.pos_diag = np.ascontiguousarray(np.einsum("acbce->abce", self.pos))
        self.base = np.zeros(self.nnz)
        self.base[where[keys.size:]] = K.data                 # K has no duplicates

    def assemble(self, diagonal=None, full=None) -> sps.csr_matrix:
        """``K`` plus the element matrices: `diagonal` ``(nb, nb, nel)`` on every
        component-diagonal block (``delta_cd E_ab``), `full` ``(nb, dim, nb, dim, nel)``."""
        data = self.base.copy()
        if diagonal is not None:
            data += np.bincount(self.pos_diag.ravel(),
                                np.broadcast_to(diagonal[:, :, None, :],
                                                self.pos_diag.shape).ravel(), self.nnz)
        if full is not None:
            data += np.bincount(self.pos.ravel(), full.ravel(), self.nnz)
        # the pattern's arrays copied: the caller may change the matrix in place
        # (FlowModel.jacobian drops its stored zeros)
        return sps.csr_matrix((data, self.indices.copy(), self.indptr.copy()),
                              shape=self.shape)
