"""One rank's part of the PETSc state solve: its rows of ``K(a)``, CG + GAMG, its timers.

Every rank (rank 0 too) holds one `RankSolver` per `LinearSystem`, built from
the `topopt.fem.petsc.rank_payload` that rank 0 sent. All methods
except `stats` are collective: every rank calls them in the same order
(rank 0 from `topopt.fem.petsc.PetscContext`, the others from
`topopt.fem.petsc.serve`).

Assembly is PETSc's COO path: the (row, column) pairs of the rank's element
matrices are given once (`Mat.setPreallocationCOO`; entries at fixed dofs
carry index -1 and are ignored, entries in rows of another rank are sent
there), and each design gives only the values ``a_e K_e`` in the same order
(`Mat.setValuesCOO`, which sums repeated entries): ``K = sum_e a_e K_e`` with
the precomputed element matrix, no re-integration. Fixed dofs get identity
rows scaled by ``mean(diag K_e)``, with zero load, so ``u = 0`` there.
"""

from __future__ import annotations

import resource
import time
from collections import defaultdict

import numpy as np

__all__ = ["RankSolver", "scatter_rows", "gather_rows", "SMOOTHER", "MG_DEFAULTS"]


SMOOTHER = {"mg_levels_ksp_type": "richardson", "mg_levels_pc_type": "sor"}
"""GAMG's level smoother: one Richardson step of (processor-local) symmetric SOR.

PETSc's default, Chebyshev on Jacobi with an estimated largest eigenvalue
(10 CG steps, safety factor 1.1), made the preconditioner indefinite (CG
stopped with KSP_DIVERGED_INDEFINITE_PC after 2 iterations) on the third
MMA design of the 24 x 12 x 12 cantilever, the first one with void elements
(E from 1e-9 to 0.23): the estimate fell short. SOR needs no estimate: 18 CG
iterations on that design (Chebyshev with safety factor 1.5: 26).
"""


MG_DEFAULTS = {"pc_mg_galerkin": "both", **SMOOTHER}
"""PCMG on the geometric hierarchy: Galerkin coarse operators ``P^T A P``, SOR smoothing."""


def scatter_rows(comm, full, counts, n_local: int) -> np.ndarray:
    """Rank 0's `full` vector split into blocks of `counts` (None on other ranks)."""
    from mpi4py import MPI
    out = np.empty(n_local)
    if comm.size == 1:
        out[:] = full
        return out
    send = None
    if comm.rank == 0:
        counts = np.asarray(counts, dtype=np.int64)
        send = [np.ascontiguousarray(full, dtype=float), counts,
                np.concatenate([[0], np.cumsum(counts)[:-1]]), MPI.DOUBLE]
    comm.Scatterv(send, out, root=0)
    return out


def gather_rows(comm, local: np.ndarray, counts) -> np.ndarray | None:
    """The blocks of all ranks joined on rank 0 (None on other ranks)."""
    from mpi4py import MPI
    local = np.ascontiguousarray(local, dtype=float)
    if comm.size == 1:
        return local.copy()
    recv = None
    if comm.rank == 0:
        counts = np.asarray(counts, dtype=np.int64)
        out = np.empty(int(counts.sum()))
        recv = [out, counts, np.concatenate([[0], np.cumsum(counts)[:-1]]), MPI.DOUBLE]
    comm.Gatherv(local, recv, root=0)
    return recv[0] if recv is not None else None


