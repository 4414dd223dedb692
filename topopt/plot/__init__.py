"""Pictures of designs and convergence histories (matplotlib, no pyplot state).
"""

from .figures import (grid_indices, boundary_markers, design_figure, save_design, design_figure_3d,
                      save_design_3d, history_figure, save_history)

__all__ = ['grid_indices', 'boundary_markers', 'design_figure', 'save_design', 'design_figure_3d',
           'save_design_3d', 'history_figure', 'save_history']
