"""Smoothers of the geometric multigrid: Chebyshev-Jacobi on a guaranteed bound, coarse solve.

The Chebyshev polynomial smoother (Adams, Brezina, Hu & Tuminaro, J.
Comput. Phys. 188 (2003) 593-610) needs an upper bound of the spectrum of
``D^{-1} A``; with an estimate below it the smoother amplifies the top
modes and the V-cycle stops being positive definite (see `_Chebyshev`).
Two bounds that hold for every design: Gershgorin's on the Jacobi-scaled
matrix (`scaled_lmax_bound`) and the element bound (`element_lmax_bound`).

Kept hand-written: scipy has no polynomial smoother, and pyamg's
(``pyamg.relaxation.polynomial``, Horner's rule in the unscaled ``A`` with
its own Chebyshev coefficients, a different polynomial) would make the
optional pyamg a dependency of ``"mg-cg"``; the recurrence here returns the
residual the V-cycle restricts at no extra product, and the extra degree on
the coarse levels took the 1200 x 400 MBB beam from 92 to 64 CG iterations
(see `topopt.fem.solvers.multigrid._VCycle`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from .direct import factorize_spd
from . import vectors
from ..errors import SingularSystemError

__all__ = ["scaled_lmax_bound", "element_lmax_bound"]


def scaled_lmax_bound(A: sps.csr_matrix, dinv: np.ndarray) -> float:
    """Gershgorin bound ``max_i sum_j |A_ij| / sqrt(A_ii A_jj)`` on the spectrum of ``D^{-1} A``.

    Rows with a zero diagonal (``dinv = 0``) are left out.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sps
    >>> from topopt.fem.solvers.smoothers import scaled_lmax_bound
    >>> A = sps.csr_matrix(np.array([[2., -1.], [-1., 2.]]))
    >>> round(scaled_lmax_bound(A, 1 / A.diagonal()), 12)   # the eigenvalues: 1/2, 3/2
    1.5
    """
    s = np.sqrt(dinv)
    absA = sps.csr_matrix((np.abs(A.data), A.indices, A.indptr), shape=A.shape)
    return float(np.max(s * (absA @ s), initial=0.0))


def element_lmax_bound(Ke: np.ndarray, chunk: int = 65536) -> float:
    """``max_e lmax(diag(K_e)^-1 K_e)``: a bound on the spectrum of ``D^{-1} A``, ``A = sum a_e K_e``.

    For ``a_e >= 0`` and positive semidefinite ``K_e``, ``v^T a_e K_e v <=
    c a_e v^T diag(K_e) v`` per element sums to ``v^T A v <= c v^T D v``
    (also on any subset of free dofs). 2.89 for bilinear plane-stress
    quadrilaterals (nu = 0.3) where the spectrum of a uniform plate reaches
    2.35 and Gershgorin gives 3.29.

    Examples
    --------
    >>> from topopt import fem
    >>> from topopt.fem.solvers.smoothers import element_lmax_bound
    >>> round(element_lmax_bound(fem.elasticity(fem.rectangle(1, 1)).Ke[0]), 4)
    2.8889
    """
    Ke = np.asarray(Ke, dtype=float)
    if Ke.ndim == 2:
        Ke = Ke[None]
    out = 0.0
    for i in range(0, Ke.shape[0], chunk):
        K = Ke[i:i + chunk]
        d = np.diagonal(K, axis1=1, axis2=2)
        s = np.divide(1.0, np.sqrt(d), out=np.zeros_like(d), where=d > 0)
        out = max(out, float(np.linalg.eigvalsh(K * s[:, :, None] * s[:, None, :])[:, -1].max()))
    return out


class _Chebyshev:
    """Chebyshev polynomial in ``D^{-1} A`` on ``[lmax / ratio, lmax]``.

    The three-term recurrence of Saad, "Iterative Methods for Sparse Linear
    Systems" (2003), Alg. 12.1, with Jacobi preconditioning; ``degree``
    matrix-vector products per call (one fewer from a zero initial guess).

    ``lmax`` must bound the spectrum of ``D^{-1} A`` from above: beyond it
    the error polynomial ``1 - lambda p(lambda)`` leaves [-1, 1] (degree 2,
    ratio 30: from 1.033 lmax on), the smoother amplifies those modes and
    the V-cycle stops being positive definite. An estimate from Lanczos
    steps (a Ritz value, always below the top of the spectrum) did that on
    the 1200 x 400 MBB beam (4.3 % low on the finest level, ``r^T M r < 0``
    in CG). So ``lmax`` is the smaller of two bounds: Gershgorin's on the
    scaled matrix (`scaled_lmax_bound`, per design) and `upper` (the
    element bound `element_lmax_bound` on the finest level). A matrix-free
    ``A`` (only ``A @ x``) comes with its ``dinv`` and its bound `upper`.
    """

    def __init__(self, A, degree: int, ratio: float, upper: float = np.inf, dinv=None):
        self.A = A
        if dinv is None:
            d = A.diagonal()
            self.dinv = np.divide(1.0, d, out=np.zeros_like(d), where=d > 0)
            lmax = min(upper, scaled_lmax_bound(A, self.dinv))
        else:                   # a matrix-free A: the caller's inverse diagonal and bound
            if not np.isfinite(upper):
                raise ValueError("a Chebyshev smoother given dinv needs a finite bound upper")
            self.dinv, lmax = dinv, upper
        self.lmax = lmax
        lmin = lmax / ratio
        self.theta, self.delta = (lmax + lmin) / 2, (lmax - lmin) / 2
        self.degree = degree

    def __call__(self, b: np.ndarray, x: np.ndarray | None = None,
                 residual: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Smooth ``A x = b``; returns the new ``x`` and its residual (if `residual`)."""
        A, dinv = self.A, self.dinv
        if x is None:
            r = b.copy()
            x = np.zeros_like(b)
        else:
            r = vectors.residual(A, b, x)
        sigma = self.theta / self.delta
        rho = 1.0 / sigma
        d = dinv * r
        d /= self.theta
        for k in range(self.degree - 1):
            rho_new = 1.0 / (2.0 * sigma - rho)
            self._step(x, r, d, A @ d, rho_new * rho, 2.0 * rho_new / self.delta)
            rho = rho_new
        x += d
        if residual:
            r -= A @ d
            return x, r
        return x, None

    def _step(self, x, r, d, Ad, c1: float, c2: float) -> None:
        """One step of the recurrence in place: ``x += d; r -= A d; d = c1 d + c2 D^-1 r``
        (one compiled pass where numba runs: `topopt.fem.solvers.vectors`)."""
        vectors.chebyshev_step(x, r, d, Ad, self.dinv, c1, c2)


class _CoarseSolver:
    """Direct solve of the coarsest level, by the direct backends' code (`factorize_spd`)."""

    def __init__(self, A: sps.csr_matrix):
        self.n = A.shape[0]
        try:
            self.F = factorize_spd(A)
        except SingularSystemError as err:
            raise SingularSystemError(f"the coarsest multigrid level is singular ({err})"
                                      ) from err

    def __call__(self, b: np.ndarray) -> np.ndarray:
        return self.F.solve(b)
