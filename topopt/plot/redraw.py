"""A run folder's ``design.png`` drawn again with the whole setup (`redraw_design`).

The run's writer (`topopt.io.write_results`) draws the supports and loads of
a model; a problem whose setup has more (masses, heat sources, ports,
springs, passive regions, a body load) declares it as `topopt.plot.Markers`
and draws its design again with them: the design of ``design.npz``, the
half model and window of ``result.json``'s ``plot`` settings, the title of
the picture written. The markers are kept in ``result.json`` (``plot``'s
``markers`` and ``units``), so that ``topopt show`` draws them too.
"""

from __future__ import annotations

import json
import os

from .canvas import _png_title
from .setup import Markers

__all__ = ["redraw_design"]


def redraw_design(out: str, markers: Markers, **kwargs) -> str:
    """Draw ``out/design.png`` again with `markers`; returns its path.

    Parameters
    ----------
    out : str
        A run folder of a 2-D design: ``design.npz``, ``result.json`` and
        ``design.png`` (`topopt.io.write_results`).
    markers : topopt.plot.Markers
        The whole setup, in the half model's coordinates for a mirrored design
        (the supports and loads of ``result.json`` are replaced by them).
    kwargs
        More `topopt.plot.design_figure` keywords (``label``; ``units``, kept in
        ``result.json`` with the markers).

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from topopt import fem
    >>> from topopt.io.folder import write_results
    >>> from topopt.io.result import RunResult
    >>> out = tempfile.mkdtemp()
    >>> model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda p: p[0] == 0)
    >>> r = RunResult("success", None, 1, None, None, {"compliance": 1.0}, x=np.ones(8),
    ...               x_phys=np.ones(8), history=[{"objective": 1.0}])
    >>> _ = write_results(out, model.mesh, r, {"problem": "demo"}, title="demo")
    >>> m = Markers.of(model).add("mass", [(2.0, 1.0)], label="mass")
    >>> os.path.basename(redraw_design(out, m))
    'design.png'
    >>> import json; json.load(open(os.path.join(out, "result.json")))["plot"]["markers"][1]["kind"]
    'mass'
    """
    from ..io.designs import load_design
    from ..io.folder import write_json
    from .figures import save_design
    if not isinstance(markers, Markers):
        raise TypeError(f"markers must be a topopt.plot.Markers, got {type(markers).__name__}")
    path, record_path = os.path.join(out, "design.png"), os.path.join(out, "result.json")
    for need in (path, record_path):
        if not os.path.isfile(need):
            raise FileNotFoundError(f"no {need}: redraw_design draws the design of a run "
                                    "folder that topopt.io.write_results wrote")
    design = load_design(out)
    with open(record_path, encoding="utf-8") as fh:
        record = json.load(fh)
    plot = record.get("plot") or {}
    window = {k: plot[k] for k in ("xlim", "ylim") if plot.get(k)}
    units = kwargs.pop("units", plot.get("units", ""))
    save_design(design["mesh"], design["x_phys"], path, title=_png_title(path),
                mirror=bool(plot.get("mirror", False)), markers=markers, units=units, **window,
                **kwargs)
    plot["markers"] = markers.record()
    if units:
        plot["units"] = units
    record["plot"] = plot
    write_json(record_path, record)
    return path
