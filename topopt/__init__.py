"""topopt: adjoint-method topology optimization on scikit-fem.

One package per concept, each importing only those before it: `ad`
(reverse/forward differentiation on numpy), `fem` (meshes, models, the
design-dependent solve; `fem.solvers`, `fem.petsc`), `design` (x -> x_phys:
passive regions, filters, interpolations, projection, grey levels),
`responses` (compliance, volume, stresses, body loads), `optimize` (the MMA
driver and its checkpoints), `formulations` (`DensityProblem` and the
problems built on it), `robust` (eroded/dilated projections, moments under
Gaussian inputs), `reliability` (failure probabilities with gradients),
`io` (a run's result, folder and design files), `plot` (pictures) and
`cli` (the problem scripts' command line and the ``topopt`` command);
`parallel` runs sweeps and multi-starts on any executor. The main names of
each are importable from here.

``import topopt`` stays light: `reliability` (which needs ``scipy.stats``) and
the command line and the pictures (`cli`, `plot`) are
imported on first use, by attribute (``topopt.reliability``) or by an
``import topopt.reliability`` of their own (PEP 562, `__getattr__` below);
``scripts/benchmarks/benchmark_import.py`` measures the import.

Importing topopt has no side effects; `tune_malloc` (glibc's allocator
policy, see `topopt._memory`) is an explicit call that the problem scripts
and benchmarks make.

Examples
--------
>>> import numpy as np
>>> import topopt
>>> topopt.simp(topopt.project(np.array([0.0, 0.5, 1.0]), beta=8.0, eta=0.5), Emin=0.0)
array([0.   , 0.125, 1.   ])
"""

import importlib as _importlib

from . import ad, fem
from ._memory import tune_malloc
from .responses import stress
from .optimize.checkpoint import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from .design.passive import Passive, embed
from .formulations.eigen import EigenProblem, du_olhoff_mass, eigen_summary
from .formulations.buckling import BucklingProblem, ks_max
from .design.filters import DensityFilter
from .design.helmholtz_filter import HelmholtzFilter, helmholtz_radius
from .design.linear_filter import LinearFilter, apply_filter, apply_filter_transpose, domain_size
from .design.quadrature import QuadratureField
from .design.interpolation import DENSITY_TOL, blueprint, permittivity, project, ramp, simp
from .design.measures import grey_level, variable_grey_level
from .formulations.mechanism import (MechanismProblem, ideal_output, port_springs,
                                     robust_constraint_names, robust_run, run_mechanism)
from .responses.structural import compliance, compliance_coefficients, output_displacement, volume
from .optimize.driver import Result, minimize
from .optimize.options import Stage
from . import parallel
from .parallel import Builder, MultistartResult, multistart, spawn_seeds, sweep
from .formulations.compliance import ComplianceProblem
from .io.folder import run_compliance
from .io.result import RunResult
from .robust.projection import (DilatedVolume, RobustFormulation, bound_formulation,
                                robust_designs, robust_stages)
from .robust.moments import (SampleMoments, covariance_factor, mean_std, mean_var,
                             monte_carlo_moments)
from .formulations.selfweight import SelfWeightProblem, load_ratio, save_load_ratio
from .formulations.stress import MinimumVolumeStress
from .responses.loads import BodyLoad, element_loads
from .responses.stress import (AdaptiveNormalization, ElementStress, relaxed_stress,
                               stress_pnorm, von_mises_matrix)
from ._files import OutputPathError

__version__ = "0.1.0"
__all__ = [
    "ad", "fem", "reliability", "flow", "tune_malloc",
    "minimize", "Stage", "Result",
    "LinearFilter", "DensityFilter", "HelmholtzFilter", "QuadratureField", "helmholtz_radius",
    "apply_filter", "apply_filter_transpose", "domain_size",
    "simp", "ramp", "project", "permittivity", "blueprint", "DENSITY_TOL",
    "compliance", "volume", "compliance_coefficients", "output_displacement",
    "ComplianceProblem", "run_compliance", "RunResult", "grey_level", "variable_grey_level",
    "Checkpoint", "CheckpointError", "load_checkpoint", "save_checkpoint", "OutputPathError",
    "Passive", "embed",
    "MechanismProblem", "ideal_output", "port_springs", "run_mechanism", "robust_run",
    "robust_constraint_names", "robust_designs", "bound_formulation", "robust_stages",
    "DilatedVolume", "RobustFormulation",
    "EigenProblem", "du_olhoff_mass", "eigen_summary",
    "BucklingProblem", "ks_max",
    "stress", "AdaptiveNormalization", "ElementStress", "MinimumVolumeStress", "relaxed_stress",
    "stress_pnorm", "von_mises_matrix",
    "BodyLoad", "SelfWeightProblem", "element_loads", "load_ratio", "save_load_ratio",
    "mean_std", "mean_var", "covariance_factor", "monte_carlo_moments", "SampleMoments",
    "parallel", "Builder", "sweep", "multistart", "MultistartResult", "spawn_seeds",
]

#: Subpackages and modules imported on first use (`__getattr__`): heavy
#: dependencies (``scipy.stats``, matplotlib) stay out of ``import topopt``.
_LAZY = ("reliability", "plot", "io", "cli", "flow")


def __getattr__(name: str):
    """Import the lazy submodule `name` on first access (PEP 562).

    Examples
    --------
    >>> import topopt
    >>> topopt.reliability.__name__
    'topopt.reliability'
    """
    if name in _LAZY:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
