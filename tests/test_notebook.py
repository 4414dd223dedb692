"""The notebook tutorial (docs/tutorials/live.ipynb) executes in a real Jupyter kernel.

Independent of the site build: nbclient runs it in a fresh kernel as CI
would (``MPLBACKEND=Agg``, this checkout first on the path). No cell may
fail or write an error; the run's cell keeps exactly one picture, however
many times `topopt.plot.live` redrew it (one display handle, updated in
place); the last cell's output is an image. The committed file has no
outputs: the site build executes it.
"""

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "docs", "tutorials", "live.ipynb")

nbformat = pytest.importorskip("nbformat", reason="the notebook test needs nbformat (docs extra)")
nbclient = pytest.importorskip("nbclient", reason="the notebook test needs nbclient (docs extra)")
pytest.importorskip("ipykernel", reason="the notebook test needs ipykernel (docs extra)")


def read():
    return nbformat.read(NOTEBOOK, as_version=4)


def test_committed_without_outputs():
    nb = read()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


def test_executes_with_one_picture_per_run():
    nb = read()
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}})
    client.execute(env=env)
    code = [c for c in nb.cells if c.cell_type == "code"]
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    watched = [c for c in code if "plot.live(" in c.source]
    assert len(watched) == 1
    images = [o for o in watched[0].outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1 and len(watched[0].outputs) == 1       # one picture, no pile
    assert images[0].output_type == "display_data"
    report = "".join(o.get("text", "") for c in code for o in c.outputs
                     if o.output_type == "stream")
    assert "redraws of one picture" in report
    redraws = int(report.split(" redraws")[0].split()[-1])
    assert redraws > 1                                   # it was redrawn, and one remains
    assert "image/png" in code[-1].outputs[-1].get("data", {})
