"""The scripts' memory check follows the solver path the run takes (issue 35).

Every problem command that the docs, the README and the scripts' docstrings
quote is accepted as written by ``--dry-run`` (which runs the checks of a real
run: options, output paths, the size on the run's solver path, and stops
before any allocation), on a machine of the docs' 24 GB; each script is
accepted at its estimate's own boundary and refused one byte below it, with
the path named; and for every path a size just under the limit is accepted,
one just over refused, naming the path and the other ``--solver`` that fits.
"""

import glob
import math
import os
import re

import pytest

from topopt.cli import GRID_SOLVERS, grid_dofs, size_line
from topopt.fem import budget
from topopt.fem.budget import BYTES_PER_DOF, PATH_NAMES, MeshTooLargeError, check_dofs
from topopt.fem.solvers import available_solvers

from problem_table import PROBLEMS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GB24 = 24 * 10**9          # the machine of the docs' measurements: 2 cores, 24 GB

COMMAND = re.compile(r"(?:python problems/(\w+)\.py|topopt run (\w+))"
                     r"((?:[ \t]+\[?--[\w-]+(?:[ =](?!--)[^\s\]`)]+)?\]?)*)")


def quoted_commands():
    """``(name, argv, where)`` of every problem command in docs/, README.md, the scripts."""
    files = sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    files += [os.path.join(ROOT, "README.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "problems", "*.py")))
    found = {}
    for path in files:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for m in COMMAND.finditer(text):
            name = m.group(1) or m.group(2)
            # a usage line's [...] groups are options to pick from: each one on its own
            groups = m.group(3).split("]")
            for argv in (group.replace("[", " ").split() for group in groups):
                if name in PROBLEMS and "--help" not in argv and (argv or len(groups) == 1):
                    found.setdefault((name, tuple(argv)), os.path.relpath(path, ROOT))
    return [(name, list(argv), where) for (name, argv), where in found.items()]


QUOTED = quoted_commands()


def test_the_headline_command_is_quoted():
    """The 26 M-dof command of the grids notes is among the commands checked."""
    argv = ["--nelx", "324", "--nely", "162", "--nelz", "162"]
    assert any(name == "cantilever3d" and argv == a[:6] for name, a, _ in QUOTED)
    assert len({name for name, _, _ in QUOTED}) == len(PROBLEMS)      # every script


def _dry_run(name, argv, out, capsys):
    """The script's ``main(argv + --dry-run)``: its one line, or SystemExit(2)'s error line."""
    argv = list(argv)
    if "--out" in argv:                                 # written as quoted, but not here
        i = argv.index("--out")
        del argv[i:i + 2]
    PROBLEMS[name].main(argv + ["--out", str(out), "--dry-run"])
    return capsys.readouterr().out.strip().splitlines()[-1]


@pytest.mark.parametrize("name,argv,where", QUOTED, ids=[f"{q[0]} {' '.join(q[1])}"[:70]
                                                         for q in QUOTED])
def test_quoted_commands_are_accepted_as_written(tmp_path, capsys, monkeypatch, name, argv,
                                                 where):
    monkeypatch.setattr(budget, "physical_memory", lambda: GB24)
    solver = argv[argv.index("--solver") + 1] if "--solver" in argv else "auto"
    if solver in available_solvers(iterative=True) + ["auto", "voxel"]:
        line = _dry_run(name, argv, tmp_path / "out", capsys)
    else:            # PETSc not installed here (the script says so first): its size check
        sizes = {k.lstrip("-"): int(v) for k, v in zip(argv, argv[1:]) if k.startswith("--nel")}
        line = size_line(grid_dofs, dict(sizes, solver=solver), GRID_SOLVERS)
        line += "; --dry-run: not run"
        assert f"on {PATH_NAMES['petsc']}" in line, line
    assert line.endswith("; --dry-run: not run"), line
    found = re.search(r"an estimated ([\d.e+]+) GiB of the ([\d.]+) GiB here", line)
    if found:                                               # a size the script estimates
        need, have = float(found.group(1)), float(found.group(2))
        assert have == float(f"{GB24 / 2**30:.3g}") and need <= have, line


@pytest.mark.parametrize("argv,path,gib", [
    # 25.9 M dofs: the voxel path, with solver auto or voxel; 231 B per dof measured
    (["--nelx", "324", "--nely", "162", "--nelz", "162"], "the voxel path", 5.57),
    (["--nelx", "324", "--nely", "162", "--nelz", "162", "--solver", "voxel"],
     "the voxel path", 5.57),
    # the same command through `topopt run`
    (["run", "cantilever3d", "--nelx", "324", "--nely", "162", "--nelz", "162"],
     "the voxel path", 5.57),
])
def test_the_headline_scale_is_accepted(tmp_path, capsys, monkeypatch, argv, path, gib):
    monkeypatch.setattr(budget, "physical_memory", lambda: GB24)
    if argv[0] == "run":
        from topopt.cli import command
        command.main(argv + ["--out", str(tmp_path / "o"), "--dry-run"])
        line = capsys.readouterr().out.strip().splitlines()[-1]
    else:
        line = _dry_run("cantilever3d", argv, tmp_path / "o", capsys)
    assert f"25904775 dofs in 3-D on {path}" in line, line
    n = 3 * 325 * 163 * 163
    assert f"an estimated {n * BYTES_PER_DOF['voxel'][3] / 2**30:.3g} GiB" in line
    assert abs(n * BYTES_PER_DOF["voxel"][3] / 2**30 - gib) < 0.6       # 5-6 GiB: it fits


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_each_script_is_accepted_at_its_boundary(tmp_path, capsys, monkeypatch, name):
    """Accepted with the physical memory at its own estimate, refused 1 byte below."""
    estimates = []
    inner = budget.estimate_bytes

    def spy(*args, **kwargs):
        estimates.append(inner(*args, **kwargs))
        return estimates[-1]
    monkeypatch.setattr(budget, "estimate_bytes", spy)
    monkeypatch.setattr(budget, "physical_memory", lambda: GB24)
    _dry_run(name, [], tmp_path / "a", capsys)
    if not estimates:
        pytest.skip(f"{name} has no size estimate")     # (mesh_bracket: a mesh file)
    need = estimates[0]
    monkeypatch.setattr(budget, "physical_memory", lambda: math.ceil(need))
    assert _dry_run(name, [], tmp_path / "b", capsys).endswith("not run")
    monkeypatch.setattr(budget, "physical_memory", lambda: math.floor(need) - 1)
    with pytest.raises(SystemExit) as info:
        _dry_run(name, [], tmp_path / "c", capsys)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "degrees of freedom on " in err and "more than the" in err, err
    assert any(p in err for p in PATH_NAMES.values()), err


PATH_ROWS = [(path, dim) for path in BYTES_PER_DOF for dim in sorted(BYTES_PER_DOF[path])]


@pytest.mark.parametrize("path,dim", PATH_ROWS)
def test_each_path_refuses_only_above_the_limit(path, dim):
    """Just under the limit: the estimate; just over: refused, naming the path and per dof."""
    per_dof = BYTES_PER_DOF[path][dim]
    limit = 16 * 2**30
    n = limit / per_dof                                  # the boundary: need == limit
    assert check_dofs(n * (1 - 1e-6), dim, "the mesh", limit=limit, path=path) < limit
    with pytest.raises(MeshTooLargeError) as info:
        check_dofs(n * (1 + 1e-6), dim, "the mesh", limit=limit, path=path,
                   others=[("voxel", "--solver voxel")])
    message = str(info.value)
    assert f"on {PATH_NAMES[path]} need an estimated 16 GiB" in message, message
    assert f" per dof in {dim}-D, measured" in message
    if path != "voxel":                                  # the voxel path fits: it is the fix
        assert message.endswith(f"--solver voxel needs an estimated "
                                f"{budget._bytes(n * BYTES_PER_DOF['voxel'][dim])}"), message
    else:
        assert message.endswith("dofs fit on this path here"), message


CLI_SOLVERS = [s for s in GRID_SOLVERS if s == "voxel" or s in available_solvers(iterative=True)]


@pytest.mark.parametrize("solver", CLI_SOLVERS)
@pytest.mark.parametrize("name,sizes", [("cantilever3d", ["--nelx", "40", "--nely", "20",
                                                          "--nelz", "20"]),
                                        ("mbb_beam", ["--nelx", "120", "--nely", "40"])])
def test_script_refuses_just_over_and_names_the_fix(tmp_path, capsys, monkeypatch, solver, name,
                                                   sizes):
    """Each --solver's path in the script's check: the limit at its estimate +- 1e-6."""
    if name == "mbb_beam" and solver == "voxel":
        pytest.skip("mbb_beam has no voxel path (its --solver has no such choice)")
    kwargs = {k.lstrip("-"): int(v) for k, v in zip(sizes[::2], sizes[1::2])}
    n, dim = grid_dofs(kwargs)
    path = budget.run_path(solver, dim, n, grid=name == "cantilever3d")
    need = budget.estimate_bytes(n, dim, path)           # these sizes coarsen: no factor
    argv = sizes + ["--solver", solver]
    monkeypatch.setattr(budget, "physical_memory", lambda: int(need * (1 + 1e-6)))
    line = _dry_run(name, argv, tmp_path / "a", capsys)
    assert f"{n} dofs in {dim}-D on " in line and "not run" in line
    monkeypatch.setattr(budget, "physical_memory", lambda: int(need * (1 - 1e-6)))
    with pytest.raises(SystemExit):
        _dry_run(name, argv, tmp_path / "b", capsys)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"on {PATH_NAMES[path]} need an estimated" in err, err
    if path not in ("voxel", "mg-cg") and name == "cantilever3d":
        assert "--solver voxel needs an estimated" in err, err


@pytest.mark.parametrize("shape,solver", [((12, 6, 6), "cholmod"), ((20, 10, 10), "mg-cg"),
                                          ((34, 16, 16), "voxel")])
def test_auto_path_is_the_runs_own(tmp_path, shape, solver):
    """The path the check assumes for --solver auto is the one cantilever3d's run takes."""
    n, dim = grid_dofs(dict(zip(("nelx", "nely", "nelz"), shape)))
    path = budget.run_path("auto", dim, n, grid=True)
    result = PROBLEMS["cantilever3d"].run(*shape, maxeval=1, out=str(tmp_path))
    assert result["solver"] == solver and budget.PATHS[solver] == path


def test_a_size_the_voxel_path_cannot_hold_says_how_many_fit(tmp_path, capsys, monkeypatch):
    """960 x 480 x 480 (6.7e8 dofs) coarsens (by 4, 2, 2, ...); beyond memory all the same."""
    monkeypatch.setattr(budget, "physical_memory", lambda: GB24)
    with pytest.raises(SystemExit):
        _dry_run("cantilever3d", ["--nelx", "960", "--nely", "480", "--nelz", "480"],
                 tmp_path, capsys)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    n = 3 * 961 * 481 * 481
    assert f"--solver auto: {n:.3g} degrees of freedom on the matrix-free voxel path" in err
    assert err.endswith(f"about {GB24 / BYTES_PER_DOF['voxel'][3]:.2g} dofs fit on this path "
                        "here"), err


def test_a_grid_that_does_not_coarsen_says_so(tmp_path, capsys, monkeypatch):
    """1000 x 500 x 500 coarsens to 250 x 125 x 125 only (125 = 5**3): its factor counts."""
    monkeypatch.setattr(budget, "physical_memory", lambda: GB24)
    with pytest.raises(SystemExit):
        _dry_run("cantilever3d", ["--nelx", "1000", "--nely", "500", "--nelz", "500"],
                 tmp_path, capsys)
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "for the direct factor of its coarsest multigrid level, 250 x 125 x 125" in err, err
    assert err.endswith("use element counts that coarsen by 4, 3 or 2 down to a small grid "
                        "(multiples of 8 or 12)"), err
