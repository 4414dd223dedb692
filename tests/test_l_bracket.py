"""Issue 14, item 5: the L-bracket's stress-constrained chain and a short run."""

import json

import numpy as np
import pytest

from topopt import ad

from topopt_problems import l_bracket as lb
from topopt.formulations.stress import MinimumVolumeStress


@pytest.fixture(scope="module")
def small():
    mesh, model, f, corner = lb.setup(20)
    return mesh, model, f, corner


@pytest.mark.parametrize("beta", [None, 4.0])
def test_taylor_of_the_full_chain(small, beta):
    """x -> filter -> (projection) -> SIMP -> solve -> relaxed von Mises -> c PN / s - 1."""
    _, model, f, _ = small
    problem = MinimumVolumeStress(model, f, sigma_allow=1.2, rmin=7.5)
    rng = np.random.default_rng(3)
    x = rng.uniform(0.3, 1.0, model.n_el)
    problem.responses(x, beta, block=0)                 # sets c; later calls keep it

    def constraint(x):
        return problem.responses(x, beta, block=0)[1]

    assert ad.taylor_test(constraint, x, rng.standard_normal(x.size)) >= 1.9


def test_normalisation_makes_c_pn_the_maximum_at_a_new_block(small):
    _, model, f, _ = small
    problem = MinimumVolumeStress(model, f, sigma_allow=2.0, rmin=7.5, alpha=1.0)
    x = np.random.default_rng(0).uniform(0.3, 1.0, model.n_el)
    g = problem.responses(x, None, block=5)[1]
    top = float(np.max(problem.relaxed(x)))
    assert float(g) == pytest.approx(top / 2.0 - 1.0, rel=1e-10)
    c = problem.norm.c
    problem.responses(0.9 * x, None, block=5)            # same block: c unchanged
    assert problem.norm.c == c


def test_setup_geometry(small):
    mesh, model, f, corner = small
    assert corner == 40.0
    # unit total load, all of it downward on the right end
    assert float(np.sum(f[model.basis.nodal_dofs[1]])) == pytest.approx(-1.0)
    assert np.all(f[model.basis.nodal_dofs[0]] == 0.0)
    assert len(lb.corner_elements(mesh, corner)) == 3
    with pytest.raises(ValueError, match="multiple of 5"):
        lb.setup(22)


def test_default_run_rounds_the_corner_within_the_stress_limit(tmp_path):
    """The default run (n = 100, 12 s): the stress design's largest relaxed stress within
    5 % of sigma_allow and no material at the re-entrant corner; the minimum-compliance
    design of the same volume solid there and above sigma_allow (measured: 1.159 against
    1.2, corner density 0.12; 1.370, 1.0). On coarser meshes the corner is no singularity
    worth avoiding (n = 60: the reference reaches 1.16 < 1.2 there)."""
    result = lb.run(out=str(tmp_path))
    assert result["max_von_mises"] <= 1.05 * result["sigma_allow"]
    assert result["corner_density"] < 0.5
    ref = result["compliance_design"]
    assert ref["volume"] == pytest.approx(result["volume"], abs=0.01)
    assert ref["corner_von_mises"] > result["sigma_allow"] and ref["corner_density"] > 0.9
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["result"]["compliance_design"]["corner_von_mises"] == ref["corner_von_mises"]
    for name in ("design.png", "compliance_design.png", "history.png", "design.npz"):
        assert (tmp_path / name).exists()


def test_bad_input(small):
    _, model, f, _ = small
    with pytest.raises(ValueError, match="q must be < penal"):
        MinimumVolumeStress(model, f, 1.0, 2.0, q=3.0)
    with pytest.raises(ValueError, match="sigma_allow must be"):
        MinimumVolumeStress(model, f, 0.0, 2.0)
    with pytest.raises(ValueError, match="f must be a nonzero load"):
        MinimumVolumeStress(model, 0 * f, 1.0, 2.0)
    problem = MinimumVolumeStress(model, f, 1.0, 2.0)
    with pytest.raises(ValueError, match="betas must name"):
        problem.run([])
    with pytest.raises(ValueError, match="beta must be"):
        problem.run([None, -1.0])
    with pytest.raises(ValueError, match="x0 has shape"):
        problem.run([None], x0=np.ones(3))
    with pytest.raises(ValueError, match="maxeval must be >= 12"):
        lb.run(n=20, maxeval=5)


def test_command_line_refuses_a_mesh_without_arms_of_whole_elements(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        lb.main(["--n", "22", "--out", str(tmp_path), "--quiet"])
    assert stop.value.code == 2
    assert "n must be a multiple of 5" in capsys.readouterr().err
