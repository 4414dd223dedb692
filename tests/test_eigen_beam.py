"""Issue 14 item 4: eigenfrequency maximisation (topopt.formulations.eigen, problems/eigen_beam)."""

import json

import numpy as np
import pytest

from topopt import ad, fem
from topopt.formulations.eigen import EigenProblem, du_olhoff_mass
from topopt.fem.modal import ModalSystem, eigenvalues

from topopt_problems import eigen_beam

# --------------------------------------------------------------- mass interpolation

# (x, threshold, q, m): m = x above the threshold, x^q / threshold^(q - 1) below
MASS_TABLE = [
    (0.0, 0.1, 6.0, 0.0),
    (0.05, 0.1, 6.0, 0.05 ** 6 / 1e-5),
    (0.1, 0.1, 6.0, 0.1),
    (0.1 + 1e-12, 0.1, 6.0, 0.1 + 1e-12),
    (0.7, 0.1, 6.0, 0.7),
    (1.0, 0.1, 6.0, 1.0),
    (0.1, 0.2, 4.0, 0.1 ** 4 / 0.2 ** 3),
    (0.3, 0.2, 4.0, 0.3),
]


@pytest.mark.parametrize("x, threshold, q, m", MASS_TABLE)
def test_du_olhoff_mass_table(x, threshold, q, m):
    assert du_olhoff_mass(np.array([x]), threshold, q)[0] == pytest.approx(m, rel=1e-14)


def test_du_olhoff_mass_is_continuous_and_differentiable_in_every_mode():
    below, above = du_olhoff_mass(np.array([0.1 - 1e-13, 0.1 + 1e-13]))
    assert above - below == pytest.approx(2e-13, rel=1e-3)      # no jump at the threshold
    x = np.array([0.01, 0.04, 0.08, 0.3, 0.6, 0.95])             # both ranges, off the kink
    report = ad.check_modes(du_olhoff_mass, x)
    assert max(report.values()) < 1e-6
    np.testing.assert_allclose(ad.gradient(lambda x: np.sum(du_olhoff_mass(x)), x),
                               np.where(x > 0.1, 1.0, 6 * x ** 5 / 1e-5), rtol=1e-12)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(x=np.array([1.5])), ValueError, "x"),
    (dict(x=np.array([-0.2])), ValueError, "x"),
    (dict(x=np.array([0.5]), threshold=0.0), ValueError, "threshold"),
    (dict(x=np.array([0.5]), threshold=1.0), ValueError, "threshold"),
    (dict(x=np.array([0.5]), q=1.0), ValueError, "q"),
    (dict(x=np.array([0.5]), q="6"), TypeError, "q"),
])
def test_du_olhoff_mass_refuses(kwargs, error, match):
    with pytest.raises(error, match=match):
        du_olhoff_mass(**kwargs)


def hole_beam():
    """A clamped 24 x 4 beam, solid but for a 12 x 2 element block in its middle rows."""
    model = fem.elasticity(fem.rectangle(24, 4))
    model.fix(nodes=lambda x: np.isclose(x[0], 0) | np.isclose(x[0], 24))
    c = fem.element_centroids(model.mesh).T
    return model, (np.abs(c[0] - 12) < 6) & (np.abs(c[1] - 2) < 1)


def test_du_olhoff_mass_avoids_spurious_localised_modes():
    """Linear mass with SIMP stiffness has ``E / m = x^2`` in a near-void block: the first
    mode lives in the block (> 99 % of |phi|^2 at its nodes) with an eigenvalue that scales
    as x^2 (Pedersen 2000). The two-range mass gives the beam's bending mode, within 0.1 %
    of the beam with the block empty (measured 0.01 %)."""
    model, block = hole_beam()
    S = ModalSystem(model, n_modes=1)
    nodes = np.unique(model.basis.element_dofs[:, block])
    lam_empty = S.modes(np.where(block, 1e-9, 1.0), np.where(block, 0.0, 1.0))[0][0]
    lam_linear = []
    for x_void in (0.01, 0.005):
        x = np.where(block, x_void, 1.0)
        E = 1e-9 + (1 - 1e-9) * x ** 3
        lam, phi = S.modes(E, x)
        lam_linear.append(lam[0])
        assert np.sum(phi[nodes, 0] ** 2) / np.sum(phi[:, 0] ** 2) > 0.99
        lam_du = S.modes(E, du_olhoff_mass(x))[0][0]
        assert lam_du == pytest.approx(lam_empty, rel=1e-3)
        assert lam[0] < 0.1 * lam_du
    assert lam_linear[1] / lam_linear[0] == pytest.approx(0.25, rel=0.02)


# --------------------------------------------------------------- the problem chain


@pytest.fixture(scope="module")
def small():
    mesh, model, M0 = eigen_beam.setup(16, 4, mass=0.5)
    return EigenProblem(model, volfrac=0.5, rmin=1.5, M0=M0, n_modes=3)


