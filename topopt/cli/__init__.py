"""The command line: option converters, the problem scripts' main (signals, exit codes), the ``topopt`` command.
"""

from .options import (Bounds, number, positive_int, non_negative_int, positive_float, open_unit,
                      at_least, accepts, Option, build_parser, add_run_arguments, SOLVERS,
                      DIRECT_SOLVERS, GRID_SOLVERS, compliance_options)
from .script import (main, run_options, exit_status, finish, script_errors, compliance_summary)
from ..io.folder import signals_held
from .size import grid_dofs, size_line
from .command import (problem_names, problem_line)

__all__ = ['Bounds', 'number', 'positive_int', 'non_negative_int', 'positive_float', 'open_unit',
           'at_least', 'accepts', 'Option', 'main', 'build_parser', 'add_run_arguments',
           'run_options', 'exit_status', 'finish', 'script_errors', 'signals_held',
           'grid_dofs', 'size_line', 'SOLVERS', 'DIRECT_SOLVERS', 'GRID_SOLVERS', 'compliance_options',
           'compliance_summary', 'problem_names', 'problem_line']
