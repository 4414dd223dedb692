"""Limit states ``F(theta, design)``: the interface the MPP solvers and estimators use.

A limit state fails when ``F >= z``; ``theta ~ N(0, I_m)``. A plain function
of ``(theta, design)`` is wrapped in a `LimitState`; subclasses (such as
`QuadraticLimitState`) override the derivatives and may solve for the MPP
exactly.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .. import ad
from .._validate import check_bool, check_callable, check_int, real

__all__ = ["LimitState", "as_limit_state"]


def _float_like(x) -> bool:
    if ad.is_traced(x):
        return True
    if isinstance(x, (bool, int, np.integer, np.bool_)):
        return False
    if isinstance(x, (float, np.floating)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind == "f"


class LimitState:
    """A limit-state function ``F(theta, design)`` in a form the solvers use.

    Parameters
    ----------
    fun : callable
        ``fun(theta, design) -> scalar``, written with numpy so that
        `topopt.ad` can differentiate it in both arguments (``design`` may be
        ``None``).
    m : int, optional
        Number of standard-normal variables (required unless every call gives
        ``theta0``).
    batch : bool
        ``fun`` accepts ``theta`` of shape ``(N, m)`` and returns ``(N,)``;
        used by the sampling estimators (otherwise they loop).

    Notes
    -----
    The solvers see a limit state through ``params(design) -> q`` (a tuple,
    differentiable in ``design``) and ``value(theta, *q)``, ``gradient``,
    ``hessian``; subclasses (`QuadraticLimitState`) override these and may
    provide an exact MPP by ``exact_mpp(q, z)``. A FE limit state plugs in by
    subclassing, or as a plain function of ``(theta, design)``.
    """

    def __init__(self, fun: Callable, m: int | None = None, batch: bool = False):
        self.fun = check_callable("fun", fun)
        self.m = _check_m(m)
        self.batch = check_bool("batch", batch)

    def __call__(self, theta, design=None):
        return self.value(theta, *self.params(design))

    def params(self, design) -> tuple:
        """The parameters ``q`` the other methods take (here ``(design,)``)."""
        return (design,)

    def value(self, theta, *q):
        """``F(theta; q)``; traced arguments are fine."""
        return self.fun(theta, *q)

    def gradient(self, theta, *q):
        """``grad_theta F`` (traced in ``theta`` and ``q`` if they are)."""
        return ad.gradient(self.fun, theta, *q)

    def hessian(self, theta, *q):
        """``grad_theta^2 F`` by ``m`` forward-over-reverse products."""
        m = np.shape(theta)[0]
        rows = [ad.hvp(self.fun, theta, e, *q) for e in np.eye(m)]
        H = np.stack(rows)
        return 0.5 * (H + H.T)

    def values(self, thetas: np.ndarray, *q, chunk: int = 16384) -> np.ndarray:
        """``F`` at each row of ``thetas`` (shape ``(N, m)``) -> ``(N,)``."""
        thetas = np.asarray(thetas, float)
        if self.batch:
            out = [np.asarray(self.value(thetas[i:i + chunk], *q), float).reshape(-1)
                   for i in range(0, len(thetas), chunk)]
            out = np.concatenate(out) if out else np.zeros(0)
            if out.shape != (len(thetas),):
                raise ValueError(f"a batched limit state returned shape {out.shape} "
                                 f"for {len(thetas)} samples")
            return out
        return np.array([float(self.value(t, *q)) for t in thetas])

    def value_and_gradient(self, theta, *q) -> tuple[float, np.ndarray]:
        """Plain ``(F, grad_theta F)`` at ``theta``."""
        try:
            v, g = ad.value_and_gradient(lambda t: self.value(t, *q), np.asarray(theta, float))
        except TypeError as err:                    # a vector or complex output
            if not str(err).startswith("gradient needs a real scalar output"):
                raise
            why = str(err).split(";")[0][len("gradient needs a real scalar output, "):]
            raise TypeError(f"the limit state F(theta, design) must return a real scalar, "
                            f"{why}") from None
        if np.shape(v) != ():
            raise TypeError(f"the limit state must return a scalar, got shape {np.shape(v)}")
        return float(v), np.asarray(g, float)

    def exact_mpp(self, q, z):
        """Exact local MPPs ``([theta_global, *others], info)``, or ``None``.

        ``None`` (the default) selects the iterative search of `find_mpp`.
        """
        return None

    def dimension(self, q) -> int | None:
        return self.m

    def physical(self, theta) -> np.ndarray:
        """The physical point of a standard-normal point (here ``theta`` itself)."""
        return np.asarray(theta, float)


def as_limit_state(limit_state, m: int | None = None, batch: bool = False) -> LimitState:
    """`limit_state` as a `LimitState` (a plain function is wrapped)."""
    m = _check_m(m)
    if isinstance(limit_state, LimitState):
        if m is not None and limit_state.m is None:
            limit_state.m = m
        elif m is not None and limit_state.m != m:
            raise ValueError(f"m={m} contradicts the limit state's m={limit_state.m}")
        if check_bool("batch", batch) and not limit_state.batch:
            raise ValueError(f"batch=True contradicts the limit state's batch=False "
                             f"(set it on {type(limit_state).__name__})")
        return limit_state
    if not callable(limit_state):
        raise TypeError(f"a limit state is a function F(theta, design), got "
                        f"{type(limit_state).__name__}")
    return LimitState(limit_state, m=m, batch=batch)


def _check_m(m) -> int | None:
    return None if m is None else check_int("m", m, 1, what="number of random variables")


def _check_z(z) -> float:
    """The threshold: a finite real number (traced values are looked at, not converted)."""
    return real("z", ad.value(z))


def _tangent_basis(n: np.ndarray) -> np.ndarray:
    """Orthonormal basis (columns) of the plane orthogonal to unit `n`."""
    _, _, vt = np.linalg.svd(n[None, :])
    return vt[1:].T
