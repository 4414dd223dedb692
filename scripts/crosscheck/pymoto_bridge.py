"""The two-interpreter plumbing of the pyMOTO comparison scripts (``scripts/crosscheck/pymoto_*.py``).

pyMOTO is not a dependency of topopt: a comparison script computes topopt's
numbers in topopt's interpreter and runs *itself* a second time under an
interpreter with pyMOTO (``--python`` / ``--pymoto-python``, else
``$PYMOTO_PYTHON``, else ``/tmp/pymoto-venv/bin/python``) with the hidden
flag ``--pymoto-side ... in.npz out.npz``; the designs go there and pyMOTO's
numbers come back as ``.npz`` files in a temporary folder. This module holds
that plumbing once; it needs numpy and the standard library only, because
both interpreters import it (a script run as ``python scripts/crosscheck/x.py`` has
its own folder first on ``sys.path``; one elsewhere puts ``scripts/crosscheck`` there).

* `add_arguments`, `pymoto_python`, `require_python` -- the interpreter
  option, the hidden flag, the interpreter to use (refused if missing);
* `run_pymoto_side` -- topopt's half: write the inputs, run the script's
  pyMOTO half, read its outputs;
* `serve` -- pyMOTO's half: read the inputs, compute with pyMOTO's output and
  warnings silenced (`quiet`), write the outputs;
* `responses` -- pyMOTO's half: the values and design sensitivities of a
  network's scalar signals at each design;
* `rel_err`, `verdict` -- the max-norm relative error and the closing line;
* `element_order`, `match_elements` -- pyMOTO's element numbering of a
  ``VoxelDomain`` of unit elements (``e = ix + iy nelx``).

>>> rel_err(np.array([1.0, 2.5]), np.array([1.0, 2.0]))
0.25
>>> verdict(1e-12, 1e-6)
'largest relative error 1.0e-12 (within 1e-06)'
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

DEFAULT_PYTHON = "/tmp/pymoto-venv/bin/python"


def pymoto_python(given: str | None = None) -> str:
    """The interpreter with pyMOTO: `given`, else ``$PYMOTO_PYTHON``, else `DEFAULT_PYTHON`."""
    return given or os.environ.get("PYMOTO_PYTHON", DEFAULT_PYTHON)


def add_arguments(parser: argparse.ArgumentParser, flag: str = "--python",
                  side_args: int = 2) -> None:
    """Add the interpreter option `flag` and the hidden ``--pymoto-side`` (`side_args` values)."""
    parser.add_argument(flag, default=None, help="interpreter with pymoto (default "
                        f"$PYMOTO_PYTHON or {DEFAULT_PYTHON})")
    parser.add_argument("--pymoto-side", nargs=side_args, default=None, help=argparse.SUPPRESS)


def require_python(parser: argparse.ArgumentParser, flag: str, given: str | None) -> str:
    """`pymoto_python` of `given`; a command-line error naming `flag` if it does not exist."""
    python = pymoto_python(given)
    if not os.path.exists(python):
        parser.error(f"{flag}: {python} does not exist (pyMOTO 2.0.1 in a scratch environment)")
    return python


def case_main(doc: str, argv, side) -> str | None:
    """The command line of a comparison case by case (``--python``; hidden ``--pymoto-side
    CASE SRC DST``). On the pyMOTO side it serves ``side(case, inputs)`` and returns None;
    on ours it returns the interpreter with pyMOTO, with the project on ``sys.path``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    add_arguments(parser, "--python", side_args=3)
    args = parser.parse_args(argv)
    if args.pymoto_side:
        case, src, dst = args.pymoto_side
        serve(src, dst, lambda inputs: side(case, inputs))
        return None
    python = require_python(parser, "--python", args.python)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return python


@contextlib.contextmanager
def quiet():
    """Silence pyMOTO's prints and warnings (scipy format notes, solver messages)."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def run_pymoto_side(script: str, python: str | None, inputs: dict, *args: str) -> dict:
    """Run ``script --pymoto-side *args in.npz out.npz`` under pyMOTO's interpreter.

    `inputs` (arrays by name) are written to ``in.npz``; the arrays the script's
    pyMOTO half wrote to ``out.npz`` are returned. A failing pyMOTO half raises
    `RuntimeError` with its standard error.
    """
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        np.savez(src, **inputs)
        cmd = [pymoto_python(python), os.path.abspath(script), "--pymoto-side", *args, src, dst]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"pyMOTO's side failed ({' '.join(cmd)}):\n{done.stderr}")
        with np.load(dst) as out:
            return dict(out)


def serve(src: str, dst: str, compute) -> None:
    """pyMOTO's half: ``compute(inputs) -> {name: array}`` from `src` to `dst`, silenced."""
    with np.load(src) as data:
        inputs = dict(data)
    with quiet():
        outputs = compute(inputs)
    np.savez(dst, **outputs)


def responses(fn, sx, signals: dict, designs, el=None) -> dict:
    """pyMOTO's half: ``{name: values, "d" + name: gradients}`` of scalar `signals` of `fn`.

    For each design the state of the input signal `sx` is set and the network
    `fn` evaluated; then, one signal at a time, its sensitivity is seeded with
    1 and propagated back to ``sx.sensitivity``. Designs are vectors in
    pyMOTO's element order, or with `el` (``domain.elements[:, :, 0]``, the
    element number of each ``(ix, iy)``) element grids, and the gradients
    come back in the same form. Values have shape ``(n_designs,)``.
    """
    designs = np.asarray(designs, dtype=float)
    if el is not None:
        grids, designs = designs, np.empty((len(designs), el.size))
        designs[:, el] = grids
    out = {name: ([], []) for name in signals}
    for x in designs:
        sx.state = x.copy()
        fn.response()
        for name, s in signals.items():
            fn.reset()
            s.sensitivity = 1.0
            fn.sensitivity()
            out[name][0].append(float(s.state))
            out[name][1].append(np.array(sx.sensitivity, dtype=float))
    flat = {}
    for name, (values, grads) in out.items():
        grads = np.array(grads)
        flat[name], flat["d" + name] = np.array(values), grads if el is None else grads[:, el]
    return flat


def rel_err(a, b) -> float:
    """``|a - b|_inf / |b|_inf`` (scalars or arrays; `b` the reference, pyMOTO's)."""
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def verdict(worst: float, rtol: float) -> str:
    """The closing line: the largest relative error, within or ABOVE `rtol`."""
    return f"largest relative error {worst:.1e} ({'within' if worst <= rtol else 'ABOVE'} {rtol:g})"


def element_order(centres: np.ndarray, nelx: int) -> np.ndarray:
    """pyMOTO's element number ``ix + iy nelx`` of each element centre (unit elements)."""
    ix, iy = np.floor(centres[:, 0]).astype(int), np.floor(centres[:, 1]).astype(int)
    return ix + iy * nelx


def match_elements(ours_centres: np.ndarray, theirs_centres: np.ndarray) -> np.ndarray:
    """``perm`` with ``theirs_centres[perm[e]] == ours_centres[e]``; raises if none."""
    key = lambda c: np.round(c, 6)[:, 0] * 1e6 + np.round(c, 6)[:, 1]   # noqa: E731
    a, b = key(ours_centres), key(theirs_centres)
    order = np.argsort(b)
    perm = order[np.clip(np.searchsorted(b[order], a), 0, len(b) - 1)]
    if not np.allclose(theirs_centres[perm], ours_centres, atol=1e-9):
        raise RuntimeError("the two meshes' elements do not match")
    return perm
