"""Self-weight: element loads, their rules, the design-dependent compliance, the arch."""

import json

import numpy as np
import pytest

from topopt import ad, fem
from topopt.design import apply_filter
from topopt.design.interpolation import ramp, simp
from topopt.responses.structural import compliance
from topopt.formulations.selfweight import SelfWeightProblem, load_ratio, save_load_ratio
from topopt.responses import BodyLoad, element_loads

MESHES = {
    "quad": (lambda: fem.rectangle(4, 3, h=0.5), (0.0, -2.0)),
    "quad-oblique": (lambda: fem.rectangle(3, 2), (1.5, -0.5)),
    "hex": (lambda: fem.box(2, 2, 1), (0.0, 0.3, -1.0)),
}


def _cantilever(nelx=8, nely=4, f_tip=-1.0, gravity=(0.0, -0.05), **kw):
    model = fem.elasticity(fem.rectangle(nelx, nely)).fix(nodes=lambda x: np.isclose(x[0], 0))
    f = model.point_load((nelx, 0.0), (0.0, f_tip))
    return SelfWeightProblem(model, f, gravity, 0.5, 1.5, **kw)


# ------------------------------------------------------------- element loads

@pytest.mark.parametrize("name", MESHES)
def test_element_loads_sum_to_the_body_load(name):
    mesh, g = MESHES[name][0](), np.array(MESHES[name][1])
    model = fem.elasticity(mesh)
    weight = BodyLoad(model, g)
    np.testing.assert_allclose(weight(np.ones(model.n_el)), model.body_load(g),
                               rtol=1e-13, atol=1e-15)
    # each element's load is its volume times g, a quarter (an eighth) at each node
    fe = element_loads(model, g)
    vol = fem.element_volumes(mesh)
    n_nodes = mesh.t.shape[0]
    for c, gc in enumerate(g):
        np.testing.assert_allclose(fe[:, c::len(g)], np.outer(vol * gc / n_nodes,
                                                              np.ones(n_nodes)), atol=1e-15)


def test_weight_is_linear_in_the_density():
    model = fem.elasticity(fem.rectangle(5, 3))
    weight = BodyLoad(model, (0.0, -1.0))
    x = np.random.default_rng(0).uniform(0, 1, model.n_el)
    # total vertical force = - sum_e x_e |e|
    assert np.sum(weight(x)[1::2]) == pytest.approx(-np.sum(x), rel=1e-13)
    np.testing.assert_allclose(weight(2 * x), 2 * weight(x), rtol=1e-14)


@pytest.mark.parametrize("seed", [0, 1])
def test_body_load_rules(seed):
    model = fem.elasticity(fem.rectangle(4, 3))
    weight = BodyLoad(model, (0.3, -1.0))
    x = np.random.default_rng(seed).uniform(0.1, 0.9, model.n_el)
    report = ad.check_rule(apply_filter, weight, x, seed=seed)
    assert report["arg 1 reverse"] < 1e-8 and report["arg 1 forward"] < 1e-8
    report = ad.check_modes(lambda x: weight(x), x, seed=seed)
    assert all(v < 1e-6 for v in report.values()), report


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_solve_is_differentiable_in_its_right_hand_side(seed):
    """`fem.solve`'s rules for a traced load (the path of the weight's derivative)."""
    model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda x: np.isclose(x[0], 0))
    S = model.system("superlu")
    rng = np.random.default_rng(seed)
    a, f = rng.uniform(0.2, 1.0, model.n_el), rng.standard_normal(model.ndof)
    report = ad.check_rule(fem.solve, S, a, f, seed=seed)
    assert report["arg 2 reverse"] < 1e-7 and report["arg 2 forward"] < 1e-7
    report = ad.check_modes(lambda a, f: fem.solve(S, a, f), a, f, seed=seed)
    assert all(v < 1e-6 for v in report.values()), report


# ------------------------------------------------------------ the compliance

