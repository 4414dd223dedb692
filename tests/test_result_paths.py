"""``result.json`` names no machine's absolute path (issue 40): the checkpoint and the
``--resume`` option are relative to the working directory when they lie below it."""

import json
import os

import numpy as np

from topopt.io import RunResult
from topopt_problems import mbb_beam


def test_record_is_relative_below_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ck = str(tmp_path / "run" / "checkpoint.npz")
    r = RunResult("maxeval_reached", None, 3, ck, f"--resume {ck}", {}, x=np.ones(2))
    assert r.record()["checkpoint"] == os.path.join("run", "checkpoint.npz")
    assert r.summary()["resume"] == "--resume " + os.path.join("run", "checkpoint.npz")
    assert (r.checkpoint, r.resume) == (ck, f"--resume {ck}")     # the run's own path kept


def test_record_keeps_a_path_outside_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    ck = str(tmp_path / "elsewhere" / "ck.npz")
    r = RunResult("maxeval_reached", None, 3, ck, f"--resume {ck}", {})
    assert (r.record()["checkpoint"], r.record()["resume"]) == (ck, f"--resume {ck}")
    none = RunResult("success", None, 3, None, None, {})
    assert (none.record()["checkpoint"], none.record()["resume"]) == (None, None)


def test_a_script_run_writes_relative_paths(tmp_path, monkeypatch):
    """The MBB beam stopped by its budget (resumable) with an absolute --out below the
    working directory, as scripts/site/gallery.py runs it: result.json holds
    ``run/checkpoint.npz`` at the top level and in ``result``, and no absolute path."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    mbb_beam.main(["--nelx", "8", "--nely", "4", "--rmin", "1.5", "--maxeval", "2",
                   "--out", str(out), "--quiet"])
    saved = json.loads((out / "result.json").read_text())
    ck = os.path.join("run", "checkpoint.npz")
    assert (saved["status"], saved["checkpoint"], saved["resume"]) == (
        "maxeval_reached", ck, f"--resume {ck}")
    assert (saved["result"]["checkpoint"], saved["result"]["resume"]) == (ck, f"--resume {ck}")
    assert str(tmp_path) not in (out / "result.json").read_text()
    assert os.path.isfile(ck)
