"""A small reverse-mode (and forward-mode) differentiation core.

``y, back = ad.pullback(f, *args)`` runs `f` on traced values and returns
the vector-Jacobian product ``back``. Objectives are plain numpy: traced
values ("boxes") take part in numpy's ``__array_ufunc__`` /
``__array_function__`` protocols, so ``np.exp(x) * x`` records two calls on
the tape, each with its rule.

Design
------
* **Layers.** `tree` (nested containers) and `registry` (the rule
  tables) at the bottom; `extend`, the extension API (`primitive`,
  `rrule`, `frule`, `opt_out`, `Thunk`...); `core`, the tape (`Box`,
  the backward walk); `dispatch` (`apply`); `api` (`pullback`,
  `gradient`, `jvp`, `hvp`); the rule modules (`numpy_rules` and its parts, `callforms`...);
  `testing`; `collectives` (`allsum`, `alldot`, `allmax` across MPI ranks,
  and the gradients of replicated values). No module imports one above it, and none imports from
  ``topopt`` outside ``topopt.ad``. scipy.special's rules are registered
  once scipy.special is imported (`registry.Registry.defer`), so ``import
  topopt.ad`` does not import it.
* **Rules.** A reverse rule is ``rule(*args) -> (y, pullback)``: residuals
  live in the closure, ``pullback(ybar)`` returns one cotangent per argument
  and ``None`` is the one zero sentinel (`thunk` defers an expensive
  cotangent until the walk needs it). A forward rule is ``rule(primals,
  tangents) -> (y, ydot)``. Register with ``@ad.rrule(fun)`` /
  ``@ad.frule(fun)``; a Python function the tape cannot see into (scipy, C)
  becomes differentiable with ``@ad.primitive`` plus its rules.
* **The tape** is the graph of `Node` objects reachable from the output;
  `core.backward` walks it once in reverse topological order. Cotangents are
  summed out of place and never mutated.
* **Call forms** (`callforms`): a traced call is bound once to the numpy
  function's signature, so a rule sees its data by position and its options
  by name whatever form the user wrote (``np.sum(x, 0)``, ``x.sum(axis=-2)``,
  ``np.clip(x, min=0)``); an option the rule does not declare raises
  `NoRuleError` naming the function and the argument, ``out=`` a
  ``TypeError``. `check_modes` checks one call form in every mode.
* **Operands** (`coerce`): a list or tuple where numpy reads an array
  (``x * [1., 2.]``, ``np.hstack([x, [x[0], 1.]])``) is made one before the
  rule runs -- ``np.asarray`` for constants, ``np.stack`` (traced) when it
  holds traced values -- so every mode sees one array. An integer or
  boolean cast or ``dtype=`` has no derivative and is numpy's own value.
  A list holding traced values that numpy converts itself (``np.sum([x[0],
  x[1]])``, ``np.array([...])``: no argument is traced) is refused, naming
  ``np.stack``.
* **ndarray methods** (`methods`): each public name of ``numpy.ndarray``
  means on a traced value what numpy means (``x.trace()``, ``x.mean(dtype=
  int)``, ``x.compress(c)``...) or raises naming the alternative (in-place
  ``x.sort()``, ``x.fill()``; ``x.tolist()``, ``x.view()``...). The tape
  record of a box is private (`trace_of` gives its trace).
* **Composites** (`fill_rules`, `composite_rules`, `composite_more`,
  `composite_calc`, `composite_linalg`): a function numpy computes from
  simpler ones (the nan-reductions, quantiles, flips and rolls, kron,
  convolve, interp, linspace, pinv, gradient, meshgrid, cov...) is a call
  form whose rewrite runs traced operations with rules, so every mode
  follows. The decompositions (`linalg_decomp`: qr, svd, lstsq) and the
  transforms (`fft_rules`) have rules whose pullbacks are traced operations
  too; `ufunc_methods` maps ``np.add.reduce`` & co. to functions with rules.
* **Dispatch** (`dispatch.apply`): a type-specific rule (``types=``) beats an
  `opt_out` (trace through the implementation), which beats the generic
  rule. A call without a rule raises `NoRuleError` naming the function; a
  conversion of a traced value to a plain array raises ``TypeError``: a
  derivative is never silently dropped.
* **Nesting.** Each `pullback`/`jvp` opens a trace with a larger id and an
  operation is processed by the innermost trace among its arguments, the
  arguments unwrapped by one level only. Rules and pullbacks are written
  with numpy, so on the values of outer traces they are recorded again:
  ``gradient`` inside ``gradient`` and forward-over-reverse (`hvp`) work.
* **Complex numbers** (Zygote's convention). For a real ``L(z)``,
  ``gradient`` returns ``dL/dx + i dL/dy``: ``gradient(lambda z:
  abs(z)**2, 1+2j) == 2+4j``. For holomorphic ``f``, ``conj(gradient(lambda
  z: real(f(z)), z)) == f'(z)``. Pullbacks of holomorphic ops multiply by
  ``conj(f')``; a cotangent reaching a real input keeps its real part.

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> ad.gradient(lambda x: np.sum(np.exp(x) * x), np.zeros(3))
array([1., 1., 1.])
"""

