"""The front door: `failure_probability`, the differentiable `ln_pf` and `FailureProbability`.

`failure_probability` sends an asymptotic method to `asymptotic` and a
sampling one to `sampling`; `ln_pf` is the `topopt.ad` primitive whose rules
take their cotangents from `asymptotic._cotangents`.
"""

from __future__ import annotations

import numpy as np

from .. import ad
from .._validate import check_bool, check_callable, check_choice
from .asymptotic import ReliabilityResult, _asymptotic, _cotangents
from .base import ASYMPTOTIC, METHODS, SAMPLING
from .limit_state import _check_m, _check_z, _float_like, as_limit_state
from .mpp import _MPP_DEFAULTS, _mpp_options
from .nataf import _with_distribution, as_distribution
from .sampling import sampling_estimate

__all__ = ["failure_probability", "ln_pf", "FailureProbability"]


def _split_options(options: dict):
    options = dict(options)
    common = dict(m=options.pop("m", None), batch=options.pop("batch", False),
                  on_failure=options.pop("on_failure", "raise"),
                  callback=options.pop("callback", None),
                  distribution=options.pop("distribution", None))
    sampling = {k: options.pop(k) for k in ("n_samples", "seed", "center", "smoothing", "chunk", "executor")
                if k in options}
    _check_m(common["m"])
    check_bool("batch", common["batch"])
    check_choice("on_failure", common["on_failure"], ("raise", "bound"))
    check_callable("callback", common["callback"], allow_none=True)
    if common["distribution"] is not None:
        as_distribution(common["distribution"])          # a bad one fails here
    return common, sampling, _mpp_options(options)


def _no_sampling_options(method: str, sampling: dict) -> None:
    """A sampling option given to an asymptotic method is an error, not dropped."""
    if method not in SAMPLING and sampling:
        raise TypeError(f"{sorted(sampling)} only apply to the sampling methods {SAMPLING}, "
                        f"not to method={method!r}")


def failure_probability(limit_state, design, z: float, method: str = "sorm",
                        **options) -> ReliabilityResult:
    """Estimate ``pf = P(F(theta, design) >= z)``, ``theta ~ N(0, I)``.

    Parameters
    ----------
    limit_state : callable or LimitState
        ``F(theta, design)``.
    design : array_like or None
        Plain design (use `ln_pf` to differentiate).
    z : float
        Threshold.
    method : str
        One of `METHODS`: ``"ldt"``, ``"form"``, ``"sorm"``,
        ``"sorm-hohenbichler"``, ``"sorm-tvedt"``, ``"ldt-prefactor"``, ``"mc"``,
        ``"is"``. See the module docstring (``"sorm"`` is Breitung's); ``"mc"``/``"is"``
        go to `sampling_estimate`.
    **options
        ``m``, ``batch``, ``distribution`` (a `Nataf`, a `Marginal` or a list
        of marginals: `limit_state` is then ``F(x, design)`` in the physical
        variables, seen through `TransformedLimitState`), ``on_failure``
        (``"raise"``, the default, or
        ``"bound"``: return the documented bound described in
        `ReliabilityResult.bound`, never NaN), the MPP options of `find_mpp`,
        and for sampling ``n_samples``, ``seed``, ``center``, ``smoothing``.

    Returns
    -------
    ReliabilityResult

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import reliability as rel
    >>> F = lambda t, k: t[..., 0] - 0.5 * k * np.sum(t[..., 1:] ** 2, axis=-1)
    >>> r = rel.failure_probability(F, 0.1, 3.0, method="sorm", m=10)
    >>> round(r.ln_pf, 4), round(r.beta, 6)
    (-7.7884, 3.0)
    """
    check_choice("method", method, METHODS)
    _check_z(z)
    common, sampling, mpp_opts = _split_options(options)
    _no_sampling_options(method, sampling)
    limit_state = _with_distribution(limit_state, common["distribution"], common["batch"])
    if method in SAMPLING:
        given = {k: v for k, v in options.items() if k in _MPP_DEFAULTS}
        result = sampling_estimate(limit_state, design, z, method, m=common["m"],
                                   batch=common["batch"], on_failure=common["on_failure"],
                                   **sampling, **given)
        if common["callback"] is not None:
            common["callback"](result)
        return result
    if method not in ASYMPTOTIC:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if any(ad.is_traced(x) for x in (design, z)):
        raise TypeError("failure_probability takes plain values; use ln_pf to differentiate")
    ls = as_limit_state(limit_state, m=common["m"], batch=common["batch"])
    q = tuple(ls.params(design))
    result = _asymptotic(ls, q, z, method, common["on_failure"], mpp_opts)
    if common["callback"] is not None:
        common["callback"](result)
    return result


