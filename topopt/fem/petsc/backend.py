"""The ``"petsc"`` backend: the state solve on PETSc across MPI ranks (``topopt[mpi]``).

All ranks run the same script (``mpirun -n P python problems/cantilever3d.py
--solver petsc``). Rank 0 runs everything of the optimization: the mesh, the
design vector, the filter, NLopt's MMA, the element sensitivities and all
output. The other ranks only serve rank 0's solver requests (`serve`, entered
by `topopt.cli.script.main`, or by a script's ``if not petsc.is_root():
petsc.serve()``) until rank 0 ends (`stop`, also registered with `atexit`).

Per `LinearSystem` (`PetscContext`, the backend's ``hierarchy``):

* setup, once: the elements are split into contiguous blocks, one per rank,
  each rank owning the nodes its elements touch first, dofs numbered node by
  node (block size = components; `topopt.fem.petsc.layout`); rank 0 sends each
  rank its element dofs, its fixed rows, its node coordinates and ``K_e``.
* factor, per design: the element coefficients ``a`` are scattered from
  rank 0, each rank assembles ``sum_e a_e K_e`` over its elements with the
  precomputed element matrix (PETSc's COO assembly, `topopt.fem.petsc.rank`)
  and PETSc sets up the CG preconditioner: PCMG on the geometric hierarchy
  of a structured lattice (trilinear prolongations built once on rank 0,
  `topopt.fem.petsc.mg`; Galerkin coarse operators ``P^T K P`` per design),
  or GAMG with the rigid-body near-nullspace (heat: the constant) on other
  meshes (option ``pc``, `PCS`).
* solve: the right-hand side is scattered, CG runs to ``|K u - b| <= rtol
  |b|`` (`RTOL`), ``u`` is gathered on rank 0. The adjoint is the same solve
  (``K`` is symmetric). A solve that does not converge raises
  `ConvergenceError` (`SingularSystemError` when CG finds ``K`` or the
  preconditioner indefinite) on rank 0; the other ranks keep serving.

The element sensitivities ``-lambda_e^T K_e u_e`` (`topopt.fem.products`)
are computed on the ranks that own the elements: rank 0 sends ``lambda`` and
``u`` (each rank its rows), each rank reads its elements' dofs, other ranks'
included, through a PETSc scatter, and rank 0 gathers one number per element.

Options (``LinearSystem(..., solver_options=...)``): ``rtol`` (default
`RTOL`), ``maxiter`` (`MAXITER`), ``warm_start`` (start from the best
multiple of the previous solution of the same kind, as ``"mg-cg"``), ``pc``
(`PCS`; default ``"auto"``). PETSc's
own options reach a system's KSP through the environment with the prefix
``topopt<k>_`` (``k`` counts the systems from 0), e.g.
``PETSC_OPTIONS="-topopt0_ksp_view" mpirun -n 2 python ...``.
"""

from __future__ import annotations

import atexit
import itertools
import time
from collections import defaultdict

import numpy as np

from ..._validate import check_bool, check_choice, check_int, check_keywords, check_range
from ..errors import ConvergenceError, SingularSystemError
from .layout import partition, rank_payload
from ..solvers.auto import auto_pc
from .mg import hierarchy, rank_rows
from .rank import RankSolver, gather_rows, scatter_rows

__all__ = ["PetscContext", "PetscFactor", "RTOL", "MAXITER", "comm", "is_root", "serve",
           "stop", "run_on_root", "rank_stats", "petsc_options"]

RTOL = 1e-8
"""Default relative residual ``|K u - b| / |b|`` of a solve (as ``"mg-cg"``)."""

MAXITER = 500
"""Default CG iteration limit; `ConvergenceError` beyond it."""

RAYLEIGH_TOL = 100 * np.finfo(float).eps
"""Smallest accepted ``x^T b / x^T D x`` of a solve (`topopt.fem.system.RAYLEIGH_TOL`)."""

PCS = ("auto", "mg", "gamg")
"""Preconditioners of the CG solve: ``"mg"``, PCMG on the geometric hierarchy of a
structured lattice (`topopt.fem.petsc.mg`); ``"gamg"``, PETSc's algebraic multigrid
with the rigid-body near-nullspace, for any mesh; ``"auto"``, ``"mg"`` where the
nodes form a lattice, else ``"gamg"`` (``docs/notes/petsc.md``: on the 3-D
cantilever ``"mg"`` takes 2-4x less time per design)."""

