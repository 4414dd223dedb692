"""The element kernels of an assembled system: gather, ``K_e w_e``, scatter.

`ElementKernels` is the part of `topopt.fem.LinearSystem` that the
primitives `topopt.fem.matvec` and `topopt.fem.products` call
(``element_matvec``, ``element_products``), by the element dofs stored in
``element_dofs`` and the element matrices ``Ke`` (one, ``uniform``, or one
per element).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ElementKernels"]


class ElementKernels:
    """Gather, element products and scatter by ``element_dofs`` (a `LinearSystem`'s).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.fem import LinearSystem
    >>> S = LinearSystem(np.array([[0, 1], [1, 2]]), np.array([[1., -1.], [-1., 1.]]), ndof=3)
    >>> S.element_matvec(np.array([1.0, 2.0]), np.array([0.0, 1.0, 3.0]))
    array([-1., -3.,  4.])
    """

    def gather(self, w):
        """Element vectors ``w_e``: (n_el, n_loc) or (n_el, n_loc, n_load)."""
        return np.asarray(w)[self.element_dofs]

    def apply_Ke(self, we):
        """``K_e w_e`` for every element."""
        if self.uniform:
            return we @ self._KeT if we.ndim == 2 else np.matmul(self.Ke, we)
        return np.einsum("eij,ej...->ei...", self.Ke, we, optimize=True)

    def element_matvec(self, a, w) -> np.ndarray:
        """``sum_e a_e K_e w_e`` on all dofs (the primitive `matvec`)."""
        self.check_shapes(a=a, w=w)
        local = self.apply_Ke(self.gather(w))
        local = local * (a[:, None] if local.ndim == 2 else a[:, None, None])
        return self.scatter(local).reshape(w.shape)

    def element_products(self, v, w) -> np.ndarray:
        """Per element ``conj(v_e)^T K_e w_e``, summed over load cases (`products`)."""
        self.check_shapes(v=v, w=w)
        if self._distributed and not (np.iscomplexobj(v) or np.iscomplexobj(w)):
            return self._iterative.products(v, w)     # on the ranks that own the elements
        ve, Kw = self.gather(v), self.apply_Ke(self.gather(w))
        ve = np.conj(ve) if np.iscomplexobj(ve) else ve
        return np.sum((ve * Kw).reshape(self.n_el, -1), axis=1)

    def check_shapes(self, **arrays) -> None:
        """`ValueError` naming an array of the wrong shape: ``a`` one entry per element,
        the others (fields, loads) one row per dof."""
        for name, v in arrays.items():
            shape = np.shape(v)
            if name == "a" and shape != (self.n_el,):
                raise ValueError(f"a has shape {shape}; expected ({self.n_el},): one "
                                 f"coefficient per element")
            if name != "a" and (len(shape) not in (1, 2) or shape[0] != self.ndof):
                raise ValueError(f"{name} has shape {shape}; expected ({self.ndof},) or "
                                 f"({self.ndof}, n_loads): one row per dof")

    def scatter(self, local):
        """Sum element vectors into a global vector (transpose of `gather`)."""
        idx = self.element_dofs.ravel()
        local = local.reshape(idx.size, -1)
        out = np.empty((self.ndof, local.shape[1]), dtype=local.dtype)
        for k in range(local.shape[1]):
            col = local[:, k]
            out[:, k] = np.bincount(idx, col.real, self.ndof)
            if np.iscomplexobj(col):
                out[:, k] += 1j * np.bincount(idx, col.imag, self.ndof)
        return out