def _ln_pf_impl(limit_state, design, z, method: str = "sorm", **options):
    return np.float64(failure_probability(limit_state, design, z, method, **options).ln_pf)


def _ln_pf_setup(limit_state, design, z, method, options):
    for x in (design, z):
        if ad.is_traced(x):
            raise ad.NoRuleError(
                "ln_pf has first derivatives only: it cannot be differentiated twice "
                "(nested ad.gradient / ad.hvp through ln_pf)")
    if method in SAMPLING:
        raise ad.NoRuleError(
            f"method {method!r} is a counting estimator: piecewise constant in the design, "
            "its derivative is 0 almost everywhere. Differentiate an asymptotic method "
            f"{ASYMPTOTIC}, or use crn_directional_derivative on a smoothed estimator")
    check_choice("method", method, METHODS)
    _check_z(z)
    common, sampling, mpp_opts = _split_options(options)
    _no_sampling_options(method, sampling)
    limit_state = _with_distribution(limit_state, common["distribution"], common["batch"])
    ls = as_limit_state(limit_state, m=common["m"], batch=common["batch"])
    if _float_like(design):
        q, q_back = ad.pullback(lambda d: tuple(ls.params(d)), design)
    else:
        q, q_back = tuple(ls.params(design)), None
    result = _asymptotic(ls, tuple(q), z, method, common["on_failure"], mpp_opts)
    if common["callback"] is not None:
        common["callback"](result)
    cache: dict = {}

    def derivatives():
        if not cache:
            zbar, qbar = _cotangents(ls, tuple(q), result)
            dbar = None
            if q_back is not None:
                dbar = q_back(tuple(qbar))[0]
            cache.update(z=zbar, design=dbar)
        return cache
    return result, derivatives


ln_pf = ad.primitive(_ln_pf_impl)
ln_pf.__name__ = ln_pf.__qualname__ = "ln_pf"
ln_pf.__doc__ = r"""Differentiable ``ln pf`` of ``F(theta, design) >= z`` (an `ad.primitive`).

Parameters
----------
limit_state : callable or LimitState
    ``F(theta, design)``, numpy code differentiable by `topopt.ad` in both
    arguments.
design : float array, float or None
    Differentiable (any float array; the pullback returns a cotangent of
    its shape).
z : float
    Threshold, also differentiable (``d ln pf / dz``).
method : {"ldt", "form", "sorm", "sorm-hohenbichler", "sorm-tvedt", "ldt-prefactor"}
    ``"mc"``/``"is"`` evaluate but refuse to be differentiated.
**options
    As for `failure_probability` (``on_failure="bound"``: the documented
    bounds, with the gradient of the bound formula, zero for
    ``"unreachable"``); ``callback(result)`` receives the full
    `ReliabilityResult` of each evaluation.

Returns
-------
float
    ``ln pf`` (``numpy.float64``); traced when `design` or `z` is.

Notes
-----
Pullback: envelope theorem ``d ln pf/dp = c dF/dp(theta*; p)`` with ``c =
lam`` (LDT), ``c = phi(beta)/(Phi(-beta)|grad F|)`` (FORM), plus the
derivative of the curvature factor through the KKT adjoint (SORM,
LDT-prefactor; see the module docstring). With several local MPPs
(`QuadraticLimitState`) ``ln pf`` is the logsumexp of their contributions
and the gradient their weighted sum, capped at ``ln pf = 0`` (the series
bound ``min(1, sum)``: where the origin fails, each mirrored MPP counts it;
``info["capped"]``, gradient 0). First derivatives only.

Examples
--------
>>> import numpy as np
>>> from topopt import ad, reliability as rel
>>> F = lambda t, k: t[0] - 0.5 * k * np.sum(t[1:] ** 2)
>>> v, g = ad.value_and_gradient(
...     lambda k: rel.ln_pf(F, k, 3.0, method="sorm", m=10), 0.1)
>>> round(float(v), 4), round(float(g), 4)     # d/dk [-9/2 ln(1 + 3k)]
(-7.7884, -10.3846)
"""


