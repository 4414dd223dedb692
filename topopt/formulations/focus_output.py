"""The files of a focusing run (`topopt.formulations.focus`): design, field, history, metrics."""

from __future__ import annotations

import os

import numpy as np

from ..design.interpolation import permittivity
from ..io.result import RunResult
from ..io.folder import plot_record, write_json

__all__ = ["write_focus", "field_map", "focus_markers"]

#: The objective as plotted (``g``; minimized: ``-g``).
G_LABEL = "g = |grad u(x0)|^2"


def _whole(prob, values, dtype=float) -> np.ndarray:
    """Per design element `values` on the whole mesh (0 outside the design region)."""
    out = np.zeros(prob.mesh.t.shape[1], dtype=dtype)
    out[prob.design] = values
    return out


def focus_markers(prob):
    """The setup drawn on a focusing design (`topopt.plot.Markers`, in nm): the focal
    point ``x0`` (the centre of the focus disk's elements), the design region's outline
    and, when the setup records its source line ``h1``, the incident wave's direction.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from topopt import fem
    >>> mesh = fem.rectangle(4, 4)                  # a stand-in cell: focus at element 5
    >>> setup = SimpleNamespace(window={}, record={})
    >>> prob = SimpleNamespace(mesh=mesh, design=[0, 1, 2, 3], center=[5], setup=setup)
    >>> m = focus_markers(prob)
    >>> m.kinds(), m.items[0]["points"].tolist()
    (['focus', 'region'], [[1.5, 1.5]])
    """
    from ..fem.mesh import element_centroids
    from ..plot.setup import Markers
    x0 = element_centroids(prob.mesh)[prob.center].mean(axis=0)
    out = Markers(2).add("focus", x0, label="focal point x0")
    out.region(prob.mesh, prob.design, "design region")
    s, window = prob.setup, prob.setup.window
    if "h1" in s.record and {"xlim", "ylim"} <= set(window):
        (a, b), (c, d) = window["xlim"], window["ylim"]
        wave = f", λ = {s.record['wavelength_nm']:g} nm" if "wavelength_nm" in s.record else ""
        out.add("body_load", [(a + 0.1 * (b - a), d - 0.03 * (d - c))], [(0.0, -1.0)],
                label=f"incident wave{wave}")
    return out


def field_map(prob, result: RunResult, u) -> np.ndarray:
    """``|E| / |E_inc|`` per element of the field `u`: ``2 |grad u| / |eps|``."""
    s = prob.setup
    eps = np.ones(prob.mesh.t.shape[1], dtype=complex)
    eps[prob.design] = permittivity(result.x_phys, s.n_metal, s.n_air)
    return 2.0 * np.linalg.norm(np.abs(prob.model.element_gradients(u)), axis=1) / np.abs(eps)


def write_focus(out: str, prob, result: RunResult, u, objective_label: str = G_LABEL,
                objective_scale: float = -1.0, history_title: str | None = None) -> None:
    """The design, its field `u` (``|E|/|E_inc|`` map), the history and the metrics.

    The history is drawn as `objective_label`, the minimized objective times
    `objective_scale` (by default ``g``, minimized as ``-g``), titled
    `history_title` (by default the stages' ``beta``).

    ``design.npz`` / ``design.vtu`` (`topopt.io.save_design`) hold ``x`` and
    ``x_phys`` on the whole mesh (0 outside the design region, cell data
    ``design`` marks it), ``E_abs`` = ``|E|/|E_inc|`` per element and the field
    ``u`` at the points (``u_real``, ``u_imag``, ``u_abs``).
    """
    from ..plot.figures import save_design
    from ..plot.history import save_history
    os.makedirs(out, exist_ok=True)
    s = prob.setup
    density = _whole(prob, result.x_phys)
    markers = focus_markers(prob)
    save_design(prob.mesh, density, os.path.join(out, "design.png"),
                title=f"projected density, h = {result['resolution_nm']} nm: |E(x0)|/|E_inc| = "
                      f"{result['field_enhancement']:.2f}",
                label="density (0 air, 1 silver)", markers=markers, units="nm", **s.window)
    E = field_map(prob, result, u)
    save_design(prob.mesh, E, os.path.join(out, "field.png"), cmap="hot", vmin=0.0, vmax=30.0,
                title=f"|E| / |E_inc|, enhancement at x0 = {result['field_enhancement']:.1f}",
                label="|E| / |E_inc|", markers=markers, units="nm", **s.window)
    record = plot_record(result.history, objective_label, objective_scale, **s.window,
                         markers=markers, units="nm")
    if history_title is None:
        history_title = "EM focusing, stages beta = " + ", ".join(f"{b:g}" for b in s.betas)
    save_history(result.history, os.path.join(out, "history.png"), title=history_title,
                 objective_label=objective_label, objective_scale=objective_scale)
    write_json(os.path.join(out, "result.json"),
               {**result.record(), "setup": s.record, "result": result.metrics | result.record(),
                **record})
    _keep(out, prob, result, u, density, E)


def _keep(out: str, prob, result: RunResult, u, density, E) -> None:
    """``design.npz`` / ``design.vtu`` of `write_focus`."""
    from ..io.designs import save_design as keep_design
    s = prob.setup
    x = _whole(prob, result.x)
    u_nodes = prob.model.full(u)[prob.model.basis.nodal_dofs[0]]     # periodic dofs unfolded
    keep_design(out, prob.mesh, x, density, {"problem": s.name, **s.record,
                                             "resolution_nm": result["resolution_nm"],
                                             "subcell": result["subcell"],
                                             "isolated": result["isolated"]},
                point_data={"u_real": u_nodes.real, "u_imag": u_nodes.imag,
                            "u_abs": np.abs(u_nodes)},
                cell_data={"E_abs": E, "design": np.isin(np.arange(x.size), prob.design)})
