"""Responses of a design, one per file: compliance and volume, stresses.
"""

from .structural import (compliance, volume, output_displacement, compliance_coefficients)
from .stress import (ElementStress, relaxed_stress, stress_pnorm, AdaptiveNormalization,
                     MinimumVolumeStress, von_mises_matrix)

__all__ = ['compliance', 'volume', 'output_displacement', 'compliance_coefficients',
           'ElementStress', 'relaxed_stress', 'stress_pnorm', 'AdaptiveNormalization',
           'MinimumVolumeStress', 'von_mises_matrix']
