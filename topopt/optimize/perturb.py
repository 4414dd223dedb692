"""A seeded perturbation of MMA's start, from the environment: ``TOPOPT_PERTURB``.

Whether a committed result reproduces on another machine is a question of how
much the run's outcome depends on rounding: two machines' BLAS and LAPACK
differ by ~1e-16 relative, the histories part after a few evaluations and the
optimizer may follow another path. ``scripts/site/reproduce_gallery.py`` measures
that dependence by re-running each problem with its start moved by a tiny,
seeded amount::

    TOPOPT_PERTURB=1e-12:3 python problems/mbb_beam.py --out /tmp/mbb

adds ``1e-12 * U(-1, 1)`` (NumPy's ``default_rng(3)``, one draw per design
variable) to the start of every `minimize` of the process that does not
resume from a checkpoint, clipped into the bounds. The value is
``AMPLITUDE[:SEED]``: a finite amplitude in ``[0, 1e-3]`` (0 or unset: no
perturbation) and a seed, an integer >= 0 (default 0). Anything else is an
error naming the variable; a problem script refuses it before any work
(`topopt.cli.main`).
"""

from __future__ import annotations

import math
import os

import numpy as np

__all__ = ["ENV", "MAX_AMPLITUDE", "start_perturbation", "perturbed_start"]

#: The environment variable read (here only).
ENV = "TOPOPT_PERTURB"
#: The largest amplitude accepted: a perturbation, not another start.
MAX_AMPLITUDE = 1e-3


def start_perturbation(value: str | None = None) -> tuple[float, int] | None:
    """``(amplitude, seed)`` of ``TOPOPT_PERTURB`` (or of `value`); None when off.

    Examples
    --------
    >>> start_perturbation("1e-12:3"), start_perturbation("1e-12"), start_perturbation("")
    ((1e-12, 3), (1e-12, 0), None)
    >>> start_perturbation("1e-12:-1")
    Traceback (most recent call last):
    ...
    ValueError: TOPOPT_PERTURB='1e-12:-1': the seed must be an integer >= 0 (AMPLITUDE[:SEED], e.g. 1e-12:3)
    """
    text = os.environ.get(ENV, "") if value is None else value
    text = text.strip()
    if not text:
        return None
    hint = "(AMPLITUDE[:SEED], e.g. 1e-12:3)"
    amp_text, _, seed_text = text.partition(":")
    try:
        amplitude = float(amp_text)
    except ValueError:
        raise ValueError(f"{ENV}={text!r}: the amplitude must be a number in "
                         f"[0, {MAX_AMPLITUDE:g}] {hint}") from None
    if not (math.isfinite(amplitude) and 0.0 <= amplitude <= MAX_AMPLITUDE):
        raise ValueError(f"{ENV}={text!r}: the amplitude must be a number in "
                         f"[0, {MAX_AMPLITUDE:g}] {hint}")
    seed = 0
    if seed_text.strip():
        try:
            seed = int(seed_text)
        except ValueError:
            seed = -1
        if seed < 0:
            raise ValueError(f"{ENV}={text!r}: the seed must be an integer >= 0 {hint}")
    return (amplitude, seed) if amplitude > 0 else None


def perturbed_start(x0: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> np.ndarray:
    """`x0` moved by ``TOPOPT_PERTURB`` (`start_perturbation`) within ``[lb, ub]``.

    `x0` itself when the variable is unset or 0.

    Examples
    --------
    >>> x0, lb, ub = np.full(3, 0.5), np.zeros(3), np.ones(3)
    >>> os.environ[ENV] = "1e-12:1"
    >>> d = perturbed_start(x0, lb, ub) - x0
    >>> bool(np.all(np.abs(d) <= 1e-12) and np.any(d != 0))
    True
    >>> del os.environ[ENV]
    >>> perturbed_start(x0, lb, ub) is x0
    True
    """
    found = start_perturbation()
    if found is None:
        return x0
    amplitude, seed = found
    step = amplitude * np.random.default_rng(seed).uniform(-1.0, 1.0, x0.shape)
    return np.clip(x0 + step, lb, ub)
