"""Gradient checks: the dot-product test of a rule and the Taylor test."""

from __future__ import annotations

from typing import Callable

import numpy as np

from . import tree
from .api import differentiable as _perturbable
from .api import gradient, hvp, jvp, pullback, value_and_gradient
from .callforms import canonical
from .core import NoRuleError, value
from .extend import NotDifferentiable, Thunk
from .registry import REGISTRY
from .registry import function_name as _name

__all__ = ["check_rule", "check_modes", "taylor_test", "RuleCheckError"]

MODES = ("reverse", "forward", "hvp", "nested")


class RuleCheckError(AssertionError):
    """A rule disagrees with central finite differences."""


def _where(path) -> str:
    """``arg 0`` or ``arg 1[2]``: the argument leaf at a `tree` key path."""
    return f"arg {path[0]}" + "".join(f"[{k!r}]" for k in path[1:])


def _cotangent_of(cts, path):
    """``cts[p0][p1]...`` with thunks forced; a `NotDifferentiable` is returned as is."""
    ct = cts[path[0]]
    for key in path[1:] + (None,):
        if isinstance(ct, NotDifferentiable):
            return ct
        if isinstance(ct, Thunk):
            ct = ct()
        if key is None or ct is None:
            return ct
        ct = ct[key]


def _random_like(rng, x):
    shape = np.shape(x)
    r = rng.standard_normal(shape)
    if np.iscomplexobj(x):
        r = r + 1j * rng.standard_normal(shape)
    return r


def _inner(a, b) -> float:
    """Real inner product ``Re sum(conj(a) * b)`` (the one cotangents live in)."""
    return float(np.real(np.vdot(np.asarray(a), np.asarray(b))))


def _as_tuple(y):
    return tuple(y) if isinstance(y, tuple) else (y,)


def check_rule(fun: Callable, *args, seed: int = 0, rtol: float = 1e-6,
               h: float | None = None, **kwargs) -> dict:
    """Check the rules of `fun` at `args` against central finite differences.

    For each perturbable argument ``x_i`` (a float or complex leaf of the
    argument trees, e.g. an array in the list of `np.concatenate`) and a
    random direction ``d`` and cotangent ``ybar`` (complex where the value
    is), the reverse rule must satisfy the dot-product identity ``Re<ybar, J
    d> = Re<back(ybar)_i, d>`` and the forward rule, if any, ``ydot = J d``;
    ``J d`` is a Richardson-extrapolated central difference of `fun` itself.
    Keyword arguments are passed to `fun`.

    Returns a report ``{argument: relative error}``; raises `RuleCheckError`
    with the report when an error exceeds `rtol`.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> report = ad.check_rule(np.tanh, np.array([0.1, -0.4]))
    >>> report["arg 0 reverse"] < 1e-8
    True
    """
    args, kwargs = canonical(fun, args, kwargs)
    rule, _ = REGISTRY.lookup("rrule", fun, args)
    if rule is None:
        raise NoRuleError(f"no reverse rule registered for {_name(fun)}")
    forward, _ = REGISTRY.lookup("frule", fun, args)
    rng = np.random.default_rng(seed)
    y0 = fun(*args, **kwargs)
    y, back = rule(*args, **kwargs)
    failures = _rule_value_errors(y, y0, rtol)
    ybar = tuple(_random_like(rng, yi) for yi in _as_tuple(y0))
    cts = back(ybar if isinstance(y0, tuple) else ybar[0])
    leaves, treedef = tree.flatten(tuple(args))
    paths = treedef.paths()
    slots = [k for k, x in enumerate(leaves) if _perturbable(x)]
    if any(not (c is None or isinstance(c, NotDifferentiable)) for c in cts[len(args):]) \
            or any(paths[k][0] >= len(cts) for k in slots):
        raise RuleCheckError(f"the pullback of {_name(fun)} returned {len(cts)} "
                             f"cotangents for {len(args)} arguments")
    report = {}
    for k in slots:
        def call(xk, k=k):
            new = tree.unflatten(treedef, leaves[:k] + [xk] + leaves[k + 1:])
            return fun(*new, **kwargs)

        x, label = leaves[k], _where(paths[k])
        d = _random_like(rng, x)
        step = h if h is not None else 1e-4 * max(1.0, float(np.max(np.abs(x), initial=0.0)))
        jd = _central(call, x, d, step)
        ct = _cotangent_of(cts, paths[k])
        if isinstance(ct, NotDifferentiable):
            continue
        failures += _reverse_check(report, label, x, d, ct, ybar, jd, rtol)
        if forward is not None:
            tangents = tree.unflatten_sparse(treedef, [d if j == k else None
                                                for j in range(len(leaves))])
            ydot = forward(tuple(args), tangents, **kwargs)[1]
            ydot = _as_tuple(ydot) if isinstance(y0, tuple) else (ydot,)
            failures += _forward_check(report, label, ydot, jd, rtol)
    if failures:
        raise RuleCheckError(f"rule check of {_name(fun)} failed (seed={seed}):\n"
                             + "\n".join(failures))
    return report


