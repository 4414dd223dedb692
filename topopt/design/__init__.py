"""From design variables to physical densities: passive regions, filters, interpolations, projection, grey levels.
"""

from .interpolation import (project, simp, ramp, DENSITY_TOL, permittivity, blueprint)
from .measures import (grey_level, variable_grey_level, GREY_TOL)
from .passive import (Passive, embed)
from .overhang import (overhang, OverhangFilter, overhang_violations, overhang_support,
                       BUILD_DIRECTIONS)
from .filters import DensityFilter
from .linear_filter import LinearFilter, apply_filter, apply_filter_transpose, domain_size
from .helmholtz_filter import HelmholtzFilter, helmholtz_radius
from .quadrature import QuadratureField
from .multimaterial import (ordered_simp, phase_fraction, phase_index, check_phases)
from .materials import (silver_permittivity, silver_index, silver_index_jc)

__all__ = ['project', 'simp', 'ramp', 'DENSITY_TOL', 'permittivity', 'blueprint', 'grey_level',
           'variable_grey_level', 'GREY_TOL', 'Passive', 'embed', 'LinearFilter', 'DensityFilter',
           'HelmholtzFilter', 'QuadratureField', 'helmholtz_radius', 'apply_filter',
           'apply_filter_transpose', 'domain_size', 'overhang', 'OverhangFilter',
           'overhang_violations', 'overhang_support', 'BUILD_DIRECTIONS',
           'ordered_simp',
           'phase_fraction',
           'phase_index',
           'check_phases',
           'silver_permittivity',
           'silver_index',
           'silver_index_jc']

from .._keywords import check_keywords_of as _check_keywords_of  # noqa: E402

_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one
