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