@pytest.mark.parametrize("interpolation", ["ramp", "simp"])
def test_gradient_is_bruyneel_duysinx_eq_9(interpolation):
    """``dc/dx_e = 2 u_e^T f_e - E'(x_e) u_e^T K_e u_e`` (Bruyneel & Duysinx 2005)."""
    p = _cantilever(interpolation=interpolation, gravity=(0.0, -0.2))
    x = np.random.default_rng(3).uniform(0.2, 1.0, p.n)
    g = ad.gradient(lambda x: compliance(*p.state(x)), x)
    u, _ = p.state(x)
    dofs = p.model.basis.element_dofs.T
    ue = u[dofs]
    fe = element_loads(p.model, p.gravity)
    dE = ad.gradient(lambda x: np.sum(p.modulus(x)), x)
    Ke = p.model.Ke
    expected = 2 * np.sum(ue * fe, axis=1) - dE * np.einsum("ei,eij,ej->e", ue, Ke, ue)
    np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-12 * np.abs(expected).max())
    # the weight's term matters: it is a sizeable part of the gradient and makes
    # adding material worse somewhere (dc/dx_e > 0: c is not monotonic)
    assert np.linalg.norm(2 * np.sum(ue * fe, axis=1)) > 0.1 * np.linalg.norm(expected)
    assert np.any(g > 0) and np.any(g < 0)


def test_compliance_rules_every_mode():
    p = _cantilever(nelx=4, nely=2, solver="superlu")
    x = np.random.default_rng(1).uniform(0.3, 1.0, p.n)
    report = ad.check_modes(lambda x: compliance(*p.state(x)), x, seed=1)
    assert all(v < 1e-6 for v in report.values()), report


@pytest.mark.parametrize("interpolation, filter", [("ramp", "density"), ("simp", "density"),
                                                   ("ramp", "helmholtz")])
@pytest.mark.parametrize("seed", [0, 1])
def test_taylor_full_chain(interpolation, filter, seed):
    """x -> filter -> (E(x_phys), f(x_phys)) -> u -> c: rate 2."""
    p = _cantilever(nelx=10, nely=5, interpolation=interpolation, filter=filter)
    rng = np.random.default_rng(seed)
    x, dx = rng.uniform(0.1, 0.9, p.n), rng.standard_normal(p.n)
    assert ad.taylor_test(p.compliance, x, dx) >= 1.9
    p.c0 = 1.0
    assert ad.taylor_test(lambda x: p.responses(x)[0], x, dx) >= 1.9
    assert ad.taylor_test(lambda x: p.compliance(x, beta=4.0), x, dx) >= 1.9


def test_split_adds_up_and_is_quadratic_in_the_weight():
    p = _cantilever(gravity=(0.0, -0.1))
    x = np.random.default_rng(2).uniform(0.2, 1.0, p.n)
    parts = p.compliance_split(x)
    assert parts["point_load"] + parts["self_weight"] == pytest.approx(
        float(compliance(*p.state(x))), rel=1e-12)
    # the weight alone: c scales with gamma^2 (here f_fixed = 0)
    q = SelfWeightProblem(p.model, np.zeros(p.model.ndof), (0.0, -0.2), 0.5, 1.5)
    r = SelfWeightProblem(p.model, np.zeros(p.model.ndof), (0.0, -0.1), 0.5, 1.5)
    assert q.compliance_split(x)["self_weight"] == pytest.approx(
        4 * r.compliance_split(x)["self_weight"], rel=1e-12)


# ------------------------------------------------------ FE against closed forms

