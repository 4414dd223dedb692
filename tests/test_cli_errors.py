"""Every command-line failure that is the user's input: a one-line usage error, exit 2.

One row per bad command line (issue 23): the command (a problem script's
``main`` or ``topopt``'s), the fragment its last stderr line must hold. Each
row runs in this process: anything but ``SystemExit(2)`` (a traceback) fails
it, and the error line is argparse's ``PROG: error: ...``. A few rows run as
real processes too (`test_bad_command_lines_in_a_process`), checking that
stderr holds no traceback.
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from topopt.cli import command

from problem_table import PROBLEMS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HUGE = "100000000"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A 2-D result folder (12 x 4 MBB, 2 evaluations) with its checkpoint, and bad files."""
    root = tmp_path_factory.mktemp("cli_errors")
    out = root / "mbb"
    PROBLEMS["mbb_beam"].main(["--nelx", "12", "--nely", "4", "--maxeval", "2", "--quiet",
                               "--out", str(out)])
    (root / "blocker").write_text("a file, not a folder\n")
    (root / "bare.npz").write_bytes((out / "checkpoint.npz").read_bytes())    # no run label
    (root / "text.npz").write_text("not an archive\n" * 10)
    bad = root / "bad_design"
    bad.mkdir()
    (bad / "result.json").write_text((out / "result.json").read_text())
    (bad / "design.npz").write_bytes((out / "design.npz").read_bytes()[:200])     # truncated
    short = root / "short_design"
    short.mkdir()
    (short / "result.json").write_text((out / "result.json").read_text())
    with np.load(out / "design.npz") as data:
        arrays = dict(data)
    arrays["x"] = arrays["x"][:-1]                                             # 47 for 48
    np.savez(short / "design.npz", **arrays)
    listed = root / "list_record"                   # result.json a JSON list
    listed.mkdir()
    (listed / "design.npz").write_bytes((out / "design.npz").read_bytes())
    (listed / "result.json").write_text("[1, 2]")
    other = root / "other_problem"                  # result.json of another problem
    other.mkdir()
    (other / "design.npz").write_bytes((out / "design.npz").read_bytes())
    (other / "result.json").write_text('{"setup": {"problem": "cantilever"}}')
    return {"ROOT": root, "OUT": out, "CK": out / "checkpoint.npz", "BLOCK": root / "blocker",
            "TEXT": root / "text.npz", "BARE": root / "bare.npz", "BAD": bad, "SHORT": short, "LIST": listed,
            "OTHER": other}


