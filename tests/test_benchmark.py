"""`scripts/benchmarks/benchmark.py` on a small mesh: the JSON contract of issue 4."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "benchmarks"))

import benchmark  # noqa: E402
from benchmark_records import check_record  # noqa: E402

KEYS = ("per_iteration_s", "steady_iteration_s", "assembly_s", "solve_s", "adjoint_s",
        "filter_s", "optimizer_s", "fe_solves_per_iteration", "floor_s", "solver")


def test_mbb_json(capsys, tmp_path):
    row, = benchmark.main(["--nelx", "30", "--nely", "10", "--solver", "superlu", "--iters",
                           "8", "--repeat", "1", "--json", "--no-pymoto",
                           "--out", str(tmp_path / "b.json")])
    assert all(k in row for k in KEYS)
    assert row["solver"] == "superlu" and row["elements"] == 300
    parts = sum(row[k] for k in ("assembly_s", "solve_s", "adjoint_s", "filter_s"))
    assert 0 < parts < row["per_iteration_s"]
    assert row["floor_s"] > 0 and row["ratio_to_floor"] > 0
    # compliance problems run one FE solve per design (the adjoint is -u)
    assert row["fe_solves_per_iteration"] <= 1.15
    assert '"per_iteration_s"' in capsys.readouterr().out
    assert row["spread"]["per_iteration_s"]["median"] == row["per_iteration_s"]
    import json
    check_record(json.loads((tmp_path / "b.json").read_text()))


def test_bad_sizes():
    with pytest.raises(SystemExit):
        benchmark.main(["--nelx", "0"])


def test_convergence_quick(tmp_path):
    """`scripts/benchmarks/benchmark_convergence.py --quick`: the JSON of issue 16, finite numbers."""
    import json
    import math

    import benchmark_convergence as bc
    out = tmp_path / "conv.json"
    bc.main(["--quick", "--out", str(out)])
    data = json.loads(out.read_text())
    check_record(data, spreads=False)              # one run per method: its history
    assert data["spread"]["note"] == "one measurement: no spread"
    assert data["checkpoints"] == [10, 20, 30, 50, 100]
    assert data["tolerances"] == [0.02, 0.01, 0.005]
    assert set(data["cases"]) == {"mbb_30x10", "cantilever3d_8x4x4"}
    for row in data["cases"].values():
        assert math.isfinite(row["reference"]) and row["reference"] > 0
        methods = {k: v for k, v in row["methods"].items() if v is not None}
        assert {"ours", "oc"} <= set(methods)
        starts = []
        for name, m in methods.items():
            hist = m["history"]
            assert len(hist) == m["evaluations"] > 10
            assert all(math.isfinite(v) and v > 0 for v in hist)
            assert set(m["compliance_at"]) == {"10", "20", "30", "50", "100"}
            assert set(m["reach"]) == {"0.02", "0.01", "0.005"}
            for r in m["reach"].values():
                assert r is None or (1 <= r["evaluations"] <= len(hist)
                                     and math.isfinite(r["seconds"]))
            starts.append(hist[0])
            # OC and both MMAs descend from the uniform start
            assert hist[1] < hist[0] and hist[-1] < 0.5 * hist[0], name
        # the same setup: every method starts from the same compliance
        assert max(starts) / min(starts) - 1 < 1e-9


def test_reanalysis_quick(tmp_path):
    """`scripts/benchmarks/benchmark_reanalysis.py --quick`: on and off reach the same design."""
    import json

    import benchmark_reanalysis as br
    out = tmp_path / "re.json"
    br.main(["--quick", "--out", str(out)])
    data = json.loads(out.read_text())
    check_record(data)
    data = data["cases"]
    assert set(data) == {"mbb_60x20", "cantilever3d_8x4x4"}
    for row in data.values():
        assert abs(row["compliance_difference"]) < 1e-4      # CG to rtol 1e-6 in energy
        on, = row["on"]
        assert on["reanalyses"] > on["fallbacks"]       # designs solved without a factorization
        assert row["off"][0]["reanalyses"] == 0


def test_auto_quick(tmp_path, capsys):
    """`scripts/benchmarks/benchmark_auto.py --quick`: every installed backend timed, auto among them."""
    import json

    import benchmark_auto as ba
    from topopt import fem
    out = tmp_path / "auto.json"
    ba.main(["--quick", "--out", str(out)])
    data = json.loads(out.read_text())
    check_record(data)
    for row in data["cases"]:
        assert row["auto"] in row["seconds"] and row["best"] in row["seconds"]
        assert "superlu" in row["seconds"] and "superlu+reanalysis" in row["seconds"]
        assert all(v > 0 for v in row["seconds"].values())
        assert row["auto"].partition("+")[0] in fem.available_solvers(iterative=True)
    assert "auto" in capsys.readouterr().out
