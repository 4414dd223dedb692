"""Saved designs (`topopt.io`): design.npz, design.vtu, design.stl and load_design.

Every problem script of ``topopt_problems.__all__`` is run on a tiny mesh with a small
budget (`RUNS`; a script without a row fails `test_every_problem_has_a_run`);
its folder must hold the design files, readable by others (0644), the VTU must
give back ``x_phys`` and the state field, and `load_design` plus the problem's
own ``setup`` and the library's analysis (`ANALYSES`) must reproduce the
objective that ``result.json`` reports (issue 13). The STL of a 3-D design
must be a closed surface whose enclosed volume is that of the elements with
``x_phys >= 0.5`` (to 5 %).
"""

import importlib
import inspect
import json
import os
import re
import stat

import numpy as np
import pytest

import topopt_problems
from topopt import fem
from topopt.formulations.eigen import EigenProblem
from topopt.design.interpolation import simp
from topopt.io import enclosed_volume, iso_surface, load_design, save_design, signed_volume
from topopt.formulations.mechanism import MechanismProblem
from topopt.responses.structural import compliance, volume
from topopt.formulations.compliance import ComplianceProblem
from topopt.robust.moments import mean_std
from topopt.formulations.selfweight import SelfWeightProblem
from topopt.formulations.focus import intensity
from topopt.formulations.robust_compliance import RobustCompliance
from topopt.formulations.stress import MinimumVolumeStress
from topopt.responses.stress import relaxed_stress

meshio = pytest.importorskip("meshio")
pytest.importorskip("skimage")

# script: (keyword arguments of its run(), its state fields in design.vtu, is 3-D,
#          the objective's keys in result.json: write_results' `objective`)
RUNS = {
    "mbb_beam": (dict(nelx=12, nely=4, maxeval=8), ("displacement",), False,
                 ("result", "compliance")),
    "cantilever": (dict(nelx=12, nely=6, maxeval=8), ("displacement",), False,
                   ("result", "compliance")),
    "cantilever3d": (dict(nelx=12, nely=4, nelz=4, maxeval=20), ("displacement",), True,
                     ("result", "compliance")),
    "em_focus": (dict(h=8.0, maxeval=1), ("u_abs", "u_real", "u_imag"), False, ("result", "g")),
    "em_robust": (dict(h=8.0, maxeval=1, samples=4, workers=0), ("u_abs", "u_real", "u_imag"),
                  False, ("result", "field_enhancement")),
    "reliable_bracket": (dict(n=8, maxeval=3, samples=1000), ("displacement",), False,
                         ("reliability_based", "nominal_compliance")),   # flat result.json
    "cantilever_hole": (dict(nelx=9, nely=6, maxeval=6), ("displacement",), False,
                        ("result", "compliance")),
    "cantilever_two_loads": (dict(nelx=6, nely=6, maxeval=6),
                             ("displacement_1", "displacement_2"), False,
                             ("result", "compliance")),
    "heat_sink": (dict(nelx=8, nely=8, maxeval=6), ("temperature",), False,
                  ("result", "compliance")),
    "inverter": (dict(nelx=4, nely=8, maxeval=6), ("displacement",), False, ("result", "u_out")),
    "robust_inverter": (dict(nelx=6, nely=12, rmin=1.5, per_beta=10, every=5),   # inverts
                        ("displacement",), False, ("result", "u_out")),
    "eigen_beam": (dict(nelx=16, nely=4, maxeval=2), ("mode_1",), False,    # per stage
                   ("result", "omega1")),
    "l_bracket": (dict(n=20, maxeval=24), ("displacement",), False,         # two per block
                  ("result", "volume")),
    "arch": (dict(nelx=8, nely=6, maxeval=6), ("displacement",), False, ("result", "compliance")),
    "robust_cantilever": (dict(nelx=8, nely=4, maxeval=4, samples=100), ("displacement",), False,
                          ("result", "robust_objective")),
    "thermo_beam": (dict(nelx=8, nely=4, maxeval=6), ("displacement", "temperature"), False,
                    ("result", "compliance")),
    "mesh_bracket": (dict(maxeval=5), ("displacement",), False, ("result", "compliance")),
    "multimaterial_beam": (dict(nelx=12, nely=4, maxeval=6), ("displacement",), False,
                           ("result", "compliance")),
    "buckling_column": (dict(nelx=12, nely=6, maxeval=2), ("displacement", "mode_1"), False,
                        ("result", "lambda1")),                        # per stage
    "dynamic_beam": (dict(nelx=12, nely=6, static_maxeval=10, maxeval=4),
                     ("displacement_real", "displacement_imag"), False,
                     ("result", "dynamic_compliance")),
    "transient_heat": (dict(nelx=8, nely=12, steps=6, maxeval=4), ("temperature",), False,
                       ("result", "temperature")),
    "printable_cantilever": (dict(nelx=12, nely=6, maxeval=6), ("displacement",), False,
                             ("result", "compliance")),
    "heat_sink_flow": (dict(n=4, maxeval=4), ("velocity", "pressure", "temperature"), False,
                       ("result", "mean_temperature")),
    "double_pipe": (dict(n=4, maxeval=4), ("velocity", "pressure"), False,
                    ("result", "dissipated_power")),
    "diffuser": (dict(n=4, maxeval=4), ("velocity", "pressure"), False,
                 ("result", "dissipated_power")),
    "pipe_bend": (dict(re=10, n=5, maxeval=4), ("velocity", "pressure"), False,   # Newton
                  ("result", "dissipated_power")),
    "pipe_bend3d": (dict(n=6, maxeval=8), ("velocity", "pressure"), True,  # fluid at 8; tets
                    ("result", "dissipated_power")),
}


