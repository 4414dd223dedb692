"""Focusing under fabrication and wavelength variations: ``E(p; d, lambda)``, and its worst case.

The chain of `topopt.formulations.focus` with the two things a fabricated
device does not control: its edges, moved by ``d`` nm (the projection
threshold ``eta(d)`` of `topopt.robust.shifted_projection`, from the
closed-form filtered edge of `topopt.robust.edges`), and the free-space
wavelength ``lambda`` (the wave model at ``k = 2 pi / lambda``, the metal's
index ``n(lambda)``). Both enter as numbers that `topopt.ad` can trace, so
``E`` is differentiable in the design, ``d`` and ``lambda`` in every mode:
the limit state of `topopt.formulations.focus_reliable`.

`WorstFocus` maximises the worst enhancement over a set of ``(d_k,
lambda_j)`` pairs, eroded / intermediate / dilated designs times a band of
wavelengths, as one epigraph (Wang, Lazarov & Sigmund 2011, eq. (13);
Meep's adjoint does the same for frequencies):

    min_(p, z) z  s.t.  -E(p; d_k, lambda_j) - z <= 0  for every pair,

one factorization per pair and design.
"""

from __future__ import annotations

import numpy as np

from .. import ad
from .._validate import check_callable, check_range, check_real_array, check_sequence
from ..design.interpolation import blueprint, permittivity
from ..design.materials import silver_index_jc
from ..optimize.driver import Result
from ..robust.edges import shifted_projection, threshold_for_shift
from ..robust.projection import bound_formulation
from .focus import FocusProblem, enhancement, intensity
from .focus_robust import Z_MAX, epigraph_minimize

__all__ = ["FocusVariations", "WorstFocus", "silver_jc_cubic"]


def silver_jc_cubic(wavelength_nm):
    """Johnson & Christy silver, the natural cubic spline (`silver_index_jc`): traceable.

    Examples
    --------
    >>> from topopt.formulations.focus_variations import silver_jc_cubic
    >>> complex(np.round(silver_jc_cubic(532.0), 3))
    (0.055+3.431j)
    """
    return silver_index_jc(wavelength_nm, kind="cubic")


class FocusVariations:
    """The focusing chain of a `FocusProblem` at an edge shift ``d`` and a wavelength.

    Parameters
    ----------
    problem : FocusProblem
        A periodic cell (``isolated=False``) with one density per element
        (``subcell=False``); its wave model's ``k`` is the nominal
        wavelength ``2 pi / k``.
    index : callable, default `silver_jc_cubic`
        ``index(lambda_nm) -> complex``, the metal's refractive index;
        traceable to differentiate in ``lambda``.

    Examples
    --------
    >>> from topopt_problems import em_focus                           # doctest: +SKIP
    >>> var = FocusVariations(em_focus.EMFocus(h=8.0))          # doctest: +SKIP
    >>> var.enhancement(np.full(var.n, 0.4), d=1.0, wavelength=540.0)  # doctest: +SKIP
    """

    def __init__(self, problem: FocusProblem, index=silver_jc_cubic):
        if not isinstance(problem, FocusProblem):
            raise TypeError(f"problem must be a FocusProblem, got {type(problem).__name__}")
        if problem.subcell or problem.isolated:
            raise ValueError("FocusVariations needs subcell=False and isolated=False (the "
                             "wavenumber enters the periodic model only)")
        self.problem, self.index = problem, check_callable("index", index)
        self.wavelength = 2 * np.pi / problem.model.k
        self.r, self.n = problem.setup.r_filter, problem.n

    def p_phys(self, p, d=0.0, beta=None):
        """The design with edges moved by `d`: projected with `beta`, or (None) its blueprint."""
        x_tilde = self.problem.smooth(p)
        if beta is None:
            return blueprint(x_tilde, threshold_for_shift(ad.value(d), self.r))
        return shifted_projection(x_tilde, beta, d, self.r)

    def g(self, p, d=0.0, wavelength=None, beta=None):
        """``g = Re(u^H O u)`` at shift `d` (nm) and `wavelength` (nm, default the nominal)."""
        lam = self.wavelength if wavelength is None else wavelength
        lam_v = check_range("wavelength", ad.value(lam), 0.0, None, lo_open=True,
                            what="free-space wavelength, nm")
        prob, n_air = self.problem, self.problem.setup.n_air
        n_metal = self.index(lam)
        if not ad.is_traced(n_metal) and np.asarray(n_metal).imag < 0:
            raise ValueError(f"index({lam_v:g}) has Im n < 0 (an active medium)")
        a = 1.0 / permittivity(self.p_phys(p, d, beta), n_metal, n_air) - 1.0 / n_air ** 2
        return intensity(prob.model.solve(a, prob.b, k=2 * np.pi / lam), prob.O)

    def enhancement(self, p, d=0.0, wavelength=None, beta=None):
        """``|E(x0)| / |E_inc|`` at (`d`, `wavelength`); differentiable."""
        return enhancement(self.g(p, d, wavelength, beta))

    def grid(self, p, shifts, wavelengths, beta=None) -> np.ndarray:
        """The enhancement on the grid ``shifts x wavelengths`` (rows: shifts), floats."""
        shifts = [float(v) for v in check_sequence("shifts", shifts)]
        lams = [float(v) for v in check_sequence("wavelengths", wavelengths)]
        if not shifts or not lams:
            raise ValueError("shifts and wavelengths must hold at least one value each")
        return np.array([[float(self.enhancement(p, d, lam, beta)) for lam in lams]
                         for d in shifts])


