"""The failure probability of a focusing device, and the design that bounds it.

A fabricated device has its edges moved by ``d ~ N(0, sigma_d^2)`` nm (a
Gaussian threshold: ``eta(d)`` of `topopt.robust.shifted_projection`) and
works at ``lambda ~ N(lambda_0, sigma_lambda^2)``; it fails when its field
enhancement drops below a specification ``E_t``:

    pf = P(E(p; d, lambda) < E_t),   F(theta, p) = -E(p; sigma_d theta_1,
                                      lambda_0 + sigma_lambda theta_2) >= -E_t,

``theta ~ N(0, I_2)``: a limit state of `topopt.reliability` (FORM / SORM
with the envelope-theorem design gradients; every derivative in ``theta``
and ``p`` comes from `topopt.ad` through `FocusVariations`). The
reliability-based design (`ReliableFocus`) maximises the nominal
enhancement with ``pf <= pa`` as MMA constraints: the enhancement at least
``E_t`` over the disk of radius ``beta_a = Phi^-1(1 - pa / 2)`` (the
performance measure approach) or ``ln pf <= ln pa`` itself (the reliability
index approach); Monte Carlo on the executor of `topopt.parallel` checks the
final ``pf`` (`FocusReliability.monte_carlo`).
"""

from __future__ import annotations

import numpy as np

from .. import ad, parallel
from .._validate import check_choice, check_int, check_range, check_real_array
from ..optimize.driver import Result, minimize
from ..optimize.options import Stage
from .focus import FocusProblem
from .focus_variations import FocusVariations, silver_jc_cubic

__all__ = ["FocusReliability", "ReliableFocus", "focus_limit_state", "disk_chords", "APPROACHES"]


def _norm():
    """`scipy.stats.norm`, imported on first use."""
    from scipy.stats import norm
    return norm


def _rel():
    """`topopt.reliability`, imported on first use (``import topopt`` stays light)."""
    from .. import reliability
    return reliability