def _rule_value_errors(y, y0, rtol) -> list:
    """A failure line for each output of the rule that differs from `fun`'s."""
    failures = []
    for yi, y0i in zip(_as_tuple(y), _as_tuple(y0)):
        err = np.max(np.abs(np.asarray(value(yi)) - y0i), initial=0.0)
        if not err <= rtol * max(1.0, np.max(np.abs(y0i), initial=0.0)):
            failures.append(f"  value: rule returns a different y (max diff {err:.3e})")
    return failures


def _reverse_check(report, label, x, d, ct, ybar, jd, rtol) -> list:
    """Dot-product test ``Re<ybar, J d> = Re<ct, d>`` of one argument (report filled)."""
    failures = []
    scale = np.sqrt(sum(_inner(b, b) for b in ybar) * sum(_inner(j, j) for j in jd))
    lhs = sum(_inner(b, j) for b, j in zip(ybar, jd))
    rhs = 0.0
    if ct is not None:
        rhs = _inner(ct, d) if np.iscomplexobj(x) else _inner(np.real(ct), d)
        if np.shape(ct) != np.shape(x):
            failures.append(f"  {label}: cotangent shape {np.shape(ct)} != argument "
                            f"shape {np.shape(x)}")
    rel = abs(lhs - rhs) / max(scale, 1e-300)
    report[f"{label} reverse"] = float(rel)
    if not rel <= rtol:
        failures.append(f"  {label}: <ybar, J d> = {lhs:.10g} by finite differences, "
                        f"<back(ybar), d> = {rhs:.10g} (relative error {rel:.2e})")
    return failures


def _forward_check(report, label, ydot, jd, rtol) -> list:
    """``ydot = J d`` for the forward rule's tangents of one argument (report filled)."""
    num = sum(_inner(np.asarray(t) - j, np.asarray(t) - j) if t is not None
              else _inner(j, j) for t, j in zip(ydot, jd))
    den = sum(_inner(j, j) for j in jd)
    frel = np.sqrt(num) / max(np.sqrt(den), 1e-300) if den > 0 else np.sqrt(num)
    report[f"{label} forward"] = float(frel)
    if not frel <= rtol:
        return [f"  {label}: forward rule tangent differs from finite "
                f"differences (relative error {frel:.2e})"]
    return []


def _fun_name(fun) -> str:
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or repr(fun)


def _central(g, x, d, step):
    """Richardson-extrapolated central difference of `g` (tuple-valued) along `d`."""
    def diff(h):
        plus, minus = _as_tuple(g(x + h * d)), _as_tuple(g(x - h * d))
        return [(np.asarray(p) - np.asarray(m)) / (2 * h) for p, m in zip(plus, minus)]
    d1, d2 = diff(step), diff(step / 2)
    return [(4 * b - a) / 3 for a, b in zip(d1, d2)]


def _norm2(parts) -> float:
    return float(np.sqrt(sum(_inner(p, p) for p in parts)))