_OPTIONS = {"rtol": RTOL, "maxiter": MAXITER, "warm_start": False, "pc": "auto"}
_INDEFINITE_MAT = -10       # KSP_DIVERGED_INDEFINITE_MAT
_REASONS = {-3: "iteration limit", -4: "residual norm grew", -5: "breakdown",
            -8: "the preconditioner is not positive definite", -9: "NaN or inf"}
_IDS = itertools.count()
_STATE = {"stopped": False, "atexit": False}


def petsc_options(options: dict | None) -> dict:
    """The backend's options with defaults, each checked (name and range).

    Examples
    --------
    >>> petsc_options({"rtol": 1e-10})["rtol"]
    1e-10
    >>> petsc_options({"coarse_size": 100})
    Traceback (most recent call last):
    ...
    TypeError: solver_options got unknown keyword(s) ['coarse_size']; known: \
['maxiter', 'pc', 'rtol', 'warm_start']
    """
    out = dict(_OPTIONS)
    if options:
        check_keywords("solver_options", options, _OPTIONS)
        out.update(options)
    out["rtol"] = check_range("rtol", out["rtol"], 0, 1, lo_open=True, hi_open=True)
    out["maxiter"] = check_int("maxiter", out["maxiter"], 1)
    out["warm_start"] = check_bool("warm_start", out["warm_start"])
    out["pc"] = check_choice("pc", out["pc"], PCS)
    return out


def comm():
    """``MPI.COMM_WORLD`` (mpi4py)."""
    from mpi4py import MPI
    return MPI.COMM_WORLD


def is_root() -> bool:
    """Whether this process is rank 0, the one that runs the problem."""
    return comm().rank == 0


def _init_petsc() -> None:
    """Import PETSc: its initialization is collective, so every rank does it first.

    The serving ranks do so when they start serving, rank 0 before its first
    request (`_command`, `stop`). It also registers petsc4py's collective
    clean-up at exit; `stop`, registered with `atexit` after it, runs before
    it (last in, first out), so the serving ranks are released first.
    """
    from petsc4py import PETSc  # noqa: F401
    if comm().rank == 0 and not _STATE["atexit"]:
        atexit.register(stop)
        _STATE["atexit"] = True


def _command(name: str, sid=None, arg=None) -> None:
    """Tell the serving ranks what to do next (rank 0; nothing to tell on one rank)."""
    c = comm()
    _init_petsc()
    if c.size > 1:
        if _STATE["stopped"]:
            raise RuntimeError("the serving ranks were stopped (petsc.stop); no more solves")
        c.bcast((name, sid, arg), root=0)


def stop() -> None:
    """Rank 0: release the serving ranks (their `serve` returns). Safe to call twice."""
    c = comm()
    if c.rank == 0 and c.size > 1 and not _STATE["stopped"]:
        _init_petsc()
        c.bcast(("stop", None, None), root=0)
        _STATE["stopped"] = True


def serve() -> None:
    """Ranks > 0: carry out rank 0's setup, factor and solve requests until it stops."""
    c = comm()
    if c.rank == 0:
        raise RuntimeError("serve() runs on ranks > 0; rank 0 runs the problem")
    _init_petsc()
    ranks = {}
    while True:
        name, sid, arg = c.bcast(None, root=0)
        if name == "stop":
            break
        if name == "setup":
            ranks[sid] = RankSolver(c.scatter(None, root=0), c, f"topopt{sid}_")
        elif name == "factor":
            r = ranks[sid]
            r.factor(scatter_rows(c, None, None, r.n_el), arg["rtol"], arg["maxiter"])
        elif name == "solve":
            r = ranks[sid]
            x = r.solve(scatter_rows(c, None, None, r.n_rows), arg["key"], arg["warm"])[0]
            gather_rows(c, x, None)
        elif name == "products":
            r = ranks[sid]
            v, w = (scatter_rows(c, None, None, r.n_rows) for _ in range(2))
            gather_rows(c, r.products(v, w), None)
        elif name == "stats":
            c.gather(ranks[sid].stats(), root=0)
        elif name == "close":
            ranks.pop(sid).destroy()
    # the rest are left to PETSc's finalization: destroying them here (collective) without
    # rank 0 doing the same could block