def _sizes(setup):
    return [setup[k] for k in ("nelx", "nely", "nelz") if k in setup]


def _compliance(saved, module, Emin=1e-9):
    """top88: ``c = f^T K(simp(x_phys))^-1 f`` (summed over load cases)."""
    setup = saved["setup"]
    _, model, f = module.setup(*_sizes(setup))[:3]
    E = simp(saved["x_phys"], setup["penal"], Emin)
    return float(compliance(fem.solve(model.system(), E, f), f))


def _heat_sink(saved, module):
    """Thermal compliance; the poor conductor ``k_min`` is the SIMP ``Emin``."""
    assert saved["setup"]["k_min"] == module.K_MIN
    return _compliance(saved, module, Emin=saved["setup"]["k_min"])


def _u_out(saved, module):
    """``u_out = l_out^T K(simp(x_phys))^-1 f`` (both inverters: topopt_problems.inverter.setup)."""
    s = saved["setup"]
    _, model, f, l_out = module.setup(s["nelx"], s["nely"], s["k_in"], s["k_out"])
    problem = MechanismProblem(model, f, l_out, s["volfrac"], s["rmin"], penal=s["penal"],
                               filter=s["filter"], hold=s["hold"])
    return float(l_out @ np.asarray(problem.state(saved["x_phys"])))


def _omega1(saved, module):
    s = saved["setup"]
    _, model, M0 = module.setup(s["nelx"], s["nely"], s["volfrac"], s["mass"], s["supports"])
    problem = EigenProblem(model, s["volfrac"], s["rmin"], M0=M0, n_modes=s["bound_modes"],
                           penal=s["penal"], Emin=s["Emin"])
    return problem.omega1(saved["x_phys"])


def _lambda1(saved, module):
    from topopt.formulations.buckling import BucklingProblem
    s = saved["setup"]
    _, model, f, passive = module.setup(s["nelx"], s["nely"])
    problem = BucklingProblem(model, f, s["volfrac"], s["rmin"], n_modes=s["n_modes"],
                              penal=s["penal"], penal_G=s["penal_G"], Emin=s["Emin"],
                              passive=passive)
    return float(problem.analysis(saved["x_phys"])[0][0])


def _l_bracket_problem(saved, module):
    s = saved["setup"]
    _, model, f, _ = module.setup(s["n"])
    return MinimumVolumeStress(model, f, s["sigma_allow"], s["rmin"], penal=s["penal"],
                               q=s["q"], P=s["P"], alpha=s["alpha"])


def _l_bracket_volume(saved, module):
    problem = _l_bracket_problem(saved, module)
    return float(volume(saved["x_phys"], problem.weights))


def _l_bracket_max_stress(saved, module):
    """Largest relaxed von Mises stress ``x_phys^q sigma_vm`` of the saved design."""
    problem = _l_bracket_problem(saved, module)
    x_phys = saved["x_phys"]
    u = fem.solve(problem.system, simp(x_phys, problem.penal, problem.Emin), problem.f)
    vm = np.sqrt(problem.stress.von_mises_squared(u))
    return float(np.max(relaxed_stress(x_phys, vm, problem.q)))


def _arch(saved, module):
    """``c = f(x)^T K(E(x))^-1 f(x)``, the weight's load included (`SelfWeightProblem`)."""
    s = saved["setup"]
    _, model, f, gravity = module.setup(s["nelx"], s["nely"], s["volfrac"], s["weight"])
    assert -gravity[1] == pytest.approx(s["gamma"], rel=1e-15)
    problem = SelfWeightProblem(model, f, gravity, s["volfrac"], s["rmin"],
                                interpolation=s["interpolation"], q=s["q"], penal=s["penal"])
    return float(compliance(*problem.state(saved["x_phys"])))


