"""The MMA driver: `minimize`, its options, evaluator, run state, progress lines and checkpoints.
"""

from .options import (Stage, Options, MMA_PARAMS, DEFAULT_MMA_PARAMS)
from .checkpoint import (Checkpoint, CheckpointError, CHECKPOINT_VERSION, load_checkpoint,
                         save_checkpoint)
from .driver import (minimize, Result)
from .perturb import start_perturbation, perturbed_start
from .ending import (ending, last_stage_ending, verdict, with_grey, ending_line, FEASIBILITY_TOL, GREY_LIMIT,
                     WORSE_TOL)

__all__ = ['Stage', 'Options', 'MMA_PARAMS', 'DEFAULT_MMA_PARAMS', 'Checkpoint', 'CheckpointError',
           'CHECKPOINT_VERSION', 'load_checkpoint', 'save_checkpoint', 'minimize', 'Result',
           'ending', 'last_stage_ending', 'verdict', 'with_grey', 'ending_line', 'FEASIBILITY_TOL', 'GREY_LIMIT',
           'WORSE_TOL', 'start_perturbation', 'perturbed_start']

from .._keywords import check_keywords_of as _check_keywords_of  # noqa: E402

_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one
