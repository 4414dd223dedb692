"""Structural singularity: rigid-body modes that the supports leave free.

A stiffness matrix ``K(a) = K0 + sum_e a_e K_e`` is singular for every
coefficient vector `a` when some vector ``r`` has ``K_e r_e = 0`` in every
element, ``r = 0`` at every fixed dof and ``K0 r = 0``: then ``K(a) r = 0``
exactly, whatever the rounding. `unrestrained_modes` looks for such an
``r`` among the rigid-body motions (2 translations and 1 rotation in 2-D, 3
and 3 in 3-D; one constant per component for scalar problems) of the
*rigid parts* of the mesh, so the verdict is a proof of singularity, never
a guess:

1. the candidate modes `rigid_body_modes` are kept only if every element
   matrix annihilates them (``|K_e r_e| <= 1e-9 |K_e| |r_e|``; exact zeros up
   to rounding, or O(1) for a mode that is not one);
2. elements are in one rigid part when a chain of neighbours connects them
   that share enough nodes to pass one rigid motion on (two nodes in 2-D,
   three non-collinear ones in 3-D, one for translations only); parts that
   touch at a hinge node (or a hinge edge in 3-D) move independently but
   must agree at the shared nodes;
3. the coefficients ``c_P`` of each part's rigid motion ``B c_P`` solve the
   homogeneous constraints "zero at the fixed dofs, equal at shared nodes";
   a nonzero solution whose assembled motion ``r`` also has ``K0 r = 0`` is
   an unrestrained mode.

The rank decisions compare singular values of O(1)-scaled constraint
matrices with ``1e-9``: the null vectors have singular values of the order
of the rounding (1e-16), genuine restraints of the order of (support
spacing / part size), so the verdict does not depend on rounding luck.
Elements whose coefficient is exactly zero can be left out (``active``),
which makes the check per design (`LinearSystem` does so only when ``a``
has zeros). A mesh without the rotations in the element kernel (e.g. a
vector Laplacian) keeps only the modes that pass step 1.

Springs and other constant stiffness count when they are in ``K0`` when
the `LinearSystem` is built (its verdict is kept); stiffness added to
``K`` in another way is not seen here, only by the numerical check after
each solve. Mechanisms that are not rigid motions of rigid parts (e.g. an
element kernel larger than the rigid modes) are left to that check too.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sps
from scipy.sparse.csgraph import connected_components

__all__ = ["rigid_body_modes", "unrestrained_modes", "Unrestrained"]

_NULL_TOL = 1e-9
"""Relative size below which ``K_e r_e`` and singular values count as zero."""

_MAX_BLOCK = 600
"""Largest number of coupled mode coefficients solved densely (else no verdict)."""

_MAX_REPORTED = 32
"""Blocks whose motions are assembled (the rest are only counted)."""


def rigid_body_modes(p: np.ndarray, nodal_dofs: np.ndarray, ndof: int) -> np.ndarray:
    """Near-nullspace ``(ndof, k)``: rigid-body modes of elasticity, or constants.

    Translations and rotations (3 in 2-D, 6 in 3-D; the translation in 1-D)
    when each node carries one dof per space dimension, otherwise one
    constant per component.

    Examples
    --------
    Two nodes on the x axis, dofs interleaved (x0, y0, x1, y1):

    >>> import numpy as np
    >>> from topopt.fem.supports import rigid_body_modes
    >>> p = np.array([[0., 1.], [0., 0.]])
    >>> rigid_body_modes(p, np.array([[0, 2], [1, 3]]), 4) + 0.0
    array([[ 1. ,  0. ,  0. ],
           [ 0. ,  1. , -0.5],
           [ 1. ,  0. ,  0. ],
           [ 0. ,  1. ,  0.5]])
    """
    p = np.asarray(p, dtype=float)
    nodal_dofs = np.atleast_2d(nodal_dofs)
    ncomp, dim = nodal_dofs.shape[0], p.shape[0]
    if ncomp != dim:
        B = np.zeros((ndof, ncomp))
        for c in range(ncomp):
            B[nodal_dofs[c], c] = 1.0
        return B
    x = p - p.mean(axis=1, keepdims=True)
    modes = [np.eye(dim)[c][:, None] * np.ones(p.shape[1]) for c in range(dim)]
    if dim == 2:
        modes.append(np.array([-x[1], x[0]]))
    elif dim == 3:
        modes += [np.array([0 * x[0], -x[2], x[1]]), np.array([x[2], 0 * x[0], -x[0]]),
                  np.array([-x[1], x[0], 0 * x[0]])]
    B = np.zeros((ndof, len(modes)))
    for k, mode in enumerate(modes):
        for c in range(dim):
            B[nodal_dofs[c], k] = mode[c]
    return B


class Unrestrained:
    """The verdict of `unrestrained_modes`: free modes (if any) and where they are.

    Attributes
    ----------
    modes : (ndof, m) array
        Orthonormal basis of the unrestrained motions found (``m = 0``: none);
        at most those of the first 32 singular blocks of parts.
    count : int
        Number of unrestrained motions (``>= m``).
    floating : int
        Rigid parts (blocks of parts joined at hinges) without any fixed dof.
    parts : int
        Rigid parts of the (active) mesh.
    unused : int
        Free dofs that no (active) element and no ``K0`` entry touches.
    """

    def __init__(self, modes, floating, parts, unused, where="", count=None):
        self.modes, self.floating, self.parts, self.unused = modes, floating, parts, unused
        self.where = where
        self.count = modes.shape[1] if count is None else count

    @property
    def singular(self) -> bool:
        return self.modes.shape[1] > 0 or self.unused > 0

    def message(self) -> str:
        """The error message for a singular verdict."""
        if self.unused:
            return (f"{self.unused} free dof(s) belong to no element: the stiffness matrix has "
                    "zero rows (singular). Fix them or remove the unused nodes.")
        where = f" (e.g. {self.where})" if self.where else ""
        if self.floating:
            return (f"{self.floating} connected part(s) of the mesh have no fixed dof{where}: "
                    "the stiffness matrix is singular (rigid-body motion). Add supports.")
        return (f"the supports leave {self.count} rigid-body mode(s) free{where}: "
                "K r = 0 for that motion r whatever the design, so the stiffness matrix is "
                "singular. Add supports (e.g. fix more components or more nodes).")


def _element_nodes(element_dofs: np.ndarray, node_of: np.ndarray) -> sps.csr_matrix:
    """Element-node incidence ``(n_el, n_nodes)`` with ones."""
    n_el = element_dofs.shape[0]
    nodes = node_of[element_dofs]
    N = sps.csr_matrix((np.ones(nodes.size), nodes.ravel(),
                        np.arange(0, nodes.size + 1, nodes.shape[1])),
                       shape=(n_el, int(node_of.max()) + 1))
    N.sum_duplicates()
    N.data[:] = 1.0
    return N


def _verified_modes(B: np.ndarray, element_dofs: np.ndarray, Ke: np.ndarray,
                    chunk: int = 65536) -> np.ndarray:
    """The columns of `B` that every element matrix annihilates (step 1)."""
    keep = np.ones(B.shape[1], dtype=bool)
    uniform = Ke.ndim == 2
    for s in range(0, element_dofs.shape[0], chunk):
        Be = B[element_dofs[s:s + chunk]]                              # (m, n_loc, k)
        K = Ke if uniform else Ke[s:s + chunk]
        KB = np.matmul(K, Be)
        scale = np.abs(K).max(axis=(-2, -1))
        scale = scale if uniform else scale[:, None]
        bound = _NULL_TOL * K.shape[-1] * scale * np.abs(Be).max(axis=1)
        keep &= np.all(np.abs(KB).max(axis=1) <= bound, axis=0)
    return B[:, keep]


def _rigid_parts(N: sps.csr_matrix, p: np.ndarray, shared: int) -> np.ndarray:
    """Label of each element's rigid part: neighbours sharing `shared` nodes are joined.

    In 3-D (``shared == 3``) the shared nodes must not be collinear (a hinge
    edge of second-order elements passes on no rotation about it).
    """
    n_el = N.shape[0]
    if shared <= 1:
        G = N @ N.T
        return connected_components(G, directed=False)[1]
    C = (N @ N.T).tocoo()
    link = (C.data >= shared) & (C.row < C.col)
    e, f = C.row[link], C.col[link]
    if shared >= 3 and e.size:
        e, f = _noncollinear(N, p, e, f)
    G = sps.coo_matrix((np.ones(e.size), (e, f)), shape=(n_el, n_el))
    return connected_components(G, directed=False)[1]


def _noncollinear(N, p, e, f, chunk: int = 262144):
    """The pairs ``(e, f)`` whose shared nodes span a plane."""
    counts = np.diff(N.indptr)
    if counts.min() != counts.max():
        return e, f                   # mixed element types: keep (no rotation lost here)
    T = N.indices.reshape(N.shape[0], -1)
    keep = np.empty(e.size, dtype=bool)
    for s in range(0, e.size, chunk):
        te, tf = T[e[s:s + chunk]], T[f[s:s + chunk]]
        mask = np.any(te[:, :, None] == tf[:, None, :], axis=2)        # (m, nn)
        pts = p[:, te].transpose(1, 2, 0)                                # (m, nn, dim)
        w = mask / mask.sum(axis=1, keepdims=True)
        centre = np.einsum("mn,mnd->md", w, pts)
        d = (pts - centre[:, None, :]) * mask[:, :, None]
        cov = np.einsum("mnd,mne->mde", d, d)
        ev = np.linalg.eigvalsh(cov)
        keep[s:s + chunk] = ev[:, -2] > 1e-12 * ev[:, -1]
    return e[keep], f[keep]


def _null_space(C: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the null space of `C` (columns), by SVD with tolerance 1e-9."""
    k = C.shape[1]
    if C.shape[0] == 0:
        return np.eye(k)
    _, s, Vt = np.linalg.svd(C, full_matrices=True)
    smax = s[0] if s.size else 0.0
    rank = int(np.sum(s > _NULL_TOL * max(smax, 1.0)))
    return Vt[rank:].T


