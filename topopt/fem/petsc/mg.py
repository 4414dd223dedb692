"""The geometric multigrid hierarchy of the PETSc backend (``pc="mg"``; pure numpy).

The serial ``"mg-cg"`` hierarchy (`topopt.fem.solvers.multigrid`) on the rank layout
of `topopt.fem.petsc.layout`: the node lattice of a structured
quadrilateral/hexahedral mesh is coarsened by two per direction
(semi-coarsening keeps the thin directions of slender domains, as
``"mg-cg"``), the prolongation of each level is bilinear/trilinear
interpolation, and PETSc's PCMG forms the coarse operators as Galerkin
products ``A_c = P^T A P`` (Amir, Aage & Lazarov, Struct. Multidisc. Optim.
49 (2014) 815-829; the same hierarchy as TopOpt_in_PETSc's DMDA, Aage,
Andreassen & Lazarov, Struct. Multidisc. Optim. 51 (2015) 565-572).

Unlike the serial hierarchy, every level keeps its fixed dofs (the PETSc
matrix has identity rows there): a coarse dof is fixed when the fine dof
at the same node is, and its prolongation column is the injection onto that
fine dof alone, while free fine dofs interpolate from free coarse dofs only.
Then ``P^T A P`` has a decoupled diagonal row at every fixed coarse dof and,
on the free dofs, the serial hierarchy's operator.

Each coarse node belongs to the rank that owns the fine node at the same
place, and the nodes of a level are numbered rank by rank (dofs node by
node), so a rank's rows of ``P`` mostly reference its own coarse rows.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sps

from ..solvers.lattice import coarsen, lattice

__all__ = ["hierarchy", "rank_rows", "COARSE_SIZE", "SEMI_RATIO", "MAX_LEVELS"]

COARSE_SIZE = 3000
"""Coarsen while a level has more dofs than this (PETSc solves the coarsest by LU)."""

SEMI_RATIO = 0.25
"""A direction is coarsened when it has at least this fraction of the most cells (as mg-cg)."""

MAX_LEVELS = 10
"""The most levels, the fine one included."""


def _level_numbering(owner: np.ndarray, n_ranks: int, ncomp: int):
    """Rank-by-rank node numbering of one level: (new number of each node, row bounds)."""
    order = np.argsort(owner, kind="stable")
    new = np.empty(owner.size, dtype=np.int64)
    new[order] = np.arange(owner.size)
    node_starts = np.searchsorted(owner[order], np.arange(n_ranks + 1), side="left")
    return new, node_starts * ncomp


def _with_fixed(P: sps.csr_matrix, ncomp: int, fixed: np.ndarray, inj: np.ndarray):
    """`P` (`topopt.fem.solvers.coarsen`) with the fixed-dof rule of the module."""
    P = P.tocoo()
    c_fixed = fixed.reshape(-1, ncomp)[inj].ravel()
    keep = ~fixed[P.row] & ~c_fixed[P.col]
    f_dofs = (inj[:, None] * ncomp + np.arange(ncomp)).ravel()      # fine dof of coarse dof
    fc = np.flatnonzero(c_fixed)
    rows = np.concatenate([P.row[keep], f_dofs[fc]])
    cols = np.concatenate([P.col[keep], fc])
    vals = np.concatenate([P.data[keep], np.ones(fc.size)])
    return sps.csr_matrix((vals, (rows, cols)), shape=P.shape), c_fixed


def _fine_level(layout, index, shape, nodal_dofs, fixed):
    """Owner of every lattice node, PETSc row and fixedness of every lattice dof (the mesh)."""
    ncomp, n_nodes = nodal_dofs.shape
    lex = np.ravel_multi_index(index, shape, order="F")             # mesh node -> lattice node
    new_node = layout.petsc[nodal_dofs[0]] // ncomp
    owner = np.empty(n_nodes, dtype=np.int64)
    owner[lex] = np.searchsorted(layout.node_starts, new_node, side="right") - 1
    lat = np.empty(nodal_dofs.size, dtype=np.int64)                 # mesh dof -> lattice dof
    lat[nodal_dofs] = lex[None, :] * ncomp + np.arange(ncomp)[:, None]
    perm = np.empty(nodal_dofs.size, dtype=np.int64)                # lattice dof -> PETSc row
    perm[lat] = layout.petsc
    is_fixed = np.zeros(nodal_dofs.size, dtype=bool)
    is_fixed[lat[np.asarray(fixed, dtype=np.int64)]] = True
    return owner, perm, is_fixed


def hierarchy(layout: SimpleNamespace, p: np.ndarray, nodal_dofs: np.ndarray,
              fixed: np.ndarray, coarse_size: int = COARSE_SIZE,
              semi_ratio: float = SEMI_RATIO, max_levels: int = MAX_LEVELS) -> list:
    """The prolongations of all levels in the PETSc numbering, finest first.

    Parameters
    ----------
    layout : SimpleNamespace
        `topopt.fem.petsc.partition` of the system.
    p, nodal_dofs : ndarray
        Node coordinates ``(dim, n_nodes)`` and dofs of each node.
    fixed : ndarray of int
        The system's fixed dofs.

    Returns
    -------
    list of SimpleNamespace
        One per coarse level: ``P`` (CSR, rows in the finer level's PETSc
        numbering, columns in this level's), ``row_starts`` (this level's row
        bounds per rank) and ``n`` (its dofs).

    Raises
    ------
    ValueError
        If the nodes are not a full tensor-product lattice.

    Examples
    --------
    A 16 x 8 clamped plate on two ranks: 306 dofs, then 90, then 30.

    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.fem.petsc.layout import partition
    >>> model = fem.elasticity(fem.rectangle(16, 8)).fix(nodes=lambda x: x[0] == 0)
    >>> S, nodal = model.system("cholmod"), model.basis.nodal_dofs
    >>> lay = partition(S.element_dofs, nodal, S.ndof, 2)
    >>> [lvl.n for lvl in hierarchy(lay, model.mesh.p, nodal, S.fixed, coarse_size=50)]
    [90, 30]
    """
    p, nodal_dofs = np.asarray(p, dtype=float), np.atleast_2d(nodal_dofs).astype(np.int64)
    found = lattice(p)
    if found is None:
        raise ValueError("pc='mg' needs a structured mesh whose nodes form a full "
                         "tensor-product lattice (fem.rectangle, fem.box); use pc='gamg'")
    coords, index = found
    n_ranks = layout.node_starts.size - 1
    owner, perm, is_fixed = _fine_level(layout, index, tuple(c.size for c in coords),
                                        nodal_dofs, fixed)
    ncomp = nodal_dofs.shape[0]
    levels, cur = [], list(coords)
    while (perm.size > coarse_size and len(levels) + 1 < max_levels
           and max(c.size for c in cur) > 2):
        ci, P, inj = coarsen(cur, semi_ratio, ncomp)
        P, c_fixed = _with_fixed(P, ncomp, is_fixed, inj)
        c_owner = owner[inj]
        c_new, row_starts = _level_numbering(c_owner, n_ranks, ncomp)
        c_perm = (c_new[:, None] * ncomp + np.arange(ncomp)).ravel()
        Pp = sps.csr_matrix((P.data, c_perm[P.indices], P.indptr), shape=P.shape)
        rows = np.empty(perm.size, dtype=np.int64)
        rows[perm] = np.arange(perm.size)
        Pp = Pp[rows].tocsr()
        Pp.sort_indices()
        levels.append(SimpleNamespace(P=Pp, row_starts=row_starts, n=int(c_perm.size)))
        cur = [X[c] for X, c in zip(cur, ci)]
        owner, perm, is_fixed = c_owner, c_perm, c_fixed
    return levels


def rank_rows(levels: list, fine_row_starts: np.ndarray, rank: int) -> list[dict]:
    """Rank `rank`'s rows of every prolongation: what `topopt.fem.petsc.rank` builds PCMG from.

    Each entry: ``indptr``, ``indices`` (global columns), ``data``, ``rows``
    (the fine level's row range), ``cols`` (this level's), ``n`` (this
    level's size), ``n_fine``.
    """
    out, starts = [], np.asarray(fine_row_starts)
    for lvl in levels:
        lo, hi = int(starts[rank]), int(starts[rank + 1])
        block = lvl.P[lo:hi]
        index = np.int32 if lvl.P.shape[0] < 2 ** 31 else np.int64
        out.append({"indptr": block.indptr.astype(index), "indices": block.indices.astype(index),
                    "data": block.data.copy(), "rows": (lo, hi),
                    "cols": (int(lvl.row_starts[rank]), int(lvl.row_starts[rank + 1])),
                    "n": lvl.n, "n_fine": int(lvl.P.shape[0])})
        starts = lvl.row_starts
    return out