def run_on_root(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` on rank 0 while the other ranks `serve`; then `stop`.

    Returns `fn`'s result on rank 0, None on the others.
    """
    if not is_root():
        serve()
        return None
    try:
        return fn(*args, **kwargs)
    finally:
        stop()


class PetscContext:
    """Rank 0's handle on one `LinearSystem` distributed over the MPI ranks.

    Built once per system (the backend's ``hierarchy``); `factor` per design.

    Parameters
    ----------
    system : LinearSystem
        Real symmetric system with equal element matrices and no ``K0``.
    geometry : (p, nodal_dofs)
        Node coordinates ``(dim, n_nodes)`` and dofs of each node.
    options : dict
        `petsc_options`.
    """

    def __init__(self, system, geometry, options: dict | None = None):
        self.options = petsc_options(options)
        if geometry is None:
            raise ValueError("solver='petsc' needs geometry=(p, nodal_dofs) (Model.system "
                             "passes it)")
        if system.K0 is not None or not system.uniform:
            raise ValueError("solver='petsc' takes systems with one element matrix Ke and no "
                             "K0 (elasticity, heat)")
        c = comm()
        if c.rank != 0:
            raise RuntimeError("only rank 0 builds systems on solver='petsc'; the other ranks "
                               "call topopt.fem.petsc.serve()")
        p, nodal_dofs = geometry
        if nodal_dofs.shape[0] not in (1, np.shape(p)[0]):
            raise ValueError(f"solver='petsc' takes scalar fields or displacements with one "
                             f"component per coordinate; got {nodal_dofs.shape[0]} components "
                             f"in {np.shape(p)[0]}-D")
        t0 = time.perf_counter()
        self.system, self.comm, self.sid = system, c, next(_IDS)
        self.layout = partition(system.element_dofs, nodal_dofs, system.ndof, c.size)
        self.free_rows = self.layout.petsc[system.free]       # PETSc row of each free dof
        self.row_counts = np.diff(self.layout.node_starts) * self.layout.bs
        self.el_counts = np.diff(self.layout.starts)
        payloads = [rank_payload(self.layout, r, system.element_dofs, system.fixed,
                                 np.asarray(p, dtype=float), system.Ke) for r in range(c.size)]
        if self.options["pc"] == "auto":
            self.options["pc"] = auto_pc(p)
        if self.options["pc"] == "mg":
            levels = hierarchy(self.layout, p, nodal_dofs, system.fixed)
            for r, payload in enumerate(payloads):
                payload["mg"] = rank_rows(levels, self.layout.node_starts * self.layout.bs, r)
            del levels
        self.timers = defaultdict(float)
        self.timers["partition"] += time.perf_counter() - t0
        _command("setup", self.sid)
        self.rank = RankSolver(c.scatter(payloads, root=0) if c.size > 1 else payloads[0],
                               c, f"topopt{self.sid}_")
        del payloads
        self.log: list[int] = []
        self.generation = 0

    def factor(self, K, a, options: dict | None = None) -> "PetscFactor":
        """Assemble ``K(a)`` on the ranks and set up the preconditioner; `K` is unused (None)."""
        options = petsc_options(options)
        if options["pc"] == "auto":
            options["pc"] = self.options["pc"]
        if options["pc"] != self.options["pc"]:
            raise ValueError(f"pc={options['pc']!r}: this system was built with "
                             f"pc={self.options['pc']!r}; build a new system to change it")
        self.options = options
        a = np.asarray(a, dtype=float)
        if a.shape != (self.system.n_el,):
            raise ValueError(f"a has shape {a.shape}; expected ({self.system.n_el},)")
        _command("factor", self.sid, {k: self.options[k] for k in ("rtol", "maxiter")})
        t0 = time.perf_counter()
        a_local = scatter_rows(self.comm, a, self.el_counts, self.rank.n_el)
        self.timers["scatter"] += time.perf_counter() - t0
        self.rank.factor(a_local, self.options["rtol"], self.options["maxiter"])
        self.generation += 1
        return PetscFactor(self)

    def solve(self, b: np.ndarray, kind: str, generation: int) -> np.ndarray:
        """``K^{-1} b`` for `b` on the free dofs, ``(n,)`` or ``(n, k)``, real or complex."""
        if generation != self.generation:
            raise RuntimeError("this PETSc factor is stale: the system was factorized for "
                               "another design since")
        b = np.asarray(b)
        if np.iscomplexobj(b):
            return self.solve(b.real, kind, generation) + 1j * self.solve(
                b.imag, kind + "i", generation)
        if b.ndim == 2:
            return np.stack([self._one(np.asarray(b[:, k], dtype=float), (kind, k))
                             for k in range(b.shape[1])], axis=1)
        return self._one(np.asarray(b, dtype=float), (kind, 0))

    def _one(self, b: np.ndarray, key) -> np.ndarray:
        if not np.all(np.isfinite(b)):
            raise ValueError("the right-hand side contains NaN or inf")
        if not np.any(b):
            return np.zeros_like(b)
        warm = self.options["warm_start"]
        _command("solve", self.sid, {"key": key, "warm": warm})
        t0 = time.perf_counter()
        full = np.zeros(self.layout.petsc.size)
        full[self.free_rows] = b
        b_local = scatter_rows(self.comm, full, self.row_counts, self.rank.n_rows)
        self.timers["scatter"] += time.perf_counter() - t0
        x_local, reason, its, rayleigh = self.rank.solve(b_local, key, warm)
        t0 = time.perf_counter()
        x = gather_rows(self.comm, x_local, self.row_counts)[self.free_rows]
        self.timers["gather"] += time.perf_counter() - t0
        self.log.append(its)
        self.system.counts["cg_iterations"] += its
        self.system.counts["cg_solves"] += 1
        if reason == _INDEFINITE_MAT:
            raise SingularSystemError(f"PETSc CG found the matrix not positive definite after "
                                      f"{its} iterations: is every part of the domain "
                                      "supported?")
        if reason < 0:
            raise ConvergenceError(
                f"PETSc CG + {self.options['pc']} stopped after {its} iterations with reason {reason} "
                f"({_REASONS.get(reason, 'see KSPConvergedReason')}; rtol "
                f"{self.options['rtol']:.0e}, maxiter {self.options['maxiter']}): the system "
                "may be singular (unsupported parts) or too ill-conditioned; raise maxiter or "
                "use a direct solver")
        if rayleigh <= RAYLEIGH_TOL:
            raise SingularSystemError(
                f"the solve returned x with x^T b / x^T diag(K) x = {rayleigh:.1e} <= "
                f"{RAYLEIGH_TOL:.0e}: the stiffness matrix is singular to working precision "
                "(a part held by nothing, or a coefficient contrast beyond 1/eps)")
        return x

    def products(self, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``sum_k v_e[:, k]^T K_e w_e[:, k]`` per element, each computed on its owning rank.

        `v`, `w`: real full-dof vectors ``(ndof,)`` or ``(ndof, k)``. Rank 0
        sends both (its rows to each rank) and gathers one number per element.
        """
        v, w = np.asarray(v, dtype=float), np.asarray(w, dtype=float)
        if v.ndim == 2:
            return sum(self.products(v[:, k], w[:, k]) for k in range(v.shape[1]))
        t0 = time.perf_counter()
        _command("products", self.sid)
        parts = []
        for full in (v, w):
            ordered = np.empty(full.size)
            ordered[self.layout.petsc] = full
            parts.append(scatter_rows(self.comm, ordered, self.row_counts, self.rank.n_rows))
        self.timers["scatter"] += time.perf_counter() - t0
        y_local = self.rank.products(*parts)
        t0 = time.perf_counter()
        y = gather_rows(self.comm, y_local, self.el_counts)
        self.timers["gather"] += time.perf_counter() - t0
        return y

    def close(self) -> None:
        """Free this system's PETSc objects on every rank."""
        _command("close", self.sid)
        self.rank.destroy()


class PetscFactor:
    """What the ``"petsc"`` backend's ``factorize`` returns: solves with ``K(a)`` of one design.

    ``solve(b)`` and ``solve_adjoint(b)`` (the same: ``K`` is symmetric) take
    ``(n,)`` or ``(n, k)`` right-hand sides on the free dofs; a factor whose
    system has been factorized again raises instead of solving with the new
    matrix.
    """

    matrix = None       # K lives on the ranks; LinearSystem skips its residual check

    def __init__(self, context: PetscContext):
        self.context, self.generation = context, context.generation

    def solve(self, b: np.ndarray) -> np.ndarray:
        """Solve ``K x = b``."""
        return self.context.solve(b, "forward", self.generation)

    def solve_adjoint(self, b: np.ndarray) -> np.ndarray:
        """Solve ``K^T x = b`` (a CG solve with its own warm start)."""
        return self.context.solve(b, "adjoint", self.generation)


def rank_stats(context: PetscContext) -> list[dict]:
    """Every rank's timers, elements, rows and peak memory (rank 0's own timers added).

    Collective through rank 0's request; call on rank 0.
    """
    _command("stats", context.sid)
    mine = context.rank.stats()
    stats = context.comm.gather(mine, root=0) if context.comm.size > 1 else [mine]
    stats[0]["timers"] = {**stats[0]["timers"], **{f"root_{k}": v
                                                    for k, v in context.timers.items()}}
    return stats