def _thermo_beam(saved, module):
    """``c = f(x)^T u`` with the heat field's expansion load (`ThermoelasticProblem`)."""
    from topopt.formulations.thermoelastic import ThermoelasticProblem
    s = saved["setup"]
    _, model, thermal, f, q = module.setup(s["nelx"], s["nely"], s["load"], s["heat"])
    problem = ThermoelasticProblem(model, thermal, f, q, s["volfrac"], s["rmin"],
                                   alpha=s["alpha"], nu=s["nu"], q=s["q"], q_beta=s["q_beta"],
                                   kmin=s["kmin"])
    return float(compliance(*problem.state(saved["x_phys"])[:2]))


def _robust_objective(saved, module):
    """``E[c] + k std[c]`` under ``f = B theta``, ``theta ~ N(MU, diag(sigma^2))`` (SOSM)."""
    s = saved["setup"]
    _, model, B = module.setup(s["nelx"], s["nely"])
    det = ComplianceProblem(model, B @ module.MU, s["volfrac"], s["rmin"], penal=s["penal"],
                            filter=s["filter"])
    Sigma = np.diag([s["sigma_x"] ** 2, s["sigma_y"] ** 2])
    robust = RobustCompliance(det, B, module.MU, Sigma, s["k"])
    E = simp(saved["x_phys"], s["penal"], det.Emin)
    mean, std = mean_std(robust.compliance, E, module.MU, Sigma)
    return float(mean + s["k"] * std)


def _reliable_bracket(saved, module):
    """Nominal compliance ``f0^T K^-1 f0`` of the reliability-based design."""
    s = saved["setup"]
    _, model, f0, _ = module.setup(s["n"])
    E = simp(saved["x_phys"], s["penal"], s["Emin"])
    return float(compliance(fem.solve(model.system(), E, f0), f0))


def _em_focus(saved, module):
    """``g = Re(u^H O u)`` of the projected element densities of the design region."""
    s = saved["setup"]
    assert not s["subcell"]                       # one density per element
    _, model, design, _, b, O = module.setup(s["resolution_nm"], isolated=s["isolated"])
    design_cells = saved["cell_data"]["design"].astype(bool)
    assert np.array_equal(np.flatnonzero(design_cells), design)
    u = module.solve_design(model, b, saved["x_phys"][design])
    return float(intensity(u, O))


def _multimaterial(saved, module):
    """``c = f^T K(E)^-1 f`` with ``E = ordered_simp(x_phys; rho, E, p)`` (Zuo & Saitou 2017)."""
    from topopt.design.multimaterial import ordered_simp
    s = saved["setup"]
    _, model, f = module.setup(s["nelx"], s["nely"])
    E = ordered_simp(saved["x_phys"], s["rho"], s["E"], s["penal"], 1e-9)
    return float(compliance(fem.solve(model.system(), E, f), f))


def _dynamic_beam(saved, module):
    """``|f^H u|`` with ``(K - w^2 M + i w C) u = f`` at the saved frequency and damping."""
    from topopt.formulations.dynamic import DynamicComplianceProblem
    s = saved["setup"]
    _, model, f = module.setup(s["nelx"], s["nely"])
    problem = DynamicComplianceProblem(model, f, s["omega"], s["volfrac"], s["rmin"],
                                       alpha=s["alpha"], beta=s["beta"],
                                       mass=s["mass_interpolation"])
    return problem.final(saved["x_phys"])[0]["dynamic_compliance"]


def _transient_heat(saved, module):
    """``J = 100 sum_n L^T T_n`` of implicit Euler from the saved steps, end time and theta."""
    from topopt.formulations.transient_heat import TransientHeatProblem
    s = saved["setup"]
    model, Q, sig, L, dt = module.setup(s["nelx"], s["nely"], s["steps"], s["end"])
    assert dt == pytest.approx(s["dt"], rel=1e-15)
    problem = TransientHeatProblem(model, Q, sig, L, dt, s["volfrac"], s["rmin"],
                                   theta=s["theta"], capacity=s["capacity"],
                                   scale=module.SCALE, penal=s["penal"], Emin=s["xmin"])
    return problem.final(saved["x_phys"])[0]["temperature"]


def _overhang_violations(saved, module):
    """Solid elements of the saved design without support below (`overhang_violations`)."""
    from topopt.design.overhang import OverhangFilter
    s = saved["setup"]
    mesh = module.setup(s["nelx"], s["nely"])[0]
    return OverhangFilter(mesh, s["direction"]).violations(saved["x_phys"])


def _em_robust(saved, module):
    """``|E(x0)| / |E_inc|`` of the reliability-based design at 532 nm (cubic J&C silver)."""
    from topopt.formulations import silver_jc_cubic
    s = saved["setup"]
    _, model, design, _, b, O = module.em_focus.setup(s["resolution_nm"])
    n = silver_jc_cubic(module.em_focus.WAVELENGTH)
    a = 1.0 / (1.0 + saved["x_phys"][design] * (n - 1.0)) ** 2 - 1.0
    return 2.0 * np.sqrt(float(intensity(model.solve(a, b), O)))


