"""The scripts by kind and their measuring harness (issue 40).

Every benchmark of ``scripts/benchmarks/`` runs at its smallest size (``--smallest``, a
few seconds each, its JSON into ``tmp_path``, never into ``results/``) and its JSON
carries the machine, the commit and the statement of the spread; the harness's own
figures are checked on inputs whose answers are known.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "scripts", "benchmarks")
sys.path.insert(0, BENCHMARKS)

import harness  # noqa: E402
from benchmark_records import check_record  # noqa: E402

#: script -> its further arguments at the smallest size
SMALLEST = {
    "benchmark.py": [], "benchmark_ad.py": [], "benchmark_flow.py": [],
    "benchmark_grid_filters.py": [], "benchmark_import.py": [], "benchmark_iterative.py": [],
    "benchmark_kernel_variants.py": [], "benchmark_memory.py": ["--runs", "{tmp}"],
    "benchmark_mma.py": [], "benchmark_mma_scale.py": [], "benchmark_multistart.py": [],
    "benchmark_orthant.py": [], "benchmark_precision.py": [],
    "benchmark_transient_memory.py": [], "benchmark_voxel_outputs.py": [],
    "benchmark_workers.py": [], "compare_mma.py": [], "petsc_extrapolate.py": [],
    "petsc_scaling.py": [], "pymoto_mbb.py": [], "toip_compare.py": ["--toip", "{toip}"],
    "benchmark_slabs.py": [],
}
#: run at their smallest size by the tests named
ELSEWHERE = {"benchmark_scale.py": "test_benchmark_scale.py::test_smallest",
             "benchmark_auto.py": "test_benchmark.py::test_auto_quick",
             "benchmark_convergence.py": "test_benchmark.py::test_convergence_quick",
             "benchmark_reanalysis.py": "test_benchmark.py::test_reanalysis_quick"}
#: not benchmarks: the harness and benchmark_scale's helpers (their doctests)
HELPERS = {"harness.py", "benchmark_scale_parts.py"}
#: one measurement per figure (a run's history, a peak): their record says so
ONE_RUN = {"benchmark_memory.py", "compare_mma.py", "benchmark_slabs.py"}


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def test_every_benchmark_is_run_by_a_test():
    scripts = {f for f in os.listdir(BENCHMARKS) if f.endswith(".py")}
    assert scripts == set(SMALLEST) | set(ELSEWHERE) | HELPERS


@pytest.fixture
def results_untouched():
    """``results/`` as it was: the smallest runs write only into tmp_path."""
    def state():
        return subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "results"],
                              capture_output=True, text=True).stdout
    before = state()
    yield
    assert state() == before


@pytest.mark.parametrize("script", sorted(SMALLEST))
def test_smallest(script, tmp_path, results_untouched):
    extra = [a.format(tmp=tmp_path / "runs", toip=tmp_path / "topopt") for a in SMALLEST[script]]
    spreads = True
    if script == "toip_compare.py":
        pytest.skip("needs TopOpt_in_PETSc's build (--toip) and the [mpi] extra (petsc4py)")
    if script == "benchmark_slabs.py" and not (_importable("mpi4py") and shutil.which("mpirun")):
        pytest.skip("needs mpi4py and mpirun (the ranks of the split voxel path)")
    if script == "petsc_scaling.py" and not _importable("petsc4py"):
        extra += ["--pcs", ""]          # petsc4py missing: the serial mg-cg run alone
    if script == "pymoto_mbb.py" and not _importable("pymoto"):
        spreads = False                 # pyMOTO missing: a record of nothing measured
    if script in ONE_RUN or script == "petsc_extrapolate.py":
        spreads = False                 # the extrapolation's spread is its input's: the
                                        # committed petsc_scaling.json predates the harness
    out = tmp_path / "out.json"
    run = subprocess.run([sys.executable, os.path.join(BENCHMARKS, script), "--smallest",
                          "--out", str(out), *extra], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300,
                         env=dict(os.environ, PYTHONPATH=ROOT, MPLBACKEND="Agg"))
    assert run.returncode == 0, run.stderr[-3000:]
    data = json.loads(out.read_text())
    check_record(data, spreads)
    if script in ONE_RUN:
        assert data["spread"]["note"] == "one measurement: no spread"
    assert "--smallest" in data["command"] and data["command"].startswith(
        f"python scripts/benchmarks/{script}")


# ---------------------------------------------------------------- the harness
def test_spread_and_combine():
    assert harness.spread([3.0, 1.0, 2.0, 10.0]) == {"median": 2.5, "min": 1.0, "max": 10.0,
                                                     "repeats": 4}
    row = harness.combine([{"s": 1.0, "n": 7}, {"s": 5.0, "n": 7}, {"s": 2.0, "n": 7}])
    assert row == {"s": 2.0, "n": 7, "repeats": 3, "spread": {
        "s": {"median": 2.0, "min": 1.0, "max": 5.0, "repeats": 3}}}
    with pytest.raises(ValueError, match="repeats >= 1"):
        harness.spread([])


def test_timed_and_alternating_call_as_often_as_said():
    calls = []
    stats, value = harness.timed(lambda: calls.append(1) or len(calls), 4, warmup=2)
    assert (value, len(calls), stats["repeats"]) == (6, 6, 4)
    order = []
    first, spreads, values = harness.alternating(
        [lambda: order.append("a") or "a", lambda: order.append("b") or "b"], 2)
    assert order == ["a", "b"] * 3 and values == ["a", "b"] and len(first) == 2
    assert [s["repeats"] for s in spreads] == [2, 2]


def test_peak_memory_sees_an_allocation():
    """A 64 MiB array written raises the peak by about its size (`VmHWM`, Linux), in a fresh
    process (a long one may hand the array pages it already holds: no new peak)."""
    code = ("import json, numpy as np, harness; harness.reset_peak(); b = harness.peak_bytes(); "
            "a = np.ones(8 * 2**20); print(json.dumps({'rise': harness.peak_bytes() - b, "
            "'size': a.nbytes, 'rss_le_peak': harness.rss_bytes() <= harness.peak_bytes()}))")
    out = harness.child([sys.executable, "-c", code],
                        env=dict(os.environ, PYTHONPATH=BENCHMARKS), library=BENCHMARKS)
    assert out["rise"] >= 0.9 * out["size"] and out["rss_le_peak"]


def test_child_returns_the_last_line_and_reports_a_failure():
    assert harness.child([sys.executable, "-c", "print('x'); print('{\"a\": 1}')"]) == {"a": 1}
    with pytest.raises(RuntimeError, match="exit 3"):
        harness.child([sys.executable, "-c", "import sys; sys.exit(3)"])


def test_record_and_write_hold_no_absolute_path(tmp_path):
    data = harness.record({"file": os.path.join(ROOT, "results", "x.json"),
                           "command": harness.command(os.path.join(BENCHMARKS, "b.py"),
                                                      ["--out", os.path.join(ROOT, "o.json")])},
                          repeats=1)
    assert data["spread"]["note"] == "one measurement: no spread"
    harness.write(str(tmp_path / "r.json"), data)
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["file"] == os.path.join("results", "x.json")
    assert saved["command"] == "python scripts/benchmarks/b.py --out o.json"
    check_record(saved, spreads=False)
