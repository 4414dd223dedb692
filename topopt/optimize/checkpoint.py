"""Checkpoints of `topopt.optimize.minimize`: one ``.npz`` archive, a format version.

A checkpoint holds the restart design ``x``, the last design evaluated
``x_last``, optionally the values and gradients at ``x`` (``seed_values``,
``seed_grads``: the restart costs no forward pass) and a JSON record
``meta`` (`Checkpoint.FIELDS`: stage, counters, history, ``version``).

`Checkpoint.load` reads only what `Checkpoint.save` wrote; anything else (not
an archive, a truncated or corrupt one, an ``.npz`` without our fields,
another format version, pickled objects) raises `CheckpointError`, ``not a
topopt checkpoint: PATH (why)``. Nothing is ever unpickled.

Examples
--------
>>> import os, tempfile, numpy as np
>>> path = os.path.join(tempfile.mkdtemp(), "run.npz")
>>> meta = {"status": "running", "n": 2, "n_constraints": None, "stage": 0,
...         "stage_evaluations": 0, "stage_done": False, "stage_status": None,
...         "evaluations": 0, "stages": [], "seconds": 0.0, "fe_solves": None,
...         "nlopt_evaluations": 0, "history": []}
>>> Checkpoint({"x": np.array([0.5, 0.5])}, meta).save(path)
>>> ck = Checkpoint.load(path)
>>> ck.meta["version"] == Checkpoint.VERSION, ck.arrays["x"]
(True, array([0.5, 0.5]))
"""

from __future__ import annotations

import json
import math
import os
from numbers import Integral, Real
from typing import Mapping

import numpy as np

from .._files import atomic_write_bytes, jsonable, read_npz
from .._validate import check_finite_values

__all__ = ["Checkpoint", "CheckpointError", "CHECKPOINT_VERSION", "load_checkpoint",
           "save_checkpoint"]


class CheckpointError(ValueError):
    """A file that is not a checkpoint `minimize` can resume from."""

    def __init__(self, path, why: str):
        self.path, self.why = os.fspath(path), why
        super().__init__(f"not a topopt checkpoint: {self.path} ({why})")

    def __reduce__(self):                         # picklable (multiprocessing)
        return type(self), (self.path, self.why)


_INT, _OPT_INT, _STR, _OPT_STR = "integer >= 0", "integer >= 0 or null", "string", \
    "string or null"


def _is(value, kind: str) -> bool:
    """Whether a JSON value is of one of the `Checkpoint.FIELDS` kinds."""
    if value is None and kind.endswith("or null"):
        return True
    if kind.startswith("integer"):
        return isinstance(value, Integral) and not isinstance(value, bool) and value >= 0
    if kind.startswith("string"):
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict of numbers >= 0":
        return isinstance(value, dict) and all(
            isinstance(k, str) and _is(v, "number >= 0") for k, v in value.items())
    return isinstance(value, Real) and not isinstance(value, bool) and \
        math.isfinite(value) and value >= 0