def _value_error(got, want, rtol) -> str | None:
    """A message if the traced primal `got` differs from the plain `want`."""
    got, want = _as_tuple(got), _as_tuple(want)
    if len(got) != len(want):
        return f"{len(got)} outputs instead of {len(want)}"
    for g, w in zip(got, want):
        g, w = np.asarray(value(g)), np.asarray(w)
        if g.shape != w.shape:
            return f"shape {g.shape} instead of {w.shape}"
        err = np.max(np.abs(g - w), initial=0.0)
        if not err <= rtol * max(1.0, np.max(np.abs(w), initial=0.0)):
            return f"max difference {err:.3e} from the plain evaluation"
    return None


def _objective(fun, args, i, w):
    """``s(x) = S^2 + S^3 / 3 + sum Re(w y)^2`` with ``S = sum Re(w y)``, ``y = fun(args with x at i)``.

    Nonlinear in `y`, so the Hessian of `s` involves the second derivative of
    `fun` as well as its Jacobian; the cubic term keeps it so where ``y^2`` is
    linear in `x` (``y = sqrt(a . x)``: a quadratic `s` would be linear, its
    Hessian zero, and the hvp and nested checks would compare rounding noise).
    """
    def s(x):
        call = list(args)
        call[i] = x
        terms = [np.real(wk * yk) for wk, yk in zip(w, _as_tuple(fun(*call)))]
        first = sum(np.sum(t) for t in terms)
        return first * first * (1.0 + first / 3.0) + sum(np.sum(t * t) for t in terms)
    return s


def check_modes(fun: Callable, *args, modes=MODES, seed: int = 0, rtol: float = 1e-6,
                h: float | None = None) -> dict:
    """Check every differentiation mode of `fun` at `args` against central differences.

    `fun` is any callable of arrays -- one call form such as ``lambda x:
    np.sum(x, 0, keepdims=True)``. Each float or complex argument is
    perturbed in turn (the others are held fixed; ints, index arrays and
    other values are passed through). With random seeded directions ``d``,
    cotangents ``ybar`` and weights, and ``J d`` a Richardson-extrapolated
    central difference of `fun` on plain arrays:

    * ``"reverse"``: the primal of ``ad.pullback(fun, *args)`` equals
      ``fun(*args)`` and ``Re<ybar, J d> = Re<back(ybar)_i, d>``, the
      cotangent of the shape of the argument;
    * ``"forward"``: ``ad.jvp`` returns the primal and ``J d``, of the shape
      of the output;
    * ``"hvp"``: for ``s(x) = (sum Re(w f))^2 + sum Re(w f)^2`` (whose
      Hessian needs the rule's own derivative), ``ad.hvp(s, x, v)`` equals the
      central difference of ``ad.gradient(s)`` along ``v``;
    * ``"nested"``: reverse over reverse, ``ad.gradient(lambda x:
      t(ad.gradient(s, x)), x)`` for ``t(g) = sum Re(c g) + |g|^2 / 2``,
      against the central difference of ``t(ad.gradient(s, x))`` along ``d``.

    Parameters
    ----------
    fun : callable
        The function of `args` to check; it may return an array or a tuple of
        arrays.
    *args
        Its arguments; the float and complex ones are differentiated.
    modes : sequence of str
        A subset of ``("reverse", "forward", "hvp", "nested")``.
    seed : int
        Seed of the random directions.
    rtol : float
        Largest accepted relative error (positive).
    h : float, optional
        Finite-difference step; by default ``1e-4 max(1, max|x|)``.

    Returns
    -------
    dict
        ``{"<mode>/arg <i>": relative error}`` for every mode and argument.

    Raises
    ------
    RuleCheckError
        Naming the mode and the argument of every check that failed (an error
        above `rtol`, a wrong shape, a wrong primal, or an exception raised
        while differentiating).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> report = ad.check_modes(lambda x: np.sum(x ** 3, axis=0),
    ...                         np.arange(6.0).reshape(2, 3))
    >>> sorted(report)
    ['forward/arg 0', 'hvp/arg 0', 'nested/arg 0', 'reverse/arg 0']
    >>> max(report.values()) < 1e-8
    True
    """
    modes = _check_options(modes, rtol, h)
    slots = [i for i, a in enumerate(args) if _perturbable(a)]
    if not slots:
        raise ValueError("check_modes needs at least one float or complex argument")
    rng = np.random.default_rng(seed)
    y0 = fun(*args)
    report, failures = {}, []
    for i in slots:
        failures += _check_argument(fun, args, i, modes, _draws(rng, args[i], y0), y0, h,
                                    rtol, report)
    if failures:
        raise RuleCheckError(f"check_modes of {_fun_name(fun)} failed (seed={seed}):\n"
                             + "\n".join(failures))
    return report


