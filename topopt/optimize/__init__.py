"""The MMA driver: `minimize`, its options, evaluator, run state, progress lines and checkpoints;
`MMA`, our CCSA-MMA (``optimizer="mma"``), written for designs split across processes.
"""

from .options import (Stage, Options, MMA_PARAMS, DEFAULT_MMA_PARAMS, OPTIMIZERS)
from .mma import MMA, MMAResult
from .reduce import SerialReduce, CommReduce
from .checkpoint import (Checkpoint, CheckpointError, CHECKPOINT_VERSION, load_checkpoint,
                         save_checkpoint)
from .driver import (minimize, Result)
from .perturb import start_perturbation, perturbed_start
from .ending import (ending, last_stage_ending, verdict, with_grey, ending_line, FEASIBILITY_TOL, GREY_LIMIT,
                     WORSE_TOL)

__all__ = ['Stage', 'Options', 'MMA_PARAMS', 'DEFAULT_MMA_PARAMS', 'OPTIMIZERS', 'MMA', 'MMAResult',
           'SerialReduce', 'CommReduce', 'Checkpoint', 'CheckpointError',
           'CHECKPOINT_VERSION', 'load_checkpoint', 'save_checkpoint', 'minimize', 'Result',
           'ending', 'last_stage_ending', 'verdict', 'with_grey', 'ending_line', 'FEASIBILITY_TOL', 'GREY_LIMIT',
           'WORSE_TOL', 'start_perturbation', 'perturbed_start']

from .._keywords import check_keywords_of as _check_keywords_of  # noqa: E402

_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one
