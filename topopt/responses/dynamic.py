"""Dynamic compliance: the amplitude ``|f^H u|`` of a time-harmonic response.

``u`` is the complex amplitude of ``Z u = f`` (`topopt.fem.HarmonicSystem`);
``f^H u`` is the complex work of the load over a cycle and its modulus the
dynamic compliance (Silva, Neves & Lenzi 2019, eq. (5); pyMOTO's
``ex_dynamic_compliance.py``: ``ComplexNorm(EinSum(u, f))``). Plain numpy on
traced values: ``d|z| = Re(conj(z) dz) / |z|``, differentiable in every mode
away from ``f^H u = 0``.
"""

from __future__ import annotations

import numpy as np

from .. import ad
from .._validate import check_load
from .structural import _same_shape

__all__ = ["dynamic_compliance"]


def dynamic_compliance(u, f):
    """``|f^H u|``; for ``(ndof, n)`` arrays the sum over load cases ``sum_k |f_k^H u_k|``.

    `u` is complex (or real: then ``|f^T u|``); `f` a finite load of the same shape.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.responses.dynamic import dynamic_compliance
    >>> float(dynamic_compliance(np.array([3.0 + 4.0j, 0.0]), np.array([1.0, 2.0])))
    5.0
    """
    _same_shape("u", u, "f", f)
    check_load("f", ad.value(f))
    return np.sum(np.abs(np.sum(np.conj(f) * u, axis=0)))
