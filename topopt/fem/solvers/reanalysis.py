"""Reanalysis: a design's solves by CG preconditioned with an earlier design's factor.

Consecutive designs of an optimization differ little, so the Cholesky
factor of an earlier stiffness matrix ``K_b`` is a very good preconditioner
for the current ``K``: CG on ``K u = f`` with ``M = K_b^{-1}`` and ``u_0 =
K_b^{-1} f`` needs a few iterations (Amir, Bendsoe & Sigmund 2009, Int. J.
Numer. Meth. Eng. 78:1474; Amir, Stolpe & Lazarov 2010, Struct. Multidisc.
Optim. 42:25: preconditioned CG spans the same space as the combined
approximations). Each iteration costs one pair of triangular solves and one
matrix product instead of a factorization. When CG has not converged in
``maxiter`` iterations, or the previous design needed more than half of
them (the base has aged), the design is factorized and becomes the new
base.

CG stops when the estimated relative energy-norm error ``sqrt(r^T M r /
f^T u)`` is below ``rtol``; measured on the MBB beam (150 x 50, 100 MMA
designs) the compliance then errs by about ``rtol`` relative (``rtol =
1e-6``: at most 4e-8). Because CG is the Galerkin projection on its Krylov
space, compliance is never overestimated.

The options are the direct backends' ``solver_options`` (`OPTIONS`):
``reanalysis`` (``"auto"``, True, False), ``maxiter`` and ``rtol``; the
measurements behind the defaults and ``"auto"``'s sizes are in
``scripts/benchmarks/benchmark_reanalysis.py``.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ..._validate import check_int, check_keywords, check_range
from .auto import auto_reanalysis
from .krylov import pcg_energy

__all__ = ["OPTIONS", "Reanalysis", "ReanalysisFactor", "direct_options",
           "reanalysis_policy"]

OPTIONS = {"reanalysis": "auto", "maxiter": 25, "rtol": 1e-6}
"""The direct backends' ``solver_options``: reanalysis on/off/``"auto"``, CG limit, tolerance."""

def direct_options(options: dict | None) -> dict:
    """The direct backends' options with defaults, each checked (name and range).

    Examples
    --------
    >>> direct_options({"reanalysis": True})["maxiter"]
    25
    >>> direct_options({"rtol": 2.0})
    Traceback (most recent call last):
    ...
    ValueError: rtol must be in (0, 1), got 2
    """
    out = dict(OPTIONS)
    if options:
        check_keywords("solver_options", options, OPTIONS)
        out.update(options)
    if not (out["reanalysis"] == "auto" or isinstance(out["reanalysis"], (bool, np.bool_))):
        raise ValueError(f"solver_options['reanalysis'] must be 'auto', True or False, got "
                         f"{out['reanalysis']!r}")
    out["maxiter"] = check_int("maxiter", out["maxiter"], 1)
    out["rtol"] = check_range("rtol", out["rtol"], 0, 1, lo_open=True, hi_open=True)
    return out


def reanalysis_policy(system) -> "Reanalysis | None":
    """The `Reanalysis` of a `LinearSystem` with a direct backend, or None when off.

    Reads ``system.solver_options`` (`direct_options`); iterative backends
    keep their own options. ``"auto"`` is
    `topopt.fem.solvers.auto.auto_reanalysis`; True asks for it and raises
    ValueError where it does not apply (complex or non-symmetric matrices).
    """
    from .table import BACKENDS
    if BACKENDS[system.solver].iterative:
        return None
    opts = direct_options(system.solver_options)
    suitable = system.real and system.symmetric
    if opts["reanalysis"] is True and not suitable:
        raise ValueError("solver_options['reanalysis']=True needs a real symmetric system "
                         "(CG on a positive definite K); use reanalysis=False or 'auto'")
    on = auto_reanalysis(system) if opts["reanalysis"] == "auto" else opts["reanalysis"] is True
    return Reanalysis(opts["maxiter"], opts["rtol"]) if on else None