def unrestrained_modes(element_dofs: np.ndarray, Ke: np.ndarray, ndof: int, fixed: np.ndarray,
                       geometry, K0: sps.spmatrix | None = None,
                       active: np.ndarray | None = None) -> Unrestrained | None:
    """Rigid-body motions of `K0 + sum_e a_e K_e` that no support restrains.

    Parameters
    ----------
    element_dofs : (n_el, n_loc) int array
    Ke : (n_loc, n_loc) or (n_el, n_loc, n_loc) array
    ndof : int
    fixed : int array
        Fixed dofs.
    geometry : (p, nodal_dofs)
        Node coordinates ``(dim, n_nodes)`` and dofs of each node.
    K0 : sparse (ndof, ndof), optional
        Constant part: a motion it does not annihilate is held by it.
    active : bool array (n_el,), optional
        Elements present (``a_e != 0``); default all.

    Returns
    -------
    Unrestrained, or None when no rigid-body mode annihilates the elements
    (nothing to test).

    Examples
    --------
    A 4 x 2 plate whose left edge has only ``u_x = 0``: vertical
    translation is free. Fixing one ``u_y`` as well holds it.

    >>> import numpy as np
    >>> from topopt import fem
    >>> from topopt.fem.supports import unrestrained_modes
    >>> m = fem.elasticity(fem.rectangle(4, 2))
    >>> roller = m.dofs(nodes=lambda x: x[0] == 0, components=0)
    >>> args = (m.basis.element_dofs.T, m.Ke, m.ndof)
    >>> geometry = (m.mesh.p, m.basis.nodal_dofs)
    >>> r = unrestrained_modes(*args, roller, geometry)
    >>> r.singular, r.modes.shape[1]
    (True, 1)
    >>> pin = m.dofs(nodes=(0.0, 0.0), components=1)
    >>> unrestrained_modes(*args, np.union1d(roller, pin), geometry).singular
    False
    """
    element_dofs = np.asarray(element_dofs, dtype=np.int64)
    Ke = np.asarray(Ke)
    if Ke.ndim == 3 and Ke.strides[0] == 0:
        Ke = Ke[0]
    p, nodal_dofs = (np.asarray(g) for g in geometry)
    nodal_dofs = np.atleast_2d(nodal_dofs).astype(np.int64)
    if nodal_dofs.size != ndof or np.unique(nodal_dofs).size != ndof:
        return None                                    # not one dof per node and component
    element_dofs, Ke = _active_elements(element_dofs, Ke, active)
    node_of, is_fixed, used, K0 = _dof_layout(element_dofs, ndof, fixed, nodal_dofs, K0)
    unused = int(np.sum(~used & ~is_fixed))
    if element_dofs.shape[0] == 0:
        return Unrestrained(np.zeros((ndof, 0)), 0, 0, unused, "")

    B = rigid_body_modes(p, nodal_dofs, ndof)
    B = _verified_modes(B, element_dofs, Ke)
    if B.shape[1] == 0:
        return None if not unused else Unrestrained(np.zeros((ndof, 0)), 0, 0, unused, "")
    size = np.abs(B[used]).max(axis=0, initial=0.0)
    B = B[:, size > 0] / size[size > 0]                                 # O(1) columns
    if B.shape[1] == 0:
        return None
    dim = p.shape[0]
    rotations = nodal_dofs.shape[0] == dim and B.shape[1] > dim
    N = _element_nodes(element_dofs, node_of)
    label = _rigid_parts(N, p, min(dim, 3) if rotations else 1)
    mesh = SimpleNamespace(p=p, nodal_dofs=nodal_dofs, node_of=node_of, is_fixed=is_fixed,
                           used=used, element_dofs=element_dofs, label=label,
                           n_parts=int(label.max()) + 1)
    con = _constraints(N, mesh)
    floating = _floating_blocks(con, mesh)
    modes, where, extra = _block_modes(B, con, mesh)
    W = _orthonormal_motions(modes, K0, is_fixed)
    count = W.shape[1] + (extra if K0 is None else 0)   # K0 may hold the unexamined ones
    return Unrestrained(W, floating if W.shape[1] else 0, mesh.n_parts, unused, where, count)


