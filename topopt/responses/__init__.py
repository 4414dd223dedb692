"""Responses of a design, one per file: compliance and volume, dynamic compliance, stresses,
design-dependent loads.
"""

from .structural import (compliance, volume, output_displacement, compliance_coefficients)
from .loads import (element_loads, BodyLoad)
from .thermoelastic import (TEMPERATURES, thermal_modulus, coupling_matrices, ThermalCoupling,
                            thermal_load, coupling_products, coupling_transpose)
from .dynamic import dynamic_compliance
from .stress import (ElementStress, relaxed_stress, stress_pnorm, AdaptiveNormalization,
                     von_mises_matrix)

__all__ = ['compliance', 'volume', 'output_displacement', 'compliance_coefficients',
           'ElementStress', 'relaxed_stress', 'stress_pnorm', 'AdaptiveNormalization',
           'von_mises_matrix', 'element_loads', 'BodyLoad', 'TEMPERATURES', 'thermal_modulus',
           'coupling_matrices', 'ThermalCoupling', 'thermal_load', 'coupling_products',
           'coupling_transpose',
           'dynamic_compliance']

from .._keywords import check_keywords_of as _check_keywords_of  # noqa: E402

_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one
