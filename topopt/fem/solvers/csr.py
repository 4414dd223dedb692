"""CSR helpers shared by the free-dof system (`topopt.fem.system`) and the multigrid levels.

A pattern is built once from sorted unique keys ``row * n + col``; each
design then only fills ``data`` (`csr_from_parts` wraps the arrays without
scipy's checks and copies).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps

__all__ = ["csr_structure", "csr_from_parts", "compact_index"]


def csr_structure(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, columns and CSR row pointer of sorted unique keys ``row * n + col``.

    Examples
    --------
    >>> import numpy as np
    >>> rows, cols, indptr = csr_structure(np.array([0, 1, 3]), 2)
    >>> rows.tolist(), cols.tolist(), indptr.tolist()
    ([0, 0, 1], [0, 1, 1], [0, 2, 3])
    """
    rows, cols = keys // n, keys % n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return rows, cols, indptr


def csr_from_parts(data: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
                   n: int) -> sps.csr_matrix:
    """The ``(n, n)`` CSR matrix with these arrays, taken as they are (no copy, no check).

    Examples
    --------
    >>> import numpy as np
    >>> csr_from_parts(np.array([2.0, 3.0]), np.array([0, 1, 2]), np.array([1, 0]), 2).toarray()
    array([[0., 2.],
           [3., 0.]])
    """
    A = sps.csr_matrix((n, n))
    A.data, A.indices, A.indptr = data, indices, indptr
    return A


def compact_index(a: np.ndarray) -> np.ndarray:
    """`a` as int32 when its values fit (halves the index traffic of sparse products).

    Examples
    --------
    >>> import numpy as np
    >>> compact_index(np.array([0, 5])).dtype.name, compact_index(np.array([2 ** 40])).dtype.name
    ('int32', 'int64')
    """
    return a.astype(np.int32) if a.size and a.max() < 2 ** 31 - 1 else a
