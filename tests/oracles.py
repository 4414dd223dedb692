"""Independent derivative oracles shared by the tests (no `topopt.ad` inside)."""

import numpy as np


def central_gradient(f, x, h=1e-6):
    """Central differences of a scalar `f`, one coordinate at a time."""
    x = np.asarray(x, float)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def draws(seed: int):
    """``(real, complex)``: fixed standard-normal arrays ``real(*shape)`` from one seeded stream."""
    rng = np.random.default_rng(seed)

    def real(*shape):
        return rng.standard_normal(shape)

    def complex_(*shape):
        return real(*shape) + 1j * real(*shape)
    return real, complex_