def _heat_sink_flow(saved, module):
    """The mean temperature of the heated block: Stokes flow of the saved design, then
    the temperature in it (`ConvectionProblem.responses_at`)."""
    from topopt.formulations.flow_thermal import ConvectionProblem
    s = saved["setup"]
    mesh, model, thermal = module.setup(s["n"], s["re"])
    problem = ConvectionProblem(model, thermal, s["volfrac"], s["rmin"], heated=module.heated,
                                inlet=module.inlet, outlet=module.outlet, dp_max=1.0)
    return float(problem.responses_at(saved["x_phys"])[0])


def _dissipated_power(saved, module, **problem):
    """Borrvall & Petersson's ``J = 1/2 int alpha(rho) |u|^2 + mu/2 int grad u : grad u`` of
    the flow through the saved design at the run's last ``q`` (`FlowProblem.state`, `measure`)."""
    from topopt.formulations.flow import FlowProblem
    s = saved["setup"]
    sizes = {k: s[k] for k in inspect.signature(module.setup).parameters if k in s}
    model = module.setup(**sizes)[1]
    flow = FlowProblem(model, s["volfrac"], s["rmin"], convention=s["convention"], **problem)
    assert s["objective"] == "dissipated_power"
    q, x_phys = s["qs"][-1], saved["x_phys"]
    return float(flow.measure(flow.state(x_phys, q), x_phys, q))


def _pipe_bend(saved, module):
    """`_dissipated_power` with the script's Newton options and convective continuation."""
    return _dissipated_power(saved, module, steps=module.STEPS, newton=module.NEWTON)


# name -> (saved, module) -> the objective of result.json, from load_design(out) alone
ANALYSES = {
    "mbb_beam": _compliance,
    "cantilever": _compliance,
    "cantilever3d": _compliance,
    "em_focus": _em_focus,
    "em_robust": _em_robust,
    "reliable_bracket": _reliable_bracket,
    "cantilever_hole": _compliance,
    "cantilever_two_loads": _compliance,
    "heat_sink": _heat_sink,
    "inverter": _u_out,
    "robust_inverter": _u_out,
    "eigen_beam": _omega1,
    "l_bracket": _l_bracket_volume,
    "arch": _arch,
    "robust_cantilever": _robust_objective,
    "thermo_beam": _thermo_beam,
    "mesh_bracket": _compliance,
    "multimaterial_beam": _multimaterial,
    "buckling_column": _lambda1,
    "dynamic_beam": _dynamic_beam,
    "transient_heat": _transient_heat,
    "printable_cantilever": _compliance,
    "heat_sink_flow": _heat_sink_flow,
    "double_pipe": _dissipated_power,
    "diffuser": _dissipated_power,
    "pipe_bend": _pipe_bend,
    "pipe_bend3d": _dissipated_power,
}
# further figures of result.json that the saved design must reproduce
EXTRA = {"l_bracket": [(("result", "max_von_mises"), _l_bracket_max_stress)],
         "printable_cantilever": [(("result", "overhang_violations"), _overhang_violations)]}
# a single load case whose saved state u gives f^T u = the reported compliance
WORK = ["mbb_beam", "cantilever", "cantilever3d", "cantilever_hole", "heat_sink", "mesh_bracket"]


def test_every_problem_has_a_run():
    """Each script of ``topopt_problems.__all__`` has its row in RUNS and ANALYSES (issue 13)."""
    assert set(topopt_problems.__all__) == set(RUNS)
    assert set(topopt_problems.__all__) == set(ANALYSES)
    for name, (kwargs, *_rest) in RUNS.items():
        module = importlib.import_module(f"topopt_problems.{name}")
        params = inspect.signature(module.run).parameters
        assert set(kwargs) <= set(params), name
        assert "out" in params, name


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    done = {}
    for name, (kwargs, *_rest) in RUNS.items():
        out = str(tmp_path_factory.mktemp(name))
        module = importlib.import_module(f"topopt_problems.{name}")
        done[name] = (module, module.run(out=out, **kwargs), out)
    return done


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def _reported(out, keys):
    value = json.load(open(os.path.join(out, "result.json")))
    for k in keys:
        value = value[k]
    return float(value)


@pytest.mark.parametrize("name", RUNS)
def test_design_files_written_0644(runs, name):
    _, _, out = runs[name]
    wanted = ["design.npz", "design.vtu", "result.json", "design.png"]
    wanted += ["design.stl"] if RUNS[name][2] else []
    for f in wanted:
        assert _mode(os.path.join(out, f)) == 0o644, f
    assert ("design.stl" in os.listdir(out)) == RUNS[name][2]


