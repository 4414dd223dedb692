"""`scripts/benchmark.py` on a small mesh: the JSON contract of issue 4."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import benchmark  # noqa: E402

KEYS = ("per_iteration_s", "steady_iteration_s", "assembly_s", "solve_s", "adjoint_s",
        "filter_s", "optimizer_s", "fe_solves_per_iteration", "floor_s", "solver")


def test_mbb_json(capsys):
    row, = benchmark.main(["--nelx", "30", "--nely", "10", "--solver", "superlu", "--iters",
                           "8", "--repeat", "1", "--json", "--no-pymoto"])
    assert all(k in row for k in KEYS)
    assert row["solver"] == "superlu" and row["elements"] == 300
    parts = sum(row[k] for k in ("assembly_s", "solve_s", "adjoint_s", "filter_s"))
    assert 0 < parts < row["per_iteration_s"]
    assert row["floor_s"] > 0 and row["ratio_to_floor"] > 0
    # compliance problems run one FE solve per design (the adjoint is -u)
    assert row["fe_solves_per_iteration"] <= 1.15
    assert '"per_iteration_s"' in capsys.readouterr().out


def test_bad_sizes():
    with pytest.raises(SystemExit):
        benchmark.main(["--nelx", "0"])