# (command, argv with {NAME} placeholders from `files`, fragment of the error line)
ROWS = [
    # --resume of another size / not a checkpoint / missing
    ("mbb_beam", "--nelx 12 --nely 5 --resume {BARE} --out {ROOT}/r1",
     "argument --resume: not a topopt checkpoint: {BARE} (written for 48 design variables; "
     "this problem has 60)"),
    ("cantilever", "--resume {BARE} --out {ROOT}/r2", "written for 48 design variables"),
    ("mbb_beam", "--nelx 12 --nely 5 --resume {CK} --out {ROOT}/r8",
     "(a checkpoint of mbb_beam --nelx 12 --nely 4; this run is mbb_beam --nelx 12 --nely 5"),
    ("mbb_beam", "--resume {TEXT} --out {ROOT}/r3", "not a topopt checkpoint: {TEXT}"),
    # ... of another problem or mesh of the same size (48 elements): its label says so
    ("mbb_beam", "--nelx 4 --nely 12 --resume {CK} --out {ROOT}/r6",
     "argument --resume: not a topopt checkpoint: {CK} (a checkpoint of mbb_beam --nelx 12 "
     "--nely 4; this run is mbb_beam --nelx 4 --nely 12: give the interrupted run's options)"),
    ("cantilever", "--nelx 12 --nely 4 --resume {CK} --out {ROOT}/r7",
     "a checkpoint of mbb_beam --nelx 12 --nely 4; this run is cantilever --nelx 12"),
    ("mbb_beam", "--resume {ROOT}/none.npz --out {ROOT}/r4", "no checkpoint at"),
    # options against the ranges their help states
    ("l_bracket", "--maxeval 1", "argument --maxeval: must be an integer >= 12 and <= 2147483647, got 1"),
    ("l_bracket", "--maxeval 11", "argument --maxeval: must be an integer >= 12 and <= 2147483647, got 11"),
    ("l_bracket", "--q 3", r"argument --q: must be a number in (0, 3), got 3.0"),
    ("l_bracket", "--n 12", "n must be a multiple of 5"),
    ("l_bracket", "--alpha 0", "argument --alpha: must be a number > 0 and <= 1, got 0.0"),
    ("mbb_beam", "--volfrac 1", "argument --volfrac: must lie in the open interval (0, 1)"),
    ("mbb_beam", "--nelx 1e8 --nely 1e8", "need an estimated 64.2 EiB (3.7 kB per dof in 2-D"),
    ("mbb_beam", "--nelx 2.5", "argument --nelx: '2.5' is not an integer"),
    ("mbb_beam", "--nelx 1e-3", "argument --nelx: '1e-3' is not an integer"),
    ("mbb_beam", "--nelx inf", "argument --nelx: 'inf' is not an integer"),
    ("cantilever", "--maxeval 0", "argument --maxeval: must be an integer >= 1 and <= 2147483647, got 0"),
    ("cantilever", "--maxeval 3000000000", "must be an integer >= 1 and <= 2147483647"),
    ("em_focus", "--h 0", "argument --h: must be a number > 0 and <= 10, got 0.0"),
    ("robust_inverter", "--per_beta 0", "argument --per_beta: must be an integer >= 1"),
    ("reliable_bracket", "--n 7", "argument --n: must be an even integer >= 4, got 7"),
    ("arch", "--weight 0", "argument --weight: must be a number > 0, got 0.0"),
    # combinations the converters cannot see: the script's check, before any work
    ("heat_sink", "--nelx 3 --nely 3", "--nely 3: the heat sink"),
    ("eigen_beam", "--nelx 2 --nely 1", "--nelx 2 --nely 1: 4 free dofs"),
    ("eigen_beam", "--supports simple --nely 5", "give an even nely"),
    ("robust_cantilever", "--sigma_x 0 --sigma_y 0", "--sigma_x 0 --sigma_y 0: no uncertainty"),
    # a model's refusal before the first evaluation (no script check): a usage error too
    ("cantilever_hole", "--nelx 1 --nely 1", "nothing is left to design"),
    # sizes that cannot fit in memory: refused before allocating, naming estimate and limit
    ("mbb_beam", f"--nelx {HUGE} --nely {HUGE}",
     f"--nelx {HUGE} --nely {HUGE} --solver auto: 2e+16 degrees of freedom on a direct solver "
     "(the assembled matrix and its factor) need an estimated"),
    ("cantilever3d", "--nelx 100000 --nely 10000 --nelz 10000", "of physical memory here"),
    ("heat_sink", f"--nelx {HUGE} --nely {HUGE}", "degrees of freedom on a direct solver"),
    ("l_bracket", "--n 10000000", "--n 10000000 --solver auto: "),
    ("reliable_bracket", "--n 10000000", "--n 10000000 --solver auto: "),
    ("em_focus", "--h 0.00001", "--h 1e-05 --solver auto: "),
    # on the path the run takes: the mesh path refused, the voxel path named as the fix
    ("cantilever3d", "--nelx 324 --nely 162 --nelz 162 --solver mg-cg",
     "--solver mg-cg: 2.59e+07 degrees of freedom on multigrid CG on the assembled matrix "
     "(mg-cg) need an estimated"),
    ("cantilever3d", "--nelx 324 --nely 162 --nelz 162 --solver cholmod", "; --solver voxel "
     "needs an estimated"),
    # held-out battery, round 2: integers beyond int64 (were an OverflowError traceback in the
    # memory check, or accepted), a size beyond float range, samples beyond memory
    ("mbb_beam", "--nelx 1e400", "argument --nelx: '1e400' is too large: an integer option is at "
     "most 9223372036854775807"),
    ("cantilever3d", "--nelz 1e400", "argument --nelz: '1e400' is too large"),
    ("robust_inverter", "--per_beta 1e400", "argument --per_beta: '1e400' is too large"),
    ("robust_cantilever", "--seed 1e400", "argument --seed: '1e400' is too large"),
    ("reliable_bracket", "--samples 1e400", "argument --samples: '1e400' is too large"),
    ("em_focus", "--h 1e-320", "--h 1e-320 --solver auto: inf degrees of freedom on a direct "
     "solver (the assembled matrix and its factor) need an estimated inf"),
    ("robust_cantilever", "--samples 1e15",
     "--samples 1000000000000000: 1e+15 draws of 2 variables need"),
    # unwritable paths
    ("mbb_beam", "--out {BLOCK}/out", "--out: cannot write"),
    ("mbb_beam", "--out {BLOCK}", "is a file; expected a folder"),
    ("mbb_beam", "--out {ROOT}/r5 --checkpoint {BLOCK}/ck.npz", "--checkpoint: cannot write"),
    ("topopt", "show {OUT} --png {BLOCK}/x.png", "argument --png: cannot write"),
    ("topopt", "export {OUT} --vtu {BLOCK}/x.vtu", "argument --vtu: cannot write"),
    ("topopt", "export {OUT} --stl {BLOCK}/sub/", "argument --stl: cannot write"),
    # result folders and design files
    ("topopt", "export {OUT} --stl {ROOT}/s.stl", "argument --stl: an STL needs a grid of hexa"),
    ("topopt", "export {OUT}", "give --vtu and/or --stl"),
    ("topopt", "show {BAD} --png {ROOT}/b.png", "not a topopt design: {BAD}/design.npz ("),
    ("topopt", "export {SHORT} --vtu", "'x' has 47 values for a mesh of 48 elements"),
    ("topopt", "show {LIST} --png {ROOT}/l.png", "holds a JSON list, not the record of a run"),
    ("topopt", "show {OTHER} --png {ROOT}/o.png",
     "a design of problem 'mbb_beam'; expected 'cantilever'"),
    ("topopt", "show {ROOT}/none", "is not a folder"),
    ("topopt", "show {ROOT}", "holds no result"),
    ("topopt", "run nope", "unknown problem 'nope'"),
    ("topopt", "run l_bracket --q 3", "argument --q: must be a number in (0, 3)"),
    ("topopt", "frobnicate", "invalid choice: 'frobnicate'"),
]