@pytest.mark.parametrize("name", RUNS)
def test_vtu_gives_back_x_phys_and_state(runs, name):
    _, result, out = runs[name]
    vtu = meshio.read(os.path.join(out, "design.vtu"))
    saved = load_design(out)
    assert saved["setup"]["problem"] == name
    x_phys = vtu.cell_data["x_phys"][0]
    np.testing.assert_allclose(x_phys, saved["x_phys"], rtol=0, atol=1e-12)
    if name in ("em_focus", "em_robust"):    # whole mesh: the design region holds x_phys
        design = saved["cell_data"]["design"].astype(bool)
        np.testing.assert_allclose(x_phys[design], result.x_phys, rtol=0, atol=1e-12)
        assert not np.any(x_phys[~design])
    else:
        np.testing.assert_allclose(x_phys, result.x_phys, rtol=0, atol=1e-12)
        np.testing.assert_allclose(vtu.cell_data["x"][0], result.x, rtol=0, atol=1e-12)
    n_points, dim = saved["mesh"].p.shape[1], saved["mesh"].p.shape[0]
    for state in RUNS[name][1]:
        field = vtu.point_data[state]
        ref = saved["point_data"][state]
        assert ref.shape[0] == n_points and field.shape[0] == n_points, state
        assert ref.ndim == 1 or ref.shape[1] == dim, state       # scalar or a vector
        assert np.abs(ref).max() > 0, state
        np.testing.assert_allclose(field[:, :ref.shape[1]] if ref.ndim == 2 else field, ref,
                                   rtol=1e-12, atol=0)
        if ref.ndim == 2 and ref.shape[1] == 2:             # VTK vectors: zero third component
            assert field.shape[1] == 3 and not np.any(field[:, 2])
    np.testing.assert_allclose(vtu.points[:, :dim], saved["mesh"].p.T)


@pytest.mark.parametrize("name", RUNS)
def test_load_design_reproduces_the_objective(runs, name):
    """load_design + the script's setup and the library's analysis: result.json's objective."""
    module, _, out = runs[name]
    saved = load_design(out)
    assert saved["setup"]["problem"] == name
    value = ANALYSES[name](saved, module)
    reported = _reported(out, RUNS[name][3])
    assert np.isfinite(reported) and reported != 0
    assert value == pytest.approx(reported, rel=1e-8)
    for keys, analysis in EXTRA.get(name, []):
        assert analysis(saved, module) == pytest.approx(_reported(out, keys), rel=1e-8), keys


@pytest.mark.parametrize("name", WORK)
def test_saved_state_does_the_compliance(runs, name):
    """The state saved is that design's solution: ``f^T u = c``."""
    module, _, out = runs[name]
    saved = load_design(out)
    _, model, f = module.setup(*_sizes(saved["setup"]))[:3]
    assert np.array_equal(model.mesh.p, saved["mesh"].p)
    assert np.array_equal(model.mesh.t, saved["mesh"].t)
    u = saved["point_data"][RUNS[name][1][0]]
    u = u[:, None] if u.ndim == 1 else u
    nodal = model.basis.nodal_dofs
    fu = float(sum(f[nodal[k]] @ u[:, k] for k in range(nodal.shape[0])))
    assert fu == pytest.approx(_reported(out, RUNS[name][3]), rel=1e-8)


# meshio's STL reader multiplies the file's uint32 triangle count (its check of
# ASCII versus binary); harmless overflow warning in meshio 5
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_stl_closed_and_its_volume(runs):
    _, _, out = runs["cantilever3d"]
    saved = load_design(out)
    stl = meshio.read(os.path.join(out, "design.stl"))
    faces = stl.cells_dict["triangle"]
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]),
                    axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert set(counts.tolist()) == {2}, "every edge in exactly two triangles"
    solid = float(np.sum(saved["x_phys"] >= 0.5)) * 1.0          # unit hexahedra
    assert solid > 0
    assert enclosed_volume(stl.points, faces) == pytest.approx(solid, rel=0.05)
    # facing outward: the signed volume is the enclosed volume (was -692.6: inside-out)
    assert signed_volume(stl.points, faces) == pytest.approx(solid, rel=0.05)
    assert_faces_outward(stl.points, faces)
    lo, hi = saved["mesh"].p.min(axis=1), saved["mesh"].p.max(axis=1)
    assert np.all(stl.points >= lo - 1e-9) and np.all(stl.points <= hi + 1e-9)


