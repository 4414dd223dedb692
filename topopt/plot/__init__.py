"""Pictures of designs and convergence histories (matplotlib, no pyplot state).

* `figures`: the 2-D design figure (`design_figure`, `save_design`);
* `flow`: a 2-D flow's velocity magnitude and streamlines over its design
  (`flow_figure`, `save_flow`);
* `convection`: a 2-D temperature over its design, with the flow's streamlines
  (`temperature_figure`, `save_temperature`);
* `design3d`: the 3-D iso-surface (`design_figure_3d`, `save_design_3d`);
* `history`: the convergence history (`history_figure`, `save_history`);
* `markers`: the supports and loads drawn on both (`boundary_markers`);
* `setup`: the whole setup a problem declares (`Markers`: supports, loads,
  body loads, masses, heat sources, ports, springs, focal points, regions),
  drawn by `symbols` (`draw_markers`, and the axes' lengths `draw_axes`) and
  kept with a run (`topopt.io.write_results`'s ``markers``);
* `canvas`: what they share (`grid_indices`, the atomic PNG write);
* `live`: a run's design and history redrawn in place (`live`, `Live`): a
  notebook's display handle, a script's window, nothing headless.
"""

from .canvas import grid_indices
from .design3d import design_figure_3d, save_design_3d
from .figures import design_figure, save_design
from .flow import flow_figure, save_flow
from .convection import save_temperature, temperature_figure
from .history import history_figure, save_history, MAX_CONSTRAINT_LINES
from .live import Live, live
from .markers import boundary_markers
from .setup import Markers, KINDS
from .symbols import draw_markers, draw_axes

__all__ = ['grid_indices', 'boundary_markers', 'design_figure', 'save_design', 'design_figure_3d',
           'save_design_3d', 'history_figure', 'save_history', 'MAX_CONSTRAINT_LINES', 'live',
           'Live', 'Markers', 'KINDS', 'draw_markers', 'draw_axes', 'flow_figure', 'save_flow',
           'temperature_figure', 'save_temperature']

from .._keywords import check_keywords_of as _check_keywords_of  # noqa: E402

_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one
