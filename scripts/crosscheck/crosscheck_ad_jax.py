"""Cross-check of `topopt.ad` against JAX on the edge forms of issue 23 (not a test).

Each case is ``f(xp, L, x)``: `xp` is numpy or jax.numpy and ``L(seq)``
builds a Python sequence operand (the list itself for topopt.ad, a jax
array for JAX, which takes no lists). Four modes are compared on
``s(x) = sum(sin(f(x)) + f(x)^2 / 2)`` (real parts): the gradient, the jvp
of `f`, the hvp of `s` and reverse over reverse (the gradient of
``sum(c * grad s)``). Prints one line per case that is not right in every
mode and the counts right / refused (a TypeError, ValueError or NoRuleError)
/ wrong / crashed (any other exception).

    python3 -m venv /tmp/jaxvenv        # a scratch environment: JAX is no dependency
    /tmp/jaxvenv/bin/pip install jax jaxlib numpy scipy scikit-fem nlopt matplotlib
    PYTHONPATH=. /tmp/jaxvenv/bin/python scripts/crosscheck/crosscheck_ad_jax.py   # x64, CPU

The round-two forms (casts, fills, sequences, builtins, methods with keywords,
composites) are in `crosscheck_ad_cases2.py`, the round-three forms of issue
35 (qr, svd, lstsq, every fft with ``n=`` / ``s=`` / ``norm=``, gradient,
meshgrid, correlate, cov, numpy 2's linalg names, ufunc methods, ``sign`` of
complex input...) in `crosscheck_ad_cases3.py`. Measured with JAX 0.10.2,
numpy 2.4.6 and scipy 1.17.1 (2026-12-07)::

    481 cases x 4 modes: 1872 right, 52 refused, 0 wrong, 0 crashed

The 52 refusals are 13 forms refused on purpose, each with a message naming
the fix: a list or nested list of traced values that numpy converts itself
(``np.sum([x[0], x[1]])``, ``np.exp([x[0], 1])``, ``np.full(4, x[0])``, a
matrix of traced entries given to det/inv/norm), ``np.array(x)``,
``np.asarray(x, dtype=float)``, ``np.r_`` / ``np.c_`` and ``x.item()``.
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np

from topopt import ad

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from crosscheck_ad_cases2 import CASES2  # noqa: E402  (round two: issue 23)
from crosscheck_ad_cases3 import CASES3  # noqa: E402  (round three: issue 35)

jax.config.update("jax_enable_x64", True)


def _jlist(seq):
    return jnp.stack([_jlist(s) if isinstance(s, (list, tuple)) else jnp.asarray(s, float)
                      for s in seq])


V4 = np.array([0.3, 1.7, -2.4, 3.9])
M34 = np.array([[0.3, -1.2, 0.7, 2.1], [1.1, 0.4, -0.9, 0.2], [-0.5, 1.6, 0.8, -1.3]])
MASK = np.array([True, False, True, False])
C4 = [1.0, 2.0, -3.0, 0.5]

CASES = {
    # constant sequences
    "x * list": (lambda xp, L, x: x * L(C4), V4),
    "list * x": (lambda xp, L, x: L(C4) * x, V4),
    "x * tuple": (lambda xp, L, x: x * L(tuple(C4)), V4),
    "x / list": (lambda xp, L, x: x / L(C4), V4),
    "list / x": (lambda xp, L, x: L(C4) / x, V4),
    "x - list": (lambda xp, L, x: x - L(C4), V4),
    "list - x": (lambda xp, L, x: L(C4) - x, V4),
    "x ** list": (lambda xp, L, x: xp.abs(x) ** L([1.0, 2.0, 3.0, 0.5]), V4),
    "list ** x": (lambda xp, L, x: L([1.5, 2.0, 3.0, 0.5]) ** x, V4),
    "m + nested list": (lambda xp, L, x: x + L([C4, C4, C4]), M34),
    "m * row list": (lambda xp, L, x: x * L(C4), M34),
    "einsum list": (lambda xp, L, x: xp.einsum("i,i->", x, L(C4)), V4),
    "einsum list first": (lambda xp, L, x: xp.einsum("i,i->i", L(C4), x), V4),
    "tensordot list": (lambda xp, L, x: xp.tensordot(x, L(C4), 1), V4),
    "x @ list": (lambda xp, L, x: x @ L(C4), V4),
    "list @ x": (lambda xp, L, x: L([1.0, 2.0, 3.0]) @ x, M34),
    "m @ list": (lambda xp, L, x: x @ L(C4), M34),
    "dot list": (lambda xp, L, x: xp.dot(x, L(C4)), V4),
    "dot list first": (lambda xp, L, x: xp.dot(L(C4), x), V4),
    "x.dot(list)": (lambda xp, L, x: x.dot(L(C4)), V4),
    "vdot list": (lambda xp, L, x: xp.vdot(x, L(C4)), V4),
    "outer list": (lambda xp, L, x: xp.outer(x, L([1.0, 2.0])), V4),
    "matmul list": (lambda xp, L, x: xp.matmul(x, L(C4)), M34),
    "where list": (lambda xp, L, x: xp.where(MASK, x, L(C4)), V4),
    "clip list": (lambda xp, L, x: xp.clip(x, L([0.0, 1.0, -3.0, 3.0]),
                                           L([1.0, 2.0, 0.0, 3.5])), V4),
    "maximum list": (lambda xp, L, x: xp.maximum(x, L(C4)), V4),
    "minimum list": (lambda xp, L, x: xp.minimum(L(C4), x), V4),
    "hypot-free add list 2d": (lambda xp, L, x: xp.add(x, L([[1.0], [2.0], [3.0]])), M34),
    "concatenate list": (lambda xp, L, x: xp.concatenate([x, L([1.0, 2.0])]), V4),
    "stack list": (lambda xp, L, x: xp.stack([x, L(C4)]), V4),
    "hstack list": (lambda xp, L, x: xp.hstack([x, L([1.0, 2.0])]), V4),
    "vstack list": (lambda xp, L, x: xp.vstack([x, L(C4)]), V4),
    "column_stack list": (lambda xp, L, x: xp.column_stack([x, L(C4)]), V4),
    "dstack list": (lambda xp, L, x: xp.dstack([x, L(C4)]), V4),
    "diff prepend list": (lambda xp, L, x: xp.diff(x, prepend=L([1.0])), V4),
    "diff append list": (lambda xp, L, x: xp.diff(x, append=L([1.0, 2.0])), V4),
    "solve list matrix": (lambda xp, L, x: xp.linalg.solve(L([[4.0, 1, 0, 0], [1, 3, 0, 0],
                                                              [0, 0, 2, 0], [0, 0, 0, 5]]), x), V4),
    # traced values inside sequences
    "x * [x0, ..]": (lambda xp, L, x: x * L([x[0], 1, 2, 3]), V4),
    "x * (x0, ..)": (lambda xp, L, x: x * L((x[0], 1.0, x[2], 3.0)), V4),
    "x + [x0, ..]": (lambda xp, L, x: x + L([x[0], 1, 2, 3]), V4),
    "[x0, ..] - x": (lambda xp, L, x: L([x[0], 1, 2, 3]) - x, V4),
    "x / [x1, ..]": (lambda xp, L, x: x / L([x[1], 1, 2, 3]), V4),
    "x ** [..]": (lambda xp, L, x: xp.abs(x) ** L([x[1], 1, 2, 3]), V4),
    "x @ [x0, ..]": (lambda xp, L, x: x @ L([x[0], 1, 2, 3]), V4),
    "dot [x0, ..]": (lambda xp, L, x: xp.dot(x, L([x[0], 1, 2, 3])), V4),
    "einsum [x0, ..]": (lambda xp, L, x: xp.einsum("i,i->", x, L([x[0], 1, 2, 3])), V4),
    "hstack [x, [x0, 1]]": (lambda xp, L, x: xp.hstack([x, L([x[0], 1.0])]), V4),
    "concatenate [x, [x0, 1]]": (lambda xp, L, x: xp.concatenate([x, L([x[0], 1.0])]), V4),
    "vstack [x, [x0..]]": (lambda xp, L, x: xp.vstack([x, L([x[0], 1.0, 2.0, 3.0])]), V4),
    "stack [x, [..x3]]": (lambda xp, L, x: xp.stack([x, L([1.0, x[3], 2.0, x[0]])]), V4),
    "nested [[x0, 1], [2, x1]] @": (lambda xp, L, x: L([[x[0], 1.0], [2.0, x[1]]]) @ x[:2], V4),
    "where [x0..]": (lambda xp, L, x: xp.where(MASK, x, L([x[1], 1.0, x[3], 2.0])), V4),
    "maximum [x1..]": (lambda xp, L, x: xp.maximum(x, L([x[1], 0.0, 0.0, 5.0])), V4),
    "clip [x..] bounds": (lambda xp, L, x: xp.clip(x, L([x[1], 0.0, -5, 0]), 3.0), V4),
    "diff prepend [x1]": (lambda xp, L, x: xp.diff(x, prepend=L([x[1]])), V4),
    "diff append [x0, 2]": (lambda xp, L, x: xp.diff(x, append=L([x[0], 2.0])), V4),
    "m * [x.., ..] row": (lambda xp, L, x: x * L([x[0, 0], 1.0, 2.0, x[2, 3]]), M34),
    # casts and dtype=
    "astype(int) * 1 + x": (lambda xp, L, x: x.astype(xp.int64) * 1.0 + x, V4),
    "astype(int) * x": (lambda xp, L, x: x.astype(xp.int64) * x, V4),
    "astype(bool) * x": (lambda xp, L, x: x.astype(bool) * x, V4),
    "astype(int32) * x": (lambda xp, L, x: x.astype(xp.int32) * x, V4),
    "astype(complex)": (lambda xp, L, x: xp.real(x.astype(complex) * (1 + 2j)), V4),
    "sum dtype=int64 + x": (lambda xp, L, x: xp.sum(x, dtype=xp.int64) * 1.0 + x, V4),
    "mean dtype=int64 + x": (lambda xp, L, x: xp.mean(x, dtype=xp.int64) * 1.0 + x, V4),
    "x.sum(dtype=int)": (lambda xp, L, x: x.sum(dtype=xp.int64) * x, V4),
    "prod dtype=int": (lambda xp, L, x: xp.prod(x, dtype=xp.int64) * x, V4),
    "cumsum dtype=int": (lambda xp, L, x: xp.cumsum(x, dtype=xp.int64) * x, V4),
    "trace dtype=int": (lambda xp, L, x: xp.trace(x[:, :3], dtype=xp.int64) * x, M34),
    "sum dtype=complex": (lambda xp, L, x: xp.real(xp.sum(x, dtype=complex) * (1 + 1j)) * x, V4),
    # full_like
    "full_like(x, x0)": (lambda xp, L, x: xp.full_like(x, x[0]) * xp.sin(x), V4),
    "full_like(m, row)": (lambda xp, L, x: xp.full_like(x, x[0]) * x, M34),
    "full_like(x, x0, dtype=int)": (lambda xp, L, x: xp.full_like(x, x[0], dtype=int) * x, V4),
    "full_like(x, 2.0)": (lambda xp, L, x: xp.full_like(x, 2.0) * x, V4),
    "full_like(x, x1, shape)": (lambda xp, L, x: xp.sum(xp.full_like(x, x[1], shape=(2, 3))) * x,
                                V4),
    "zeros_like + x": (lambda xp, L, x: xp.zeros_like(x) + x * x, V4),
    "ones_like * x": (lambda xp, L, x: xp.ones_like(x) * x * x, V4),
    # ndarray methods
    "x.trace()": (lambda xp, L, x: x[:, :3].trace() * x, M34),
    "x.trace(1)": (lambda xp, L, x: x.trace(1) * x, M34),
    "x.sum()": (lambda xp, L, x: x.sum(0), M34),
    "x.mean(1)": (lambda xp, L, x: x.mean(1), M34),
    "x.prod()": (lambda xp, L, x: x.prod(1), M34),
    "x.cumsum(1)": (lambda xp, L, x: x.cumsum(1), M34),
    "x.cumprod()": (lambda xp, L, x: x.cumprod(), V4),
    "x.var()": (lambda xp, L, x: x.var(0), M34),
    "x.std()": (lambda xp, L, x: x.std(1), M34),
    "x.max(0)": (lambda xp, L, x: x.max(0), M34),
    "x.min()": (lambda xp, L, x: x.min() * x, M34),
    "x.clip(-1, 1)": (lambda xp, L, x: x.clip(-1.0, 1.0), V4),
    "x.T": (lambda xp, L, x: x.T @ x, M34),
    "x.mT": (lambda xp, L, x: x.mT @ x, M34),
    "x.reshape": (lambda xp, L, x: x.reshape(4, 3) * 2, M34),
    "x.ravel()": (lambda xp, L, x: x.ravel() ** 2, M34),
    "x.flatten()": (lambda xp, L, x: x.flatten() ** 2, M34),
    "x.squeeze()": (lambda xp, L, x: x[None].squeeze() ** 2, V4),
    "x.swapaxes": (lambda xp, L, x: x.swapaxes(0, 1) ** 2, M34),
    "x.transpose()": (lambda xp, L, x: x.transpose() ** 2, M34),
    "x.diagonal()": (lambda xp, L, x: x.diagonal() ** 2, M34),
    "x.diagonal(1)": (lambda xp, L, x: x.diagonal(1) ** 2, M34),
    "x.take": (lambda xp, L, x: x.take(np.array([0, 2, -1])) ** 2, V4),
    "x.take axis": (lambda xp, L, x: x.take(np.array([0, 2]), axis=1) ** 2, M34),
    "x.repeat(2)": (lambda xp, L, x: x.repeat(2) ** 2, V4),
    "x.conj()": (lambda xp, L, x: x.conj() * x, V4),
    "x.real": (lambda xp, L, x: x.real * x, V4),
    "x.imag + x": (lambda xp, L, x: x.imag + x * x, V4),
    "x.round() * x": (lambda xp, L, x: x.round() * x, V4),
    "x.astype(float)": (lambda xp, L, x: x.astype(float) ** 2, V4),
    "x.copy()": (lambda xp, L, x: x.copy() ** 2, V4),
    "x.compress": (lambda xp, L, x: x.compress(MASK) ** 2, V4),
    "x.dot(x)": (lambda xp, L, x: x.dot(x) * x, V4),
    "x.all() * x": (lambda xp, L, x: x.all() * x, V4),
    "x.argmax() * x": (lambda xp, L, x: x.argmax() * x, V4),
    "np.take": (lambda xp, L, x: xp.take(x, np.array([3, 1])) * x[:2], V4),
    "np.diagonal": (lambda xp, L, x: xp.diagonal(x, -1) ** 2, M34),
    "np.compress": (lambda xp, L, x: xp.compress(MASK[:3], x, axis=0) ** 2, M34),
    "asarray(x, dtype=int) * x": (lambda xp, L, x: xp.asarray(x, dtype=int) * x, V4),
    "x % 1.5": (lambda xp, L, x: x % 1.5, V4),
    "2.5 % x": (lambda xp, L, x: 2.5 % x, V4),
    "fmod": (lambda xp, L, x: xp.fmod(x, 1.5), V4),
    "(x // 1.5) * x": (lambda xp, L, x: (x // 1.5) * x, V4),
    "append": (lambda xp, L, x: xp.append(x, x[0]), V4),
    "append axis=0": (lambda xp, L, x: xp.append(x, L([[x[0, 0], 1.0, 2.0, 3.0]]), axis=0), M34),
    "diag vector": (lambda xp, L, x: xp.diag(x, 1), V4),
    "diag matrix": (lambda xp, L, x: xp.diag(x, -1), M34),
    "full_like(x, [x1, ..])": (lambda xp, L, x: xp.full_like(x, L([x[1], 1.0, 2.0, x[0]])) * x,
                               V4),
    "average weights list": (lambda xp, L, x: xp.average(x, weights=L(C4[::-1])) * x, V4),
    "average traced weights": (lambda xp, L, x: xp.average(x, 1, L([x[0, 0] ** 2, 1.0, 2.0,
                                                                      3.0])), M34),
    "pad constant": (lambda xp, L, x: xp.pad(x, 2), V4),
    "pad traced constant": (lambda xp, L, x: xp.pad(x, 1, constant_values=x[0]), V4),
    "pad edge": (lambda xp, L, x: xp.pad(x, (1, 2), "edge"), M34),
    "pad reflect": (lambda xp, L, x: xp.pad(x, 2, "reflect"), V4),
    "pad symmetric": (lambda xp, L, x: xp.pad(x, ((2, 1), (1, 3)), "symmetric"), M34),
    "pad wrap": (lambda xp, L, x: xp.pad(x, 3, "wrap"), V4),
    "np.astype(x, int) * x": (lambda xp, L, x: xp.astype(x, int) * x, V4),
    "x.view()": (lambda xp, L, x: (x.view() if xp is np else x) ** 2, V4),
    # refused (numpy converts a top-level list, or the fill value of np.full, itself)
    "np.full(4, x0)": (lambda xp, L, x: xp.full(4, x[0]) * x, V4),
    "np.sum([x0, x1])": (lambda xp, L, x: xp.sum(L([x[0], x[1]])) * x, V4),
    "np.exp([x0, 1])": (lambda xp, L, x: xp.exp(L([x[0], 1.0])), V4),
}
_ROUND_ONE = len(CASES)
CASES.update(CASES2)
CASES.update(CASES3)
assert len(CASES) == _ROUND_ONE + len(CASES2) + len(CASES3), "a case name used twice"


def _ours(f, x):
    s = lambda x: np.sum(np.real(np.sin(f(np, list, x)) + 0.5 * f(np, list, x) ** 2))  # noqa
    rng = np.random.default_rng(0)
    v, c = rng.standard_normal(x.shape), rng.standard_normal(x.shape)
    out = {}
    out["reverse"] = lambda: ad.gradient(s, x)
    out["forward"] = lambda: ad.jvp(lambda x: f(np, list, x), (x,), (v,))[1]
    out["hvp"] = lambda: ad.hvp(s, x, v)
    out["nested"] = lambda: ad.gradient(lambda x: np.sum(c * ad.gradient(s, x)), x)
    return out


def _jax(f, x):
    g = lambda x: f(jnp, _jlist, x)                                                    # noqa
    s = lambda x: jnp.sum(jnp.real(jnp.sin(g(x)) + 0.5 * g(x) ** 2))                   # noqa
    rng = np.random.default_rng(0)
    v, c = rng.standard_normal(x.shape), rng.standard_normal(x.shape)
    return {"reverse": jax.grad(s)(x), "forward": jax.jvp(g, (x,), (v,))[1],
            "hvp": jax.jvp(jax.grad(s), (x,), (v,))[1],
            "nested": jax.grad(lambda x: jnp.sum(c * jax.grad(s)(x)))(x)}


def main() -> int:
    counts = {"right": 0, "refused": 0, "wrong": 0, "crashed": 0}
    for name, (f, x) in CASES.items():
        ref = _jax(f, x)
        for mode, run in _ours(f, x).items():
            try:
                got = np.asarray(run(), float) if mode != "forward" else np.asarray(run())
            except (TypeError, ValueError, ad.NoRuleError) as err:
                counts["refused"] += 1
                print(f"refused  {name} [{mode}]: {type(err).__name__}: {str(err)[:110]}")
                continue
            except Exception as err:       # noqa: BLE001
                counts["crashed"] += 1
                print(f"CRASHED  {name} [{mode}]: {type(err).__name__}: {str(err)[:110]}")
                continue
            want = np.asarray(ref[mode])
            if got.dtype == object:
                counts["crashed"] += 1
                print(f"CRASHED  {name} [{mode}]: returned {got!r}")
                continue
            if got.shape == want.shape and np.allclose(got, want, rtol=1e-9, atol=1e-12):
                counts["right"] += 1
            else:
                counts["wrong"] += 1
                print(f"WRONG    {name} [{mode}]: {np.ravel(got)[:4]} vs jax {np.ravel(want)[:4]}")
    print(f"{len(CASES)} cases x 4 modes: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0 if counts["wrong"] == counts["crashed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
