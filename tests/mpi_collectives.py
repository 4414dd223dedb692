"""The collectives of `topopt.ad.collectives` under MPI.

``mpirun -n P python tests/mpi_collectives.py OUT.json``.

Each rank holds its part of a vector (4 + rank entries; 3 for the entry-wise
collectives, whose argument has one shape everywhere), drawn from a seeded
generator of (seed, rank). Every check is of the GLOBAL function of all the
parts: the central differences perturb every rank's part at once along its
part of one direction, and the inner products are summed over the ranks.

* reverse: dot-product test ``sum_r <ybar_r, (J d)_r> = sum_r <xbar_r, d_r>``
  with random cotangent shares ``ybar_r`` (a replicated output's cotangent is
  the sum of the shares);
* forward: ``ydot = J d`` on every rank;
* hvp: ``ad.allhvp`` against the central difference of ``ad.allgradient``;
* nested: ``allgradient`` of ``t(allgradient(s))`` against the central
  difference of ``t``;
* the variance against its formula, the p-norm objective's gradient against
  the serial gradient of the gathered vector, the Taylor rate with
  ``ad.allgradient`` (and with the raw ``ad.gradient``, P times it);
* allmax's tie rule, and the refusal of a value that is not replicated.

Rank 0 writes the numbers as JSON to OUT.json; tests/test_collectives.py
asserts them.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

from topopt import ad

COMM = MPI.COMM_WORLD
P, RANK = COMM.size, COMM.rank
H = 1e-4                      # one finite-difference step on every rank
P_NORM = 4.0


def gsum(v) -> float:
    return float(COMM.allreduce(float(v), op=MPI.SUM))


def ginner(a, b) -> float:
    return gsum(np.real(np.vdot(np.asarray(a), np.asarray(b))))


def gnorm(a) -> float:
    return np.sqrt(ginner(a, a))


def rng(seed):
    return np.random.default_rng([seed, RANK])


def central(fun, x, d, h=H):
    """Richardson-extrapolated central difference of the global `fun` along `d`."""
    def diff(s):
        return (np.asarray(fun(x + s * d)) - np.asarray(fun(x - s * d))) / (2 * s)
    return (4 * diff(h / 2) - diff(h)) / 3


# ------------------------------------------------------------------- the cases

def pnorm_volume(x):
    n = ad.allsum(x.size, COMM)
    return ad.allsum(np.sum(x ** P_NORM), COMM) ** (1 / P_NORM) + ad.allsum(np.sum(x), COMM) / n


def variance(x):
    n = ad.allsum(x.size, COMM)
    mean = ad.allsum(np.sum(x), COMM) / n
    return ad.allsum(np.sum((x - mean) ** 2), COMM) / n


def smooth(x):
    """A replicated objective with curvature through each collective."""
    return (pnorm_volume(x) + variance(x) + ad.alldot(x, np.sin(x), COMM) ** 2 / 10
            + ad.allmax(np.max(x ** 2), COMM))


CASES = {   # name: (function of this rank's part, part size)
    "allsum": (lambda x: ad.allsum(x, COMM), 3),
    "allsum_scalar": (lambda x: ad.allsum(np.sum(x ** 2), COMM), None),
    "allsum_complex": (lambda x: ad.allsum(x * np.exp(1j * x), COMM), 3),
    "alldot": (lambda x: ad.alldot(x, np.sin(x), COMM), None),
    "allmax": (lambda x: ad.allmax(x, COMM), 3),
    "allmax_scalar": (lambda x: ad.allmax(np.max(x), COMM), None),
    "local_after_replicated": (lambda x: x * ad.allsum(np.sum(x), COMM), None),
    "variance": (variance, None),
    "pnorm_volume": (pnorm_volume, None),
    "smooth": (smooth, None),
}


def part(seed, size=None):
    return 0.5 + rng(seed).random(4 + RANK if size is None else size)


def rule_checks(fun, x, seed) -> dict:
    """Reverse (dot-product) and forward errors of `fun` at this rank's part `x`."""
    r = rng(seed + 1000)
    d = r.standard_normal(x.shape)
    y, back = ad.pullback(fun, x)
    ybar = r.standard_normal(np.shape(y))       # this rank's share
    if np.iscomplexobj(y):
        ybar = ybar + 1j * r.standard_normal(np.shape(y))
    xbar = back(ybar)[0]
    jd = central(fun, x, d)
    lhs, rhs = ginner(ybar, jd), ginner(xbar, d)
    reverse = abs(lhs - rhs) / (gnorm(ybar) * gnorm(jd))
    _, ydot = ad.jvp(fun, (x,), (d,))
    forward = gnorm(np.asarray(ydot) - jd) / gnorm(jd)
    return {"reverse": reverse, "forward": forward}