@pytest.mark.parametrize("shape,h", [((3, 2, 2), 1.0), ((4, 3, 2), 0.5), ((2, 2, 5), 2.0)])
def test_iso_surface_of_a_full_block(shape, h):
    """A full box: the surface spans the box exactly; volume nx ny nz h^3 less the chamfers.

    Chamfers of width h / (2 refine) on the 12 edges: volume lost per unit edge
    length (h / 2r)^2 / 2, less the 8 corners; bounded here, not tuned.
    """
    mesh = fem.box(*shape, h=h)
    verts, faces = iso_surface(mesh, np.ones(mesh.t.shape[1]), refine=4)
    np.testing.assert_allclose(verts.min(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(verts.max(axis=0), np.array(shape) * h, atol=1e-12)
    full = np.prod(shape) * h**3
    edges = 4 * sum(shape) * h
    chamfer = edges * (h / 8) ** 2 / 2
    assert full - chamfer <= enclosed_volume(verts, faces) < full
    assert signed_volume(verts, faces) == enclosed_volume(verts, faces) > 0
    assert_faces_outward(verts, faces)


def assert_faces_outward(verts, faces):
    """The triangles on each face of the bounding box have their normal pointing out."""
    verts = np.asarray(verts, dtype=float)
    tri = verts[faces]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    lo, hi = verts.min(axis=0), verts.max(axis=0)
    for axis in range(3):
        for bound, sign in ((lo, -1), (hi, 1)):
            on = np.all(np.isclose(tri[:, :, axis], bound[axis]), axis=1)
            assert on.any()
            assert np.all(sign * normal[on, axis] > 0), (axis, sign)


def test_iso_surface_of_tetrahedra():
    """On tetrahedra: the outer faces of those with ``x_phys >= 0.5``, closed (every edge in
    two triangles on an L of whole cubes), facing out, enclosing exactly their volume."""
    import skfem
    mesh = skfem.MeshTet.init_tensor(*[np.linspace(0.0, 1.0, 7)] * 3)
    c = mesh.p[:, mesh.t].mean(axis=1)
    x = ((c[0] < 0.5) | (c[1] < 0.5)).astype(float) * (c[2] < 0.5)        # an L prism
    verts, faces = iso_surface(mesh, x)
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]),
                    axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    assert set(counts.tolist()) == {2}
    assert enclosed_volume(verts, faces) == pytest.approx(0.375, rel=1e-12)   # 3/4 of 1/2
    assert_faces_outward(verts, faces)
    rng = np.random.default_rng(0)                  # any design: the tetrahedra's volume
    x = rng.random(mesh.t.shape[1])
    verts, faces = iso_surface(mesh, x)
    solid = float(np.sum(fem.element_volumes(mesh)[x >= 0.5]))
    assert signed_volume(verts, faces) == pytest.approx(solid, rel=1e-12)


def test_signed_volume_sees_an_inside_out_surface():
    mesh = fem.box(2, 2, 2)
    verts, faces = iso_surface(mesh, np.ones(8), refine=2)
    assert signed_volume(verts, faces[:, ::-1]) == pytest.approx(-signed_volume(verts, faces))
    with pytest.raises(ValueError, match="the surface faces inward"):
        enclosed_volume(verts, faces[:, ::-1])


def test_load_design_round_trip_and_as_x0(tmp_path):
    mesh = fem.rectangle(4, 3)
    x = np.linspace(0, 1, 12)
    written = save_design(str(tmp_path), mesh, x, x**2, {"problem": "t", "volfrac": 0.5},
                          point_data={"temperature": np.arange(20.0)})
    assert [os.path.basename(p) for p in written] == ["design.npz", "design.vtu"]
    saved = load_design(str(tmp_path / "design.npz"))
    assert type(saved["mesh"]).__name__ == "MeshQuad1"
    assert np.array_equal(saved["mesh"].t, mesh.t) and np.array_equal(saved["mesh"].p, mesh.p)
    assert np.array_equal(saved["x"], x) and np.array_equal(saved["x_phys"], x**2)
    assert saved["setup"] == {"problem": "t", "volfrac": 0.5}
    assert np.array_equal(saved["point_data"]["temperature"], np.arange(20.0))
    # used as x0 of a run on the same mesh
    from topopt_problems import mbb_beam
    result = mbb_beam.run(nelx=4, nely=3, maxeval=2, x0=saved["x"], verbose=False)
    assert result.evaluations == 2


