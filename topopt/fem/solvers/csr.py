"""CSR helpers shared by the free-dof system (`topopt.fem.system`) and the multigrid levels.

A pattern is built once from sorted unique keys ``row * n + col``; each
design then only fills ``data`` (`csr_from_parts` wraps the arrays without
scipy's checks and copies). `build_pattern` makes a `LinearSystem`'s
free-dof pattern and the operator ``P`` with ``K.data = P @ a + K0.data``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps

__all__ = ["csr_structure", "csr_from_parts", "compact_index", "build_pattern", "free_local"]


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


def build_pattern(S):
    """Free-dof CSR pattern and the operator ``P`` with ``K.data = P @ a``."""
    if S.K0 is None:
        return _build_pattern_chunked(S)
    loc = free_local(S)
    rows = np.repeat(loc, S.n_loc, axis=1).ravel()
    cols = np.tile(loc, (1, S.n_loc)).ravel()
    elem = np.repeat(np.arange(S.n_el), S.n_loc ** 2)
    vals = (np.broadcast_to(S.Ke.ravel(), (S.n_el, S.n_loc ** 2)).ravel()
            if S.uniform else S.Ke.reshape(S.n_el, -1).ravel())
    keep = (rows >= 0) & (cols >= 0)
    rows, cols, elem, vals = rows[keep], cols[keep], elem[keep], vals[keep]
    n = S.free.size
    K0 = S.K0[S.free][:, S.free].tocoo()
    keys, inverse = np.unique(np.concatenate([rows, K0.row]) * n
                              + np.concatenate([cols, K0.col]), return_inverse=True)
    S.P = sps.csr_matrix((vals, (inverse[:rows.size], elem)),
                            shape=(keys.size, S.n_el))
    S.K0_data = np.zeros(keys.size, dtype=K0.data.dtype)
    np.add.at(S.K0_data, inverse[rows.size:], K0.data)
    _set_pattern(S, keys)


def _build_pattern_chunked(S, chunk_entries: int = 2 ** 23):
    """`_build_pattern` without ``K0``, in blocks of rows (the same pattern and ``P``).

    Sorting all ``n_el n_loc^2`` entries at once took 6 GB on a 80 x 40 x
    40 hex mesh (74 M entries); blocks of ~8 M entries keep the peak near
    the size of ``P`` itself.
    """
    loc = free_local(S)
    n, n_loc = S.free.size, S.n_loc
    e_idx, i_idx = np.nonzero(loc >= 0)                     # (element, local row) pairs
    prow = loc[e_idx, i_idx]
    order = np.argsort(prow, kind="stable")                 # by row, then element
    e_idx, i_idx, prow = e_idx[order], i_idx[order], prow[order]
    del order
    total = int(np.sum((loc >= 0).sum(axis=1)[e_idx]))
    data = np.empty(total)
    indices = np.empty(total, dtype=np.int32 if S.n_el < 2 ** 31 else np.int64)
    # blocks of whole rows
    starts = np.arange(0, prow.size, max(1, chunk_entries // n_loc))
    starts = np.unique(np.searchsorted(prow, prow[starts], side="left"))
    bounds = np.append(starts, prow.size)
    keys_list, count_list, offset = [], [], 0
    for s, t in zip(bounds[:-1], bounds[1:]):
        e, i, r = e_idx[s:t], i_idx[s:t], prow[s:t]
        c = loc[e]                                          # (m, n_loc) columns
        v = S.Ke[i] if S.uniform else S.Ke[e, i]
        keep = c >= 0
        keys = (r[:, None] * n + c)[keep]
        o = np.argsort(keys, kind="stable")
        keys = keys[o]
        m = keys.size
        data[offset:offset + m] = v[keep][o]
        indices[offset:offset + m] = np.broadcast_to(e[:, None], c.shape)[keep][o]
        first = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
        keys_list.append(keys[first])
        count_list.append(np.diff(np.append(first, m)))
        offset += m
    keys = np.concatenate(keys_list)
    nnz = keys.size
    P_indptr = np.zeros(nnz + 1, dtype=np.int64)
    np.cumsum(np.concatenate(count_list), out=P_indptr[1:])
    del keys_list, count_list
    S.P = sps.csr_matrix((data, indices, P_indptr), shape=(nnz, S.n_el))
    S.K0_data = None
    _set_pattern(S, keys)


def free_local(S) -> np.ndarray:
    """Free-dof index of each element's local dofs, -1 at fixed dofs: (n_el, n_loc)."""
    index = -np.ones(S.ndof, dtype=np.int64)
    index[S.free] = np.arange(S.free.size)
    return index[S.element_dofs]


def _set_pattern(S, keys: np.ndarray) -> None:
    """The CSR pattern from the sorted unique keys ``row * n_free + col``."""
    S.rows, S.cols, indptr = csr_structure(keys, S.free.size)
    S.indptr, S.indices = indptr, S.cols
    S.lower = S.rows >= S.cols
    S._diag_pos = np.flatnonzero(S.rows == S.cols)
    if S._diag_pos.size != S.free.size:      # a free dof in no element: no check
        S._diag_pos = None
    if S.rows.size < 2 ** 31 - 1:         # else scipy downcasts at every assembly
        S.indptr, S.indices = indptr.astype(np.int32), S.cols.astype(np.int32)