def _active_elements(element_dofs, Ke, active):
    """The element dofs and matrices of the `active` elements (all when None)."""
    if active is None or np.all(active):
        return element_dofs, Ke
    return element_dofs[active], (Ke[active] if Ke.ndim == 3 else Ke)


def _orthonormal_motions(modes: list, K0, is_fixed: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the block motions (those `K0` annihilates too, if given)."""
    W = np.concatenate(modes, axis=1) if modes else np.zeros((is_fixed.size, 0))
    if W.shape[1] and K0 is not None:
        W = _held_by(W, K0)
    elif W.shape[1]:
        W = np.linalg.qr(W)[0]
    W[is_fixed] = 0.0                                   # exact zeros after the QR too
    return W


def _dof_layout(element_dofs, ndof: int, fixed, nodal_dofs, K0):
    """Node of each dof, fixed dofs, dofs used by an element or ``K0`` (as CSR)."""
    node_of = np.empty(ndof, dtype=np.int64)
    for c in range(nodal_dofs.shape[0]):
        node_of[nodal_dofs[c]] = np.arange(nodal_dofs.shape[1])
    is_fixed = np.zeros(ndof, dtype=bool)
    is_fixed[np.asarray(fixed, dtype=np.int64)] = True
    used = np.zeros(ndof, dtype=bool)
    used[element_dofs.ravel()] = True
    if K0 is not None:
        K0 = sps.csr_matrix(K0)
        used[np.diff(K0.indptr) > 0] = True
    return node_of, is_fixed, used, K0


def _constraints(N: sps.csr_matrix, mesh) -> SimpleNamespace:
    """Constraints on the parts' motion coefficients: zero at fixed dofs, equal at hinges.

    Each constraint row is a sum of entries ``B[dof] c_part * sign``; returns
    the arrays ``rows, parts, dofs, signs`` of those entries, the number of
    rows, each node's first part ``node_first`` (-1: in no element) and the
    fixed dofs in use, and the block (parts joined by hinges) of each part.
    """
    node_of, nodal_dofs, is_fixed = mesh.node_of, mesh.nodal_dofs, mesh.is_fixed
    label, n_parts = mesh.label, mesh.n_parts
    # parts of each node: (node, part) pairs, unique
    NP = (N.T @ sps.csr_matrix((np.ones(label.size), (np.arange(label.size), label)),
                               shape=(label.size, n_parts))).tocsr()
    NP.data[:] = 1.0
    node_first = np.full(N.shape[1], -1, dtype=np.int64)
    counts = np.diff(NP.indptr)
    has = counts > 0
    node_first[has] = NP.indices[NP.indptr[:-1][has]]
    rows, parts, dofs, signs = [], [], [], []
    fixed_used = np.flatnonzero(is_fixed & mesh.used)
    fixed_used = fixed_used[node_first[node_of[fixed_used]] >= 0]
    n_rows = fixed_used.size
    rows.append(np.arange(n_rows))
    parts.append(node_first[node_of[fixed_used]])
    dofs.append(fixed_used)
    signs.append(np.ones(n_rows))
    entry_node = np.repeat(np.arange(NP.shape[0]), counts)
    later = np.arange(NP.nnz) != NP.indptr[:-1][entry_node]            # hinge: 2nd part on
    if np.any(later):
        nodes, other = entry_node[later], NP.indices[later]
        for c in range(nodal_dofs.shape[0]):
            d = nodal_dofs[c, nodes]
            keep = ~is_fixed[d]                     # a fixed dof already pins both sides
            m = int(keep.sum())
            r = n_rows + np.arange(m)
            rows += [r, r]
            parts += [node_first[nodes[keep]], other[keep]]
            dofs += [d[keep], d[keep]]
            signs += [np.ones(m), -np.ones(m)]
            n_rows += m
    rows, parts = np.concatenate(rows), np.concatenate(parts)
    # blocks: parts joined by hinge constraints
    P = sps.coo_matrix((np.ones(rows.size), (rows, parts)), shape=(n_rows, n_parts)).tocsc()
    block = connected_components((P.T @ P), directed=False)[1]
    return SimpleNamespace(rows=rows, parts=parts, dofs=np.concatenate(dofs),
                           signs=np.concatenate(signs), n_rows=n_rows, node_first=node_first,
                           fixed_used=fixed_used, block=block)


def _floating_blocks(con, mesh) -> int:
    """Blocks of parts with no fixed dof."""
    fixed_parts = np.zeros(mesh.n_parts, dtype=bool)
    fixed_parts[con.node_first[mesh.node_of[con.fixed_used]]] = True
    block_fixed = np.bincount(con.block, fixed_parts, minlength=con.block.max() + 1) > 0
    return int(np.sum(~block_fixed))


def _block_modes(B: np.ndarray, con, mesh) -> tuple[list, str, int]:
    """The free motions of each block: assembled (up to `_MAX_REPORTED`), where, and the rest."""
    ndof, k = B.shape
    block, parts, rows = con.block, con.parts, con.rows
    modes, where, extra = [], "", 0
    part_of_dof = np.full(ndof, -1, dtype=np.int64)
    part_of_dof[mesh.used] = con.node_first[mesh.node_of[np.flatnonzero(mesh.used)]]
    row_block = block[parts]
    order = np.argsort(row_block, kind="stable")
    bounds = np.searchsorted(row_block[order], np.arange(block.max() + 2))
    for b in range(block.max() + 1):
        members = np.flatnonzero(block == b)
        if members.size * k > _MAX_BLOCK:
            continue                                    # too many coupled parts: no verdict
        local = -np.ones(mesh.n_parts, dtype=np.int64)
        local[members] = np.arange(members.size)
        sel = order[bounds[b]:bounds[b + 1]]
        r_ids, inv = np.unique(rows[sel], return_inverse=True)
        C = np.zeros((r_ids.size, members.size * k))
        cols = local[parts[sel]][:, None] * k + np.arange(k)
        np.add.at(C, (np.repeat(inv, k), cols.ravel()),
                  (B[con.dofs[sel]] * con.signs[sel][:, None]).ravel())
        V = _null_space(C)
        if V.shape[1] == 0:
            continue
        if len(modes) >= _MAX_REPORTED:
            extra += V.shape[1]
            continue
        # the assembled motions of this block
        in_block = np.flatnonzero(np.isin(part_of_dof, members))
        W = np.zeros((ndof, V.shape[1]))
        coef = V.reshape(members.size, k, -1)[local[part_of_dof[in_block]]]
        W[in_block] = np.einsum("dk,dkm->dm", B[in_block], coef)
        W[mesh.is_fixed] = 0.0
        modes.append(W)
        if not where:
            els = np.flatnonzero(np.isin(mesh.label, members))
            centre = mesh.p[:, mesh.node_of[mesh.element_dofs[els].ravel()]].mean(axis=1)
            where = (f"the part of {els.size} element(s) around "
                     f"({', '.join(f'{v:.3g}' for v in centre)})")
    return modes, where, extra


def _held_by(W: np.ndarray, K0: sps.csr_matrix) -> np.ndarray:
    """The motions in span(`W`) that `K0` annihilates too (orthonormal columns)."""
    Q = np.linalg.qr(W)[0]
    scale = float(abs(K0).sum(axis=1).max()) if K0.nnz else 0.0
    if scale == 0.0:
        return Q
    G = np.asarray(K0 @ Q) / scale
    _, s, Vt = np.linalg.svd(G, full_matrices=True)
    rank = int(np.sum(s > _NULL_TOL))
    return Q @ Vt[rank:].T
