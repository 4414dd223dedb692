"""Reliability test cases shared by tests/test_reliability*.py and scripts/crosscheck/openturns_reliability.py.

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


# ------------------------------------------------------------- system table
def _chol_rows(R):
    """Unit rows ``alpha_k`` with ``alpha_k . alpha_l = R_kl`` (a square root of R)."""
    w, V = np.linalg.eigh(np.asarray(R, float))
    A = V * np.sqrt(np.clip(w, 0.0, None))
    return A / np.linalg.norm(A, axis=1)[:, None]


def one_factor(a):
    """``R_kl = a_k a_l`` off the diagonal (``Y_k = a_k W + sqrt(1 - a_k^2) E_k``)."""
    a = np.asarray(a, float)
    R = np.outer(a, a)
    np.fill_diagonal(R, 1.0)
    return R


def blocks(*Rs):
    """Block-diagonal correlation matrix (independent groups)."""
    k = sum(len(R) for R in Rs)
    out, i = np.eye(k), 0
    for R in Rs:
        n = len(R)
        out[i:i + n, i:i + n] = R
        i += n
    return out


_A3 = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]])
_R3 = _A3 @ _A3.T                                   # rho 0.6, 0.48, 0
_R4 = np.array([[1.0, 0.5, 0.3, -0.2], [0.5, 1.0, 0.4, 0.1],
                [0.3, 0.4, 1.0, 0.6], [-0.2, 0.1, 0.6, 1.0]])
_R2N = np.array([[1.0, -0.6], [-0.6, 1.0]])
#: alphas of a scaled parallel system whose joint design point SLSQP flags as failed
A_SCALED = np.array([[0.1888, -0.1984, 0.9618], [0.1602, -0.8181, 0.5523],
                     [0.7415, 0.5385, -0.4002]])
A_SCALED = A_SCALED / np.linalg.norm(A_SCALED, axis=1)[:, None]
_A_SCALED = A_SCALED

#: Series/parallel systems of linear components ``F_k = s_k alpha_k . theta >= s_k beta_k``:
#: (name, kind, correlation matrix, betas, scales). The references of
#: ``SYSTEM_REFERENCE`` are printed by ``scripts/crosscheck/crosscheck_systems.py``.
SYSTEM_CASES = [
    ("s2-indep", "series", np.eye(2), [3.0, 3.5], [1.0, 1.0]),
    ("p2-indep", "parallel", np.eye(2), [2.0, 2.5], [1.0, 1.0]),
    ("s2-rho0.7", "series", one_factor([np.sqrt(0.7), np.sqrt(0.7)]), [2.5, 3.0], [1.0, 1.0]),
    ("p2-rho-0.6", "parallel", _R2N, [1.0, 1.5], [1.0, 1.0]),
    ("s3-9e-3", "series", _R3, [2.5, 2.8, 3.0], [1.0, 1.0, 1.0]),
    ("s3-4e-6", "series", _R3, [4.5, 4.8, 5.0], [1.0, 1.0, 1.0]),
    ("s3-scaled", "series", _R3, [2.5, 2.8, 3.0], [1e3, 1e-2, 37.0]),
    ("p3-scaled", "parallel", _A_SCALED @ _A_SCALED.T,
     [2.8701, 2.6317, 1.0055], [1004.222, 0.002, 128.112]),
    ("p3-corr", "parallel", _R3, [1.5, 1.7, 1.6], [1.0, 1.0, 1.0]),
    ("s4-corr", "series", _R4, [3.0, 3.2, 3.1, 3.4], [1.0, 1.0, 1.0, 1.0]),
    ("p4-corr", "parallel", _R4, [1.0, 1.2, 0.8, 1.1], [1.0, 1.0, 1.0, 1.0]),
    ("s4-factor", "series", one_factor([0.8, 0.6, 0.5, 0.3]), [3.0, 3.2, 3.4, 3.6],
     [2.0, 1.0, 0.5, 1.0]),
    ("p4-factor", "parallel", one_factor([0.8, -0.6, 0.5, 0.3]), [0.5, 0.8, 1.0, 0.7],
     [1.0, 1.0, 1.0, 1.0]),
    ("p3-near-1", "parallel", one_factor([0.99995, 0.99995, 0.9]), [2.0, 2.1, 2.3],
     [1.0, 1.0, 1.0]),
    ("s3-near-minus-1", "series", one_factor([0.99995, -0.99995, 0.5]), [3.0, 3.1, 3.3],
     [1.0, 1.0, 1.0]),
    ("p4-near-1", "parallel", one_factor([0.9999, 0.99, -0.3, 0.9995]), [1.0, 1.1, 0.5, 1.2],
     [1.0, 1.0, 1.0, 1.0]),
    ("s5-indep-1e-12", "series", np.eye(5), [7.3, 7.5, 7.6, 7.8, 8.0], [1.0] * 5),
    ("p5-indep-5e-13", "parallel", np.eye(5), [2.5, 2.6, 2.7, 2.8, 2.9], [1.0] * 5),
    ("s5-factor", "series", one_factor([0.9, 0.7, 0.5, -0.3, 0.2]), [4.0, 4.2, 4.4, 4.6, 4.8],
     [1.0, 3.0, 1.0, 0.1, 1.0]),
    ("p5-factor", "parallel", one_factor([0.9, 0.8, 0.7, 0.6, 0.5]), [1.5, 1.8, 2.0, 2.2, 2.4],
     [1.0] * 5),
    ("s5-blocks", "series", blocks(_R2N, _R3), [3.0, 3.3, 2.9, 3.1, 3.5], [1.0] * 5),
    ("p5-blocks", "parallel", blocks(_R2N, _R3), [0.3, 0.4, 1.0, 1.2, 0.9], [1.0] * 5),
]


def system_alphas(R):
    """Unit rows ``alpha_k`` (``m = K`` variables) of the case's correlation matrix."""
    return _chol_rows(R)


#: Reference pf of `SYSTEM_CASES` (``ref_a`` of ``scripts/crosscheck/crosscheck_systems.py``:
#: closed forms, 1-D quadrature over the common factor, or nested exp-sinh
#: inclusion-exclusion; its second scheme ``ref_b`` agrees to 2e-9 or better, except
#: where a correlation is within 1e-3 of +-1, which the exp-sinh rule does not
#: resolve: there ``ref_a`` is the one-factor 1-D quadrature).
SYSTEM_REFERENCE = {
    "s2-indep": 1.582213085129728e-03,
    "p2-indep": 1.412707055154404e-04,
    "s2-rho0.7": 7.032371868818002e-03,
    "p2-rho-0.6": 2.920231746894119e-04,
    "s3-9e-3": 9.447913313046088e-03,
    "s3-4e-6": 4.451433843470993e-06,
    "s3-scaled": 9.447913313046088e-03,
    "p3-scaled": 8.127813147854651e-07,
    "p3-corr": 2.671391832059661e-03,
    "s4-corr": 3.208170029227703e-03,
    "p4-corr": 5.159031701927311e-03,
    "s4-factor": 2.464507937800832e-03,
    "p4-factor": 1.092688103969816e-03,
    "p3-near-1": 7.481004220872237e-03,
    "s3-near-minus-1": 2.761302565378877e-03,
    "p4-near-1": 1.624277867238739e-02,
    "s5-indep-1e-12": 1.943167728642925e-13,
    "p5-indep-5e-13": 4.784060002989376e-13,
    "s5-factor": 5.241940072086362e-05,
    "p5-factor": 1.353374209197456e-04,
    "s5-blocks": 4.740339201409582e-03,
    "p5-blocks": 9.753178093209975e-04,
}