class Checkpoint:
    """The arrays and the JSON record of one checkpoint.

    Parameters
    ----------
    arrays : mapping of str to ndarray
        ``x`` and optionally ``x_last``, ``seed_values``, ``seed_grads``.
    meta : mapping
        The `FIELDS` (``version`` is added by `save`).
    """

    #: Format version written into ``meta["version"]``; `load` reads only this one.
    VERSION = 1
    #: The fields of ``meta`` and their kinds.
    FIELDS = {
        "version": _INT, "status": _STR, "n": _INT, "n_constraints": _OPT_INT,
        "stage": _INT, "stage_evaluations": _INT, "stage_done": "boolean",
        "stage_status": _OPT_STR, "evaluations": _INT, "stages": "list",
        "seconds": "number >= 0", "fe_solves": _OPT_INT, "nlopt_evaluations": _INT,
        "history": "list",
    }
    #: Fields a checkpoint may lack (those written before them had none): the
    #: caller's counters of `minimize` (``counters=``), the run's totals so far.
    OPTIONAL = {"counters": "dict of numbers >= 0"}

    def __init__(self, arrays: Mapping[str, np.ndarray], meta: Mapping):
        for name, value in (("arrays", arrays), ("meta", meta)):
            if not isinstance(value, Mapping):
                raise TypeError(f"{name} must be a dict {{name: value}}, got "
                                f"{type(value).__name__}")
        self.arrays, self.meta = dict(arrays), dict(meta)

    def save(self, path) -> None:
        """Write the arrays and the JSON record as an ``.npz`` archive, atomically."""
        data = dict(self.arrays)
        for name in ("x", "x_last", "seed_values", "seed_grads"):    # what `load` requires
            if name in data:
                check_finite_values(name, data[name], "a checkpoint holds finite designs and "
                                    "responses (load_checkpoint refuses others)")
        data["meta"] = np.array(json.dumps(dict(self.meta, version=self.VERSION),
                                           default=jsonable))
        atomic_write_bytes(path, lambda fh: np.savez(fh, **data))

    @classmethod
    def load(cls, path: str | os.PathLike) -> Checkpoint:
        """Read the checkpoint at `path` after checking that it is one (see `load_checkpoint`)."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"the checkpoint path must be a str or os.PathLike, got "
                            f"{type(path).__name__}")
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no checkpoint at {path!r}")
        if os.path.isdir(path):
            raise CheckpointError(path, "a folder")
        arrays = read_npz(path, CheckpointError, "a checkpoint")
        meta = cls._check_meta(path, arrays)
        cls._check_arrays(path, arrays, meta)
        del arrays["meta"]
        return cls(arrays, meta)

    def to_dict(self) -> dict:
        """The record with ``x``, ``x_last`` and ``seed`` (``(values, gradients)`` or None)."""
        out = dict(self.meta)
        out.setdefault("counters", {})
        out["x"] = self.arrays["x"]
        out["x_last"] = self.arrays.get("x_last")
        out["seed"] = ((self.arrays["seed_values"], self.arrays["seed_grads"])
                       if "seed_values" in self.arrays else None)
        return out

    # -- checks of a file read back -----------------------------------------
    @classmethod
    def _check_meta(cls, path: str, arrays: dict) -> dict:
        if "meta" not in arrays:
            raise CheckpointError(path, "an .npz archive without the 'meta' record; it "
                                  "holds " + (", ".join(sorted(arrays)) or "no arrays"))
        meta = arrays["meta"]
        if meta.ndim != 0 or meta.dtype.kind != "U":
            raise CheckpointError(path, f"its 'meta' is a {meta.dtype} array of shape "
                                  f"{meta.shape}, not a JSON text")
        try:
            meta = json.loads(str(meta))
        except json.JSONDecodeError as e:
            raise CheckpointError(path, f"its 'meta' is not JSON: {e}") from None
        if not isinstance(meta, dict):
            raise CheckpointError(path, "its 'meta' is not a JSON object")
        version = meta.get("version")
        if version != cls.VERSION:
            raise CheckpointError(path, f"format version {version!r}; this topopt reads "
                                  f"version {cls.VERSION}")
        missing = [k for k in cls.FIELDS if k not in meta]
        if missing:
            raise CheckpointError(path, "missing fields: " + ", ".join(missing))
        for k, kind in (cls.FIELDS | {k: v for k, v in cls.OPTIONAL.items()
                                      if k in meta}).items():
            if not _is(meta[k], kind):
                raise CheckpointError(path, f"field {k!r} = {meta[k]!r} is not "
                                      f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}")
        if len(meta["history"]) != meta["evaluations"] or \
                not all(isinstance(h, dict) for h in meta["history"]):
            raise CheckpointError(path, f"its history has {len(meta['history'])} records "
                                  f"for {meta['evaluations']} evaluations")
        return meta

    @staticmethod
    def _check_arrays(path: str, arrays: dict, meta: dict) -> None:
        n, k = meta["n"], meta["n_constraints"]
        shapes = {"x": (n,), "x_last": (n,)}
        if k is not None:
            shapes.update(seed_values=(k + 1,), seed_grads=(k + 1, n))
        if "x" not in arrays:
            raise CheckpointError(path, "no design 'x'")
        if ("seed_values" in arrays) != ("seed_grads" in arrays) or \
                (k is None and "seed_values" in arrays):
            raise CheckpointError(path, "an incomplete seed (values and gradients)")
        for name, shape in shapes.items():
            if name not in arrays:
                continue
            a = arrays[name]
            if a.dtype.kind != "f" or a.shape != shape or not np.all(np.isfinite(a)):
                raise CheckpointError(path, f"'{name}' is a {a.dtype} array of shape "
                                      f"{a.shape}; expected finite floats of shape {shape}")
        unknown = set(arrays) - set(shapes) - {"meta"}
        if unknown:
            raise CheckpointError(path, "unknown arrays: " + ", ".join(sorted(unknown)))


#: Format version of the checkpoints `minimize` writes (``meta["version"]``).
CHECKPOINT_VERSION = Checkpoint.VERSION


def save_checkpoint(path, arrays: Mapping[str, np.ndarray], meta: Mapping) -> None:
    """Write arrays and JSON `meta` as an ``.npz`` checkpoint, atomically (`Checkpoint.save`)."""
    Checkpoint(arrays, meta).save(path)


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Read a checkpoint written by `minimize`, after checking that it is one.

    Returns a dict with ``x`` (the restart design), ``x_last`` (the last
    design evaluated), ``seed`` (``(values, gradients)`` at ``x`` or None),
    ``history``, ``stage``, ``stage_evaluations``, ``stage_done``,
    ``stage_status``, ``evaluations``, ``stages``, ``seconds``, ``status``,
    ``n``, ``n_constraints``, ``version`` and ``counters`` (the caller's
    counters of the run so far, `minimize`'s ``counters=``; ``{}`` in a
    checkpoint written before they were kept).

    Raises
    ------
    TypeError
        `path` is not a str or os.PathLike.
    FileNotFoundError
        No file at `path`.
    CheckpointError
        (a `ValueError`) ``not a topopt checkpoint: PATH (why)``: not an
        ``.npz`` archive, a truncated or corrupt one, one without our fields
        or with fields of the wrong type or shape, another format version.
        Pickled objects are never loaded.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from topopt.optimize import minimize
    >>> path = os.path.join(tempfile.mkdtemp(), "run.npz")
    >>> r = minimize(lambda x: np.sum((x - 0.3) ** 2), np.full(2, 0.5), maxeval=3,
    ...              checkpoint=path, verbose=False)
    >>> ck = load_checkpoint(path)
    >>> len(ck["history"]), ck["stage_status"]
    (3, 'maxeval_reached')
    >>> np.savez(path, x=np.zeros(2))
    >>> load_checkpoint(path)
    Traceback (most recent call last):
    ...
    topopt.optimize.checkpoint.CheckpointError: not a topopt checkpoint: ... (an .npz archive without ...)
    """
    return Checkpoint.load(path).to_dict()