def second_order(seed) -> dict:
    x, r = part(seed), rng(seed + 2000)
    v, c, d = (r.standard_normal(x.shape) for _ in range(3))
    hv = ad.allhvp(smooth, x, v, comm=COMM)
    fd = central(lambda y: ad.allgradient(smooth, y, comm=COMM), x, v)
    raw = ad.hvp(smooth, x, v)                  # P times the Hessian-vector product

    def t(y):
        g = ad.allgradient(smooth, y, comm=COMM)
        return ad.alldot(c, g, COMM) + 0.5 * ad.alldot(g, g, COMM)

    nested = ad.allgradient(t, x, comm=COMM)
    lhs, rhs = float(central(t, x, d)), ginner(nested, d)
    return {"hvp": gnorm(hv - fd) / gnorm(fd),
            "hvp_raw_over_allhvp": gnorm(raw) / gnorm(hv),
            "nested": abs(lhs - rhs) / (gnorm(nested) * gnorm(d) + abs(lhs))}


def gradients(seed) -> dict:
    x = part(seed)
    n = gsum(x.size)
    mean = gsum(np.sum(x)) / n
    g = ad.allgradient(variance, x, comm=COMM)
    var_err = COMM.allreduce(float(np.max(np.abs(g - 2 * (x - mean) / n))), op=MPI.MAX)
    raw = ad.gradient(pnorm_volume, x)
    g = ad.allgradient(pnorm_volume, x, comm=COMM)
    parts = COMM.gather(g, root=0), COMM.gather(x, root=0)
    serial_err = None
    if RANK == 0:
        X = np.concatenate(parts[1])
        gs = ad.gradient(lambda X: np.sum(X ** P_NORM) ** (1 / P_NORM) + np.sum(X) / X.size, X)
        serial_err = float(np.max(np.abs(np.concatenate(parts[0]) - gs)) / np.max(np.abs(gs)))
    return {"variance_max_error": var_err, "serial_gradient_error": COMM.bcast(serial_err),
            "raw_over_allgradient": gnorm(raw) / gnorm(g), "n": n}


def taylor(fun, grad, seed, steps=6) -> dict:
    """Rates of ``|F(x + h dx) - F(x) - h sum_r <g_r, dx_r>|`` as h halves."""
    x, dx = part(seed), rng(seed + 3000).standard_normal(4 + RANK)
    f0 = float(fun(x))
    slope = ginner(grad(x), dx)
    hs = 1e-2 / 2.0 ** np.arange(steps)
    res = [abs(float(fun(x + h * dx)) - f0 - h * slope) for h in hs]
    floor = 1e3 * np.finfo(float).eps * abs(f0)
    rates = [float(np.log2(res[k] / res[k + 1])) for k in range(steps - 1) if res[k + 1] > floor]
    return {"rates": rates, "min_rate": min(rates), "remainders": [float(r) for r in res]}


def tie() -> dict:
    """allmax with the same part on every rank: the lowest rank takes the derivative."""
    x = np.array([1.0, 3.0, 2.0])
    y, back = ad.pullback(lambda x: ad.allmax(x, COMM), x)
    xbar = back(np.ones(3))[0]                  # shares 1 on every rank: cotangent P
    _, ydot = ad.jvp(lambda x: ad.allmax(x, COMM), (x,), (np.full(3, RANK + 1.0),))
    return {"xbar": COMM.gather(xbar.tolist(), root=0), "ydot": COMM.gather(ydot.tolist(), root=0),
            "y": y.tolist()}


def refusal() -> str | None:
    """The message for a value that differs between the ranks (None: none raised)."""
    try:
        ad.allgradient(lambda x: np.sum(x ** 2), part(7), comm=COMM)
    except ValueError as err:
        return str(err)
    return None


def main(path):
    out = {"ranks": P, "rules": {}}
    for k, (name, (fun, size)) in enumerate(CASES.items()):
        out["rules"][name] = rule_checks(fun, part(10 + k, size), 10 + k)
    out["second_order"] = second_order(40)
    out["gradients"] = gradients(50)
    out["taylor"] = taylor(pnorm_volume, lambda x: ad.allgradient(pnorm_volume, x, comm=COMM), 60)
    out["taylor_raw_gradient"] = taylor(pnorm_volume, lambda x: ad.gradient(pnorm_volume, x), 60)
    out["tie"] = tie()
    out["refusal"] = refusal()
    if RANK == 0:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
