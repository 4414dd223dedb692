"""Issue 12: one command line for every problem script, one result type, no import side effects."""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from topopt import cli
from topopt.cli import script
from topopt.cli.options import MAXEVAL_LIMIT
from topopt.io.result import RUN_KEYS, RunResult

from topopt_problems import mbb_beam
from problem_table import NO_SOLVER, PROBLEMS, SEEDED
from script_runs import installed_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Stop(Exception):
    """Raised by a stand-in `run` once it has seen its arguments."""


def _capture(monkeypatch, module):
    seen = {}

    def run(**kwargs):
        seen.update(kwargs)
        raise _Stop

    monkeypatch.setattr(module, "run", run)
    return seen


# ---------------------------------------------------------------- converters

@pytest.mark.parametrize("convert, text, value", [
    (cli.positive_int, "3", 3), (cli.positive_float, "0.5", 0.5), (cli.open_unit, "0.3", 0.3),
    (cli.non_negative_int, "0", 0), (cli.at_least(4, int, even=True), "6", 6),
    (cli.at_least(1.0, strict=True), "1.5", 1.5), (cli.at_least(0.0, strict=True, high=10.0),
                                                  "10", 10.0),
])
def test_converters_accept_their_range(convert, text, value):
    assert convert(text) == value and type(convert(text)) is type(value)


