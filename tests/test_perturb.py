"""Issue 35: ``TOPOPT_PERTURB``, the seeded start perturbation of `scripts/site/reproduce_gallery.py`."""

import numpy as np
import pytest

from topopt.optimize import minimize
from topopt.optimize.perturb import ENV, perturbed_start, start_perturbation

from topopt_problems import mbb_beam

C = np.array([1.0, 4.0, 9.0])


def _run(**kwargs):
    """``sum(c / x)`` s.t. ``sum(x) <= 2``, 3 evaluations: a path that the start moves."""
    return minimize(lambda x: np.sum(C / x), np.full(3, 0.5), [lambda x: np.sum(x) - 2.0],
                    bounds=(0.01, 1.0), maxeval=3, verbose=False, **kwargs)


@pytest.mark.parametrize("text, found", [
    ("", None), ("  ", None), ("0", None), ("0:4", None), ("1e-12", (1e-12, 0)),
    ("1e-12:7", (1e-12, 7)), (" 1e-3 : 2 ", (1e-3, 2)),
])
def test_the_variable_is_read(text, found):
    assert start_perturbation(text) == found


@pytest.mark.parametrize("text, match", [
    ("abc", "the amplitude must be a number in"), ("-1e-12", "the amplitude"),
    ("nan", "the amplitude"), ("inf:1", "the amplitude"), ("0.01", "the amplitude"),
    ("1e-12:x", "the seed must be an integer >= 0"), ("1e-12:-3", "the seed"),
    ("1e-12:1.5", "the seed"),
])
def test_a_malformed_value_is_refused_naming_the_variable(text, match):
    with pytest.raises(ValueError, match=f"{ENV}=.*{match}"):
        start_perturbation(text)


def test_the_start_moves_by_at_most_the_amplitude_within_the_bounds(monkeypatch):
    monkeypatch.setenv(ENV, "1e-12:5")
    x0 = np.array([0.0, 0.5, 1.0, 0.3])
    x = perturbed_start(x0, np.zeros(4), np.ones(4))
    assert np.all((x >= 0) & (x <= 1)) and np.max(np.abs(x - x0)) <= 1e-12
    assert np.any(x != x0)
    np.testing.assert_array_equal(x, perturbed_start(x0, np.zeros(4), np.ones(4)))  # seeded


def test_minimize_starts_from_the_perturbed_design_and_not_on_resume(monkeypatch, tmp_path):
    plain = _run()
    monkeypatch.setenv(ENV, "1e-4:1")
    moved = _run(checkpoint=str(tmp_path / "ck.npz"))
    again = _run()
    assert moved.history[0]["objective"] != plain.history[0]["objective"]
    assert abs(moved.history[0]["objective"] - plain.history[0]["objective"]) < 1e-2
    assert again.history[0]["objective"] == moved.history[0]["objective"]   # the same seed
    monkeypatch.setenv(ENV, "1e-4:2")
    assert _run().history[0]["objective"] != moved.history[0]["objective"]
    # a resumed run continues from its checkpoint's design: no perturbation added
    monkeypatch.setenv(ENV, "1e-3:9")
    resumed = minimize(lambda x: np.sum(C / x), np.full(3, 0.5), [lambda x: np.sum(x) - 2.0],
                       bounds=(0.01, 1.0), maxeval=4, verbose=False,
                       resume=str(tmp_path / "ck.npz"))
    assert resumed.history[:3] == moved.history[:3]


def test_a_script_refuses_a_malformed_value_before_any_work(monkeypatch, tmp_path, capsys):
    seen = {}
    monkeypatch.setattr(mbb_beam, "run", lambda **kw: seen.update(kw))
    monkeypatch.setenv(ENV, "1e-12:seven")
    with pytest.raises(SystemExit) as info:
        mbb_beam.main(["--out", str(tmp_path / "out")])
    assert info.value.code == 2 and seen == {}
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        f"error: {ENV}='1e-12:seven': the seed must be an integer >= 0 "
        "(AMPLITUDE[:SEED], e.g. 1e-12:3)")
