"""Robust design: eroded / dilated projections, and moments of a response under Gaussian inputs.
"""

from .projection import (ETAS, DESIGNS, robust_designs, bound_formulation, robust_stages,
                         DilatedVolume, RobustFormulation)
from .moments import (mean_std, mean_var, covariance_factor, monte_carlo_moments, SampleMoments)

__all__ = ['ETAS', 'DESIGNS', 'robust_designs', 'bound_formulation', 'robust_stages',
           'DilatedVolume', 'RobustFormulation', 'mean_std', 'mean_var', 'covariance_factor',
           'monte_carlo_moments', 'SampleMoments']
from .edges import edge_shift, threshold_for_shift, filtered_step, shifted_projection  # noqa: E402,E501

__all__ += ['edge_shift', 'threshold_for_shift', 'filtered_step', 'shifted_projection']

from .._keywords import check_keywords_of as _check_keywords_of  # noqa: E402

_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one
