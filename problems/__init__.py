"""The problem scripts as a package: ``problems.mbb_beam``, ``problems.em_focus``, ...

Each module builds its model (``setup``), optimizes it (``run``, returning a
`topopt.result.RunResult`) and has the command line of `topopt.cli`
(``python problems/<name>.py --help``).
"""

__all__ = ["cantilever", "cantilever3d", "em_focus", "mbb_beam", "reliable_bracket"]
