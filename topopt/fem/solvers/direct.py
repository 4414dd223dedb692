"""Sparse direct factorizations: SuperLU (scipy), CHOLMOD and UMFPACK (cvxopt).

Each factor object has ``solve(b)`` and ``solve_adjoint(b)`` (``K^H x =
b``); they are registered as backends in `topopt.fem.solvers`, and
`factorize_spd` gives the multigrid coarse solve the same code.
`cvxopt_lower_of` and `cvxopt_full_of` put a `LinearSystem`'s ``K(a)`` in
cvxopt's order for CHOLMOD and UMFPACK (the order built once per pattern).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps
import scipy.sparse.linalg as spla

from ..errors import SingularSystemError

__all__ = ["SuperLUFactor", "CholmodContext", "CholmodFactor", "UmfpackFactor",
           "has_module", "cvxopt_lower", "factorize_spd", "FAST_EXTRA", "cvxopt_lower_of",
           "cvxopt_full_of", "factorize_lu"]

FAST_EXTRA = "pip install 'topopt[fast]'"
"""How to install the optional solver dependencies (cvxopt, pyamg)."""


def has_module(name: str) -> bool:
    """Whether `name` imports (``"cvxopt.cholmod"``, ``"pyamg"``)."""
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def cvxopt_lower(A: sps.spmatrix):
    """The lower triangle of a real scipy matrix as a cvxopt ``spmatrix`` (CHOLMOD's input)."""
    from cvxopt import matrix, spmatrix
    L = sps.tril(A, format="coo")
    n = A.shape[0]
    return spmatrix(matrix(L.data.astype(float)), matrix(L.row.astype(np.int64)),
                    matrix(L.col.astype(np.int64)), (n, n))


def factorize_spd(A: sps.spmatrix):
    """Direct factor of a real symmetric positive definite `A`: CHOLMOD if installed, else SuperLU.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sps
    >>> A = sps.csr_matrix(np.array([[2., -1.], [-1., 2.]]))
    >>> factorize_spd(A).solve(np.array([1.0, 1.0]))
    array([1., 1.])
    """
    if has_module("cvxopt.cholmod"):
        return CholmodFactor(cvxopt_lower(A), CholmodContext())
    return SuperLUFactor(A, symmetric=True)


class SuperLUFactor:
    """``K = LU`` by SuperLU; `symmetric` means ``K^T = K`` (real or complex)."""

    def __init__(self, K: sps.spmatrix, symmetric: bool):
        self.real = not np.iscomplexobj(K.data)
        self.symmetric = symmetric
        options = dict(SymmetricMode=True) if symmetric else {}
        try:
            self.lu = spla.splu(K.tocsc(), permc_spec="MMD_AT_PLUS_A" if symmetric else "COLAMD",
                                diag_pivot_thresh=0.0 if symmetric else 1.0, options=options)
        except RuntimeError as err:
            raise SingularSystemError(f"the system matrix is singular ({err}): is every "
                                      "part of the domain supported?") from err

    def _solve(self, b, trans="N"):
        if self.real and np.iscomplexobj(b):
            return self.lu.solve(np.ascontiguousarray(b.real), trans) + \
                1j * self.lu.solve(np.ascontiguousarray(b.imag), trans)
        return self.lu.solve(np.asarray(b, dtype=np.result_type(b, self.lu.U.dtype)), trans)

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self._solve(b)

    def solve_adjoint(self, b: np.ndarray) -> np.ndarray:
        """Solve ``K^H x = b``."""
        if self.symmetric:
            return self._solve(b) if self.real else np.conj(self._solve(np.conj(b)))
        return self._solve(b, "H")


class CholmodContext:
    """One CHOLMOD factor object per sparsity pattern, refactorized per design.

    cvxopt's ``numeric`` overwrites its factor in place, so each
    `CholmodFactor` remembers the generation it was computed in and
    refactorizes its own matrix if a later design took the factor over.
    """

    def __init__(self):
        from cvxopt import cholmod
        self.cholmod = cholmod
        self.F = None
        self.generation = 0

    def numeric(self, lower) -> int:
        if self.F is None:
            self.F = self.cholmod.symbolic(lower, uplo="L")
        try:
            self.cholmod.numeric(lower, self.F)
        except ArithmeticError as err:
            raise SingularSystemError(
                "the system matrix is not positive definite (singular): is every part "
                "of the domain supported?") from err
        self.generation += 1
        return self.generation


class CholmodFactor:
    """``K = L L^T`` by CHOLMOD; only the numeric factorization is per design."""

    def __init__(self, lower, context: CholmodContext):
        from cvxopt import matrix
        self.lower, self.context = lower, context
        # `LinearSystem` refills one cvxopt matrix per design: keep this design's values
        self.values = matrix(lower.V)
        self.generation = context.numeric(lower)

    def solve(self, b: np.ndarray) -> np.ndarray:
        from cvxopt import matrix
        if np.iscomplexobj(b):
            return self.solve(b.real) + 1j * self.solve(b.imag)
        if self.context.generation != self.generation:
            self.lower.V = self.values
            self.generation = self.context.numeric(self.lower)
        x = matrix(np.asfortranarray(b, dtype=float))
        self.context.cholmod.solve(self.context.F, x)
        return np.array(x).reshape(np.shape(b))

    solve_adjoint = solve


class UmfpackFactor:
    """``K = LU`` by UMFPACK (cvxopt), real or complex; `symbolic` reused per pattern."""

    def __init__(self, A, symbolic):
        from cvxopt import matrix, umfpack
        # `LinearSystem` refills one cvxopt matrix per design, and UMFPACK's solve reads
        # the matrix (iterative refinement): keep this design's values
        self.A, self.values, self._umfpack = A, matrix(A.V), umfpack
        try:
            self.F = umfpack.numeric(A, symbolic)
        except ArithmeticError as err:
            raise SingularSystemError(f"the system matrix is singular ({err}): is every "
                                      "part of the domain supported?") from err

    def _solve(self, b, trans):
        from cvxopt import matrix
        complex_ = self.A.typecode == "z"
        if not complex_ and np.iscomplexobj(b):
            return self._solve(b.real, trans) + 1j * self._solve(b.imag, trans)
        x = matrix(np.asfortranarray(b, dtype=complex if complex_ else float))
        self.A.V = self.values
        self._umfpack.solve(self.A, self.F, x, trans=trans)
        return np.array(x).reshape(np.shape(b))

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self._solve(b, "N")

    def solve_adjoint(self, b: np.ndarray) -> np.ndarray:
        """Solve ``K^H x = b``."""
        return self._solve(b, "C")


def cvxopt_lower_of(S, a):
    """The lower triangle of ``K(a)`` as a cvxopt matrix, assembled directly.

    The rows of ``P`` for the lower triangle are put once in cvxopt's
    column-compressed order, so each design costs one sparse product.
    """
    from cvxopt import matrix, spmatrix
    if not hasattr(S, "_lower_spmatrix"):
        I = S.rows[S.lower].astype(np.int64)
        J = S.cols[S.lower].astype(np.int64)
        n = S.free.size
        A = spmatrix(matrix(np.arange(I.size, dtype=float)), matrix(I), matrix(J), (n, n))
        order = np.flatnonzero(S.lower)[np.array(A.V, dtype=np.int64).ravel()]
        diag = S.rows[order] == S.cols[order]
        S._lower_diag_pos = np.flatnonzero(diag)[np.argsort(S.rows[order][diag])]
        S._P_lower = S.P[order].tocsr()
        S._K0_lower = None if S.K0_data is None else S.K0_data[order]
        S._lower_spmatrix = A
    data = S._P_lower @ a
    if S._K0_lower is not None:
        data = data + S._K0_lower
    S._lower_data = data
    A = S._lower_spmatrix
    A.V = matrix(data)
    return A


def cvxopt_full_of(S, data):
    """``K`` as a cvxopt matrix (pattern and value order built once)."""
    from cvxopt import matrix, spmatrix
    complex_ = np.iscomplexobj(data) or not S.real
    if getattr(S, "_full_complex", None) != complex_:
        n = S.free.size
        A = spmatrix(matrix(np.arange(S.rows.size, dtype=float)),
                     matrix(S.rows.astype(np.int64)), matrix(S.cols.astype(np.int64)),
                     (n, n))
        S._full_order = np.array(A.V, dtype=np.int64).ravel()
        if complex_:
            A = spmatrix(matrix(np.zeros(S.rows.size, dtype=complex)),
                         matrix(S.rows.astype(np.int64)),
                         matrix(S.cols.astype(np.int64)), (n, n), "z")
        S._full_spmatrix, S._full_complex = A, complex_
        S._umf_symbolic = None
    A = S._full_spmatrix
    A.V = matrix(np.asarray(data, dtype=complex if complex_ else float)[S._full_order])
    return A


def factorize_lu(A: sps.spmatrix):
    """Direct LU factor of a real or complex square `A` (not symmetric): UMFPACK if cvxopt
    is installed, else SuperLU; ``solve(b)`` and ``solve_adjoint(b)`` (``A^H x = b``).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sps
    >>> A = sps.csr_matrix(np.array([[2., 1.], [0., 1.]]))
    >>> factorize_lu(A).solve_adjoint(np.array([2.0, 2.0]))
    array([1., 1.])
    """
    if has_module("cvxopt.umfpack"):
        from cvxopt import matrix, spmatrix, umfpack
        C = sps.coo_matrix(A, copy=True)       # the caller's matrix is left as given
        # stored zeros spoiled UMFPACK's solves (relative residual 5.8 on the Q2/Q1 double
        # pipe at 96 x 96, docs/notes/flow.md): the pattern it factors holds only nonzeros
        C.eliminate_zeros()
        complex_ = np.iscomplexobj(C.data)
        M = spmatrix(matrix(C.data.astype(complex if complex_ else float)),
                     matrix(C.row.astype(np.int64)), matrix(C.col.astype(np.int64)),
                     C.shape, "z" if complex_ else "d")
        try:
            symbolic = umfpack.symbolic(M)
        except ArithmeticError as err:
            raise SingularSystemError(f"the matrix is structurally singular ({err})") from err
        return UmfpackFactor(M, symbolic)
    return SuperLUFactor(sps.csc_matrix(A), symmetric=False)