def test_taylor_test_of_the_bound_formulation_chain(small):
    """Every response of the bound formulation, filter -> SIMP and two-range mass ->
    eigenvalues -> beta - lambda_j / lambda_ref, volume, in one weighted sum."""
    rng = np.random.default_rng(4)
    small.lam_ref = 1e-3
    z = np.append(rng.uniform(0.15, 0.9, small.n), 1.2)
    w = rng.standard_normal(5)
    assert small.modal.groups(small.modal.modes(*small.coefficients(small.x_phys(z[:-1])))[0]) \
        == []                                                    # simple eigenvalues here
    rate = ad.taylor_test(lambda z: sum(wi * r for wi, r in zip(w, small.responses(z))), z,
                          rng.standard_normal(z.size))
    assert rate >= 1.9
    rate = ad.taylor_test(lambda z: small.responses(z, rmin=2.5)[2], z,
                          rng.standard_normal(z.size))
    assert rate >= 1.9


def test_the_chain_in_every_mode(small):
    """Filter -> SIMP and two-range mass -> eigenvalues: reverse, forward, Hessian-vector
    products and nested gradients against central differences."""
    x = np.random.default_rng(6).uniform(0.15, 0.9, small.n)
    report = ad.check_modes(small.eigenvalues, x, seed=6)
    assert len(report) == 4 and max(report.values()) < 1e-6


def test_the_chain_is_the_composition_of_its_parts(small):
    rng = np.random.default_rng(5)
    x = rng.uniform(0.0, 1.0, small.n)
    x_phys = small.filter(x)
    E = 1e-9 + (1 - 1e-9) * x_phys ** 3
    lam = eigenvalues(small.modal, E, du_olhoff_mass(x_phys))
    np.testing.assert_allclose(small.eigenvalues(x), lam, rtol=1e-12)
    assert small.omega1(x_phys) == pytest.approx(np.sqrt(lam[0]), rel=1e-12)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(volfrac=1.0), ValueError, "volfrac"),
    (dict(rmin=0.0), ValueError, "rmin"),
    (dict(n_modes=0), ValueError, "n_modes"),
    (dict(penal=0.5), ValueError, "penal"),
    (dict(mass_threshold=1.0), ValueError, "mass_threshold"),
    (dict(mass_exponent=1.0), ValueError, "mass_exponent"),
    (dict(beta_max=1.0), ValueError, "beta_max"),
    (dict(filter="sensitivity"), ValueError, "filter"),
])
def test_eigen_problem_refuses(kwargs, error, match):
    mesh, model, M0 = eigen_beam.setup(8, 2)
    with pytest.raises(error, match=match):
        EigenProblem(model, **{"volfrac": 0.5, "rmin": 1.5, **kwargs})


def test_setup_refuses_unknown_supports():
    with pytest.raises(ValueError, match="supports"):
        eigen_beam.setup(8, 2, supports="free")


# --------------------------------------------------------------- the script


@pytest.mark.parametrize("supports", ["clamped", "simple"])
def test_each_stage_raises_the_fundamental_frequency(tmp_path, supports):
    """32 x 4 elements, 15 evaluations per stage: omega_1 at each stage's end above the
    previous one's (the first above the uniform design's), the last at least 1.25 times the
    uniform design's (measured 1.29 clamped, 1.60 simply supported)."""
    out = tmp_path / "run"
    result = eigen_beam.run(nelx=32, nely=4, rmin=1.5, maxeval=15, supports=supports,
                            out=str(out))
    stages = result["omega1_stages"]
    assert len(stages) == 3 and np.all(np.diff([result["omega1_uniform"], *stages]) > 0)
    assert stages[-1] > 1.25 * result["omega1_uniform"]
    assert result["omega1"] == pytest.approx(stages[-1], rel=1e-9)
    assert result["volume"] == pytest.approx(0.5, abs=5e-3)
    assert np.sqrt(result["eigenvalues"][0]) == pytest.approx(result["omega1"], rel=1e-12)
    saved = json.load(open(out / "result.json"))
    assert saved["result"]["omega1_stages"] == stages
    assert saved["result"]["omega1_uniform"] == result["omega1_uniform"]
    assert saved["setup"]["stage_rmin"] == [3.0, 2.0, 1.5]
    # the history's objective is omega_1 / omega_1(uniform), from beta - g_1
    last = result.history[-1]
    assert last["objective"] ** 2 == pytest.approx(last["beta"] - last["constraints"][0])
    assert {p.name for p in out.iterdir()} >= {"design.png", "history.png", "result.json",
                                               "design.npz", "design.vtu"}


def test_main_writes_the_results(tmp_path):
    out = tmp_path / "cli"
    result = eigen_beam.main(["--nelx", "24", "--nely", "4", "--rmin", "1.5", "--maxeval",
                              "5", "--quiet", "--out", str(out)])
    assert result.evaluations == 15
    saved = json.load(open(out / "result.json"))
    assert saved["setup"]["problem"] == "eigen_beam" and saved["evaluations"] == 15
    assert saved["plot"]["objective_scale"] == pytest.approx(result["omega1_uniform"])