@pytest.mark.parametrize("flag", ["--checkpoint", "--resume"])
@pytest.mark.parametrize("value", ["", " "])
def test_empty_paths_are_usage_errors(files, capsys, flag, value):
    """An empty --checkpoint was taken as the default (held-out battery, round 2)."""
    with pytest.raises(SystemExit) as info:
        PROBLEMS["mbb_beam"].main([flag, value, "--out", str(files["ROOT"] / "unused")])
    assert info.value.code == 2
    assert f"error: {flag} must be a file path, got {value!r}" in capsys.readouterr().err


def _fill(text, files):
    return re.sub(r"\{(\w+)\}", lambda m: str(files[m.group(1)]), text)


def _call(name, argv):
    if name == "topopt":
        return command.main(argv)
    return PROBLEMS[name].main(argv)


@pytest.mark.parametrize("name,argv,fragment", ROWS,
                         ids=[f"{r[0]} {r[1]}"[:60] for r in ROWS])
def test_bad_command_line_is_a_usage_error(files, capsys, monkeypatch, name, argv, fragment):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    argv = _fill(argv, files).split()
    if name != "topopt" and "--out" not in argv:
        argv += ["--out", str(files["ROOT"] / "unused")]
    with pytest.raises(SystemExit) as info:          # anything else: a traceback
        _call(name, argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2, err
    assert re.fullmatch(r"\S.*: error: .+", err[-1]), err
    assert _fill(fragment, files) in err[-1], err[-1]


# as a user types them: a process, its stderr without a traceback
PROCESS_ROWS = [
    (["problems/mbb_beam.py", "--nelx", "12", "--nely", "5", "--resume", "{BARE}"],
     "this problem has 60"),
    (["problems/l_bracket.py", "--q", "3"], "in (0, 3)"),
    (["problems/mbb_beam.py", "--nelx", HUGE, "--nely", HUGE], "physical memory"),
    (["-m", "topopt.cli.command", "show", "{OUT}", "--png", "{BLOCK}/x.png"], "cannot write"),
]


@pytest.mark.parametrize("argv,fragment", PROCESS_ROWS, ids=[r[0][0] for r in PROCESS_ROWS])
def test_bad_command_lines_in_a_process(files, tmp_path, argv, fragment):
    argv = [_fill(a, files) for a in argv]
    if argv[0].endswith(".py"):
        argv[0] = os.path.join(ROOT, argv[0])
    env = dict(os.environ, PYTHONPATH=ROOT, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert fragment in proc.stderr.strip().splitlines()[-1]
