"""Minimum compliance on a grid split across MPI ranks, by our MMA on distributed vectors.

The chain of `topopt.formulations.compliance.ComplianceProblem` (top88 eqs.
(1)-(6)) written on each rank's slab (`topopt.grid.slabs`): the density
filter with a halo (`topopt.grid.slab_filter`), SIMP, the solve on the slab
(`topopt.grid.slab_system`), and the two global numbers by the
differentiable collectives of `topopt.ad.collectives`:

    c = allsum(f . u),   v = allsum(sum_e w_e x_phys,e) / allsum(sum_e w_e),

minimized as ``(c / c0, v / volfrac - 1)`` by `topopt.optimize.MMA` with
`topopt.optimize.CommReduce`, with the options `ComplianceProblem.run`
gives ``optimizer="mma"`` (Svanberg's ``rho_init`` from the first gradient,
``inner_maxeval=1``, ``dual_ftol_rel=1e-10``, ``constraint_tol=1e-8``). No
rank holds an array of the whole design or of the whole grid's dofs; the
iterates equal the serial voxel path's to rounding (`tests/test_slabs.py`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np

from .. import ad, fem
from .._files import atomic_write_text
from .._validate import check_range
from ..design.interpolation import simp
from ..grid.slab_filter import SlabDensityFilter
from ..grid.slab_system import SlabSystem
from ..io.pieces import load_piece, save_piece, write_piece_vti, write_pvti
from ..optimize.mma import RHO_MIN, MMA
from ..optimize.reduce import CommReduce
from .compliance import ComplianceProblem

__all__ = ["SlabCompliance", "SlabRun"]


@dataclass
class SlabRun:
    """What `SlabCompliance.run` returns on every rank.

    Attributes
    ----------
    x, x_phys : ndarray
        This rank's part of the last accepted design and of its physical densities.
    compliance, volume : list of float
        Per evaluation (global: the same on every rank).
    status : str
        `topopt.optimize.MMAResult.status`.
    cg_iterations : list of int
        CG iterations of every solve (this rank's count: every rank's is the same).
    """

    x: np.ndarray
    x_phys: np.ndarray
    compliance: list = field(default_factory=list)
    volume: list = field(default_factory=list)
    status: str = ""
    cg_iterations: list = field(default_factory=list)


class SlabCompliance:
    """Minimum compliance subject to a volume fraction, on this rank's slab.

    Parameters
    ----------
    system : topopt.grid.slab_system.SlabSystem
        The slab's system, its supports fixed.
    f : (ndof,) array
        The slab's load, additive (a shared node's load on one rank: `Slabs.additive`).
    volfrac, rmin, penal, Emin
        As `ComplianceProblem` (``rmin`` in length units).
    """

    mma_defaults = ComplianceProblem.mma_defaults

    def __init__(self, system: SlabSystem, f, volfrac: float, rmin: float,
                 penal: float = 3.0, Emin: float = 1e-9):
        if not isinstance(system, SlabSystem):
            raise TypeError(f"system must be a topopt.grid.slab_system.SlabSystem, got "
                            f"{type(system).__name__}")
        self.system, self.slabs = system, system.slabs
        self.comm = self.slabs.comm
        self.f = np.asarray(f, dtype=float)
        if self.f.shape != (system.ndof,):
            raise ValueError(f"f has shape {self.f.shape}; expected ({system.ndof},), the "
                             "slab's dofs")
        self.volfrac = check_range("volfrac", volfrac, 0.0, 1.0, lo_open=True)
        self.penal, self.Emin = float(penal), float(Emin)
        self.filter = SlabDensityFilter(self.slabs, rmin)
        self.weights = np.full(system.n_el, self.slabs.grid.volume)
        self.total = float(self.slabs.reduce(np.array([self.weights.sum()]))[0])
        self.c0 = None

    def x_phys(self, x):
        """The filtered densities of this rank's elements (top88 eq. (6))."""
        return self.filter(x)

    def compliance(self, x):
        """``c = f^T u`` summed over the ranks (top88 eq. (2)); differentiable."""
        E = simp(self.x_phys(x), self.penal, self.Emin)
        return ad.allsum(self.f @ fem.solve(self.system, E, self.f), self.comm)

    def volume(self, x):
        """The volume fraction of the whole design."""
        return ad.allsum(self.weights @ self.x_phys(x), self.comm) / self.total

    def _fun(self, record: SlabRun, checkpoint: str | None = None, every: int = 10):
        """MMA's ``fun``: one solve per design (a repeated design is served from the last)."""
        last = {}

        def fun(x, need_grad):
            if "x" in last and np.array_equal(last["x"], x) and (last["g"] is not None
                                                                 or not need_grad):
                return last["values"], last["g"]
            if need_grad:
                c, gc = ad.value_and_allgradient(self.compliance, x, comm=self.comm)
                v, gv = ad.value_and_allgradient(self.volume, x, comm=self.comm)
            else:
                c, v, gc, gv = self.compliance(x), self.volume(x), None, None
            record.compliance.append(float(c))
            record.volume.append(float(v))
            values = np.array([float(c) / self.c0, float(v) / self.volfrac - 1.0])
            grads = None if gc is None else np.stack([gc / self.c0, gv / self.volfrac])
            last.update(x=np.array(x), values=values, g=grads)
            if checkpoint is not None and len(record.compliance) % every == 0:
                self.write(checkpoint, record, np.array(x), vti=False)
            return values, grads
        return fun

    def _rho_init(self, grad) -> float:
        """Svanberg's ``0.1 mean_j |df/dx_j|`` over the whole design (bounds [0, 1])."""
        total = self.slabs.reduce(np.array([np.abs(grad).sum(), grad.size]))
        return max(0.1 * float(total[0] / total[1]), RHO_MIN)

    def run(self, maxeval: int = 200, x0=None, mma_params: dict | None = None,
            checkpoint: str | None = None, checkpoint_every: int = 10,
            resume: str | None = None) -> SlabRun:
        """MMA from `x0` (uniform `volfrac`) for `maxeval` evaluations; a `SlabRun`.

        `checkpoint`: a folder where every rank keeps its piece of the last
        evaluated design every `checkpoint_every` evaluations (`save_piece`), and
        rank 0 the histories (``history.json``); `resume`: such a folder, on as many
        ranks: MMA restarts from its design.
        """
        if resume is not None:
            x0 = load_piece(resume, self.slabs)["x"]
        x0 = np.full(self.system.n_el, self.volfrac) if x0 is None else np.array(x0, float)
        if x0.shape != (self.system.n_el,):
            raise ValueError(f"x0 has shape {x0.shape}; expected ({self.system.n_el},), this "
                             "rank's elements")
        self.c0 = float(self.compliance(x0))
        record = SlabRun(x0, x0)
        fun = self._fun(record, checkpoint, int(checkpoint_every))
        params = {**self.mma_defaults, **(mma_params or {})}
        if params.get("rho_init", "auto") == "auto":
            params["rho_init"] = self._rho_init(fun(x0, True)[1][0])   # MMA's first call
        mma = MMA(0.0, 1.0, maxeval=maxeval, constraint_tol=1e-8,
                  reduce=CommReduce(self.comm), **params)
        res = mma.minimize(fun, x0)
        record.x, record.status = res.x, res.status
        record.x_phys = np.asarray(self.x_phys(res.x))
        record.cg_iterations = list(self.system._iterative.log)
        if checkpoint is not None:
            self.write(checkpoint, record, res.x, vti=False)
        return record

    def write(self, folder: str, record: SlabRun, x=None, vti: bool = True) -> None:
        """Every rank its piece of the design `x` (``record.x``): ``design.<r>-of-<P>.npz``
        and, with `vti`, ``.vti`` pieces under rank 0's ``design.pvti``; rank 0 the
        histories, ``history.json``. Nothing is gathered."""
        x = record.x if x is None else x
        x_phys = np.asarray(self.x_phys(x))
        save_piece(folder, self.slabs, {"x": x, "x_phys": x_phys})
        if vti:
            write_piece_vti(folder, self.slabs, {"x": x, "x_phys": x_phys})
        if self.slabs.rank == 0:
            if vti:
                write_pvti(folder, self.slabs, ["x", "x_phys"])
            atomic_write_text(os.path.join(folder, "history.json"), json.dumps(
                {"compliance": record.compliance, "volume": record.volume,
                 "ranks": self.slabs.size, "grid_shape": list(self.slabs.grid.shape),
                 "resume": f"SlabCompliance.run(resume={folder!r}) on {self.slabs.size} ranks"}, indent=1))
