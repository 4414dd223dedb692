r"""Failure probabilities of a design under uncertainty, with gradients.

The solvers work with standard-normal inputs ``theta ~ N(0, I_m)``; a scalar
*limit state* ``F(theta, design)`` fails when ``F >= z``; ``pf = P(F(theta) >=
z)``. Physical inputs -- marginals `Normal`, `Lognormal`, `Gumbel`, `Weibull`,
`Uniform` and a correlation matrix -- reach ``theta`` through the Nataf
transform (`Nataf`, with the exact correlation correction):
``TransformedLimitState(F_x, distribution)`` is the limit state ``F_x(x(theta),
design)`` in ``theta``, and every estimate and gradient below applies to it.

Most probable failure point (MPP)
    ``theta* = argmin 1/2 |theta|^2  s.t.  F(theta) >= z``;  ``beta = |theta*|``
    (signed: negative when ``F(0) >= z``, the origin itself fails). At the MPP
    ``theta* = lam grad_theta F(theta*)`` with the multiplier
    ``lam = |theta*| / |grad_theta F| >= 0``.
LDT (leading order)
    ``ln pf ~ -I = -beta^2/2`` (large-deviation rate of the failure set).
FORM
    ``pf ~ Phi(-beta)``: the failure set replaced by the half space beyond the
    tangent plane at the MPP (exact for a linear limit state).
SORM (Breitung 1984)
    ``pf ~ Phi(-beta) prod_i (1 + beta kappa_i)^(-1/2)`` with the ``m-1``
    principal curvatures ``kappa_i`` of the surface ``F = z`` at the MPP,
    positive when the surface bends away from the origin:
    ``kappa_i = eig(-T^T H T) / |grad F|`` (``H`` the Hessian of ``F`` in
    ``theta``, ``T`` an orthonormal basis of the tangent plane). Equivalently
    ``prod_i (1 + beta kappa_i) = det(I - lam P H P)``, ``P = I - n n^T``.
SORM variants (``"sorm-hohenbichler"``, ``"sorm-tvedt"``)
    Hohenbichler & Rackwitz (1988): ``1 + psi kappa_i`` with ``psi =
    phi(beta)/Phi(-beta)`` in place of ``1 + beta kappa_i``; Tvedt's (1988)
    three-term formula (see `curvature`). Importance factors ``alpha**2``
    (``alpha = theta*/beta``) and the physical design point come with every
    asymptotic result.
LDT prefactor (Tong, Vanden-Eijnden & Stadler 2021, eq. for the sharp
    estimate; also Schorlepp, Tong, Grafke & Stadler 2023)
    ``pf ~ (2 pi)^(-1/2) beta^(-1) exp(-beta^2/2) det(I - lam P H P)^(-1/2)``:
    Breitung with ``Phi(-beta)`` replaced by its leading Mills-ratio term.

Gradients (envelope theorem). The value ``V(p) = min {1/2|theta|^2 : F(theta, p)
>= z}`` has ``dV/dp = -lam dF/dp(theta*; p)`` -- the MPP itself is not
differentiated, so ``d ln pf/dp = lam dF/dp`` for LDT costs one reverse pass of
``F`` at ``theta*`` (one adjoint solve for a FE model). FORM chains through
``beta``: ``d beta/dp = -(dF/dp)/|grad F|``. The curvature factor of SORM and
of the LDT prefactor depends on ``theta*`` and ``lam``, so its derivative uses
the KKT system ``R = [theta - lam grad F; F - z] = 0`` once more: with
``G = -1/2 ln det(I - lam P H P)``, solve ``(dR/d(theta, lam))^T w = dG/d(theta,
lam)`` and ``dG/dp = dG/dp|_explicit - w^T dR/dp``; the third derivatives of
``F`` come from nested `topopt.ad` (or in closed form for a quadratic ``F``).

Counting Monte Carlo ``mean(F(theta_k) >= z)`` is piecewise constant in the
design, so its finite differences read 0 (see `crn_directional_derivative`);
``"mc"`` and ``"is"`` here are validation estimators with standard errors.

Failures of the MPP search raise `MPPError` (``reason`` says which), or with
``on_failure="bound"`` return a documented bound (`ReliabilityResult.bound`);
never NaN. A limit state is any ``F(theta, design)`` that `topopt.ad` can
differentiate, or a `LimitState` subclass; `QuadraticLimitState` (compliance
under Gaussian loads) has an exact MPP and counts every local MPP.

Several MPPs: `QuadraticLimitState` finds every local one exactly; any other
limit state by a multi-start search: by default (``n_starts="auto"``) once
more from the mirror image of the first MPP and, in up to 3 variables, from
the coordinate directions; ``n_starts=k`` ``k - 1`` restarts (mirror, then
axes), ``n_starts=1`` one search; ``MPPResult.info`` records the starts and the
MPPs they reached, `find_mpp` says which regions can be missed. FORM/SORM add the contributions
of all of them, importance sampling uses them all as mixture centres.
Systems: `system_failure_probability` (series/parallel of up to 5
components; first-order multinormal from orthant probabilities of stated
accuracy, Ditlevsen bounds, MC/IS). Rare events without a usable MPP:
`subset_simulation` (Au & Beck 2001) with its coefficient of variation.

Modules, in import order: `base` (method names, ``LN_PF_FLOOR``, the errors),
`limit_state` (`LimitState`, the interface the solvers use), `distributions`
(the marginals), `nataf` (`Nataf`, `TransformedLimitState`), `quadratic`
(`QuadraticLimitState` and its exact MPPs), `checks` (`check_correlation`),
`orthant` (`ln_orthant`: Gaussian orthant probabilities), `mpp` (`find_mpp`: HL-RF, SLSQP,
Newton on the KKT system, multi-start), `curvature` (Breitung, Hohenbichler,
Tvedt), `asymptotic` (the LDT/FORM/SORM/prefactor formulas,
`ReliabilityResult`, the envelope-theorem cotangents), `sampling` (MC, IS,
`crn_directional_derivative`), `estimate` (`failure_probability`, `ln_pf` and
its rules, `FailureProbability`), `systems`, `subset` and `penalty`
(`failure_penalty`).

Examples
--------
>>> import numpy as np
>>> from topopt import ad, reliability as rel
>>> F = lambda theta, p: p @ theta          # linear: FORM is exact
>>> p = np.array([3.0, 4.0])                # beta = z / |p| = 3
>>> round(float(rel.ln_pf(F, p, 15.0, method="form", m=2)), 4)
-6.6077
>>> g = ad.gradient(lambda p: rel.ln_pf(F, p, 15.0, method="ldt", m=2), p)
>>> np.allclose(g, [1.08, 1.44])            # lam dF/dp = (3/5) theta*
True
"""

