"""Pictures of `topopt.formulations.focus_designs`: the designs side by side, their heat maps."""

from __future__ import annotations

import numpy as np

__all__ = ["save_designs", "save_heatmaps"]

TITLES = {"nominal": "nominal", "robust": "robust (band + edges)",
          "reliability_based": "reliability-based"}


def save_designs(path: str, prob, designs: dict, figures: dict, beta: float) -> str:
    """The projected designs (design region only), one panel each, with their figures."""
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure
    from .focus_output import focus_markers
    x0 = focus_markers(prob).items[0]["points"][0]
    fig = Figure(figsize=(4.2 * len(designs), 4.6))
    quads = prob.mesh.p[:, prob.mesh.t[:, prob.design]].transpose(2, 1, 0)
    for i, (name, x) in enumerate(designs.items()):
        ax = fig.add_subplot(1, len(designs), i + 1)
        pc = PolyCollection(quads, array=prob.element_density(x, beta), cmap="gray_r",
                            edgecolors="none")
        pc.set_clim(0.0, 1.0)
        ax.add_collection(pc)
        ax.autoscale_view()
        ax.plot(*x0, ls="none", marker="+", ms=11, mew=2.0, color="tab:red", gid="focus",
                label="focal point x0")
        ax.set_aspect("equal")
        f = figures[name]
        ax.set_title(f"{TITLES.get(name, name)}\nE = {f['enhancement_nominal']:.1f}, worst "
                     f"{f['worst_on_grid']:.1f}, pf(MC) = {f['pf_mc']:.3f}", fontsize=10)
        ax.set_xlabel("x (nm)")
    fig.axes[0].set_ylabel("y (nm)")
    fig.axes[0].legend(loc="lower left", fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def save_heatmaps(path: str, figures: dict, spec) -> str:
    """``E(d, lambda)`` of each design on the common grid, one colour scale."""
    from matplotlib.figure import Figure
    grids = {k: np.asarray(v["grid"]) for k, v in figures.items()}
    vmax = max(g.max() for g in grids.values())
    fig = Figure(figsize=(4.4 * len(grids), 4.0))
    for i, (name, G) in enumerate(grids.items()):
        ax = fig.add_subplot(1, len(grids), i + 1)
        im = ax.imshow(G, origin="lower", cmap="viridis", vmin=0.0, vmax=vmax, aspect="auto")
        for (r, c), v in np.ndenumerate(G):
            ax.text(c, r, f"{v:.1f}", ha="center", va="center", fontsize=8,
                    color="white" if v < 0.6 * vmax else "black")
        ax.set_xticks(range(len(spec.grid_wavelengths)),
                      [f"{v:g}" for v in spec.grid_wavelengths])
        ax.set_yticks(range(len(spec.grid_shifts)), [f"{v:+g}" for v in spec.grid_shifts])
        ax.set_xlabel("wavelength (nm)")
        ax.set_title(f"{TITLES.get(name, name)}: worst {G.min():.1f}", fontsize=10)
    fig.axes[0].set_ylabel("edge shift d (nm, + dilated)")
    fig.colorbar(im, ax=fig.axes, label="|E(x0)| / |E_inc|", shrink=0.85)
    fig.savefig(path, dpi=110)
    return path
