"""The public surface: what `topopt` and its subpackages export, and that importing is inert.

Rule. A module is public when no part of its dotted name starts with an
underscore. Every public function and class *defined* in a public module
(its ``__module__``, name without a leading underscore) is reachable from the
``__all__`` of its package -- ``topopt`` for ``topopt/<module>.py``,
``topopt.ad`` / ``topopt.fem`` / ``topopt.reliability`` for their modules:
some name in that ``__all__`` is the object itself (an alias such as
``ad.tree_flatten`` counts). And every name in every public ``__all__``
resolves.

Exceptions, each with its reason:
* rules (``*_rrule``, ``*_frule``): registered in `topopt.ad`'s tables and
  called by the tape, never by name;
* `SCRIPT_MODULES`: the problem scripts' command line and figures, imported
  by module (``from topopt import cli``) -- `topopt.plot` pulls in
  matplotlib, which ``import topopt`` must not;
* `INTERNAL_MODULES` and `INTERNAL`: the parts behind a public entry point
  (the tape behind ``ad.pullback``, the solver backends behind
  ``solver="..."``, the stage loop behind `minimize`).
"""

import importlib
import inspect
import os
import pkgutil
import subprocess
import sys

import pytest

import topopt

PACKAGES = ("topopt", "topopt.ad", "topopt.fem", "topopt.fem.solvers", "topopt.fem.petsc",
            "topopt.reliability", "topopt.design", "topopt.responses", "topopt.optimize",
            "topopt.formulations", "topopt.robust", "topopt.io", "topopt.plot", "topopt.cli",
            "topopt.grid", "topopt.flow")

SCRIPT_MODULES = {
    "topopt.cli": "the shared command line of the problem scripts",
    "topopt.cli.options": "its options: converters, Option, the shared ones (exported by topopt.cli)",
    "topopt.plot": "figures; imports matplotlib",
    "topopt.io.folder": "output-folder checks of the scripts",
    "topopt.io": "saved designs, used by module (topopt.io.load_design)",
    "topopt.cli.command": "the `topopt` console command (list, run, show, export)",
}
INTERNAL_MODULES = {
    "topopt.ad.callforms": "binds a traced call to numpy's signature inside `ad.apply`",
    "topopt.optimize.evaluator": "the evaluator (cache, lazy gradients) of `minimize`",
    "topopt.optimize.run": "the NLopt run of one stage of `minimize`",
    "topopt.optimize.progress": "the progress lines `minimize` prints",
    "topopt.optimize.options": "the options of `minimize` (`Stage` is exported)",
    "topopt.optimize.mma_dual": "the Newton dual of `MMA` (`topopt.optimize.MMA` is exported)",
    "topopt.optimize.mma_stage": "builds `MMA` for one stage of `minimize(optimizer=\"mma\")`",
    "topopt.fem.solvers.csr": "CSR assembly helpers of `LinearSystem`",
    "topopt.fem.solvers.direct": "factorizations behind solver='cholmod'/'superlu'/'umfpack'",
    "topopt.fem.solvers.smoothers": "multigrid smoothers",
    "topopt.fem.solvers.vectors": "the fused vector updates of the CG loop and the smoothers",
    "topopt.fem.solvers.krylov": "the CG loop behind solver='mgcg'/'amgcg'",
    "topopt.fem.solvers.lattice": "the geometric hierarchy of solver='mgcg'",
    "topopt.fem.solvers.amg": "the aggregation hierarchy of solver='amgcg'",
    "topopt.fem.petsc": "the backend behind solver='petsc' (rank 0's side, serve/stop)",
    "topopt.fem.petsc.layout": "the rank layout of solver='petsc'",
    "topopt.fem.petsc.rank": "one rank's PETSc matrix and solver behind solver='petsc'",
    "topopt.fem.petsc.mg": "the geometric hierarchy of solver='petsc' with pc='mg'",
    "topopt.fem.solvers.multigrid": "the preconditioner of solver='mgcg'",
    "topopt.grid.kernels": "the compiled products behind GridOperator (numba, the fast extra)",
    "topopt.fem.budget": "the memory estimate that fem.rectangle/fem.box and the scripts check",
}
INTERNAL = {
    "topopt.ad.core": {"Node", "Trace", "backward", "getitem", "astype"},   # the tape
    "topopt.ad.registry": {"Registry", "function_name"},      # the rule tables' type
    "topopt.ad.tree": {"TreeDef", "flatten_as", "unflatten_sparse", "walk", "rebuild",
                       "is_container"},                      # the walker's own parts
    "topopt.ad.ufunc_methods": {"ufunc_method"},              # the dispatch of ufunc methods
}


