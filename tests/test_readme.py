"""The README's example is a regression test: it reproduces top88's MBB compliance."""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_example_runs_and_reproduces_top88():
    text = open(os.path.join(ROOT, "README.md")).read()
    lines = text.splitlines()
    assert lines[3] == "pip install -e . && python problems/mbb_beam.py"
    assert lines[4] == "pip install -e '.[test]' && pytest"
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    namespace = {}
    exec(code.replace("maxeval=100)", "maxeval=100, verbose=False)"), namespace)
    assert 1000.0 * namespace["result"].fun == pytest.approx(233.71, rel=0.01)