def _check_options(modes, rtol, h) -> tuple:
    """`modes` as a tuple, after checking `modes`, `rtol` and `h` of `check_modes`."""
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ValueError(f"modes must be a non-empty subset of {MODES}, got {modes!r}")
    if not (isinstance(rtol, (int, float)) and rtol > 0):
        raise ValueError(f"rtol must be a positive number, got {rtol!r}")
    if h is not None and not (isinstance(h, (int, float)) and h > 0):
        raise ValueError(f"h must be a positive number or None, got {h!r}")
    return modes


def _check_argument(fun, args, i, modes, draws, y0, h, rtol, report) -> list:
    """Check argument `i` of `fun` in each of `modes`; fills `report`, returns failures."""
    x = args[i]
    step = h if h is not None else 1e-4 * max(1.0, float(np.max(np.abs(x), initial=0.0)))

    def at(xi):
        call = list(args)
        call[i] = xi
        return fun(*call)

    failures = []
    for mode in modes:
        label = f"{mode}/arg {i}"
        report[label], problem = _run_check(mode, fun, args, i, at, y0, draws, step, rtol)
        if problem is not None:
            failures.append(f"  {label}: {problem}")
    return failures


def _draws(rng, x, y0) -> dict:
    """The seeded random directions ``d``, ``v``, ``c`` (like `x`), ``ybar``, ``w`` (like `y0`)."""
    draws = {name: _random_like(rng, x) for name in ("d", "v")}
    draws["ybar"] = tuple(_random_like(rng, np.asarray(y)) for y in _as_tuple(y0))
    draws["w"] = tuple(_random_like(rng, np.asarray(y)) for y in _as_tuple(y0))
    draws["c"] = _random_like(rng, x)
    return draws


def _run_check(mode, fun, args, i, at, y0, draws, step, rtol) -> tuple:
    """``(relative error, problem or None)`` of one mode; an exception is a problem."""
    try:
        rel, problem = _CHECKS[mode](fun, args, i, at, y0, draws, step, rtol)
    except Exception as err:  # noqa: BLE001 -- reported as a failure of this mode
        rel, problem = np.inf, f"raised {type(err).__name__}: {err}"
    if problem is None and not rel <= rtol:
        problem = f"relative error {rel:.2e} > rtol={rtol:g}"
    return float(rel), problem


def _check_reverse(fun, args, i, at, y0, draws, step, rtol):
    y, back = pullback(fun, *args)
    problem = _value_error(y, y0, rtol)
    if problem:
        return np.inf, f"primal: {problem}"
    ybar = draws["ybar"]
    ct = back(ybar if isinstance(y0, tuple) else ybar[0])[i]
    if np.shape(ct) != np.shape(args[i]):
        return np.inf, f"cotangent of shape {np.shape(ct)} for an argument of shape " \
                       f"{np.shape(args[i])}"
    d = draws["d"]
    jd = _central(at, args[i], d, step)
    lhs = sum(_inner(b, j) for b, j in zip(ybar, jd))
    rhs = _inner(ct, d)
    scale = _norm2(ybar) * _norm2(jd)
    return abs(lhs - rhs) / max(scale, 1e-300), None


