"""The files of a run: its result, its output folder, and design files (npz, vtu or vti, stl;
a split design by pieces: `pieces`).
"""

from .result import RunResult, RUN_KEYS, run_record
from .._files import OutputPathError, check_writable_file, check_writable_folder
from .folder import (run_label, check_run_label, write_run_label, run_label_path, SIZE_OPTIONS,
                     write_results, plot_record, write_json, run_compliance, signals_held)
from .designs import (save_design, load_design, write_vtu, write_stl, iso_surface, enclosed_volume,
                      MESH_TYPES)
from .design_file import signed_volume, DesignFileError
from .voxels import (write_vti, grid_iso_surface, write_grid_stl, surface_faces, save_grid_design,
                     load_grid_design, SLAB_VOXELS)
from .pieces import piece_name, save_piece, load_piece, write_piece_vti, write_pvti

__all__ = ['RunResult', 'RUN_KEYS', 'run_record', 'OutputPathError', 'check_writable_file',
           'check_writable_folder', 'run_label', 'check_run_label', 'write_run_label',
           'run_label_path', 'SIZE_OPTIONS', 'write_results', 'plot_record', 'write_json',
           'run_compliance', 'signals_held', 'save_design', 'load_design', 'write_vtu',
           'write_stl', 'iso_surface', 'enclosed_volume', 'signed_volume', 'DesignFileError',
           'MESH_TYPES', 'write_vti', 'grid_iso_surface', 'write_grid_stl', 'surface_faces',
           'save_grid_design', 'load_grid_design', 'SLAB_VOXELS', 'piece_name', 'save_piece',
           'load_piece', 'write_piece_vti', 'write_pvti']

from .._keywords import check_keywords_of as _check_keywords_of  # noqa: E402

_check_keywords_of(globals(), __all__)   # a misspelled keyword names the closest one
