"""Tape overhead: cost of value_and_gradient relative to one plain evaluation.

For ``f(x) = sum(exp(x) * x)`` the tape records three operations whatever the
size of ``x``; its cost must stay a small multiple of the numpy evaluation
(issue 2, requirement 7: ratio <= 4 at 10^6 entries). Prints medians of
`--repeats` timings (`harness.timed`: one untimed call first); ``--out`` writes them with
their spread, the machine and the commit; ``--smallest``: 10^4 entries, 3 repeats. The allocator is tuned first (`topopt.tune_malloc`)
unless ``--no-tune-malloc``: the ratio with and without it is that call's
effect.

    python scripts/benchmarks/benchmark_ad.py [--n 1000000] [--repeats 15] [--json] [--no-tune-malloc]
        [--smallest] [--out FILE]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import harness
import topopt
from topopt import ad


def f(x):
    return np.sum(np.exp(x) * x)


def seconds(fun, repeats: int) -> dict:
    """`harness.spread` of `repeats` calls of `fun` after one untimed call."""
    return harness.timed(fun, repeats, warmup=1)[0]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**6, help="entries of x")
    harness.options(parser, repeats=15, smallest="10^4 entries, 3 repeats")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--no-tune-malloc", dest="tune_malloc", action="store_false",
                        help="keep glibc's allocator policy (no topopt.tune_malloc())")
    args = parser.parse_args(argv)
    if args.smallest:
        args.n, args.repeats = 10**4, 3
    if args.n < 1 or args.repeats < 1:
        parser.error("--n and --repeats must be positive")
    tuned = topopt.tune_malloc() if args.tune_malloc else False
    x = np.random.default_rng(0).standard_normal(args.n)
    small = np.ones(10)
    spreads = {"plain_s": seconds(lambda: f(x), args.repeats),
               "value_and_gradient_s": seconds(lambda: ad.value_and_gradient(f, x),
                                               args.repeats),
               "ten_entries_s": seconds(lambda: ad.value_and_gradient(f, small), args.repeats)}
    plain, taped = spreads["plain_s"]["median"], spreads["value_and_gradient_s"]["median"]
    per_op = spreads["ten_entries_s"]["median"] / 3
    result = {"n": args.n, "plain_s": plain, "value_and_gradient_s": taped,
              "ratio": taped / plain, "overhead_per_op_s": per_op, "target_ratio": 4.0,
              "malloc_tuned": tuned}
    if args.out:
        harness.write(args.out, harness.record(
            {"command": harness.command(__file__, argv), **result, "seconds": spreads}, args.repeats))
    if args.json:
        print(json.dumps(result))
    else:
        print(f"f(x) = sum(exp(x) * x), x with {args.n} entries, medians of {args.repeats}")
        print(f"  plain numpy evaluation   {plain * 1e3:8.3f} ms")
        print(f"  value_and_gradient       {taped * 1e3:8.3f} ms")
        print(f"  ratio                    {taped / plain:8.2f}   (target <= 4)")
        print(f"  malloc tuned             {tuned!s:>8}")
        print(f"  tape overhead per op     {per_op * 1e6:8.1f} us (x with 10 entries)")
    return result


if __name__ == "__main__":
    main()
