"""Reliability test cases shared by tests/test_reliability*.py and scripts/openturns_reliability.py.

numpy only (no topopt inside): the OpenTURNS cross-check script imports this
module in OpenTURNS' own interpreter, so that the case it analyses is the one
the tests use.
"""

import numpy as np

#: the parameter point of the compliance-like quadratic (``QUAD(P0)``)
P0 = np.array([0.1, 0.2, 0.3])


def quadratic_coefficients(p):
    """``(c0, b, A)`` of the compliance-like ``c0 + 2 b.theta + theta.A.theta``, A PSD, all of p.

    >>> c0, b, A = quadratic_coefficients(P0)
    >>> bool(np.all(np.linalg.eigvalsh(A) > 0))
    True
    """
    c0 = 1.0 + 0.5 * np.sum(p ** 2)
    b = np.array([1.0, 0.5, 0.2]) * (1 + p[0]) + np.array([0.0, 0.3, -0.2]) * p[1]
    L = np.array([[0.6, 0.0, 0.0], [0.2, 0.4, 0.0], [0.1, -0.1, 0.3]]) * np.exp(0.5 * p[2])
    A = L @ L.T + p[0] * np.array([[0.0, 0.05, 0.0], [0.05, 0.0, 0.0], [0.0, 0.0, 0.02]])
    return c0, b, A
