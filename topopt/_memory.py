"""Keep freed large arrays in the heap so that reusing them costs no page faults.

A reverse pass allocates a fresh array per cotangent. With glibc's default
policy each array above a dynamic threshold is an ``mmap`` of zeroed pages
and is returned to the system when freed, so every iteration pays the page
faults again; a gradient of ``sum(exp(x) * x)`` at 10^6 entries then took
7x the function (the same for a hand-written reverse pass), against 3.5x
with reuse (4.6x and 2.6x once the rules skipped products with ones).
Pooling is what XLA's and PyTorch's allocators do; here it is two
``mallopt`` settings: arrays up to 32 MiB come from the heap, and the heap
is trimmed only beyond 256 MiB of free memory at its top.

Importing topopt changes nothing: the setting is process-wide, so it is an
explicit call, `tune_malloc` (``topopt.tune_malloc()``), which the problem
scripts (through `topopt.cli`) and the benchmarks make. The environment
variable ``TOPOPT_MALLOC_TUNING=0`` turns that call into a no-op (the
system's policy stays). `TUNED` records whether the settings were applied.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

__all__ = ["tune_malloc", "retain_freed_memory"]

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3

#: True once `tune_malloc` has changed glibc's settings in this process.
TUNED = False


def retain_freed_memory(mmap_threshold: int = 32 << 20, trim_threshold: int = 256 << 20) -> bool:
    """Set glibc's mmap and trim thresholds; returns False where not applicable."""
    for name, value in (("mmap_threshold", mmap_threshold), ("trim_threshold", trim_threshold)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**31:
            raise ValueError(f"{name} must be an integer in (0, 2**31) bytes, got {value!r}")
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(
        mallopt(M_TRIM_THRESHOLD, trim_threshold))


def tune_malloc() -> bool:
    """Pool freed large arrays (glibc ``mallopt``, see the module docstring).

    Returns True when the settings were applied; False under
    ``TOPOPT_MALLOC_TUNING=0``, off Linux/glibc, or when ``mallopt`` refused.
    Idempotent. `scripts/benchmarks/benchmark_ad.py` measures the effect (gradient /
    function time of ``sum(exp(x) * x)`` at 10^6 entries).
    """
    global TUNED
    if os.environ.get("TOPOPT_MALLOC_TUNING", "1") == "0":
        return False
    if not TUNED:
        TUNED = retain_freed_memory()
    return TUNED
