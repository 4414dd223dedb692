"""scipy.special is imported by topopt.ad on first use only (issue 23: import time).

The rules of scipy.special's ufuncs are registered once scipy.special is
imported (`REGISTRY.defer`); a traced call of one can only happen after that.
Checked in a fresh interpreter that imports `topopt.ad` alone (a stub parent
package, so that `topopt/__init__` does not import the rest of the library).
"""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import sys, types
    pkg = types.ModuleType("topopt"); pkg.__path__ = [{root!r} + "/topopt"]
    sys.modules["topopt"] = pkg
    import numpy as np
    from topopt import ad
    print("special" if "scipy.special" in sys.modules else "no special")
    print("linalg" if "scipy.sparse.linalg" in sys.modules else "no linalg")
    {body}
""")


def _run(body: str) -> list:
    code = SCRIPT.format(root=str(ROOT), body=textwrap.dedent(body))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return out.stdout.split("\n")[:-1]


def test_import_of_topopt_ad_leaves_scipy_special_and_sparse_linalg_out():
    assert _run("") == ["no special", "no linalg"]


def test_rules_of_scipy_special_are_there_once_it_is_imported():
    lines = _run("""
        import scipy.special as sp
        x = np.array([0.3, -1.2])
        g = ad.gradient(lambda x: np.sum(sp.expit(x) + sp.erfc(x)), x)
        want = sp.expit(x) * (1 - sp.expit(x)) - 2 / np.sqrt(np.pi) * np.exp(-x * x)
        print(np.allclose(g, want, rtol=1e-13, atol=0))
        print(ad.jvp(sp.ndtr, (0.0,), (1.0,))[1] == 1 / np.sqrt(2 * np.pi))
        print(np.isclose(ad.gradient(lambda x: ad.logsumexp(x), np.zeros(2))[0], 0.5))
    """)
    assert lines == ["no special", "no linalg", "True", "True", "True"]


def test_a_rule_registered_first_is_not_replaced_by_the_deferred_one():
    lines = _run("""
        import scipy.special as sp
        @ad.rrule(sp.erf)
        def my_erf(x):
            return sp.erf(x), lambda ybar: (7.0 * ybar,)
        print(ad.gradient(lambda x: sp.erf(x), 0.5))
    """)
    assert lines[-1] == "7.0"
