#!/usr/bin/env python
"""Independent reference values of the system table (``tests/reliability_cases.py``).

Nothing of ``topopt`` computes the references (it is imported only to print the
differences at the end). Each case gets two values computed in different ways:

- ``ref_a``: independent components -- the closed form (``prod Phi(-b)``,
  ``-expm1(sum ln Phi(b))``); one-factor correlations ``R_kl = a_k a_l`` -- the
  1-D integral over the common factor by scipy's adaptive ``quad`` (series as
  ``E[-expm1(sum ln(1 - p_k(W)))]``, no cancellation); block-diagonal matrices --
  the blocks combined; any other matrix -- inclusion-exclusion over the upper
  orthants ``P(Y_S >= b_S)``, each by nested exp-sinh quadrature (a trapezoidal
  rule in ``t`` with ``y = c + exp(pi/2 sinh t)``) in log space, step 0.03;
- ``ref_b``: inclusion-exclusion over the orthants by the nested exp-sinh rule
  at step 0.04 (0.1 for 5 components), whatever the structure. It does not
  resolve correlations within ~1e-3 of +-1 (the ``near`` cases: 1e-2 off there,
  where ``ref_a`` is the one-factor quadrature).

Prints, per case, both references, their relative difference and topopt's
first-order value (``system_failure_probability(..., "form")``) with its
relative error against ``ref_a``. Run from the repository root:

    python scripts/crosscheck/crosscheck_systems.py           # about 5 minutes
"""

from __future__ import annotations

import itertools
import os
import sys
import time

import numpy as np
import scipy.integrate as si
import scipy.special as sp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from reliability_cases import SYSTEM_CASES  # noqa: E402

LN_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


# ------------------------------------------------------------------ exp-sinh
def _es_nodes(h):
    t = np.arange(-5.0, 3.6, h)
    u = np.exp(0.5 * np.pi * np.sinh(t))
    return u, np.log(h * u * 0.5 * np.pi * np.cosh(t))