def _max_rss_mb() -> float:
    """Peak resident memory of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class RankSolver:
    """This rank's rows of ``K(a)`` and the CG + GAMG solver (collective methods).

    Parameters
    ----------
    payload : dict
        `topopt.fem.petsc.rank_payload` of this rank.
    comm : mpi4py communicator
    prefix : str
        PETSc options prefix of this system's KSP (``-<prefix>ksp_view``, ...).
    """

    def __init__(self, payload: dict, comm, prefix: str):
        from petsc4py import PETSc
        self.PETSc, self.comm = PETSc, comm
        self.timers = defaultdict(float)
        t0 = time.perf_counter()
        lo, hi = payload["rows"]
        self.n_rows, self.bs = hi - lo, payload["bs"]
        edofs, Ke = payload["edofs"], payload["Ke"]
        self.n_el, n_loc = edofs.shape
        self.Ke = np.asarray(Ke, dtype=float)
        A = PETSc.Mat().create(comm=PETSc.COMM_WORLD)
        A.setSizes(((self.n_rows, payload["n"]), (self.n_rows, payload["n"])), bsize=self.bs)
        A.setType(PETSc.Mat.Type.AIJ)
        fixed = payload["fixed_rows"]
        self.m = self.n_el * n_loc * n_loc
        rows = np.empty(self.m + fixed.size, dtype=PETSc.IntType)    # (e, i, j) -> edofs[e, i]
        cols = np.empty_like(rows)                                   # (e, i, j) -> edofs[e, j]
        rows[:self.m].reshape(self.n_el, n_loc, n_loc)[:] = edofs[:, :, None]
        cols[:self.m].reshape(self.n_el, n_loc, n_loc)[:] = edofs[:, None, :]
        rows[self.m:] = cols[self.m:] = fixed
        A.setPreallocationCOO(rows, cols)
        del rows, cols
        self.v = np.empty(self.m + fixed.size)
        self.v[self.m:] = payload["diag"]
        self.A = A
        self.interpolations = [self._interpolation(blk) for blk in payload.get("mg") or ()]
        self.ksp = self._ksp(prefix)
        self.nullspace = None
        if not self.interpolations:
            self._near_nullspace(payload["coords"])
        self.b, self.x = A.createVecs()[::-1]
        self.element_rows = payload["element_rows"]
        self.to_elements = self.elements_v = None   # VecScatter: owned rows -> element dofs
        self.warm = {}
        self.diag = None
        self.first = True
        self.timers["init"] += time.perf_counter() - t0

    def _interpolation(self, blk: dict):
        """This rank's rows of one prolongation (`topopt.fem.petsc.rank_rows`) as a PETSc Mat."""
        PETSc = self.PETSc
        (lo, hi), (clo, chi) = blk["rows"], blk["cols"]
        return PETSc.Mat().createAIJ(size=((hi - lo, blk["n_fine"]), (chi - clo, blk["n"])),
                                     csr=(blk["indptr"], blk["indices"], blk["data"]),
                                     comm=PETSc.COMM_WORLD)

    def _ksp(self, prefix: str):
        PETSc = self.PETSc
        ksp = PETSc.KSP().create(comm=PETSc.COMM_WORLD)
        ksp.setOptionsPrefix(prefix)
        ksp.setType(PETSc.KSP.Type.CG)
        pc = ksp.getPC()
        if self.interpolations:         # PCMG: level 0 is the coarsest, the last the mesh
            pc.setType(PETSc.PC.Type.MG)
            n = len(self.interpolations) + 1
            pc.setMGLevels(n)
            pc.setMGType(PETSc.PC.MGType.MULTIPLICATIVE)
            pc.setMGCycleType(PETSc.PC.MGCycleType.V)
            for k, P in enumerate(self.interpolations):
                pc.setMGInterpolation(n - 1 - k, P)
        else:
            pc.setType(PETSc.PC.Type.GAMG)
        ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)    # |K x - b| <= rtol |b|
        ksp.setFromOptions()
        return ksp

    def _near_nullspace(self, coords: np.ndarray) -> None:
        """Rigid-body modes (elasticity, ``bs = dim``) or constants (``bs = 1``) for GAMG."""
        PETSc = self.PETSc
        if self.bs == 1:
            self.nullspace = PETSc.NullSpace().create(constant=True, comm=PETSc.COMM_WORLD)
        else:
            dim = coords.shape[1]
            xyz = PETSc.Vec().createWithArray(np.ascontiguousarray(coords.ravel()),
                                              size=(coords.size, PETSc.DECIDE), bsize=dim,
                                              comm=PETSc.COMM_WORLD)
            self.nullspace = PETSc.NullSpace().createRigidBody(xyz)
            xyz.destroy()
        self.A.setNearNullSpace(self.nullspace)

    def _setup_with(self, defaults: dict) -> None:
        """The first GAMG setup with `defaults` for options PETSC_OPTIONS does not set."""
        opts = self.PETSc.Options(self.ksp.getOptionsPrefix())
        added = [name for name in defaults if not opts.hasName(name)]
        for name in added:
            opts.setValue(name, defaults[name])
        try:
            self.ksp.setFromOptions()
            self.ksp.setUp()
        finally:
            for name in added:          # used: not left in the database ("Option left")
                opts.delValue(name)

    def factor(self, a_local: np.ndarray, rtol: float, maxiter: int) -> None:
        """``K = sum_e a_e K_e`` on this rank's elements, then the GAMG setup (collective)."""
        t0 = time.perf_counter()
        np.multiply(a_local[:, None], self.Ke.ravel()[None, :], out=self.v[:self.m].reshape(
            self.n_el, -1))
        self.A.setValuesCOO(self.v, addv=self.PETSc.InsertMode.INSERT_VALUES)
        t1 = time.perf_counter()
        self.ksp.setOperators(self.A)
        self.ksp.setTolerances(rtol=rtol, atol=0.0, max_it=maxiter)
        if self.first:      # the level smoothers exist from the first setup on
            self._setup_with(MG_DEFAULTS if self.interpolations else SMOOTHER)
            self.first = False
        else:
            self.ksp.setUp()
        if self.diag is not None:
            self.diag.destroy()
        self.diag = self.A.getDiagonal()
        self.timers["assembly"] += t1 - t0
        self.timers["setup"] += time.perf_counter() - t1

    def solve(self, b_local: np.ndarray, key, warm: bool) -> tuple[np.ndarray, int, int, float]:
        """CG on this rank's rows (collective).

        Returns ``(x_local, converged reason, iterations, rayleigh)`` with
        ``rayleigh = x^T b / x^T D x`` (``D = diag K``, all ranks summed; see
        `topopt.fem.system.RAYLEIGH_TOL`).
        """
        t0 = time.perf_counter()
        self.b.array[:] = b_local
        x = self.x
        guess = warm and key in self.warm
        if guess:       # the best multiple of the previous solution in the energy norm
            prev = self.warm[key]
            Ap = self.A.createVecLeft()
            self.A.mult(prev, Ap)
            pAp, bp = prev.dot(Ap), self.b.dot(prev)
            Ap.destroy()
            guess = pAp > 0 and bp != 0
            if guess:
                prev.copy(x)
                x.scale(bp / pAp)
        if not guess:
            x.set(0.0)
        self.ksp.setInitialGuessNonzero(bool(guess))
        self.ksp.solve(self.b, x)
        reason, its = int(self.ksp.getConvergedReason()), int(self.ksp.getIterationNumber())
        xx = x.duplicate()
        xx.pointwiseMult(x, x)
        xdx, xb = xx.dot(self.diag), x.dot(self.b)
        xx.destroy()
        rayleigh = xb / xdx if xdx > 0 else np.inf
        if warm and reason > 0:
            self.warm.setdefault(key, x.duplicate())
            x.copy(self.warm[key])
        self.timers["solve"] += time.perf_counter() - t0
        return x.array.copy(), reason, its, float(rayleigh)

    def products(self, v_local: np.ndarray, w_local: np.ndarray) -> np.ndarray:
        """``v_e^T K_e w_e`` of this rank's elements from the rows each rank owns (collective).

        The values of the element dofs owned by other ranks come through a
        PETSc scatter built on first use.
        """
        PETSc = self.PETSc
        t0 = time.perf_counter()
        n_el, n_loc = self.element_rows.shape
        if self.to_elements is None:
            rows = PETSc.IS().createGeneral(self.element_rows.ravel(), comm=PETSc.COMM_SELF)
            self.elements_v = PETSc.Vec().createSeq(n_el * n_loc, comm=PETSc.COMM_SELF)
            self.to_elements = PETSc.Scatter().create(self.b, rows, self.elements_v, None)
            rows.destroy()
        values = []
        for local in (v_local, w_local):
            self.b.array[:] = local
            self.to_elements.scatter(self.b, self.elements_v, addv=PETSc.InsertMode.INSERT,
                                     mode=PETSc.ScatterMode.FORWARD)
            values.append(self.elements_v.array.reshape(n_el, n_loc).copy())
        y = np.sum(values[0] * (values[1] @ self.Ke.T), axis=1)
        self.timers["sensitivity"] += time.perf_counter() - t0
        return y

    def stats(self) -> dict:
        """This rank's timers, elements, rows and peak memory (MiB)."""
        return {"timers": dict(self.timers), "elements": self.n_el, "rows": self.n_rows,
                "max_rss_mb": _max_rss_mb()}

    def destroy(self) -> None:
        for v in self.warm.values():
            v.destroy()
        for obj in (self.ksp, self.A, self.nullspace, self.b, self.x, self.diag,
                    self.to_elements, self.elements_v, *self.interpolations):
            if obj is not None:
                obj.destroy()