class FocusReliability:
    """``pf = P(E < target)`` of a focusing design under an edge shift and a wavelength.

    Parameters
    ----------
    variations : FocusVariations
        The chain at ``(d, lambda)``; ``lambda_0`` is its nominal wavelength.
    target : float > 0
        The specification ``E_t`` on ``|E(x0)| / |E_inc|``.
    sigma_shift : float > 0
        Standard deviation of the edge shift, nm.
    sigma_wavelength : float > 0
        Standard deviation of the wavelength, nm.
    beta : float
        Projection sharpness of the designs evaluated.
    method : str
        Asymptotic method of `ln_pf` (`topopt.reliability.ASYMPTOTIC`).
    **options
        MPP options (`topopt.reliability.find_mpp`); unless given
        ``n_starts=1``, ``tol=1e-8`` (KKT residual; the Newton polish then
        reaches round-off), ``max_iter=50`` and ``max_radius=10`` (the
        search then asks for ``|d| <= 14 sigma_d`` and ``|lambda - lambda_0|
        <= 14 sigma_lambda`` at most: inside the silver table for
        ``sigma_lambda <= 5`` nm).

    Examples
    --------
    >>> from topopt_problems import em_focus                                 # doctest: +SKIP
    >>> rel = FocusReliability(FocusVariations(em_focus.EMFocus(h=8.0)), target=3.0)  # doctest: +SKIP
    >>> rel.ln_pf(np.full(rel.n, 0.4))                                # doctest: +SKIP
    """

    def __init__(self, variations: FocusVariations, target: float, sigma_shift: float = 1.0,
                 sigma_wavelength: float = 5.0, beta: float = 32.0, method: str = "form",
                 **options):
        if not isinstance(variations, FocusVariations):
            raise TypeError("variations must be a FocusVariations")
        self.variations, self.n = variations, variations.n
        self.target = check_range("target", target, 0.0, None, lo_open=True,
                                  what="field enhancement specification")
        self.sigma_shift = check_range("sigma_shift", sigma_shift, 0.0, None, lo_open=True,
                                       what="edge shift standard deviation, nm")
        self.sigma_wavelength = check_range("sigma_wavelength", sigma_wavelength, 0.0,
                                            variations.wavelength / 10, lo_open=True,
                                            what="wavelength standard deviation, nm")
        self.beta = check_range("beta", beta, 0.0, None, lo_open=True,
                                what="projection sharpness")
        self.options = {"n_starts": 1, "max_radius": 10.0, "tol": 1e-8, "max_iter": 50} | options
        # one search per failure mode: dilation (d > 0) and erosion (d < 0), each warm-started
        self.modes = [_rel().FailureProbability(self.limit_state, -self.target, method=method,
                                                m=2, **({"theta0": np.array([s, 0.0])}
                                                        | self.options))
                      for s in (1.0, -1.0)]
        self.method = method

    def physical(self, theta):
        """``(d, lambda)`` of the standard-normal point `theta`."""
        return (self.sigma_shift * theta[0],
                self.variations.wavelength + self.sigma_wavelength * theta[1])

    def limit_state(self, theta, p):
        """``F = -E(p; d, lambda)``; fails when ``F >= -target``."""
        d, lam = self.physical(theta)
        return -self.variations.enhancement(p, d, lam, self.beta)

    def ln_pf(self, p, method: str | None = None, warm: bool = True):
        """``ln pf`` (differentiable in `p`): the two failure modes' sum, ``pf_+ + pf_-``.

        An edge shift fails a resonant design both ways (dilated and
        eroded), at two MPPs on opposite sides of ``theta_1 = 0``: one
        search each, started at ``theta = (+1, 0)`` and ``(-1, 0)`` and then
        (`warm`, as in an optimization) at its last MPP; ``warm=False``
        starts both at ``(+-1, 0)`` and keeps nothing, so that the value of
        one design does not depend on the designs searched before (a
        resonant limit state has several local MPPs). The sum is the
        first-order series-system bound, sharp when the two failure sets
        hardly overlap (MPPs on opposite sides), capped at 1 (``ln pf <=
        0``: where the nominal point itself fails, both modes count it); both
        searches reaching one MPP count it once; a side whose failure set
        lies beyond ``max_radius`` adds nothing
        (`topopt.reliability.MPPError` ``"unreachable"``; both: the bound
        ``-max_radius^2 / 2``); any other failure of a search is raised.
        """
        method = self.method if method is None else method
        if not isinstance(warm, bool):
            raise TypeError(f"warm must be True or False, got {warm!r}")
        if method != self.method or not warm:
            other = FocusReliability(self.variations, self.target, self.sigma_shift,
                                     self.sigma_wavelength, self.beta, method, **self.options)
            return other.ln_pf(p)
        parts, points = [], []
        for fp in self.modes:
            try:
                value = self._search(fp, p)
            except _rel().MPPError as err:
                if err.reason != "unreachable":
                    raise
                continue
            mpp = fp.last.mpp
            if all(np.linalg.norm(mpp - q) > 1e-3 * max(1.0, np.linalg.norm(q)) for q in points):
                parts.append(value)
                points.append(mpp)
        if not parts:
            return -0.5 * self.options["max_radius"] ** 2 + 0.0 * np.sum(p)   # pf's bound
        if len(parts) == 1:
            return parts[0]
        total = sum(np.exp(v) for v in parts)
        if float(ad.value(total)) >= 1.0:            # the bound min(1, sum): pf <= 1
            return 0.0 * np.sum(p)
        return np.log(total)

    @staticmethod
    def _search(fp, p):
        """``fp(p)``; a failed search is run once more from the origin (then raised)."""
        try:
            return fp(p)
        except _rel().MPPError as err:
            fp.last = None
            if err.reason == "unreachable":
                raise
        fresh = _rel().FailureProbability(fp.limit_state, fp.z, fp.method,
                                          **(fp.options | {"theta0": None}))
        value = fresh(p)
        fp.last = fresh.last
        return value

    def builder(self) -> parallel.Builder:
        """The limit state's recipe for workers (`focus_limit_state`)."""
        prob = self.variations.problem
        return parallel.Builder(focus_limit_state, prob.setup, prob.h, self.sigma_shift,
                                self.sigma_wavelength, self.beta, self.variations.index,
                                prob.solver)

    def monte_carlo(self, p, n_samples: int = 1000, seed: int = 0, executor=None):
        """Monte Carlo ``pf`` (`topopt.reliability.sampling_estimate`, one solve per sample)."""
        return _rel().sampling_estimate(self.builder(), np.asarray(p, float), -self.target,
                                        "mc", n_samples=n_samples, seed=seed, m=2,
                                        executor=executor)


def focus_limit_state(setup, h, sigma_shift, sigma_wavelength, beta, index=silver_jc_cubic,
                      solver="auto"):
    """A `FocusReliability` limit state built from picklable parts (for `parallel.Builder`)."""
    var = FocusVariations(FocusProblem(setup, h, solver=solver), index)
    return FocusReliability(var, 1.0, sigma_shift, sigma_wavelength, beta).limit_state


#: The formulations of `ReliableFocus`: performance measure / reliability index approach.
APPROACHES = ("pma", "ria")


def disk_chords(radius: float, n_shifts: int) -> np.ndarray:
    """Standard-normal points ``theta`` on `n_shifts` chords of the disk ``|theta| <= radius``.

    The chords stand at ``theta_1 = linspace(-radius, radius, n_shifts)``
    (the edge-shift axis, where a resonant design's enhancement changes
    fastest); each holds its two ends ``theta_2 = +-sqrt(radius^2 -
    theta_1^2)`` and its middle ``theta_2 = 0`` (the wavelength axis, along
    which the enhancement varies slowly: a chord's minimum at its ends or
    near its middle). Rows ``(theta_1, theta_2)``, no point twice.

    Examples
    --------
    >>> disk_chords(2.0, 3).tolist()
    [[-2.0, 0.0], [0.0, -2.0], [0.0, 0.0], [0.0, 2.0], [2.0, 0.0]]
    """
    radius = check_range("radius", radius, 0.0, None, lo_open=True, what="disk radius")
    n_shifts = check_int("n_shifts", n_shifts, 2, what="chords of the disk")
    rows = []
    for t1 in np.linspace(-radius, radius, n_shifts):
        c = np.sqrt(max(radius ** 2 - t1 ** 2, 0.0))
        rows += [(t1, 0.0)] if c <= 1e-12 * radius else [(t1, -c), (t1, 0.0), (t1, c)]
    return np.array(rows, dtype=float)