class Reanalysis:
    """The base factor of a `LinearSystem` and the rule for when to refactorize.

    Parameters
    ----------
    maxiter : int
        CG iterations allowed per solve before the design is factorized.
    rtol : float
        Relative energy-norm error at which CG stops.

    Attributes
    ----------
    base : factor or None
        The last factorization (a direct backend's factor object).
    previous : int
        CG iterations of the last reanalysed solve (0 after a factorization).
    skip, backoff : int
        Designs still to factorize without trying CG, and how many the next
        failure skips: after a design whose CG did not converge the next
        ``backoff`` designs are factorized at once (1, 2, 4, ... while CG keeps
        failing; back to 1 after a success), so the large steps of an
        optimization's first iterations do not pay for CG iterations in vain.
    """

    def __init__(self, maxiter: int, rtol: float):
        self.maxiter, self.rtol = maxiter, rtol
        self.base = None
        self.previous = 0
        self.skip, self.backoff = 0, 1

    def factor(self, K, factorize: Callable, counts):
        """A factor for the design with free-dof matrix `K`.

        `factorize()` returns a new direct factorization of `K`; it is called
        now when there is no base yet, the base has aged (the previous
        reanalysed design needed more than ``maxiter / 2`` iterations) or CG
        failed recently (`skip`), else only if CG does not converge.
        """
        if self.skip > 0:
            self.skip -= 1
            return self._refactor(factorize)
        if self.base is None or 2 * self.previous > self.maxiter:
            return self._refactor(factorize)
        counts["reanalyses"] += 1
        return ReanalysisFactor(K, self, lambda: self._refactor(factorize, failed=True), counts)

    def succeeded(self) -> None:
        """CG converged for a design: the next failure skips one design again."""
        self.backoff = 1

    def _refactor(self, factorize: Callable, failed: bool = False):
        if failed:
            self.skip, self.backoff = self.backoff, min(2 * self.backoff, 64)
        self.base = factorize()
        self.previous = 0
        return self.base


class ReanalysisFactor:
    """Solves with ``K`` by CG preconditioned with the base factor; refactorizes on failure.

    ``solve`` and ``solve_adjoint`` (the same: ``K`` is real symmetric)
    accept ``(n,)`` or ``(n, k)`` right-hand sides. ``iterations`` lists the
    CG iterations of each column solved by reanalysis; ``direct`` is the
    factorization made when one did not converge (then used for every later
    solve of this design).
    """

    def __init__(self, K, policy: Reanalysis, refactor: Callable, counts):
        self.matrix = K
        self.policy = policy
        self.base = policy.base
        self.refactor = refactor
        self.counts = counts
        self.direct = None
        self.iterations: list[int] = []

    def solve(self, b: np.ndarray) -> np.ndarray:
        b = np.asarray(b)
        if self.direct is None and np.iscomplexobj(b):
            return self.solve(b.real) + 1j * self.solve(b.imag)
        if self.direct is None:
            columns = b[:, None] if b.ndim == 1 else b
            xs = []
            for k in range(columns.shape[1]):
                x = self._one(np.ascontiguousarray(columns[:, k], dtype=float))
                if x is None:                      # factorized instead
                    break
                xs.append(x)
            else:
                self.policy.previous = max(self.iterations, default=0)
                self.policy.succeeded()
                x = np.stack(xs, axis=1) if xs else np.zeros(columns.shape)
                return x[:, 0] if b.ndim == 1 else x
        return self.direct.solve(b)

    solve_adjoint = solve

    def _one(self, b: np.ndarray) -> np.ndarray | None:
        """One column by PCG, or None (and the design factorized) when CG needs too many."""
        t0 = time.perf_counter()
        x, its = pcg_energy(self.matrix, b, self.base.solve,
                             self.policy.rtol, self.policy.maxiter)
        self.counts["reanalysis_seconds"] += time.perf_counter() - t0
        if x is None:
            self.counts["reanalysis_failures"] += 1
            self.direct = self.refactor()
            return None
        self.iterations.append(its)
        self.counts["reanalysis_iterations"] += its
        return x