@pytest.mark.parametrize("convert, text, message", [
    (cli.positive_int, "0", "integer >= 1, got 0"), (cli.positive_int, "2.5", "not an integer"),
    (cli.positive_float, "0", "number > 0"), (cli.positive_float, "nan", "not a finite number"),
    (cli.positive_float, "inf", "not a finite number"),
    (cli.open_unit, "1", r"open interval \(0, 1\)"), (cli.open_unit, "0", "open interval"),
    (cli.non_negative_int, "-1", "integer >= 0"),
    (cli.at_least(4, int, even=True), "5", "even integer >= 4, got 5"),
    (cli.at_least(4, int, even=True), "2", "even integer >= 4, got 2"),
    (cli.at_least(1.0, strict=True), "1", "number > 1, got 1.0"),
    (cli.at_least(0.0, strict=True, high=10.0), "10.5", "> 0 and <= 10"),
])
def test_converters_reject_outside_their_range(convert, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        convert(text)


# ---------------------------------------------------------------- the scripts' options

@pytest.mark.parametrize("name", PROBLEMS)
def test_every_script_takes_the_shared_options(tmp_path, monkeypatch, name):
    module = PROBLEMS[name]
    solver = [] if name in NO_SOLVER else ["--solver", "superlu"]
    seen = _capture(monkeypatch, module)
    ck = tmp_path / "ck" / "run.npz"
    argv = ["--out", str(tmp_path / "out"), "--maxeval", "13", *solver,
            "--checkpoint", str(ck), "--quiet"] + (["--seed", "7"] if name in SEEDED else [])
    with pytest.raises(_Stop):
        module.main(argv)
    assert (seen["out"], seen["maxeval"], seen.get("solver", "superlu" if solver else None)) \
        == (str(tmp_path / "out"), 13, "superlu" if solver else None)
    assert (seen["checkpoint"], seen["resume"], seen["verbose"]) == (str(ck), None, False)
    assert seen.get("seed") == (7 if name in SEEDED else None)


@pytest.mark.parametrize("name", PROBLEMS)
def test_every_script_shows_its_defaults(capsys, name):
    with pytest.raises(SystemExit) as info:
        PROBLEMS[name].main(["--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())          # argparse wraps lines
    defaults = {"--out": os.path.join("results", name), "--checkpoint": "OUT/checkpoint.npz"}
    for option in PROBLEMS[name].OPTIONS:
        if option.type is not bool:
            defaults[f"--{option.name}"] = option.default
    for option, default in defaults.items():
        assert option in text and f"(default: {default})" in text, (option, default)
    assert ("--seed" in text) == (name in SEEDED)


BAD_SHARED = [
    ("--maxeval", "0", r"argument --maxeval: must be an integer >= \d+ and <= 2147483647, got 0"),
    ("--maxeval", "ten", "argument --maxeval: 'ten' is not an integer"),
    ("--solver", "gauss", "argument --solver: invalid choice: 'gauss'"),
]
BAD_COMPLIANCE = [
    ("--volfrac", "1.2", r"argument --volfrac: must lie in the open interval \(0, 1\), got 1.2"),
    ("--rmin", "-1", "argument --rmin: must be a number > 0, got -1.0"),
    ("--nelx", "0", "argument --nelx: must be an integer >= 1, got 0"),
    ("--penal", "0.5", "argument --penal: must be a number >= 1, got 0.5"),
    ("--filter", "gauss", "argument --filter: invalid choice: 'gauss'"),
]
BAD = {
    "mbb_beam": BAD_COMPLIANCE, "cantilever": BAD_COMPLIANCE,
    "cantilever3d": BAD_COMPLIANCE + [("--nelz", "2.5", "argument --nelz: '2.5' is not an "
                                       "integer")],
    "em_focus": [("--h", "0", r"argument --h: must be a number > 0 and <= 10, got 0.0"),
                 ("--h", "12", r"argument --h: must be a number > 0 and <= 10, got 12.0"),
                 ("--solver", "mg-cg", "argument --solver: invalid choice: 'mg-cg'"),
                 ("--subcell --verify", "", "--verify needs one density per element")],
    "reliable_bracket": [("--n", "5", "argument --n: must be an even integer >= 4, got 5"),
                         ("--volfrac", "0", "argument --volfrac: must lie in the open"),
                         ("--allow", "1", "argument --allow: must be a number > 1, got 1.0"),
                         ("--samples", "999", "argument --samples: must be an integer >= 1000"),
                         ("--seed", "-1", "argument --seed: must be an integer >= 0, got -1"),
                         ("--method", "mc", "argument --method: invalid choice: 'mc'")],
    "eigen_beam": [("--mass", "0", "argument --mass: must be a number > 0"),
                   ("--supports", "free", "invalid choice: 'free'")],
}
CASES = [(name, option, value, message) for name in PROBLEMS
         for option, value, message in BAD_SHARED + BAD.get(name, [])
         if not (name in NO_SOLVER and option == "--solver")]


@pytest.mark.parametrize("name, option, value, message", CASES)
def test_every_script_rejects_a_bad_value_with_a_usage_error(tmp_path, monkeypatch, capsys,
                                                             name, option, value, message):
    seen = _capture(monkeypatch, PROBLEMS[name])
    args = [*option.split(), value] if value else option.split()
    with pytest.raises(SystemExit) as info:
        PROBLEMS[name].main(["--out", str(tmp_path / "out"), *args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    usage, last = err.strip().splitlines()[0], err.strip().splitlines()[-1]
    assert usage.startswith("usage: ") and re.fullmatch(rf"\S+: error: .*{message}.*", last), err
    assert seen == {}                                  # nothing ran


@pytest.mark.parametrize("name", sorted(set(PROBLEMS) - NO_SOLVER))
def test_a_solver_that_is_not_installed_is_a_usage_error(tmp_path, monkeypatch, capsys, name):
    from topopt import fem
    seen = _capture(monkeypatch, PROBLEMS[name])
    monkeypatch.setattr(fem, "available_solvers", lambda iterative=False: ["superlu"])
    with pytest.raises(SystemExit) as info:
        PROBLEMS[name].main(["--out", str(tmp_path / "out"), "--solver", "cholmod"])
    assert info.value.code == 2 and seen == {}
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "error: argument --solver: 'cholmod' is not installed here; installed: superlu")
    assert not (tmp_path / "out").exists()             # before any file is touched


@pytest.mark.parametrize("name", PROBLEMS)
def test_a_script_run_as_a_file_reports_a_bad_value_in_one_line(tmp_path, name):
    """``python problems/<name>.py --maxeval 0``: exit status 2, argparse's usage and one
    error line, no traceback; the script imports the `topopt_problems` package as a file."""
    env = installed_env() | {"MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "problems", f"{name}.py"),
                           "--out", str(tmp_path / "out"), "--maxeval", "0"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    least = len(PROBLEMS[name].BETAS) if name == "l_bracket" else 1     # one per block
    assert proc.stderr.strip().splitlines()[-1] == \
        f"{name}.py: error: argument --maxeval: must be an integer >= {least} and <= " \
        f"{MAXEVAL_LIMIT}, got 0"


# ---------------------------------------------------------------- the result type

def test_run_result_reads_run_fields_metrics_and_designs():
    x = np.array([0.2, 0.8])
    r = RunResult("interrupted", "SIGINT", 4, "ck.npz", "--resume ck.npz", {"c": 1.5},
                  x=x, x_phys=x, history=[{"objective": 1.0}] * 4, arrays={"x_other": -x})
    assert [r[k] for k in RUN_KEYS] == ["interrupted", "SIGINT", 4, "ck.npz",
                                        "--resume ck.npz", None, None]
    assert r["c"] == 1.5 and r["x"] is x and r["x_other"][0] == -0.2
    assert r.summary() == {**r.record(), "c": 1.5}
    assert json.loads(json.dumps(r.summary())) == r.summary()       # no arrays
    assert "c" in r and "volume" not in r and r.get("volume") is None
    with pytest.raises(KeyError, match="'volume' is not a field"):
        r["volume"]


@pytest.mark.parametrize("metrics, x_phys, grey, verdict", [
    ({}, np.full(4, 0.5), 1.0, "grey"),                          # uniform 0.5: 4 x (1 - x) = 1
    ({}, np.array([0.0, 1.0, 1.0, 0.0]), 0.0, "ok"),
    ({"grey_level": 0.42}, np.full(4, 0.5), 0.42, "ok"),         # the problem's own figure
    ({}, np.array([0.0, 2.0]), None, "ok"),                      # not a density: no grey level
    ({}, None, None, "ok"),
])
def test_run_result_adds_the_physical_grey_level_to_the_ending(metrics, x_phys, grey, verdict):
    from topopt.optimize.ending import ending
    record = {"status": "maxeval_reached", "signal": None, "evaluations": 3,
              "checkpoint": None, "resume": None, "verdict": "ok",
              "ending": ending([-0.1], 0.5, 1.0, [0.0])}
    r = RunResult.from_record(record, metrics, x_phys=x_phys)
    assert r.ending["grey_level"] == grey and r.verdict == r.ending["verdict"] == verdict
    assert r.summary()["verdict"] == verdict
    assert r.ending_line() == ("" if verdict == "ok" else
                               "ended grey: grey level 1.000 (> 0.5)")
    infeasible = dict(record, ending=ending([0.2], 0.5, 1.0, [0.0]))
    assert RunResult.from_record(infeasible, metrics, x_phys=x_phys).verdict == \
        ("infeasible, grey" if verdict == "grey" else "infeasible")


# ---------------------------------------------------------------- allocator tuning

def _python(code, **env):
    full = {k: v for k, v in os.environ.items() if k != "TOPOPT_MALLOC_TUNING"} | env
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full, timeout=120)


# count the calls of glibc's mallopt made through ctypes while `body` runs
SPY = """
import ctypes
calls = []
class Spy:
    def __init__(self, lib): self._lib = lib
    def __getattr__(self, name):
        f = getattr(self._lib, name)
        return (lambda *a: calls.append(a) or f(*a)) if name == "mallopt" else f
CDLL = ctypes.CDLL
ctypes.CDLL = lambda *a, **k: Spy(CDLL(*a, **k))
{body}
import topopt._memory as m
print(len(calls), m.TUNED)
"""


def test_import_leaves_malloc_alone():
    """Importing the library, its problems and its command line calls no mallopt."""
    proc = _python(SPY.format(body="import topopt, topopt.cli, topopt.formulations.compliance, topopt_problems.mbb_beam"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "False"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_tune_malloc_is_an_explicit_call_and_can_be_switched_off():
    proc = _python(SPY.format(body="import topopt; assert topopt.tune_malloc(); "
                                   "topopt.tune_malloc()"))
    assert proc.stdout.split() == ["2", "True"], proc.stderr      # two settings, once
    proc = _python(SPY.format(body="import topopt; assert not topopt.tune_malloc()"),
                   TOPOPT_MALLOC_TUNING="0")
    assert proc.stdout.split() == ["0", "False"], proc.stderr


def test_a_script_tunes_malloc_before_its_run(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(script, "tune_malloc", lambda: calls.append(1))
    seen = _capture(monkeypatch, mbb_beam)
    with pytest.raises(_Stop):
        mbb_beam.main(["--out", str(tmp_path), "--quiet"])
    assert calls == [1] and seen["out"] == str(tmp_path)


@pytest.mark.parametrize("kwargs, message", [
    (dict(mmap_threshold=0), "mmap_threshold"), (dict(trim_threshold=2**31), "trim_threshold"),
    (dict(mmap_threshold=1.5), "mmap_threshold"),
])
def test_retain_freed_memory_rejects_bad_thresholds(kwargs, message):
    from topopt._memory import retain_freed_memory
    with pytest.raises(ValueError, match=message):
        retain_freed_memory(**kwargs)


# ---------------------------------------------------------------- help and range agree
# a range stated in words: "< 3", ">= 1", "in (0, 1)", "in [0, 1]", "between"
RANGE_WORDS = re.compile(r"(<=|>=|<|>|\bin [(\[]\s*-?[\d.]+\s*,|\bbetween -?\d|\bat least\b|"
                         r"\bat most\b|\bpositive\b)")


def _options(name):
    """(flag, converter, help text, default) of every numeric option of script `name`."""
    module = PROBLEMS[name]
    parser = module_parser(module)
    rows = []
    for action in parser._actions:
        if action.type is not None and cli.accepts(action.type) is not None:
            rows.append((action.option_strings[-1], action.type, action.help, action.default))
    return rows


def module_parser(module):
    """The script's parser, as `cli.main` builds it (its --help without running)."""
    seen = {}
    real = script.build_parser             # where cli.main looks it up

    def spy(*args, **kwargs):
        seen["parser"] = real(*args, **kwargs)
        raise _Stop
    try:
        script.build_parser = spy
        with pytest.raises(_Stop):
            module.main([])
    finally:
        script.build_parser = real
    return seen["parser"]


def _just_outside(value, kind, up):
    if kind is int:
        return value + (1 if up else -1)
    return float(np.nextafter(value, np.inf if up else -np.inf))


@pytest.mark.parametrize("name", PROBLEMS)
def test_help_states_no_range_of_its_own(name):
    """The range is the converter's, appended to the help: the words cannot disagree."""
    module = PROBLEMS[name]
    for option in module.OPTIONS:
        assert not RANGE_WORDS.search(option.help), (name, option.name, option.help)


@pytest.mark.parametrize("name", PROBLEMS)
def test_every_option_accepts_what_its_help_says(name):
    """Walk every numeric option: the help names the converter's range, the default lies
    in it, each bound is accepted unless strict, and just beyond it is a usage error."""
    rows = _options(name)
    assert any(flag == "--maxeval" for flag, *_ in rows) or name == "robust_inverter"
    for flag, convert, text, default in rows:
        b = convert.bounds
        assert f"; {b.phrase()} (default: " in text, (flag, text)
        assert b.holds(default), (flag, default)
        for bound, strict, up in ((b.low, b.low_strict, False), (b.high, b.high_strict, True)):
            if bound is None:
                continue
            value = b.kind(bound)
            if b.even and value % 2:
                continue
            if strict:
                with pytest.raises(argparse.ArgumentTypeError):
                    convert(repr(value))
            else:
                assert convert(repr(value)) == value
            with pytest.raises(argparse.ArgumentTypeError, match="^must "):
                convert(repr(_just_outside(value, b.kind, up)))


def test_l_bracket_q_below_3_and_maxeval_one_per_block():
    from topopt_problems import l_bracket
    rows = {flag: convert for flag, convert, *_ in _options("l_bracket")}
    with pytest.raises(argparse.ArgumentTypeError, match=r"in \(0, 3\), got 3.0"):
        rows["--q"]("3")
    assert rows["--q"]("2.99") == 2.99
    with pytest.raises(argparse.ArgumentTypeError, match=f"integer >= {len(l_bracket.BETAS)} "):
        rows["--maxeval"](str(len(l_bracket.BETAS) - 1))


# how each script counts --maxeval, as its help says (issue 23: em_focus --maxeval 5 made 15)
MAXEVAL_COUNTS = {"em_focus": "per stage; 3 stages", "eigen_beam": "per stage; 3 stages",
                  "reliable_bracket": "of each design", "robust_cantilever": "of each design",
                  "l_bracket": "of the 12 beta blocks together",
                  "robust_inverter": "of the five stages together",
                  "dynamic_beam": "of the dynamic design",
                  "buckling_column": "per stage; 5 stages",
                  "em_robust": "per stage and phase"}


@pytest.mark.parametrize("name", PROBLEMS)
def test_maxeval_help_says_how_the_script_counts_it(name):
    text = {flag: help for flag, _, help, _ in _options(name)}["--maxeval"]
    assert MAXEVAL_COUNTS.get(name, "MMA evaluations in all") in text, text