from .asymptotic import ReliabilityResult
from .distributions import Gumbel, Lognormal, Marginal, Normal, Uniform, Weibull
from .base import ASYMPTOTIC, LN_PF_FLOOR, METHODS, SAMPLING, MPPError, ReliabilityError
from .checks import check_correlation
from .estimate import FailureProbability, failure_probability, ln_pf
from .limit_state import LimitState, as_limit_state
from .mpp import MPPResult, find_mpp
from .nataf import Nataf, TransformedLimitState, as_distribution
from .orthant import ln_orthant, ln_orthant_error
from .penalty import failure_penalty
from .quadratic import QuadraticLimitState
from .sampling import CRNDerivative, crn_directional_derivative, sampling_estimate
from .subset import subset_simulation
from .systems import ditlevsen_bounds, ln_bivariate_upper, system_failure_probability

__all__ = [
    "LN_PF_FLOOR", "METHODS", "ASYMPTOTIC", "SAMPLING", "ReliabilityError", "MPPError",
    "LimitState", "QuadraticLimitState", "as_limit_state", "MPPResult", "ReliabilityResult",
    "find_mpp", "failure_probability", "ln_pf", "FailureProbability",
    "sampling_estimate", "crn_directional_derivative", "CRNDerivative",
    "failure_penalty",
    "Marginal", "Normal", "Lognormal", "Gumbel", "Weibull", "Uniform", "Nataf",
    "TransformedLimitState", "as_distribution", "subset_simulation",
    "system_failure_probability", "ditlevsen_bounds", "ln_bivariate_upper",
    "ln_orthant", "ln_orthant_error", "check_correlation",
]

from .._keywords import check_keywords_of as _check_keywords_of  # noqa: E402

_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one