from . import numpy_rules as _numpy_rules  # noqa: F401  (registers the rules)
from . import array_rules as _array_rules  # noqa: F401
from . import einsum_rules as _einsum_rules  # noqa: F401
from . import linalg_rules as _linalg_rules  # noqa: F401
from . import reduce_rules as _reduce_rules  # noqa: F401
from . import fill_rules as _fill_rules  # noqa: F401
from . import composite_rules as _composite_rules  # noqa: F401
from . import composite_more as _composite_more  # noqa: F401
from . import linalg_decomp as _linalg_decomp  # noqa: F401
from . import fft_rules as _fft_rules  # noqa: F401
from . import composite_calc as _composite_calc  # noqa: F401
from . import composite_linalg as _composite_linalg  # noqa: F401
from . import ufunc_methods as _ufunc_methods  # noqa: F401
from . import methods as _methods  # noqa: F401  (the ndarray methods of traced values)
from .scipy_rules import logsumexp, spsolve
from .api import differentiable, gradient, hvp, jvp, pullback, value_and_gradient
from .core import Box, NoRuleError, is_traced, trace_of, value
from .dispatch import apply
from .extend import (NotDifferentiable, Registration, Thunk, check_tangents, frule,
                     not_differentiable, opt_out, primitive, remove_rule, rrule, thunk)
from .shapes import scatter_add
from .linalg_decomp import lstsq, qr, svd, svdvals
from .products import eigh, eigvalsh
from .testing import RuleCheckError, check_modes, check_rule, taylor_test
from .collectives import (SELF, SerialComm, alldot, allgradient, allhvp, allmax, allsum,
                          value_and_allgradient)
from .tree import flatten as tree_flatten
from .tree import leaves as tree_leaves
from .tree import map as tree_map
from .tree import unflatten as tree_unflatten

__all__ = [
    "pullback", "gradient", "value_and_gradient", "jvp", "hvp",
    "differentiable", "primitive", "rrule", "frule", "opt_out", "Registration", "remove_rule",
    "thunk", "Thunk",
    "not_differentiable", "NotDifferentiable", "check_tangents",
    "check_rule", "check_modes", "taylor_test", "RuleCheckError", "NoRuleError",
    "value", "is_traced", "trace_of", "scatter_add", "apply", "Box",
    "logsumexp", "spsolve", "eigh", "eigvalsh", "qr", "svd", "svdvals", "lstsq",
    "tree_flatten", "tree_unflatten", "tree_leaves", "tree_map",
    "allsum", "alldot", "allmax", "allgradient", "value_and_allgradient", "allhvp",
    "SerialComm", "SELF",
]
