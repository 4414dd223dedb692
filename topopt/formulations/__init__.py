"""Optimization problems: a density problem base and its formulations.

`DensityProblem` (base.py) holds the density chain and the run template; each
formulation module holds one problem's physics. `GalleryRun` (run_template.py) is the
template of the gallery's runs that build their model, run phases and write their
folder (`run_focus`, `run_reliable`, `run_robust`, `run_stress_reference`,
`run_focus_designs`).
"""

from .base import (DensityProblem, StartScaled, timed_run, with_callback, announce, FILTERS,
                   before_resume, cg_counters, cg_metrics)
from .compliance import ComplianceProblem
from .mechanism import (MechanismProblem, ideal_output, port_springs, run_mechanism, robust_run,
                        robust_constraint_names, MMA_OPTIONS, ROBUST_MMA_OPTIONS)
from .eigen import (du_olhoff_mass, EigenProblem, eigen_summary)
from .stress import MinimumVolumeStress
from .dynamic import DynamicComplianceProblem, MASS_INTERPOLATIONS
from .selfweight import (SelfWeightProblem, load_ratio, save_load_ratio, INTERPOLATIONS)
from .focus import FocusSetup, FocusProblem, intensity, enhancement, run_focus
from .focus_output import write_focus, field_map, focus_markers
from .reliable import ReliableCompliance, pf_summary, deterministic_checkpoint, phase_checkpoints
from .reliable_run import run_reliable, write_reliable
from .robust_compliance import RobustCompliance, check_robust, run_robust, write_robust
from .stress_reference import (StressSchedule, stress_figures, run_stress_reference,
                               write_stress_reference)
from .run_template import GalleryRun, phase_paths, phase_checkpoint, MissingPhaseError
from .thermoelastic import ThermoelasticProblem
from .multimaterial import MultiMaterialCompliance, write_phases, PHASE_COLOURS
from ..io.folder import (write_results, plot_record, write_json, run_compliance)
from ..responses.loads import (element_loads, BodyLoad)

__all__ = ['DensityProblem', 'StartScaled', 'timed_run', 'with_callback', 'announce', 'FILTERS',
           'before_resume', 'cg_counters', 'cg_metrics',
           'ComplianceProblem',
           'MechanismProblem', 'ideal_output', 'port_springs', 'run_mechanism', 'robust_run',
           'robust_constraint_names', 'MMA_OPTIONS', 'ROBUST_MMA_OPTIONS', 'du_olhoff_mass',
           'EigenProblem', 'eigen_summary', 'SelfWeightProblem', 'MinimumVolumeStress', 'load_ratio',
           'save_load_ratio', 'INTERPOLATIONS', 'write_results', 'plot_record', 'write_json',
           'run_compliance', 'element_loads', 'BodyLoad',
           'FocusSetup', 'FocusProblem', 'intensity', 'enhancement', 'run_focus', 'write_focus',
           'focus_markers',
           'field_map', 'ReliableCompliance', 'pf_summary', 'deterministic_checkpoint',
           'phase_checkpoints', 'run_reliable', 'write_reliable', 'RobustCompliance',
           'check_robust', 'run_robust', 'write_robust', 'StressSchedule', 'stress_figures',
           'run_stress_reference', 'write_stress_reference', 'GalleryRun', 'phase_paths',
           'phase_checkpoint', 'MissingPhaseError', 'ThermoelasticProblem',
           'DynamicComplianceProblem',
           'MASS_INTERPOLATIONS',
           'MultiMaterialCompliance',
           'write_phases',
           'PHASE_COLOURS']
from .transient_heat import TransientHeatProblem

__all__ += ['TransientHeatProblem']
from .printable import PrintableCompliance

__all__ += ['PrintableCompliance']
from .buckling import BucklingProblem, ks_max  # noqa: E402

__all__ += ['BucklingProblem', 'ks_max']
from .focus_robust import (RobustFocus, robust_focus_stages, run_robust_focus,  # noqa: E402
                           epigraph_minimize)

__all__ += ['RobustFocus', 'robust_focus_stages', 'run_robust_focus', 'epigraph_minimize']
from .focus_variations import FocusVariations, WorstFocus, silver_jc_cubic  # noqa: E402

__all__ += ['FocusVariations', 'WorstFocus', 'silver_jc_cubic']
from .focus_reliable import (FocusReliability, ReliableFocus, focus_limit_state,  # noqa: E402
                             disk_chords, APPROACHES as FOCUS_RELIABLE_APPROACHES)

__all__ += ['FocusReliability', 'ReliableFocus', 'focus_limit_state', 'disk_chords',
            'FOCUS_RELIABLE_APPROACHES']
from .focus_designs import (FocusDesigns, run_focus_designs,  # noqa: E402
                            PHASES as FOCUS_DESIGN_PHASES)
from .focus_plots import save_designs, save_heatmaps  # noqa: E402

__all__ += ['FocusDesigns', 'run_focus_designs', 'FOCUS_DESIGN_PHASES',
            'save_designs', 'save_heatmaps']
from .focus_band import (FocusBand, run_focus_band, SCALES as FOCUS_BAND_SCALES,  # noqa: E402
                         FORMS as FOCUS_BAND_FORMS)

__all__ += ['FocusBand', 'run_focus_band', 'FOCUS_BAND_SCALES', 'FOCUS_BAND_FORMS']

from .flow import FlowProblem, OBJECTIVES as FLOW_OBJECTIVES  # noqa: E402
from .flow_output import (run_flow, check_lu_solver, power_summary,  # noqa: E402
                          OBJECTIVE_LABELS as FLOW_OBJECTIVE_LABELS)

from .flow_thermal import ConvectionProblem  # noqa: E402
from .flow_hooks import FlowRunHooks  # noqa: E402

__all__ += ['FlowProblem', 'FLOW_OBJECTIVES', 'run_flow', 'check_lu_solver', 'power_summary',
            'FLOW_OBJECTIVE_LABELS', 'ConvectionProblem', 'FlowRunHooks']

from .slab_compliance import SlabCompliance, SlabRun  # noqa: E402

__all__ += ['SlabCompliance', 'SlabRun']

from .._keywords import check_keywords_of as _check_keywords_of  # noqa: E402

_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one