@pytest.mark.parametrize("kwargs,match", [
    (dict(x=np.ones(5)), "x has shape"),
    (dict(x_phys=np.ones(13)), "x_phys has shape"),
    (dict(point_data={"u": np.ones(3)}), r"point_data\['u'\]"),
    (dict(cell_data={"setup": np.ones(12)}), "may not be named"),
    (dict(cell_data={"x": np.ones(12)}), "may not be named"),
    (dict(point_data={"point_u": np.ones(20)}), "may not be named"),
    (dict(point_data={"u": np.ones(20, dtype=complex)}), "real numbers"),
    (dict(cell_data={"E": np.ones(12, dtype=complex)}), "E is complex"),
    (dict(x=np.r_[np.nan, np.ones(11)]), r"x has 1 non-finite entry \(first at row 0\)"),
    (dict(x_phys=np.r_[np.ones(10), np.inf, np.nan]), "x_phys has 2 non-finite entries"),
    (dict(point_data={"u": np.r_[np.ones(19), np.nan]}), r"point_data\['u'\] has 1 non-finite"),
    # held-out battery, round 2: densities outside [0, 1], cell data named as such
    (dict(x_phys=np.full(12, 1.5)), r"x_phys must lie in \[0, 1\] up to 0.01 \(a density\); got 1.5"),
    (dict(x=np.r_[np.ones(11), -0.5]), r"x must lie in \[0, 1\].*got -0.5 at element 11"),
    (dict(cell_data={"E": np.ones(3)}), r"cell_data\['E'\] has shape \(3,\)"),
])
def test_save_design_refuses(tmp_path, kwargs, match):
    args = dict(x=np.ones(12), x_phys=np.ones(12), setup={}) | kwargs
    with pytest.raises(ValueError, match=match):
        save_design(str(tmp_path), fem.rectangle(4, 3), **args)
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(setup=[1]), TypeError, "setup must be a dict"),
    (dict(setup={"f": object()}), TypeError, "setup must be JSON-serialisable"),
    (dict(stl="yes"), TypeError, "stl must be True, False or None"),
])
def test_save_design_refuses_its_options(tmp_path, kwargs, error, match):
    args = dict(x=np.ones(12), x_phys=np.ones(12), setup={}) | kwargs
    with pytest.raises(error, match=match):
        save_design(str(tmp_path), fem.rectangle(4, 3), **args)
    assert not os.listdir(tmp_path)


def test_save_design_into_a_file(tmp_path):
    (tmp_path / "f").write_text("a file\n")
    with pytest.raises(ValueError, match="out: .* is a file; expected a folder"):
        save_design(str(tmp_path / "f"), fem.rectangle(4, 3), np.ones(12), np.ones(12), {})


def test_refusals_of_iso_surface_and_load_design(tmp_path):
    mesh = fem.box(2, 2, 2)
    with pytest.raises(ValueError, match="level"):
        iso_surface(mesh, np.ones(8), level=1.0)
    with pytest.raises(ValueError, match="refine"):
        iso_surface(mesh, np.ones(8), refine=0)
    with pytest.raises(ValueError, match="empty"):
        iso_surface(mesh, np.zeros(8))
    with pytest.raises(TypeError, match="hexahedra"):
        iso_surface(fem.rectangle(2, 2), np.ones(4))
    np.savez(tmp_path / "other.npz", x=np.ones(3))
    with pytest.raises(ValueError, match="not a topopt design"):
        load_design(tmp_path / "other.npz")


def test_empty_3d_design_skips_the_stl(tmp_path, capsys):
    """No element with x_phys >= 0.5: npz and vtu, no STL (an earlier one removed), one line."""
    mesh = fem.box(2, 2, 2)
    save_design(str(tmp_path), mesh, np.ones(8), np.ones(8), {})
    assert os.path.exists(tmp_path / "design.stl")
    capsys.readouterr()
    written = save_design(str(tmp_path), mesh, np.ones(8), np.full(8, 0.4), {})
    assert [os.path.basename(p) for p in written] == ["design.npz", "design.vtu"]
    assert not os.path.exists(tmp_path / "design.stl")
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and line.startswith("design.stl not written: no element")


def test_without_meshio_npz_still_written(tmp_path, monkeypatch, capsys):
    """A missing io extra: design.npz written, one line naming the extra, no crash."""
    import sys
    monkeypatch.setitem(sys.modules, "meshio", None)            # import raises ImportError
    written = save_design(str(tmp_path), fem.box(2, 2, 2), np.ones(8), np.ones(8), {})
    assert [os.path.basename(p) for p in written] == ["design.npz"]
    line = capsys.readouterr().out
    assert line.count("\n") == 1 and "pip install 'topopt[io]'" in line
    from topopt.io.designs import write_vtu
    with pytest.raises(ImportError, match=r"topopt\[io\]"):
        write_vtu(str(tmp_path / "d.vtu"), fem.box(2, 2, 2), {"x": np.ones(8)})


def _good_design(tmp_path, **changes):
    """A valid design.npz of a 4 x 2 quad mesh (8 elements, 15 points), `changes` applied."""
    mesh = fem.rectangle(4, 2)
    save_design(str(tmp_path), mesh, np.full(8, 0.5), np.full(8, 0.25), {"problem": "mbb_beam"},
                point_data={"u": np.zeros((15, 2))})
    path = tmp_path / "design.npz"
    with np.load(path) as data:
        arrays = dict(data)
    for k, v in changes.items():
        if v is None:
            arrays.pop(k)
        else:
            arrays[k] = v
    np.savez(path, **arrays)
    return path