def _check_forward(fun, args, i, at, y0, draws, step, rtol):
    d = draws["d"]
    tangents = [None] * len(args)
    tangents[i] = d
    y, ydot = jvp(fun, args, tangents)
    problem = _value_error(y, y0, rtol)
    if problem:
        return np.inf, f"primal: {problem}"
    jd = _central(at, args[i], d, step)
    ydot = _as_tuple(ydot)
    for t, j in zip(ydot, jd):
        if np.shape(t) != np.shape(j):
            return np.inf, f"tangent of shape {np.shape(t)} for an output of shape " \
                           f"{np.shape(j)}"
    diff = _norm2([np.asarray(t) - j for t, j in zip(ydot, jd)])
    return diff / max(_norm2(jd), 1e-300) if _norm2(jd) > 0 else diff, None


def _check_hvp(fun, args, i, at, y0, draws, step, rtol):
    s = _objective(fun, args, i, draws["w"])
    v = draws["v"]
    hv = hvp(s, args[i], v)
    fd = _central(lambda x: gradient(s, x), args[i], v, step)[0]
    if np.shape(hv) != np.shape(fd):
        return np.inf, f"Hessian-vector product of shape {np.shape(hv)}, argument " \
                       f"{np.shape(fd)}"
    diff = _norm2([np.asarray(hv) - fd])
    return diff / max(_norm2([fd]), 1e-300) if _norm2([fd]) > 0 else diff, None


def _check_nested(fun, args, i, at, y0, draws, step, rtol):
    s = _objective(fun, args, i, draws["w"])
    c = draws["c"]

    def t(x):
        g = gradient(s, x)
        return np.sum(np.real(c * g)) + 0.5 * np.sum(np.real(np.conj(g) * g))

    nested = gradient(t, args[i])
    if np.shape(nested) != np.shape(args[i]):
        return np.inf, f"gradient of shape {np.shape(nested)}, argument {np.shape(args[i])}"
    d = draws["d"]
    fd = _central(t, args[i], d, step)[0]
    lhs = float(np.real(fd))
    rhs = _inner(nested, d)
    scale = _norm2([nested]) * _norm2([d]) + abs(lhs)
    return abs(lhs - rhs) / max(scale, 1e-300), None


_CHECKS = {"reverse": _check_reverse, "forward": _check_forward, "hvp": _check_hvp,
           "nested": _check_nested}


def taylor_test(f: Callable, x, dx, h0: float | None = None, steps: int = 6,
                verbose: bool = False) -> float:
    """Minimum convergence rate of the first-order Taylor remainder.

    ``r(h) = |f(x + h dx) - f(x) - h <g, dx>|`` with ``g`` the gradient of
    `f` at `x` is ``O(h^2)`` when ``g`` is right: the rates
    ``log2(r(h) / r(h/2))`` approach 2 and a wrong gradient gives 1.
    Remainders at round-off level are left out of the rates.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> rate = ad.taylor_test(lambda x: np.sum(np.exp(x) * x), np.ones(4), np.arange(4.0))
    >>> rate > 1.9
    True
    """
    x = np.asarray(x)
    dx = np.asarray(dx)
    if dx.shape != x.shape:
        raise ValueError(f"dx has shape {dx.shape}, x has shape {x.shape}")
    f0, g = value_and_gradient(f, x)
    f0 = float(f0)
    slope = _inner(g, dx)
    if h0 is None:
        h0 = 1e-3 * max(1.0, float(np.max(np.abs(x)))) / max(float(np.max(np.abs(dx))), 1e-300)
    hs = h0 / 2.0 ** np.arange(steps)
    r = np.array([abs(float(f(x + h * dx)) - f0 - h * slope) for h in hs])
    floor = 1e3 * np.finfo(float).eps * max(abs(f0), 1e-300)
    rates = [np.log2(r[k] / r[k + 1]) for k in range(steps - 1) if r[k + 1] > floor]
    if verbose:
        for k, (h, rk) in enumerate(zip(hs, r)):
            rate = f"{np.log2(r[k - 1] / rk):6.3f}" if k and rk > floor else "   -  "
            print(f"h = {h:.3e}  remainder = {rk:.3e}  rate = {rate}")
    if not rates:
        raise ValueError("all Taylor remainders are at round-off level; increase h0 "
                         "(or f is linear in this direction)")
    return float(min(rates))
