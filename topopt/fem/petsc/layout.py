"""How a `LinearSystem` is split over MPI ranks for the PETSc backend (pure numpy).

Each rank owns a contiguous block of elements (``starts[r] <= e <
starts[r+1]``, sizes differing by at most one) and the nodes that its
elements touch first: a node shared by elements of several ranks belongs to
the lowest of them. Nodes are renumbered rank by rank (the original order
inside a rank), and a node's dofs are numbered together, ``new_node * bs +
component`` with ``bs`` the components per node: a node's dofs never split
across ranks, and the PETSc matrix has block size ``bs`` (GAMG keeps the
rigid-body modes whole). Nothing here needs MPI or PETSc.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

__all__ = ["element_blocks", "partition", "rank_payload"]


def element_blocks(n_el: int, n_ranks: int) -> np.ndarray:
    """Bounds of the contiguous element blocks: ``(n_ranks + 1,)``, sizes differing by <= 1.

    Examples
    --------
    >>> element_blocks(10, 3)
    array([ 0,  3,  6, 10])
    """
    return (np.arange(n_ranks + 1, dtype=np.int64) * n_el) // n_ranks


def _nodes_of_dofs(nodal_dofs: np.ndarray, ndof: int) -> tuple[np.ndarray, np.ndarray]:
    """Node and component of every dof; ValueError unless every dof is a nodal one."""
    bs, n_nodes = nodal_dofs.shape
    if nodal_dofs.size != ndof or np.unique(nodal_dofs).size != ndof \
            or nodal_dofs.min() < 0 or nodal_dofs.max() >= ndof:
        raise ValueError(f"solver='petsc' needs one dof per node and component: nodal_dofs "
                         f"has shape {nodal_dofs.shape} for {ndof} dofs")
    node = np.empty(ndof, dtype=np.int64)
    comp = np.empty(ndof, dtype=np.int64)
    node[nodal_dofs] = np.arange(n_nodes)[None, :]
    comp[nodal_dofs] = np.arange(bs)[:, None]
    return node, comp


def partition(element_dofs: np.ndarray, nodal_dofs: np.ndarray, ndof: int,
              n_ranks: int) -> SimpleNamespace:
    """The element blocks, node owners and the node-wise dof numbering for `n_ranks` ranks.

    Returns a namespace with ``starts`` (element block bounds), ``node_starts``
    (bounds of each rank's nodes in the new numbering), ``order`` (original
    node of each new node), ``petsc`` (new number of each original dof), ``bs``.

    Examples
    --------
    Three 1-D two-node elements, one dof per node, on two ranks: rank 0 owns
    element 0 and nodes 0, 1; rank 1 elements 1, 2 and nodes 2, 3.

    >>> import numpy as np
    >>> lay = partition(np.array([[0, 1], [1, 2], [2, 3]]), np.arange(4)[None, :], 4, 2)
    >>> lay.starts, lay.node_starts, lay.petsc
    (array([0, 1, 3]), array([0, 2, 4]), array([0, 1, 2, 3]))
    """
    element_dofs = np.asarray(element_dofs, dtype=np.int64)
    nodal_dofs = np.asarray(nodal_dofs, dtype=np.int64)
    bs, n_nodes = nodal_dofs.shape
    node, comp = _nodes_of_dofs(nodal_dofs, ndof)
    n_el = element_dofs.shape[0]
    starts = element_blocks(n_el, n_ranks)
    first = np.full(n_nodes, n_el, dtype=np.int64)     # first element touching each node
    el = np.broadcast_to(np.arange(n_el, dtype=np.int64)[:, None], element_dofs.shape)
    np.minimum.at(first, node[element_dofs].ravel(), el.ravel())
    owner = np.minimum(np.searchsorted(starts, first, side="right") - 1, n_ranks - 1)
    order = np.argsort(owner, kind="stable")            # new node -> original node
    new = np.empty(n_nodes, dtype=np.int64)
    new[order] = np.arange(n_nodes)
    node_starts = np.searchsorted(owner[order], np.arange(n_ranks + 1), side="left")
    return SimpleNamespace(starts=starts, node_starts=node_starts, order=order,
                           petsc=new[node] * bs + comp, bs=bs, n_nodes=n_nodes)


def rank_payload(layout: SimpleNamespace, rank: int, element_dofs: np.ndarray,
                 fixed: np.ndarray, p: np.ndarray, Ke: np.ndarray) -> dict:
    """What rank `rank` needs to assemble and precondition its rows.

    ``edofs``: its elements' dofs in the new numbering, -1 at fixed dofs
    (PETSc's COO assembly ignores those entries); ``element_rows``: the same
    without the -1 (the element sensitivities read every dof); ``fixed_rows``: its fixed
    dofs (identity rows scaled by ``mean(diag Ke)``); ``coords``: its nodes'
    coordinates, node by node (the rigid-body near-nullspace); ``rows``: its
    range of rows ``[lo, hi)``; ``n``: the global size.
    """
    bs = layout.bs
    s, t = layout.starts[rank], layout.starts[rank + 1]
    new = layout.petsc.copy()
    new[fixed] = -1
    edofs = new[element_dofs[s:t]]
    lo, hi = layout.node_starts[rank] * bs, layout.node_starts[rank + 1] * bs
    fixed_new = np.sort(layout.petsc[fixed])
    fixed_rows = fixed_new[(fixed_new >= lo) & (fixed_new < hi)]
    nodes = layout.order[layout.node_starts[rank]:layout.node_starts[rank + 1]]
    index = np.int32 if layout.petsc.size < 2 ** 31 else np.int64
    return {"edofs": edofs.astype(index), "fixed_rows": fixed_rows.astype(index),
            "element_rows": layout.petsc[element_dofs[s:t]].astype(index),
            "coords": np.ascontiguousarray(p[:, nodes].T), "rows": (int(lo), int(hi)),
            "n": int(layout.petsc.size), "bs": bs, "Ke": np.asarray(Ke, dtype=float),
            "diag": float(np.mean(np.diag(Ke)))}