def test_hanging_bar_is_exact_at_the_nodes():
    """A bar (nu = 0) hung from its top under its own weight:
    ``w(s) = gamma / E (L s - s^2 / 2)`` at depth s (bilinear elements are
    nodally exact for this 1-D solution)."""
    L, gamma, E = 6.0, 0.7, 3.0
    mesh = fem.rectangle(2, 12, h=0.5)
    model = fem.elasticity(mesh, nu=0.0, E0=E).fix(nodes=lambda x: np.isclose(x[1], L))
    f = BodyLoad(model, (0.0, -gamma))(np.ones(model.n_el))
    u = model.solve(np.ones(model.n_el), f, solver="superlu")
    y = mesh.p[1]
    s = L - y
    uy = u[model.basis.nodal_dofs[1]]
    np.testing.assert_allclose(uy, -gamma / E * (L * s - s ** 2 / 2), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(u[model.basis.nodal_dofs[0]], 0.0, atol=1e-12)
    assert -uy.min() == pytest.approx(gamma * L ** 2 / (2 * E), rel=1e-10)


def test_slender_cantilever_under_its_own_weight():
    """Tip deflection ``q L^4 / (8 E I)`` (Euler-Bernoulli, q = gamma h) of a
    cantilever with L / h = 20: within 1 % on 160 x 8 bilinear elements, 0.1 %
    on 320 x 16 (full integration locks a little in bending: -0.63 %, -0.05 %)."""
    L, hgt, nu = 20.0, 1.0, 0.3
    errors = []
    for n in (8, 16):
        mesh = fem.rectangle(20 * n, n, h=hgt / n)
        model = fem.elasticity(mesh, nu=nu).fix(nodes=lambda x: np.isclose(x[0], 0))
        f = BodyLoad(model, (0.0, -1.0))(np.ones(model.n_el))
        u = model.solve(np.ones(model.n_el), f)
        tip = model.dofs(nodes=lambda x: np.isclose(x[0], L), components=1)
        errors.append(-np.mean(u[tip]) / (hgt * L ** 4 / (8 * hgt ** 3 / 12)) - 1)
    assert abs(errors[0]) < 1e-2 and abs(errors[1]) < 1e-3


# ------------------------------------------------------------- interpolation

@pytest.mark.parametrize("q", [0.0, 3.0, 8.0, 20.0])
def test_ramp_keeps_the_load_ratio_bounded(q):
    x = np.logspace(-6, 0, 200)
    ratio = load_ratio(x, "ramp", q=q, Emin=0.0)
    assert ratio.max() <= (1 + q) * (1 + 1e-12)
    np.testing.assert_allclose(ratio, 1 + q * (1 - x), rtol=1e-12)    # x / E = 1 + q (1 - x)
    # SIMP (p = 3): x^-2, unbounded
    np.testing.assert_allclose(load_ratio(x, "simp", penal=3.0, Emin=0.0), x ** -2.0,
                               rtol=1e-12)


def test_ratio_figure(tmp_path):
    path = tmp_path / "ratio.png"
    save_load_ratio(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------- bad input

@pytest.mark.parametrize("kwargs, exc, match", [
    ({"gravity": (0.0, 0.0)}, ValueError, "gravity is zero"),
    ({"gravity": (0.0, -1.0, 0.0)}, ValueError, r"gravity has shape \(3,\)"),
    ({"gravity": (0.0, np.nan)}, ValueError, "gravity"),
    ({"f": np.zeros(5)}, ValueError, r"f has shape \(5,\)"),
    ({"interpolation": "linear"}, ValueError, "interpolation"),
    ({"q": -1.0}, ValueError, r"q must be >= 0"),
    ({"volfrac": 1.5}, ValueError, "volfrac"),
    ({"penal": 0.5}, ValueError, "penal"),
])
def test_bad_input(kwargs, exc, match):
    model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda x: np.isclose(x[0], 0))
    args = dict(model=model, f=np.zeros(model.ndof), gravity=(0.0, -1.0), volfrac=0.5,
                rmin=1.5)
    with pytest.raises(exc, match=match):
        SelfWeightProblem(**{**args, **kwargs})


def test_scalar_model_and_bad_interpolation_name():
    with pytest.raises(ValueError, match="elasticity model"):
        element_loads(fem.heat(fem.rectangle(2, 2)), (1.0,))
    with pytest.raises(ValueError, match="interpolation"):
        load_ratio(0.5, "rational")
    with pytest.raises(ValueError, match="x must be > 0 where Emin = 0"):
        load_ratio(np.array([0.0, 0.5]), "ramp", Emin=0.0)
    with pytest.raises(ValueError, match="q must be >= 0"):
        save_load_ratio("unused.png", q=-1.0)


def test_interpolations_agree_with_the_primitives():
    p, s = _cantilever(q=5.0), _cantilever(interpolation="simp", penal=2.0)
    x = np.linspace(0.0, 1.0, p.n)
    np.testing.assert_array_equal(p.modulus(x), ramp(x, 5.0, 1e-9))
    np.testing.assert_array_equal(s.modulus(x), simp(x, 2.0, 1e-9))


# ------------------------------------------------------------------ the arch

def test_arch_design(tmp_path):
    """Half arch 30 x 20: crown solid at the top of the symmetry line, a leg
    down to the pin, no material at mid-height beside the symmetry line."""
    from topopt_problems import arch
    result = arch.run(nelx=30, nely=20, maxeval=80, out=str(tmp_path))
    x = result["x_phys"].reshape(-1)
    c = fem.element_centroids(fem.rectangle(30, 20))
    crown = (c[:, 0] < 5) & (c[:, 1] > 19)                  # top row at the symmetry line
    pin = (c[:, 0] > 27) & (c[:, 1] < 3)
    below = (c[:, 0] > 4) & (c[:, 0] < 12) & (c[:, 1] > 4) & (c[:, 1] < 12)
    # measured: 1.0, 1.0, 0.115
    assert x[crown].mean() > 0.9 and x[pin].mean() > 0.9 and x[below].mean() < 0.2
    assert result["compliance_point_load"] + result["compliance_self_weight"] == \
        pytest.approx(result["compliance"], rel=1e-12)
    assert result["self_weight_share"] > 0.5            # weight = 4 P: the weight dominates
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["result"]["self_weight_share"] == pytest.approx(result["self_weight_share"])
    assert isinstance(saved["result"]["volume_constraint_active"], bool)
    assert {"design.png", "history.png", "ratio.png", "design.npz", "design.vtu"} <= \
        {p.name for p in tmp_path.iterdir()}


@pytest.mark.parametrize("where", ["out", "checkpoint"])
def test_arch_checks_its_paths_before_any_solve(tmp_path, monkeypatch, where):
    from topopt_problems import arch
    solves = []
    factorize = fem.LinearSystem.factorize
    monkeypatch.setattr(fem.LinearSystem, "factorize",
                        lambda *a, **k: solves.append(1) or factorize(*a, **k))
    blocker = tmp_path / "a_file"
    blocker.write_text("x")                   # a path under a file cannot be written
    paths = {"out": str(blocker / "out")} if where == "out" else \
        {"out": str(tmp_path / "out"), "checkpoint": str(blocker / "ck.npz")}
    with pytest.raises(OSError, match="cannot write"):
        arch.run(nelx=8, nely=6, maxeval=2, **paths)
    assert solves == []


def test_arch_command_line(tmp_path, capsys):
    from topopt_problems import arch
    result = arch.main(["--nelx", "12", "--nely", "8", "--maxeval", "6", "--quiet",
                        "--out", str(tmp_path)])
    assert result.evaluations == 6
    assert "self-weight share" in capsys.readouterr().out
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["setup"]["nelx"] == 12 and saved["setup"]["interpolation"] == "ramp"
    with pytest.raises(SystemExit):
        arch.main(["--q", "-1", "--out", str(tmp_path)])


@pytest.mark.parametrize("nelx, nely, volfrac, weight", [(80, 60, 0.3, 4.0), (10, 6, 0.5, 1.0)])
def test_arch_setup_weight_and_supports(nelx, nely, volfrac, weight):
    """The half model's material at the volume bound weighs ``weight * P / 2``."""
    from topopt_problems import arch
    mesh, model, f, gravity = arch.setup(nelx, nely, volfrac, weight)
    w = BodyLoad(model, gravity)(np.full(model.n_el, volfrac))
    assert -np.sum(w[1::2]) == pytest.approx(weight * 0.5, rel=1e-12)
    assert np.sum(f) == pytest.approx(-0.5, rel=1e-15)                 # P / 2 on the half
    left = model.dofs(nodes=lambda x: np.isclose(x[0], 0.0), components=0)
    pin = model.dofs(nodes=(nelx, 0.0))
    np.testing.assert_array_equal(model.fixed, np.union1d(left, pin))
