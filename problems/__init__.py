"""The problem scripts as a package: ``topopt_problems.mbb_beam``, ``topopt_problems.em_focus``, ...

The folder ``problems/`` is installed under our own name, ``topopt_problems``
(``pyproject.toml``: ``package-dir``), so that an install puts no package named
``problems`` on a user's path; in a checkout the link ``topopt_problems`` -> ``problems``
makes the same name importable from the checkout's root.

Each module builds its model (``setup``), optimizes it (``run``, returning a
`topopt.io.RunResult`) and has the command line of `topopt.cli`
(``python problems/<name>.py --help``).

A script writes ``results/<name>/`` under the working directory unless
``--out`` says otherwise (the committed pictures are ``results/gallery/<name>/``,
remade by ``python scripts/site/gallery.py``); of the design files its docstring
lists, ``design.npz`` is always written and ``design.vtu`` / ``design.stl``
need the ``io`` extra (``pip install 'topopt[io]'``).
"""

__all__ = ["mbb_beam", "cantilever", "cantilever3d", "em_focus", "reliable_bracket",
           "cantilever_hole", "cantilever_two_loads", "heat_sink", "inverter", "robust_inverter",
           "eigen_beam", "l_bracket", "arch", "robust_cantilever",
           # the gallery's second part (issue 26)
           "dynamic_beam", "thermo_beam", "transient_heat", "printable_cantilever",
           "multimaterial_beam", "buckling_column", "mesh_bracket",
           # photonic designs robust to fabrication and wavelength (issue 27)
           "em_robust",
           # flow on a nonlinear solve (issue 36)
           "double_pipe",
           "heat_sink_flow",
           "pipe_bend", "pipe_bend3d", "diffuser"]
