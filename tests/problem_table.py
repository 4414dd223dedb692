"""The problem scripts as a table for the tests: every module of ``topopt_problems.__all__``.

`SMALL` gives each problem the keywords of a run small enough for a test; a
problem without a row fails `test_every_problem_has_a_small_run`, so a new
script cannot be left out of the tests that iterate over this table.
"""

import importlib
import inspect

import topopt_problems

PROBLEMS = {name: importlib.import_module(f"topopt_problems.{name}") for name in topopt_problems.__all__}

# the scripts that draw random numbers: their `run` takes a seed
SEEDED = {name for name, module in PROBLEMS.items()
          if "seed" in inspect.signature(module.run).parameters}

# the scripts without ``--solver``: a flow problem's Newton and adjoint solve with LU
NO_SOLVER = {"double_pipe", "diffuser", "heat_sink_flow", "pipe_bend", "pipe_bend3d"}

SMALL = {
    "mbb_beam": dict(nelx=8, nely=4),
    "cantilever": dict(nelx=8, nely=4),
    "cantilever3d": dict(nelx=4, nely=2, nelz=2),
    "em_focus": dict(h=8.0),
    "reliable_bracket": dict(n=8),
    "cantilever_hole": dict(nelx=9, nely=6),
    "cantilever_two_loads": dict(nelx=6, nely=6),
    "heat_sink": dict(nelx=8, nely=8),
    "inverter": dict(nelx=4, nely=8),
    "robust_inverter": dict(nelx=4, nely=8),
    "eigen_beam": dict(nelx=16, nely=4),
    "l_bracket": dict(n=20, maxeval=12),        # one evaluation per block
    "arch": dict(nelx=8, nely=6),
    "robust_cantilever": dict(nelx=8, nely=4),
    "thermo_beam": dict(nelx=8, nely=4),
    "mesh_bracket": dict(maxeval=5),             # the committed mesh (2043 triangles)
    "dynamic_beam": dict(nelx=12, nely=6, static_maxeval=10, maxeval=10),
    "transient_heat": dict(nelx=8, nely=12, steps=6),
    "printable_cantilever": dict(nelx=8, nely=4),
    "multimaterial_beam": dict(nelx=8, nely=4),
    "buckling_column": dict(nelx=12, nely=6),
    "em_robust": dict(h=8.0, samples=4, workers=0),
    "double_pipe": dict(n=6),
    "heat_sink_flow": dict(n=4),
    "pipe_bend": dict(re=100, n=6, maxeval=4),   # Re 500 wants n >= 10 (cell Reynolds number)
    "pipe_bend3d": dict(n=6, maxeval=4),      # one evaluation per q stage
    "diffuser": dict(n=6),
}