def _public_modules() -> list:
    names = [m.name for m in pkgutil.walk_packages(topopt.__path__, "topopt.")]
    return ["topopt"] + sorted(n for n in names
                               if not any(p.startswith("_") for p in n.split(".")))


MODULES = _public_modules()


def _package(module: str) -> str:
    return max((p for p in PACKAGES if module == p or module.startswith(p + ".")), key=len)


def _defined(module) -> dict:
    return {n: o for n, o in vars(module).items()
            if not n.startswith("_") and (inspect.isfunction(o) or inspect.isclass(o))
            and o.__module__ == module.__name__}


def _exempt(module: str, name: str) -> bool:
    return (name.endswith(("_rrule", "_frule")) or module in SCRIPT_MODULES
            or module in INTERNAL_MODULES or name in INTERNAL.get(module, ()))


def test_the_modules_are_found():
    assert {"topopt.design.interpolation", "topopt.fem.refine", "topopt.reliability.mpp",
            "topopt.ad.core"} <= set(MODULES)
    assert set(SCRIPT_MODULES) | set(INTERNAL_MODULES) | set(INTERNAL) <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_every_name_in_all_resolves(module):
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", [])
    assert len(names) == len(set(names)), f"{module}.__all__ repeats a name"
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"{module}.__all__ names {missing}, which it does not define"


@pytest.mark.parametrize("module", MODULES)
def test_public_definitions_are_exported_by_their_package(module):
    mod, package = importlib.import_module(module), importlib.import_module(_package(module))
    exported = {id(getattr(package, n)) for n in package.__all__}
    hidden = [n for n, obj in _defined(mod).items()
              if id(obj) not in exported and not _exempt(module, n)]
    assert not hidden, f"{hidden} of {module} are not in {package.__name__}.__all__"


def test_exceptions_are_still_needed():
    """An exception for a name that is exported (or gone) is stale."""
    for module, names in INTERNAL.items():
        mod = importlib.import_module(module)
        package = importlib.import_module(_package(module))
        for name in names:
            assert name in _defined(mod), f"{module}.{name} is gone: drop the exception"
            assert name not in package.__all__, f"{module}.{name} is exported now"


@pytest.mark.parametrize("name", [
    "ad", "fem", "reliability", "minimize", "Stage", "Result", "DensityFilter",
    "HelmholtzFilter", "simp", "ramp", "project", "permittivity", "blueprint", "compliance",
    "volume", "compliance_coefficients", "ComplianceProblem", "RunResult", "tune_malloc",
    "grey_level", "load_checkpoint"])
def test_main_entry_points_at_the_top(name):
    assert name in topopt.__all__ and getattr(topopt, name) is not None


@pytest.mark.parametrize("package, name", [
    ("fem", "ConvergenceError"), ("fem", "SingularSystemError"), ("fem", "nested_elements"),
    ("reliability", "MPPError"), ("ad", "check_modes"), ("ad", "NoRuleError")])
def test_errors_and_tools_in_the_subpackages(package, name):
    assert name in getattr(topopt, package).__all__


def test_import_is_inert():
    """``import topopt`` loads no plotting, changes no signal handler or environment
    variable (the allocator tuning is `tune_malloc`, an explicit call)."""
    code = ("import os, signal, sys\n"
            "env, handlers = dict(os.environ), {s: signal.getsignal(s) for s in "
            "(signal.SIGINT, signal.SIGTERM)}\n"
            "import topopt\n"
            "assert dict(os.environ) == env, 'environment changed'\n"
            "assert {s: signal.getsignal(s) for s in handlers} == handlers, 'signal handler'\n"
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
            "assert not any(m.startswith('problems') for m in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr


def test_problems_lists_every_problem_module():
    """``topopt_problems.__all__`` names the problem modules (imported on ``from topopt_problems import *``)."""
    import topopt_problems
    folder = os.path.dirname(topopt_problems.__file__)
    found = sorted(name[:-3] for name in os.listdir(folder)
                   if name.endswith(".py") and not name.startswith("_"))
    assert sorted(topopt_problems.__all__) == found
