"""The record every benchmark's JSON carries (issue 40): machine, commit, spread.

Shared by tests/test_scripts.py, tests/test_benchmark.py and tests/test_benchmark_scale.py.
"""

import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _spreads(value):
    """Every `harness.spread` record inside `value`."""
    if isinstance(value, dict):
        if {"median", "min", "max", "repeats"} <= set(value):
            yield value
        for v in value.values():
            yield from _spreads(v)
    elif isinstance(value, list):
        for v in value:
            yield from _spreads(v)


def check_record(data: dict, spreads: bool = True) -> None:
    """The machine, the commit and the spread of a benchmark's JSON (`harness.record`)."""
    machine, commit, spread = data["machine"], data["commit"], data["spread"]
    assert machine["cpu_model"] and machine["cores"] >= 1 and machine["memory_bytes"] > 0
    assert machine["python"] and machine["numpy"]
    assert len(commit["sha"]) == 40 and commit["dirty"] in (True, False)
    assert "median" in spread["statistic"] and spread["repeats"] >= 1
    if spreads:
        found = list(_spreads(data))
        assert found and all(s["min"] <= s["median"] <= s["max"] for s in found)
    assert ROOT not in json.dumps(data)                  # no absolute path of the checkout
