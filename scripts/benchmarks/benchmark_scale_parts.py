"""Helpers of ``scripts/benchmarks/benchmark_scale.py``: the triad, the machine, git and the baseline tree.

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
the library from the baseline's.

>>> r = triad(2**20, repeats=2)
>>> r["numpy"]["best_gb_s"] > 0
True
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import subprocess
import tempfile
import time

import numpy as np

#: numpy triad chunk: 3 x 512 kB, re-read from cache by the second pass (2^13 to 2^16
#: measured 11-14 GB/s on one EPYC core, the smaller chunks paying Python's loop).
CHUNK = 1 << 16


#: The environment variables that set the BLAS, OpenMP and numba thread counts.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")


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


def _timings(fun, a, b, c, s, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fun(a, b, c, s)
        times.append(time.perf_counter() - t0)
    return np.array(times)


def triad(nbytes: int = 200_000_000, repeats: int = 10) -> dict:
    """``a = b + s c`` on three arrays of `nbytes` each: GB/s (1e9 B/s), best and median.

    Returns ``{"array_bytes", "bytes_per_pass", "numpy": {...}, "numba": {...} or None,
    "best_gb_s"}``; each part holds ``best_gb_s``, ``median_gb_s``, ``threads``,
    ``repeats`` (one untimed pass first: page faults, compilation).
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
        t = _timings(fun, a, b, c, s, repeats)
        out[name] = {"best_gb_s": float(moved / t.min() / 1e9),
                     "median_gb_s": float(moved / np.median(t) / 1e9),
                     "threads": nthreads, "repeats": int(repeats)}
    out["best_gb_s"] = max(out[k]["best_gb_s"] for k in ("numpy", "numba") if out[k])
    return out


# ---------------------------------------------------------------- machine and git
def _first(path: str, key: str) -> str | None:
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cache(index: int) -> str | None:
    try:
        with open(f"/sys/devices/system/cpu/cpu0/cache/index{index}/size") as fh:
            return fh.read().strip()
    except OSError:
        return None


def machine() -> dict:
    """CPU model, cores, caches, memory, versions (python, numpy, scipy, numba), thread settings."""
    import scipy
    try:
        import numba
        numba_version = numba.__version__
    except ImportError:
        numba_version = None
    mem = _first("/proc/meminfo", "MemTotal")
    return {"cpu_model": _first("/proc/cpuinfo", "model name") or platform.processor(),
            "cores": os.cpu_count(), "cores_usable": len(os.sched_getaffinity(0)),
            "l2_cache": _cache(2), "l3_cache": _cache(3),
            "memory_bytes": int(mem.split()[0]) * 1024 if mem else None,
            "platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__, "numba": numba_version,
            "threads_env": {k: os.environ.get(k) for k in THREAD_VARIABLES},
            "load_average": list(os.getloadavg())}


def _git(root: str, *args: str) -> str:
    return subprocess.run(["git", "-C", root, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def commit(root: str) -> dict:
    """``{"sha", "subject", "dirty"}`` of the checkout at `root` (dirty: tracked files changed)."""
    try:
        return {"sha": _git(root, "rev-parse", "HEAD"),
                "subject": _git(root, "log", "-1", "--format=%s")[:120],
                "dirty": bool(_git(root, "status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.CalledProcessError):
        return {"sha": None, "subject": None, "dirty": None}


@contextlib.contextmanager
def worktree(root: str, ref: str):
    """The commit `ref` of the repository at `root` checked out in a temporary worktree.

    Yields ``(path, sha)``; the worktree is removed afterwards, also on failure.
    """
    try:
        sha = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except subprocess.CalledProcessError:
        raise ValueError(f"--baseline {ref!r} names no commit of {root}") from None
    tmp = tempfile.mkdtemp(prefix="benchmark-baseline-")
    path = os.path.join(tmp, "tree")
    try:
        _git(root, "worktree", "add", "--detach", path, sha)
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
