"""Robust design: eroded / dilated projections, and moments of a response under Gaussian inputs.
"""

from .projection import (ETAS, DESIGNS, robust_designs, bound_formulation, robust_stages,
                         DilatedVolume, RobustFormulation)
from .moments import (mean_std, mean_var, covariance_factor, monte_carlo_moments, SampleMoments)

__all__ = ['ETAS', 'DESIGNS', 'robust_designs', 'bound_formulation', 'robust_stages',
           'DilatedVolume', 'RobustFormulation', 'mean_std', 'mean_var', 'covariance_factor',
           'monte_carlo_moments', 'SampleMoments']