# one row per bad file: what is in it -> the "(why)" of `not a topopt design: PATH (why)`
BAD_FILES = [
    ("text", lambda p: p.write_text("hello\n" * 20), "(not an .npz archive)"),
    ("empty", lambda p: p.write_bytes(b""), "(an empty file)"),
    ("truncated", lambda p: p.write_bytes(p.read_bytes()[:300]),
     "a truncated .npz archive: its zip directory is missing"),
    ("object array", lambda p: np.savez(p, x=np.array([{}, 1], dtype=object)),
     "'x' holds pickled Python objects, which a design never does"),
    ("missing", lambda p: np.savez(p, x=np.ones(3)), "missing ['cells'"),
]
BAD_ARRAYS = [
    (dict(x=np.full(7, 0.5)), "'x' has 7 values for a mesh of 8 elements"),
    (dict(x_phys=np.full(9, 0.5)), "'x_phys' has 9 values for a mesh of 8 elements"),
    (dict(x=np.full((8, 1), 0.5)), "'x' is a 2-D float64 array"),
    (dict(x=np.array(["a"] * 8)), "expected 1-D real numbers"),
    (dict(x_phys=np.r_[np.nan, np.ones(7)]), "'x_phys' has 1 non-finite entries"),
    (dict(mesh_type=np.array("MeshWedge1")), "mesh type 'MeshWedge1'"),
    (dict(cell_type=np.array("triangle")), "cell type 'triangle' of a MeshQuad1"),
    (dict(cells=np.zeros((8, 3), dtype=int)), "a MeshQuad1 needs integers of shape (n, 4)"),
    (dict(cells=np.full((8, 4), 99)), "names nodes 99..99; the mesh has 15 points"),
    (dict(points=np.zeros((15, 3))), "a MeshQuad1 needs (n, 2)"),
    (dict(setup=np.array("{not json")), "'setup' is not JSON text"),
    (dict(setup=np.array("[1, 2]")), "'setup' is a list"),
    (dict(point_u=np.zeros((14, 2))), "point data 'u'"),
    (dict(E=np.ones(5)), "'E' has 5 values"),
    # held-out battery, round 2: densities outside [0, 1]
    (dict(x=np.full(8, 1.5)), "'x' has the value 1.5 at element 0; a density lies in [0, 1]"),
    (dict(x=np.arange(8)), "'x' has the value 7 at element 7"),
    (dict(x_phys=np.r_[np.full(7, 0.5), -0.5]), "'x_phys' has the value -0.5 at element 7"),
]


@pytest.mark.parametrize("name,make,why", BAD_FILES, ids=[r[0] for r in BAD_FILES])
def test_load_design_refuses_what_is_no_design(tmp_path, name, make, why):
    path = _good_design(tmp_path)
    make(path)
    with pytest.raises(ValueError) as info:
        load_design(path)
    message = str(info.value)
    assert message.startswith(f"not a topopt design: {path} (") and why in message, message
    assert "allow_pickle" not in message


@pytest.mark.parametrize("changes,why", BAD_ARRAYS)
def test_load_design_checks_its_arrays(tmp_path, changes, why):
    path = _good_design(tmp_path, **changes)
    with pytest.raises(ValueError) as info:
        load_design(path)
    assert str(info.value).startswith(f"not a topopt design: {path} (") and why in str(info.value)


@pytest.mark.parametrize("kwargs,why", [
    (dict(mesh=fem.rectangle(4, 3)), "its mesh has 8 elements (MeshQuad1); the problem's has 12"),
    (dict(mesh=fem.rectangle(2, 4)), "not the problem's"),
    (dict(mesh=fem.rectangle(4, 2, h=2.0)), "not the problem's"),
    (dict(problem="cantilever"), "a design of problem 'mbb_beam'; expected 'cantilever'"),
])
def test_load_design_for_another_mesh_or_problem(tmp_path, kwargs, why):
    path = _good_design(tmp_path)
    with pytest.raises(ValueError, match=re.escape(why)):
        load_design(path, **kwargs)
    saved = load_design(path, mesh=fem.rectangle(4, 2), problem="mbb_beam")
    assert saved["x"].shape == (8,)


def test_load_design_integer_design_is_float(tmp_path):
    """A 0/1 design saved as integers is a valid design: read back as float, same values."""
    path = _good_design(tmp_path, x=np.array([0, 1] * 4))
    saved = load_design(path)
    assert saved["x"].dtype == float and saved["x"].tolist() == [0.0, 1.0] * 4


def test_load_design_for_a_mesh_that_is_not_one(tmp_path):
    with pytest.raises(TypeError, match="mesh must be a scikit-fem Mesh"):
        load_design(_good_design(tmp_path), mesh="m")


def test_load_design_of_no_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no design file"):
        load_design(tmp_path / "none.npz")
