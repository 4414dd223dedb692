"""Helpers of ``scripts/benchmarks/benchmark_scale.py``: the triad, the baseline tree, options.

The triad is STREAM's (McCalpin 1995, "Memory bandwidth and machine balance
in current high performance computers", IEEE TCCA newsletter): ``a = b + s c``
on float64 arrays far larger than the caches, counted as 3 arrays x 8 bytes
per element (``b`` and ``c`` read, ``a`` written). The write-allocate read of
``a`` (its cache lines are read before they are written, 4/3 of the counted
traffic) is **not** counted, as in STREAM. numpy runs it on one thread, in
chunks of `CHUNK` elements whose second pass (``a = s c``; ``a += b``) finds
them in cache, so each array crosses the memory bus once; numba (when
importable) runs one ``prange`` loop on all its threads. Nothing here imports
topopt: a baseline's children take this module from the current checkout and
the library from the baseline's. The machine, the commit and the timings are the
measuring harness's (`harness`).

>>> r = triad(2**20, repeats=2)
>>> r["numpy"]["best_gb_s"] > 0
True
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

import harness

#: numpy triad chunk: 3 x 512 kB, re-read from cache by the second pass (2^13 to 2^16
#: measured 11-14 GB/s on one EPYC core, the smaller chunks paying Python's loop).
CHUNK = 1 << 16


def _numpy_triad(a, b, c, s):
    for i0 in range(0, a.size, CHUNK):
        i1 = i0 + CHUNK
        np.multiply(c[i0:i1], s, out=a[i0:i1])
        np.add(a[i0:i1], b[i0:i1], out=a[i0:i1])


def _numba_triad():
    """The numba kernel and its thread count, or ``(None, 0)`` without numba."""
    try:
        import numba
    except ImportError:
        return None, 0

    @numba.njit(parallel=True, cache=False)
    def kernel(a, b, c, s):
        for i in numba.prange(a.size):
            a[i] = b[i] + s * c[i]
    return kernel, int(numba.get_num_threads())


def triad(nbytes: int = 200_000_000, repeats: int = 10) -> dict:
    """``a = b + s c`` on three arrays of `nbytes` each: GB/s (1e9 B/s), best and median.

    Returns ``{"array_bytes", "bytes_per_pass", "numpy": {...}, "numba": {...} or None,
    "best_gb_s"}``; each part holds ``best_gb_s``, ``median_gb_s``, ``threads``,
    ``repeats`` and the seconds' spread (one untimed pass first: page faults, compilation).
    """
    n = max(CHUNK, int(nbytes) // 8)
    a, b, c, s = np.zeros(n), np.full(n, 1.0), np.full(n, 2.0), 3.0
    moved = 3 * 8 * n                              # b, c read; a written (no write-allocate)
    out = {"array_bytes": 8 * n, "bytes_per_pass": moved,
           "bytes_counted": "3 arrays x 8 B per element; write-allocate of a not counted",
           "numpy": None, "numba": None}
    kernel, threads = _numba_triad()
    for name, fun, nthreads in (("numpy", _numpy_triad, 1), ("numba", kernel, threads)):
        if fun is None:
            continue
        a[:] = 0.0
        fun(a, b, c, s)                            # warm: pages touched, kernel compiled
        if not np.all(a[::4099] == 7.0):
            raise RuntimeError(f"{name} triad computed a wrong result")
        t, _ = harness.timed(lambda: fun(a, b, c, s), repeats)
        out[name] = {"best_gb_s": float(moved / t["min"] / 1e9),
                     "median_gb_s": float(moved / t["median"] / 1e9),
                     "threads": nthreads, "repeats": int(repeats), "seconds": t}
    out["best_gb_s"] = max(out[k]["best_gb_s"] for k in ("numpy", "numba") if out[k])
    return out


# ---------------------------------------------------------------- the baseline's tree
@contextlib.contextmanager
def worktree(root: str, ref: str):
    """The commit `ref` of the repository at `root` checked out in a temporary worktree.

    Yields ``(path, sha)``; the worktree is removed afterwards, also on failure.
    """
    try:
        sha = harness.git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except subprocess.CalledProcessError:
        raise ValueError(f"--baseline {ref!r} names no commit of {root}") from None
    tmp = tempfile.mkdtemp(prefix="benchmark-baseline-")
    path = os.path.join(tmp, "tree")
    try:
        harness.git(root, "worktree", "add", "--detach", path, sha)
        yield path, sha
    finally:
        subprocess.run(["git", "-C", root, "worktree", "remove", "--force", path],
                       capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["git", "-C", root, "worktree", "prune"], capture_output=True)


def accepted(options: dict, names) -> tuple[dict, list]:
    """`options` split into those whose key is in `names` and the dropped keys."""
    names = set(names)
    return ({k: v for k, v in options.items() if k in names},
            sorted(k for k in options if k not in names))