class ReliableFocus:
    """Maximise the nominal enhancement while ``pf <= pa``.

    ``min -E(p; 0, lambda_0) / E_ref`` for MMA, ``E_ref`` the start's
    nominal enhancement, subject to (`approach`):

    * ``"pma"``, the performance measure approach (Tu, Choi & Park 1999,
      J. Mech. Des. 121, 557, eq. (8)): the enhancement at least ``E_t``
      over the disk ``|theta| <= beta_a`` of the standard-normal space,
      ``beta_a = Phi^-1(1 - pa / 2)``, so that each failure mode (dilation,
      erosion) has its MPP at ``beta >= beta_a`` and the two modes' FORM sum
      (`FocusReliability.ln_pf`) is at most ``pa``. The disk is sampled on
      `n_shifts` chords (`disk_chords`): ``1 - E(p; theta_j) / E_t <= 0``
      per point, one factorization each; no MPP search, whose iterations
      do not settle on a resonant design's limit state (`FocusReliability`).
    * ``"ria"``, the reliability index approach: ``ln pf(p) - ln pa <= 0``
      with FORM / SORM's ``ln pf`` and its design gradient
      (`FocusReliability.ln_pf`): two MPP searches per evaluation.

    Parameters
    ----------
    reliability : FocusReliability
    pa : float in (0, 1)
        Allowed failure probability.
    approach : {"pma", "ria"}
    n_shifts : int >= 2
        Chords of the disk (``"pma"``): 51 puts them ``beta_a / 25`` apart,
        0.10 nm for ``pa = 0.01`` and ``sigma_shift = 1`` nm. A resonant
        design's enhancement dips where a pixel near its hot spot turns
        from metal to air (or back), over a few tenths of a nanometre of
        edge shift at ``beta = 32``; chords farther apart than the dip is
        wide let the design put the dip between them.

    Examples
    --------
    >>> from topopt_problems import em_focus                                 # doctest: +SKIP
    >>> var = FocusVariations(em_focus.EMFocus(h=8.0))                # doctest: +SKIP
    >>> design = ReliableFocus(FocusReliability(var, 3.0), pa=0.05)   # doctest: +SKIP
    >>> res = design.minimize(np.full(var.n, 0.4), maxeval=5)         # doctest: +SKIP
    """

    objective_name = "-E(p; 0, lambda_0) / E_ref"

    def __init__(self, reliability: FocusReliability, pa: float, approach: str = "pma",
                 n_shifts: int = 51):
        if not isinstance(reliability, FocusReliability):
            raise TypeError("reliability must be a FocusReliability")
        self.reliability, self.n = reliability, reliability.n
        self.pa = check_range("pa", pa, 0.0, 1.0, lo_open=True, hi_open=True,
                              what="allowed failure probability")
        self.approach = check_choice("approach", approach, APPROACHES)
        self.beta_a = float(_norm().isf(self.pa / 2))
        self.points = disk_chords(self.beta_a, n_shifts)
        self.E_ref = None

    @property
    def n_constraints(self) -> int:
        """One per disk point (``"pma"``), one ``ln pf`` bound (``"ria"``)."""
        return len(self.points) if self.approach == "pma" else 1

    def responses(self, p, beta: float):
        """``(-E_nominal / E_ref, constraints...)`` (see the class)."""
        rel = self.reliability
        rel.beta = beta
        E = rel.variations.enhancement(p, 0.0, None, beta)
        if self.approach == "ria":
            return -E / self.E_ref, rel.ln_pf(p) - np.log(self.pa)
        values = [E if not theta.any() else
                  rel.variations.enhancement(p, *rel.physical(theta), beta)
                  for theta in self.points]
        return (-E / self.E_ref, *(1.0 - v / rel.target for v in values))

    def minimize(self, p0, maxeval: int = 40, beta: float = 32.0, **options) -> Result:
        """MMA from `p0` at one `beta` (`topopt.optimize.minimize`; `options` go there)."""
        p0 = check_real_array("p0", p0, allow_bool=True)
        if p0.shape != (self.n,):
            raise ValueError(f"p0 must have shape ({self.n},), got {p0.shape}")
        rel = self.reliability
        self.E_ref = float(rel.variations.enhancement(p0, 0.0, None, beta))
        model = rel.variations.problem.model
        opts = {"ftol_rel": 1e-8, "objective_name": self.objective_name,
                "count_solves": lambda: model.wavenumber_system().counts["factorizations"]}
        return minimize(self.responses, p0, bounds=(np.zeros(self.n), np.ones(self.n)),
                        stages=[Stage(maxeval=maxeval, params={"beta": float(beta)})],
                        n_constraints=self.n_constraints, **(opts | options))