@ad.rrule(ln_pf)
def _ln_pf_rrule(limit_state, design, z, method="sorm", **options):
    result, derivatives = _ln_pf_setup(limit_state, design, z, method, options)

    def ln_pf_pullback(ybar):
        return (None, ad.thunk(lambda: _scale(ybar, derivatives()["design"])),
                ad.thunk(lambda: _scale(ybar, derivatives()["z"])))
    return np.float64(result.ln_pf), ln_pf_pullback


@ad.frule(ln_pf)
def _ln_pf_frule(primals, tangents, method="sorm", **options):
    limit_state, design, z = primals[:3]
    if len(primals) > 3:
        method = primals[3]
    _, ddot, zdot = tangents[:3]
    result, derivatives = _ln_pf_setup(limit_state, design, z, method, options)
    ydot = None
    if ddot is not None and derivatives()["design"] is not None:
        ydot = np.sum(derivatives()["design"] * ddot)
    if zdot is not None:
        term = derivatives()["z"] * zdot
        ydot = term if ydot is None else ydot + term
    return np.float64(result.ln_pf), ydot


def _scale(ybar, ct):
    return None if ct is None else ybar * ct


class FailureProbability:
    """``ln pf`` of a limit state as a function of the design.

    Calling it returns ``ln pf`` (differentiable with `topopt.ad` for the
    asymptotic methods); `result` gives the whole `ReliabilityResult`. The
    MPP of the previous call starts the next search (``warm_start``); a
    ``theta0`` among the options starts the first one (and any search after
    one that did not converge).

    Parameters
    ----------
    limit_state : callable or LimitState
    z : float
    method : str
        One of `METHODS`.
    warm_start : bool
    **options
        As for `failure_probability`.

    Attributes
    ----------
    last : ReliabilityResult or None
        The result of the latest evaluation.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad, reliability as rel
    >>> fp = rel.FailureProbability(lambda t, p: p @ t, 15.0, method="form", m=2)
    >>> g = ad.gradient(fp, np.array([3.0, 4.0]))
    >>> round(fp.last.beta, 12), bool(np.all(g > 0))
    (3.0, True)
    """

    def __init__(self, limit_state, z: float, method: str = "sorm", *,
                 warm_start: bool = True, **options):
        check_choice("method", method, METHODS)
        common, sampling, _ = _split_options(options)     # unknown options raise here
        _no_sampling_options(method, sampling)
        if common["callback"] is not None and method not in SAMPLING:
            raise TypeError("FailureProbability records each result itself (attribute "
                            "`last`); callback= is not accepted")
        if not callable(limit_state):
            raise TypeError(f"limit_state must be callable (F(theta, design) or a "
                            f"LimitState), got {type(limit_state).__name__}")
        self.limit_state = limit_state
        _check_z(z)
        self.z = z
        self.method = method
        self.warm_start = check_bool("warm_start", warm_start)
        self.options = options
        self.last: ReliabilityResult | None = None

    def _record(self, result: ReliabilityResult) -> None:
        self.last = result

    def _options(self) -> dict:
        opts = dict(self.options)
        if self.warm_start and self.last is not None and self.last.mpp is not None \
                and self.last.converged:
            opts["theta0"] = self.last.mpp           # a given theta0 seeds the first search
        return opts

    def __call__(self, design):
        opts = self._options()
        if self.method in SAMPLING:
            res = self.result(design)
            return np.float64(res.ln_pf)
        return ln_pf(self.limit_state, design, self.z, self.method,
                     callback=self._record, **opts)

    def result(self, design) -> ReliabilityResult:
        """The full estimate at a plain design."""
        res = failure_probability(self.limit_state, design, self.z, self.method,
                                  **self._options())
        self.last = res
        return res
