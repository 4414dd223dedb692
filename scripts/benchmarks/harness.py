"""The one measuring harness of ``scripts/``: repeats, median and spread, peak memory, machine, commit.

Every benchmark (``scripts/benchmarks/``) and every study that times something imports
this module instead of keeping its own timer, median or peak-memory code. A script in
this folder imports it directly (``import harness``: the folder of the script run is
first on ``sys.path``); one in another folder of ``scripts/`` puts this folder there
first (``sys.path.insert(0, os.path.join(ROOT, "scripts", "benchmarks"))``).

* `spread` -- the median of repeated measurements with their least and largest value
  (and the count): the form of every timing a benchmark records.
* `timed` -- a function called `repeats` times (after `warmup` untimed calls), its
  seconds as a `spread`; `alternating` -- several functions timed in turn, round by
  round; `combine` -- the median and spread of every number of repeated runs' rows.
* `peak_bytes`, `rss_bytes`, `reset_peak` -- this process's peak and current resident
  memory (``VmHWM``, ``VmRSS`` of ``/proc/self/status``; ``ru_maxrss`` where there is no
  ``/proc``) and the reset of the peak to the current value (Linux >= 4.0).
* `child` -- a command in a fresh process (whose peak memory is then its own) that
  prints one JSON object on its last line of output.
* `machine`, `commit`, `record`, `write` -- the machine and the commit, added with the
  statement of the spread to a benchmark's JSON (`record`), written without absolute
  paths of this checkout (`write`).
* `options` -- the command-line options every benchmark shares: ``--repeats``,
  ``--smallest`` (its smallest size, a few seconds: what the tests run) and ``--out``.

>>> s = spread([0.3, 0.1, 0.2])
>>> s["median"], s["min"], s["max"], s["repeats"]
(0.2, 0.1, 0.3, 3)
>>> stats, value = timed(lambda: sum(range(1000)), repeats=3)
>>> value, stats["repeats"], stats["min"] <= stats["median"] <= stats["max"]
(499500, 3, True)
>>> row = combine([{"s": 1.0, "name": "a"}, {"s": 3.0, "name": "a"}, {"s": 2.0, "name": "a"}])
>>> row["s"], row["name"], row["spread"]["s"]["min"], row["repeats"]
(2.0, 'a', 1.0, 3)
>>> peak_bytes() >= rss_bytes() > 0
True
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np

#: the checkout: commits, relative paths and default outputs are taken from here
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: The environment variables that set the BLAS, OpenMP and numba thread counts.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")


# ---------------------------------------------------------------- repeats, median, spread
def spread(values) -> dict:
    """``{"median", "min", "max", "repeats"}`` of repeated measurements (floats).

    The median is the centre every benchmark reports; min and max are the spread of
    the repeats (with two repeats the median is their mean).
    """
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        raise ValueError("spread: no values; measure at least once (repeats >= 1)")
    return {"median": float(np.median(v)), "min": float(v.min()), "max": float(v.max()),
            "repeats": int(v.size)}


def timed(fun, repeats: int = 3, warmup: int = 0):
    """``(spread of the seconds, the last value)`` of `repeats` calls of ``fun()``.

    `warmup` untimed calls first (page faults, compilation, caches).
    """
    if repeats < 1:
        raise ValueError(f"timed: repeats={repeats}; pass repeats >= 1")
    for _ in range(warmup):
        fun()
    seconds = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fun()
        seconds.append(time.perf_counter() - t0)
    return spread(seconds), value


def alternating(funs: list, repeats: int = 3):
    """`funs` timed in turn: one warm-up round, then `repeats` rounds calling each once
    (on a shared machine the others' load falls on all alike).

    Returns ``(the warm-up round's seconds, the spread of each one's seconds, each
    one's last value)``, one entry per function.
    """
    if repeats < 1:
        raise ValueError(f"alternating: repeats={repeats}; pass repeats >= 1")
    first, values = [], []
    for f in funs:
        s, v = timed(f, 1)
        first.append(s["median"])
        values.append(v)
    seconds = [[] for _ in funs]
    for _ in range(repeats):
        for i, f in enumerate(funs):
            s, values[i] = timed(f, 1)
            seconds[i].append(s["median"])
    return first, [spread(s) for s in seconds], values


def combine(runs: list) -> dict:
    """One row from repeated runs' rows: the median of each float, the first run's other
    values, ``"spread": {key: spread(...)}`` of the floats and ``"repeats"``."""
    if not runs:
        raise ValueError("combine: no runs; measure at least once (repeats >= 1)")
    floats = [k for k, v in runs[0].items() if isinstance(v, float)]
    out = {k: (float(np.median([r[k] for r in runs])) if k in floats else v)
           for k, v in runs[0].items()}
    out["spread"] = {k: spread(r[k] for r in runs) for k in floats}
    out["repeats"] = len(runs)
    return out


# ---------------------------------------------------------------- memory
def _status(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak_bytes() -> int:
    """This process's peak resident memory in bytes (``VmHWM``; else ``ru_maxrss``)."""
    peak = _status("VmHWM")
    if peak is None:
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak = kb * (1 if sys.platform == "darwin" else 1024)
    return peak


def rss_bytes() -> int:
    """This process's resident memory now, in bytes (``VmRSS``; else the peak)."""
    rss = _status("VmRSS")
    return peak_bytes() if rss is None else rss


def reset_peak() -> bool:
    """Reset the peak (``VmHWM``) to the resident memory now; False where the kernel
    cannot (not Linux >= 4.0): the peak then counts from the process's start."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


# ---------------------------------------------------------------- fresh processes
def child(argv: list, env: dict | None = None, timeout: float | None = None,
          library: str = ROOT) -> dict:
    """Run `argv` in a fresh process with `library` (this checkout) first on ``PYTHONPATH``;
    the JSON object it prints on its last line of output (stdout). Raises with its stderr
    when it fails."""
    base = dict(os.environ if env is None else env)
    base["PYTHONPATH"] = os.pathsep.join(p for p in (library, base.get("PYTHONPATH")) if p)
    proc = subprocess.run([str(a) for a in argv], env=base, capture_output=True, text=True,
                          timeout=timeout, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        raise RuntimeError(f"{' '.join(map(str, argv[:4]))} ... failed (exit "
                           f"{proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1])


# ---------------------------------------------------------------- machine and commit
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
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"cpu_model": _first("/proc/cpuinfo", "model name") or platform.processor(),
            "cores": os.cpu_count(), "cores_usable": usable,
            "l2_cache": _cache(2), "l3_cache": _cache(3),
            "memory_bytes": int(mem.split()[0]) * 1024 if mem else None,
            "platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__, "scipy": scipy.__version__, "numba": numba_version,
            "threads_env": {k: os.environ.get(k) for k in THREAD_VARIABLES},
            "load_average": list(os.getloadavg())}


def git(root: str, *args: str) -> str:
    """``git -C root args``: its output, stripped (raises when git fails)."""
    return subprocess.run(["git", "-C", root, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def commit(root: str = ROOT) -> dict:
    """``{"sha", "subject", "dirty"}`` of the checkout at `root` (dirty: tracked files changed)."""
    try:
        return {"sha": git(root, "rev-parse", "HEAD"),
                "subject": git(root, "log", "-1", "--format=%s")[:120],
                "dirty": bool(git(root, "status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.CalledProcessError):
        return {"sha": None, "subject": None, "dirty": None}


def command(script: str, argv: list | None = None) -> str:
    """``python <script> <argv>`` as typed from the checkout (paths relative to it);
    `argv` None: this process's arguments (``sys.argv[1:]``)."""
    argv = sys.argv[1:] if argv is None else argv
    return " ".join(["python", *map(relative, [os.path.abspath(script), *map(str, argv)])])


def relative(value):
    """`value` with this checkout's absolute path replaced by the path relative to it."""
    if isinstance(value, str) and value.startswith(ROOT + os.sep):
        return os.path.relpath(value, ROOT)
    if isinstance(value, dict):
        return {k: relative(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [relative(v) for v in value]
    return value


def record(data: dict, repeats: int, statistic: str = "median",
           root: str = ROOT) -> dict:
    """`data` with ``machine``, ``commit`` and ``spread`` first.

    ``spread`` states what a recorded timing is: the `statistic` of `repeats`
    measurements, their least and largest value beside it (``repeats == 1``: one
    measurement, no spread).
    """
    taken = sorted({"machine", "commit", "spread"} & set(data))
    if taken:
        raise ValueError(f"record: data has its own {taken}; name them otherwise "
                         "(the record adds the machine, the commit and the spread)")
    note = ("one measurement: no spread" if repeats == 1 else
            f"{statistic} of {repeats} repeats; min and max of the repeats beside it")
    return {"machine": machine(), "commit": commit(root),
            "spread": {"statistic": statistic, "repeats": int(repeats), "range": "min-max",
                       "note": note}, **data}


def write(path: str, data: dict) -> str:
    """`data` as indented JSON at `path` (folders made), paths in this checkout relative."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w") as fh:
        json.dump(relative(data), fh, indent=1)
        fh.write("\n")
    return path


def options(parser: argparse.ArgumentParser, repeats: int = 3, out: str | None = None,
            smallest: str = "its smallest size") -> argparse.ArgumentParser:
    """Add ``--repeats``, ``--smallest`` and ``--out`` (the JSON to write) to `parser`."""
    parser.add_argument("--repeats", "--repeat", dest="repeats", type=int, default=repeats,
                        help="measurements per median"
                        + (f" (default {repeats})" if repeats else ""))
    parser.add_argument("--smallest", action="store_true",
                        help=f"{smallest}, one repeat: a few seconds (the tests)")
    parser.add_argument("--out", default=out,
                        help="JSON file to write" + (f" (default {relative(out)})" if out else ""))
    return parser
