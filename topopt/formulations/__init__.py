"""Optimization problems: a density problem base and its formulations.
"""

from .compliance import (ComplianceProblem, write_results, plot_record, write_json, run_compliance,
                         minimize_compliance, announce, compliance_options, compliance_summary)
from .mechanism import (MechanismProblem, ideal_output, port_springs, run_mechanism, robust_run,
                        robust_constraint_names, MMA_OPTIONS, ROBUST_MMA_OPTIONS)
from .eigen import (du_olhoff_mass, EigenProblem, eigen_summary)
from .selfweight import (element_loads, BodyLoad, SelfWeightProblem, load_ratio, save_load_ratio,
                         INTERPOLATIONS)

__all__ = ['ComplianceProblem', 'write_results', 'plot_record', 'write_json', 'run_compliance',
           'minimize_compliance', 'announce', 'compliance_options', 'compliance_summary',
           'MechanismProblem', 'ideal_output', 'port_springs', 'run_mechanism', 'robust_run',
           'robust_constraint_names', 'MMA_OPTIONS', 'ROBUST_MMA_OPTIONS', 'du_olhoff_mass',
           'EigenProblem', 'eigen_summary', 'element_loads', 'BodyLoad', 'SelfWeightProblem',
           'load_ratio', 'save_load_ratio', 'INTERPOLATIONS']
