"""`scripts/benchmarks/benchmark_scale.py --smallest`: every part of issue 37's benchmark runs and records."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "scripts", "benchmarks"), os.path.join(ROOT, "scripts", "studies")]

import benchmark_scale_parts as parts  # noqa: E402
from benchmark_records import check_record  # noqa: E402


def test_smallest(tmp_path):
    out = tmp_path / "scale.json"
    run = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "benchmarks", "benchmark_scale.py"),
                          "--smallest", "--out", str(out)], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT, MPLBACKEND="Agg"), timeout=600)
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    check_record(data)
    triad = data["triad"]
    assert triad["numpy"]["best_gb_s"] > 0 and triad["best_gb_s"] >= triad["numpy"]["best_gb_s"]
    assert triad["bytes_per_pass"] == 3 * triad["array_bytes"]       # STREAM's count, 3 arrays
    case, = data["voxel"]
    assert case["shape"] == [32, 16, 16] and case["dofs"] == 3 * 33 * 17 * 17
    fine = case["fine_product"]
    assert fine["bytes_min"] == 8 * 3 * case["dofs"] + 8 * 32 * 16 * 16   # 8 (3 ndof) + 8 n_el
    assert 0 < fine["fraction_of_triad"] <= 1
    assert case["library"] == "this checkout" and case["commit"] == data["commit"]["sha"]
    assert len(data["commit"]["sha"]) == 40
    machine = data["machine"]
    assert machine["cores"] >= 1 and machine["memory_bytes"] > 0 and machine["cpu_model"]
    assert machine["numpy"] and machine["python"] and "numba" in machine
    assert data["reference"]["kind"] == "mesh" and len(data["spmv"]) == len(data["crossover"]) == 1


def test_accepted_options():
    """A baseline library gets only the solver options it knows."""
    assert parts.accepted({"warm_start": True, "kernel": "numba"}, ["warm_start", "rtol"]) == (
        {"warm_start": True}, ["kernel"])


def test_study_smoothing_smallest(tmp_path):
    """`scripts/studies/study_smoothing.py` on a small grid: every schedule solves to rtol and is
    recorded with the machine and commit."""
    import study_smoothing
    out = study_smoothing.main(["--shape", "32x16x16", "--repeats", "1",
                                "--out", str(tmp_path / "s.json")])
    assert json.loads((tmp_path / "s.json").read_text())["schedules"] == out["schedules"]
    check_record(out)
    assert [(s["degree"], s["eig_ratio"]) for s in out["schedules"]] == study_smoothing.SCHEDULES
    its = {s["degree"]: s["cg_iterations"] for s in out["schedules"] if s["eig_ratio"] == 30}
    assert its[1] > its[2] > its[4] >= 1                # a stronger smoother, fewer iterations
    low, p5, _, p95, high = out["E_percentiles_0_5_50_95_100"]
    assert 0 < low < p5 < 0.05 and 0.3 < p95 < high <= 1.0 and len(out["commit"]["sha"]) == 40
