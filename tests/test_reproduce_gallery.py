"""Issue 35: ``scripts/site/reproduce_gallery.py``, its figures and its check (no problem is run)."""

import json
import os
import sys

import pytest

import topopt_problems as problems

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "site"))
import reproduce_gallery as rg  # noqa: E402


def test_every_problem_has_a_figure_in_its_committed_result():
    assert set(rg.FIGURES) == set(problems.__all__)
    for name in problems.__all__:
        value = rg.committed(name)
        assert value == value and abs(value) < float("inf"), name


def test_spread_and_the_check():
    assert rg.spread_pct([1.0, 1.01, 0.99]) == pytest.approx(2.0)
    finals = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1]
    assert rg.within(100.9, finals, 1.0)          # 0.8 % off the median 100.05
    assert not rg.within(101.2, finals, 1.0)      # 1.15 % off
    assert not rg.within(100.01, [100.0] * 6, 0.0) and rg.within(100.00001, [100.0] * 6, 0.0)


def test_the_committed_record_agrees_with_the_committed_gallery():
    with open(rg.RECORD, encoding="utf-8") as fh:
        record = json.load(fh)
    assert set(record["skipped"]) == set(rg.SKIPPED)
    for name, row in record["problems"].items():
        assert row["committed"] == pytest.approx(rg.committed(name), rel=1e-12), name
        assert len(row["perturbed"]) == len(rg.SEEDS)
        assert rg.within(row["committed"], [row["unperturbed"], *row["perturbed"]],
                         row["spread_pct"]), name


def test_bad_names_are_refused(capsys):
    with pytest.raises(SystemExit) as info:
        rg.main(["mbb_bean"])
    assert info.value.code == 2 and "problem must be one of" in capsys.readouterr().err
