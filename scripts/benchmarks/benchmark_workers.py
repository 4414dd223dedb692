"""Monte Carlo of FE solves on workers: serial against ``ProcessPoolExecutor(workers)``.

The limit state is the reliable bracket (``n x n`` unit elements, clamped
base, unit load on the top) at a uniform design ``x = 0.5`` whose four
quadrants have lognormal moduli ``E_e = simp(x_e) exp(0.2 theta_zone(e))``:
every sample assembles, factorizes and solves (a few ms at ``n = 40``). It
fails above 1.3 times the nominal compliance. The same
`rel.sampling_estimate` (``method="mc"``, same seed) runs serially and with
``executor=ProcessPoolExecutor(workers)``, the model built once per worker
from a `topopt.parallel.Builder`; the results must be identical to the bit.

Times are medians of ``--repeats`` rounds (`harness.alternating`, min and max beside
them), each running serial, parallel and
empty tasks in turn (on a shared machine the others' load falls on both),
after one warm-up round (it starts the worker processes and builds their
models; its times are reported too). BLAS threads are pinned to 1 so that serial means one core.
The per-task overhead is measured with empty tasks carrying the same sample
blocks. ``--dask`` times the same on a Dask ``LocalCluster`` of ``--workers``
processes (after the others; its speed-up is against the serial median).
Prints the JSON record (and writes it with ``--out``, with the machine and the commit).
``--smallest``: n = 10, 40 samples, one round.

    python scripts/benchmarks/benchmark_workers.py [--n 40] [--samples 2000] [--workers 2]
                                        [--repeats 3] [--chunk N] [--dask] [--out FILE.json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")          # before numpy: one core per process

import argparse                                # noqa: E402
import json                                    # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402

import numpy as np                             # noqa: E402

import harness                                 # noqa: E402

from topopt_problems.reliable_bracket import moduli_limit_state  # noqa: E402
from topopt import reliability as rel  # noqa: E402
from topopt.parallel import Builder, _chunk_bounds, _run_chunks  # noqa: E402

SIGMA_E = 0.2


def _empty_task(model, payload):
    """A task that does nothing with its samples: the round trip of one chunk."""
    return np.zeros(len(payload[1]))


def _dask_record(args, estimate, same, serial: float) -> dict:
    """Median time of the estimate on a Dask LocalCluster of `args.workers` processes."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        executor = client.get_executor()
        first, (times,), (result,) = harness.alternating([lambda: estimate(executor)],
                                                         args.repeats)
    median = times["median"]
    return {"dask_s": median, "dask_times_s": times, "dask_first_s": first[0],
            "dask_speedup": serial / median, "dask_identical": bool(same(result))}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=None,
                        help="samples per task (default ceil(samples / 64))")
    parser.add_argument("--dask", action="store_true",
                        help="also time a Dask LocalCluster of --workers processes")
    harness.options(parser, repeats=3, smallest="n = 10, 40 samples")
    args = parser.parse_args(argv)
    if args.smallest:
        args.n, args.samples, args.repeats = 10, 40, 1
    builder = Builder(moduli_limit_state, args.n, SIGMA_E)
    ls = builder.build()
    x = np.full(args.n * args.n, 0.5)
    z = 1.3 * float(ls(np.zeros(4), x))
    estimate = lambda executor=None: rel.sampling_estimate(      # noqa: E731
        builder, x, z, "mc", n_samples=args.samples, seed=0, chunk=args.chunk,
        executor=executor)
    thetas = np.random.default_rng(0).standard_normal((args.samples, 4))
    bounds = _chunk_bounds(args.samples, args.chunk)
    payloads = [((x,), thetas[a:b], b - a, False) for a, b in bounds]
    with ProcessPoolExecutor(args.workers) as pool:
        first, times, (r_serial, r_par, _) = harness.alternating(
            [estimate, lambda: estimate(pool),
             lambda: _run_chunks(builder, _empty_task, payloads, pool)], args.repeats)
    (serial_first, par_first, _), (serial_times, par_times, _) = first, times
    serial, par, empty = (t["median"] for t in times)
    same = lambda r: (r.ln_pf == r_serial.ln_pf and r.n_failures == r_serial.n_failures  # noqa
                      and np.array_equal(r.log_terms, r_serial.log_terms))
    identical = same(r_par)
    dask = _dask_record(args, estimate, same, serial) if args.dask else {}
    record = {
        "n": args.n, "dofs": 2 * (args.n + 1) ** 2, "samples": args.samples,
        "workers": args.workers, "tasks": len(bounds), "repeat": args.repeats,
        "cpu_count": os.cpu_count(), "load_average": list(os.getloadavg()),
        "serial_s": serial, "parallel_s": par, "speedup": serial / par,
        "serial_times_s": serial_times, "parallel_times_s": par_times,
        "serial_first_s": serial_first, "parallel_first_s": par_first,
        "ms_per_solve_serial": 1e3 * serial / args.samples,
        "empty_tasks_s": empty, "overhead_ms_per_task": 1e3 * empty / len(bounds),
        "pf": r_serial.pf, "pf_std": r_serial.pf_std, "n_failures": r_serial.n_failures,
        "identical_to_serial": bool(identical), **dask,
    }
    print(json.dumps(record, indent=1))
    print(f"{args.samples} FE-solve samples ({record['dofs']} dofs): serial {serial:.2f} s, "
          f"{args.workers} workers {par:.2f} s -> speed-up {serial / par:.2f}x "
          f"(ideal {args.workers}); {len(bounds)} tasks, overhead "
          f"{record['overhead_ms_per_task']:.2f} ms/task; identical: {identical}")
    if args.out:
        harness.write(args.out, harness.record(
            dict(command=harness.command(__file__, argv), **record), args.repeats))
    if dask:
        print(f"Dask LocalCluster({args.workers} processes): {dask['dask_s']:.2f} s -> "
              f"speed-up {dask['dask_speedup']:.2f}x; identical: {dask['dask_identical']}")
        identical = identical and dask["dask_identical"]
    if not identical:
        raise SystemExit("the parallel result differs from the serial one")
    return record


if __name__ == "__main__":
    main()