def ln_upper_es(c, R, h):
    """``ln P(Y >= c)`` rows of `c`, nested exp-sinh over the conditioned variables."""
    c = np.atleast_2d(np.asarray(c, float))
    k = c.shape[1]
    if k == 1:
        return sp.log_ndtr(-c[:, 0])
    r = R[0, 1:]
    s = np.sqrt(1.0 - r * r)
    Rc = (R[1:, 1:] - np.outer(r, r)) / np.outer(s, s)
    np.fill_diagonal(Rc, 1.0)
    u, lw = _es_nodes(h)
    out = np.empty(len(c))
    chunk = max(1, 4_000_000 // (len(u) ** (k - 1)))
    for i in range(0, len(c), chunk):
        ci = c[i:i + chunk]
        y = ci[:, :1] + u
        w = lw - 0.5 * y * y - LN_SQRT_2PI
        cc = (ci[:, None, 1:] - y[..., None] * r) / s
        inner = ln_upper_es(cc.reshape(-1, k - 1), Rc, h).reshape(y.shape)
        a = w + inner
        m = a.max(axis=1)
        out[i:i + chunk] = m + np.log(np.exp(a - m[:, None]).sum(axis=1))
    return out


def system_es(kind, R, b, h):
    """pf by inclusion-exclusion over the exp-sinh orthants (parallel: one orthant)."""
    k = len(b)
    if kind == "parallel":
        return float(np.exp(ln_upper_es(b, R, h)[0]))
    total = 0.0
    for size in range(1, k + 1):
        for S in itertools.combinations(range(k), size):
            S = list(S)
            p = np.exp(ln_upper_es(b[S], R[np.ix_(S, S)], h)[0])
            total += (-1.0) ** (size + 1) * p
    return total


# ------------------------------------------------------- closed forms, 1-D quad
def system_indep(kind, b):
    if kind == "parallel":
        return float(np.exp(np.sum(sp.log_ndtr(-b))))
    return float(-np.expm1(np.sum(sp.log_ndtr(b))))


def system_factor(kind, a, b):
    s = np.sqrt(1.0 - a * a)

    def ln_f(w):
        lp = sp.log_ndtr((a * w - b) / s)                 # ln P(Y_k >= b_k | W = w)
        if kind == "parallel":
            return np.sum(lp)
        return np.log(-np.expm1(np.sum(np.log1p(-np.exp(lp)))))

    grid = np.linspace(-12.0, 12.0, 2401)
    vals = np.array([ln_f(w) - 0.5 * w * w for w in grid])
    top, wm = np.max(vals), grid[np.argmax(vals)]
    f = lambda w: np.exp(ln_f(w) - 0.5 * w * w - top)   # noqa: E731
    v, _ = si.quad(f, -np.inf, wm, epsabs=0.0, epsrel=1e-13, limit=400)
    v2, _ = si.quad(f, wm, np.inf, epsabs=0.0, epsrel=1e-13, limit=400)
    return float(np.exp(top - LN_SQRT_2PI) * (v + v2))


def _structure(R):
    """("indep",), ("factor", a), ("blocks", [(i0, i1), ...]) or ("matrix",)."""
    k = len(R)
    off = R - np.eye(k)
    if np.allclose(off, 0.0):
        return ("indep",)
    cuts = [i for i in range(1, k) if np.allclose(R[:i, i:], 0.0)]
    if cuts:
        edges = [0] + cuts + [k]
        return ("blocks", list(zip(edges[:-1], edges[1:])))
    if k >= 3 and abs(R[1, 2]) > 1e-12 and abs(R[0, 1]) > 1e-12:
        a0 = np.sqrt(abs(R[0, 1] * R[0, 2] / R[1, 2]))      # a_0^2 = R01 R02 / R12
        a = np.r_[a0, R[0, 1:] / a0]
        test = np.outer(a, a)
        np.fill_diagonal(test, 1.0)
        if np.all(np.abs(a) < 1) and np.allclose(test, R, rtol=0.0, atol=1e-14):
            return ("factor", a)
    return ("matrix",)


def reference(kind, R, b, h):
    st = _structure(R)
    if st[0] == "indep":
        return system_indep(kind, b)
    if st[0] == "factor":
        return system_factor(kind, st[1], b)
    if st[0] == "blocks":
        parts = [reference(kind, R[i0:i1, i0:i1], b[i0:i1], h) for i0, i1 in st[1]]
        if kind == "parallel":
            return float(np.prod(parts))
        return float(-np.expm1(np.sum(np.log1p(-np.array(parts)))))
    return system_es(kind, R, b, h)


def main():
    sys.path.insert(0, ROOT)
    from reliability_cases import system_alphas

    from topopt import reliability as rel
    print(f"{'case':16s} {'ref_a':>22s} {'ref_b':>22s} {'|a-b|/a':>9s} "
          f"{'topopt':>22s} {'rel.err':>9s} {'t[s]':>6s}")
    worst_ab, worst_t = 0.0, 0.0
    for name, kind, R, betas, scales in SYSTEM_CASES:
        b, R = np.asarray(betas, float), np.asarray(R, float)
        t0 = time.perf_counter()
        ref_a = reference(kind, R, b, 0.03) if _structure(R)[0] != "matrix" else \
            system_es(kind, R, b, 0.03)
        ref_b = system_es(kind, R, b, 0.04 if len(b) <= 4 else 0.1)
        elapsed = time.perf_counter() - t0
        A = system_alphas(R)
        comps = [rel.LimitState(lambda t, d, a=a, s=s: s * (t @ a), m=len(b), batch=True)
                 for a, s in zip(A, scales)]
        got = rel.system_failure_probability(comps, None, list(np.asarray(scales) * b),
                                             kind).pf
        ab = abs(ref_a - ref_b) / ref_a
        err = abs(got - ref_a) / ref_a
        worst_ab = max(worst_ab, ab if np.isfinite(ab) else 0.0)
        worst_t = max(worst_t, err)
        print(f"{name:16s} {ref_a:22.15e} {ref_b:22.15e} {ab:9.1e} {got:22.15e} {err:9.1e} "
              f"{elapsed:6.1f}")
    print(f"largest |ref_a - ref_b|/ref_a: {worst_ab:.1e}; largest topopt relative error: "
          f"{worst_t:.1e}")


if __name__ == "__main__":
    main()
