"""Extrapolate the measured ``"petsc"`` iteration to 64-1,024 ranks (a cost model).

    python scripts/benchmarks/petsc_extrapolate.py [--scaling results/petsc_scaling.json]
        [--pc mg] [--alpha 2e-6] [--beta 1e10] [--out results/petsc_extrapolation.json]

The JSON records the machine and the commit of the extrapolation (`harness.record`) and
the measured medians' spread; ``--smallest`` runs the same (it only reads and models).

Inputs are measurements of `scripts/benchmarks/petsc_scaling.py` (the medians in its
``summary``) on the largest size it ran with 1 and 2 ranks:

* the parallel part (assembly, preconditioner setup, CG, the element
  sensitivities on their ranks) in rank-seconds per element, from the
  1-rank run: it divides by ``P``;
* rank 0's serial part per element (NLopt's MMA step, filter, AD, the
  scatter of ``a``, ``b``, ``lambda``, ``u`` and the gather of ``u`` and the
  element sensitivities), from the 2-rank run: it does not divide;
* CG iterations per solve (they do not grow with ``P`` for a geometric
  multigrid: the hierarchy is the same on any number of ranks, and SOR is
  applied per rank, measured 1 -> 2 ranks).

Communication, which two ranks on one machine cannot show, is modelled with
a latency ``alpha`` (s) and a bandwidth ``beta`` (bytes/s) per message
(defaults: 2 us and 10 GB/s, an InfiniBand EDR link), per CG iteration:

* halo exchanges: the fine-level matrix-vector product and the smoothing
  sweeps (``HALO_EXCHANGES``) each send a rank's boundary dofs to its
  neighbours; coarser levels add a third (their boundaries shrink 4x per
  level in 3-D). The boundary is two lattice planes per rank for our
  contiguous element blocks (slabs along z), ``6 (n/P)^(2/3)`` dofs for
  3-D boxes (TopOpt_in_PETSc's DMDA);
* ``ALLREDUCES`` global reductions of CG (``2 alpha log2 P`` each);
* the coarsest level (``COARSE_DOFS``), solved redundantly on every rank:
  one all-gather per V-cycle;
* once per design, through rank 0's link: ``a`` and the two vectors of the
  sensitivities scattered, ``u`` and one number per element gathered.

Prints a table of seconds per design iteration, its parts and the parallel
efficiency for P = 1 .. 1024 on the measured mesh and on a mesh 64x larger,
and what limits first; writes ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import os

import harness

ROOT = harness.ROOT

HALO_EXCHANGES = 5        # 1 product + 2 x 2 SOR sweeps (Richardson, 2 steps, pre and post)
LEVEL_FACTOR = 4 / 3      # coarser levels' halos: 1 + 1/4 + 1/16 + ...
ALLREDUCES = 3            # CG: two inner products and the residual norm
COARSE_DOFS = 3000        # `topopt.fem.petsc.COARSE_SIZE`
BYTES_PER_ELEMENT_ROOT = 8 * (1 + 3 + 3 + 3 + 3 + 1)   # a, b, u, lambda, u, products
RANKS = (1, 2, 8, 64, 256, 1024)
PARALLEL = ("assembly", "setup", "solve", "sensitivity")    # split over the ranks
ROOT_PARTS = ("scatter_gather", "optimizer", "rest")        # rank 0 alone


def measured(path: str, pc: str) -> dict:
    """The 1- and 2-rank medians of the largest size with both, from petsc_scaling's summary."""
    with open(path) as fh:
        data = json.load(fh)
    rows = [s for s in data["summary"] if s["solver"] == "petsc" and s["pc"] == pc]
    sizes = sorted({tuple(s["size"]) for s in rows}, key=lambda t: math.prod(t))
    for size in reversed(sizes):
        by_p = {s["ranks"]: s for s in rows if tuple(s["size"]) == size}
        if 1 in by_p and 2 in by_p:
            runs = [r for r in data["runs"] if tuple(r["size"]) == size and r.get("pc") == pc]
            cg = harness.spread(r["cg_iterations_per_solve"] for r in runs)["median"]
            rss0 = harness.spread(r["max_rss_mb"][0] for r in runs if r["ranks"] == 2)
            return {"size": size, "one": by_p[1], "two": by_p[2], "cg": cg,
                    "root_bytes_per_element": rss0["median"] * 2 ** 20 / math.prod(size)}
    raise SystemExit(f"{path} has no size measured with pc={pc!r} on 1 and 2 ranks")