class WorstFocus:
    """The worst enhancement over ``(d, lambda)`` pairs, as an epigraph for MMA.

    Parameters
    ----------
    variations : FocusVariations
    shifts : sequence of float
        Edge shifts ``d_k`` (nm), e.g. ``(-2, 0, 2)``: eroded, intermediate, dilated.
    wavelengths : sequence of float
        ``lambda_j`` (nm); every pair ``(d_k, lambda_j)`` is a constraint.

    Examples
    --------
    >>> from topopt_problems import em_focus                           # doctest: +SKIP
    >>> var = FocusVariations(em_focus.EMFocus(h=8.0))          # doctest: +SKIP
    >>> worst = WorstFocus(var, (-2, 0, 2), (512, 532, 552))    # doctest: +SKIP
    >>> len(worst.pairs)                                        # doctest: +SKIP
    9
    """

    def __init__(self, variations: FocusVariations, shifts, wavelengths):
        if not isinstance(variations, FocusVariations):
            raise TypeError("variations must be a FocusVariations")
        shifts = [check_range(f"shifts[{i}]", v, -10 * variations.r, 10 * variations.r,
                              what="edge shift, nm")
                  for i, v in enumerate(check_sequence("shifts", shifts))]
        lams = [check_range(f"wavelengths[{i}]", v, 0.0, None, lo_open=True,
                            what="free-space wavelength, nm")
                for i, v in enumerate(check_sequence("wavelengths", wavelengths))]
        if not shifts or not lams:
            raise ValueError("shifts and wavelengths must hold at least one value each")
        self.variations, self.n = variations, variations.n
        self.pairs = [(d, lam) for d in shifts for lam in lams]

    @classmethod
    def on_pairs(cls, variations: FocusVariations, pairs) -> "WorstFocus":
        """The worst case over given ``(d, lambda)`` `pairs` (not a product of two sets)."""
        pairs = [tuple(check_sequence(f"pairs[{i}]", q)) for i, q in
                 enumerate(check_sequence("pairs", pairs))]
        if not pairs or any(len(q) != 2 for q in pairs):
            raise ValueError("pairs must hold at least one (shift, wavelength) pair")
        worst = cls(variations, [pairs[0][0]], [pairs[0][1]])
        checked = [cls(variations, [d], [lam]).pairs[0] for d, lam in pairs]
        worst.pairs = checked
        return worst

    def enhancements(self, p, beta):
        """``E(p; d, lambda)`` of every pair (traced if `p` is)."""
        return [self.variations.enhancement(p, d, lam, beta) for d, lam in self.pairs]

    def responses(self, pz, beta: float) -> tuple:
        """``(z, -E_1 - z, ..., -E_m - z)``, ``pz = [p, z]``."""
        return bound_formulation(pz[-1], [-e for e in self.enhancements(pz[:-1], beta)])

    def start(self, p0, beta: float) -> np.ndarray:
        """``[p0, z0]``, ``z0 = -min E`` (clipped to ``-Z_MAX``)."""
        p0 = check_real_array("p0", p0, allow_bool=True)
        if p0.shape != (self.n,):
            raise ValueError(f"p0 must have shape ({self.n},), got {p0.shape}")
        return np.append(p0, max(-min(float(e) for e in self.enhancements(p0, beta)), -Z_MAX))

    def minimize(self, p0, stages, **options) -> Result:
        """MMA from ``[p0, z0]`` (`epigraph_minimize`); ``x`` ends with ``z``."""
        model = self.variations.problem.model
        return epigraph_minimize(self.responses, self.start, p0, stages, self.n,
                                 lambda: model.wavenumber_system().counts["factorizations"],
                                 **options)
