"""``import topopt`` stays light: heavy modules are imported on first use (PEP 562)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _modules_after(code: str) -> list[str]:
    env = dict(os.environ, PYTHONPATH=ROOT)
    script = (f"import sys\n{code}\nimport json\n"
              "print(json.dumps(sorted(m for m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("heavy", ["scipy.stats", "matplotlib", "topopt.reliability",
                                   "topopt.plot", "scipy.spatial"])
def test_import_topopt_leaves_heavy_modules_out(heavy):
    loaded = _modules_after("import topopt")
    assert not [m for m in loaded if m == heavy or m.startswith(heavy + ".")]


def test_lazy_attributes_import_on_first_use():
    loaded = _modules_after("import topopt\nassert topopt.reliability.__name__ == "
                            "'topopt.reliability'\nassert callable(topopt.reliability.find_mpp)")
    assert "topopt.reliability" in loaded
    # reliability itself imports scipy.stats / scipy.optimize on first use only
    assert "scipy.stats" not in loaded and "scipy.optimize" not in loaded


def test_public_names_kept():
    import topopt
    assert "reliability" in topopt.__all__ and "reliability" in dir(topopt)
    for name in topopt.__all__:
        assert getattr(topopt, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        topopt.nonexistent