def model(m: dict, scale: float, alpha: float, beta: float) -> list[dict]:
    """Seconds per design iteration and its parts for each P in `RANKS`."""
    nx, ny, nz = (round(n * scale ** (1 / 3)) for n in m["size"])
    n_el = nx * ny * nz
    ndof = 3 * (nx + 1) * (ny + 1) * (nz + 1)
    n_el0 = math.prod(m["size"])
    one, two = m["one"]["split_per_iteration_s"], m["two"]["split_per_iteration_s"]
    par = sum(one[k] for k in PARALLEL) * n_el / n_el0                    # rank-seconds
    root = sum(two[k] for k in ROOT_PARTS) * n_el / n_el0
    cg = m["cg"]
    out = []
    for p in RANKS:
        slab = 2 * 3 * (nx + 1) * (ny + 1) if p > 1 else 0        # dofs sent per exchange
        box = 6 * (ndof / p) ** (2 / 3) if p > 1 else 0
        halo = {k: cg * HALO_EXCHANGES * LEVEL_FACTOR * (6 * alpha + 8 * d / beta)
                if p > 1 else 0.0 for k, d in (("slab", slab), ("box", box))}
        reduce = cg * ALLREDUCES * 2 * alpha * math.log2(p) if p > 1 else 0.0
        coarse = cg * (alpha * math.log2(p) + 8 * COARSE_DOFS / beta) if p > 1 else 0.0
        link = (BYTES_PER_ELEMENT_ROOT * n_el / beta + 4 * p * alpha) if p > 1 else 0.0
        parts = {"parallel": par / p, "root_serial": root, "root_link": link,
                 "halo_slab": halo["slab"], "halo_box": halo["box"], "allreduce": reduce,
                 "coarse": coarse}
        total_box = sum(v for k, v in parts.items() if k != "halo_slab")
        total_slab = sum(v for k, v in parts.items() if k != "halo_box")
        out.append({"ranks": p, "elements": n_el, "dofs": ndof, "parts": parts,
                    "s_per_iteration_box": total_box, "s_per_iteration_slab": total_slab,
                    "dofs_per_rank": ndof / p, "slab_layers_per_rank": nz / p,
                    "root_memory_gb": m["root_bytes_per_element"] * n_el / 1e9})
    for row in out:
        row["efficiency_box"] = out[0]["s_per_iteration_box"] / (
            row["ranks"] * row["s_per_iteration_box"])
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scaling", default=os.path.join(ROOT, "results", "petsc_scaling.json"))
    parser.add_argument("--pc", default="mg")
    parser.add_argument("--alpha", type=float, default=2e-6, help="latency per message (s)")
    parser.add_argument("--beta", type=float, default=1e10, help="bandwidth (bytes/s)")
    parser.add_argument("--out", default=os.path.join(ROOT, "results",
                                                      "petsc_extrapolation.json"))
    parser.add_argument("--smallest", action="store_true",
                        help="the same (a model of the recorded medians: instant)")
    args = parser.parse_args(argv)
    m = measured(args.scaling, args.pc)
    tables = {}
    for scale in (1, 64):
        rows = model(m, scale, args.alpha, args.beta)
        tables[str(scale)] = rows
        print(f"\n{rows[0]['elements']} elements, {rows[0]['dofs']} dofs "
              f"(measured size x {scale}); seconds per design iteration")
        print(f"{'P':>5} {'box':>8} {'slab':>8} {'eff.':>5} | {'parallel':>8} {'root':>7} "
              f"{'link':>6} {'halo box':>8} {'halo slab':>9} {'reduce':>7} {'coarse':>7} | "
              f"{'layers/rank':>11} {'rank-0 GB':>9}")
        for r in rows:
            q = r["parts"]
            print(f"{r['ranks']:>5} {r['s_per_iteration_box']:8.3f} "
                  f"{r['s_per_iteration_slab']:8.3f} {r['efficiency_box']:5.2f} | "
                  f"{q['parallel']:8.3f} {q['root_serial']:7.3f} {q['root_link']:6.3f} "
                  f"{q['halo_box']:8.4f} {q['halo_slab']:9.4f} {q['allreduce']:7.4f} "
                  f"{q['coarse']:7.4f} | {r['slab_layers_per_rank']:11.2f} "
                  f"{r['root_memory_gb']:9.1f}")
        q = rows[0]["parts"]
        print(f"rank 0's serial part equals the parallel part at P = "
              f"{q['parallel'] / q['root_serial']:.0f} (Amdahl: speed-up < "
              f"{(q['parallel'] + q['root_serial']) / q['root_serial']:.0f} at any P)")
    harness.write(args.out, harness.record({
        "command": harness.command(__file__, argv), "measured": {
            "size": m["size"], "cg_per_solve": m["cg"],
            "one_rank": m["one"]["split_per_iteration_s"],
            "two_ranks": m["two"]["split_per_iteration_s"],
            "spread": {"one_rank": m["one"].get("spread"), "two_ranks": m["two"].get("spread")}},
        "alpha": args.alpha, "beta": args.beta, "tables": tables},
        repeats=m["one"].get("runs", 1),
        statistic="a cost model of --scaling's medians (their spread under measured)"))
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
