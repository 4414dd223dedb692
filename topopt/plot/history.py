"""The convergence-history figure.

`history_figure` (`save_history`): the objective in the user's unit and
each named constraint per evaluation (their maximum alone beyond
`MAX_CONSTRAINT_LINES`), with a legend outside the axes.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from .._validate import check_sequence, real
from .canvas import _save

__all__ = ["history_figure", "save_history", "MAX_CONSTRAINT_LINES"]

#: More constraints than this are drawn as one line, their maximum per evaluation.
MAX_CONSTRAINT_LINES = 8


def history_figure(history: Sequence[dict], title: str = "",
                   objective_label: str = "objective",
                   constraint_names: Sequence[str] | None = None,
                   objective_scale: float = 1.0) -> Figure:
    """Objective (left axis) and constraints (right axis) per evaluation.

    Parameters
    ----------
    history : list of dict
        `topopt.optimize.Result.history` (``objective``, ``constraints``,
        ``stage``).
    objective_label : str
        The left axis's label and legend entry (``"compliance c"``).
    constraint_names : list of str, optional
        One per constraint (``g1``, ``g2``, ... by default). Beyond
        `MAX_CONSTRAINT_LINES` constraints one line shows their maximum
        (``max of N constraints``) and the names are not drawn.
    objective_scale : float
        The history's objective times this is plotted: the minimized ``c /
        c0`` times ``c0`` is the compliance (`minimize`'s ``objective_scale``).

    The legend (both axes' lines, and the stage changes as dotted lines)
    lies below the axes, outside the data.

    Examples
    --------
    >>> h = [{"objective": 1.0 / k, "constraints": [0.1 / k]} for k in (1, 2, 3)]
    >>> fig = history_figure(h, objective_label="compliance c", objective_scale=200.0,
    ...                      constraint_names=["V / 0.5 - 1"])
    >>> fig.axes[0].lines[0].get_ydata()[-1].round(3), fig.legends[0].texts[1].get_text()
    (np.float64(66.667), 'V / 0.5 - 1')
    """
    history = check_sequence("history", history)
    scale = float(real("objective_scale", objective_scale, finite=False))
    if not np.isfinite(scale) or scale == 0:
        raise ValueError(f"objective_scale must be finite and non-zero, got {objective_scale!r}")
    fig = Figure(figsize=(7, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    n = np.arange(1, len(history) + 1)
    f = scale * np.array([h["objective"] for h in history], dtype=float)
    handles = ax.plot(n, f, "k-", lw=1.5, label=objective_label)
    ax.set_xlabel("evaluation")
    ax.set_ylabel(objective_label)
    if len(f) and np.all(f > 0) and f.max() / f.min() > 20:
        ax.set_yscale("log")
    handles += _constraint_lines(ax, n, history, constraint_names)
    stages = [h.get("stage", 0) for h in history]
    changes = [k for k in range(1, len(stages)) if stages[k] != stages[k - 1]]
    for k in changes:
        ax.axvline(k + 0.5, color="0.5", lw=0.8, ls=":")
    if changes:
        handles.append(Line2D([], [], color="0.5", lw=0.8, ls=":", label="stage change"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 3),
               fontsize=8, frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def _constraint_lines(ax, n, history, constraint_names) -> list:
    cons = [h.get("constraints") or [] for h in history]
    names = list(constraint_names or [])
    if not any(cons):
        if names:
            raise ValueError(f"constraint_names has {len(names)} names; the history has no "
                             "constraints")
        return []
    width = max(len(c) for c in cons)
    g = np.array([list(c) + [np.nan] * (width - len(c)) for c in cons], dtype=float)
    if names and len(names) != width:
        raise ValueError(f"constraint_names has {len(names)} names for {width} constraints")
    ax2 = ax.twinx()
    lines = []
    if width > MAX_CONSTRAINT_LINES:
        lines += ax2.plot(n, np.nanmax(g, axis=1), "--", lw=1.2, color="C0",
                          label=f"max of {width} constraints")
    else:
        for j in range(width):
            lines += ax2.plot(n, g[:, j], "--", lw=1.2, color=f"C{j}",
                              label=names[j] if names else f"g{j + 1}")
    ax2.axhline(0, color="0.7", lw=0.8)
    ax2.set_ylabel("constraint g (feasible <= 0)")
    return lines


def save_history(history: Sequence[dict], path: str, title: str = "",
                 objective_label: str = "objective",
                 constraint_names: Sequence[str] | None = None,
                 objective_scale: float = 1.0) -> str:
    """Write a PNG of `history_figure`; returns the path."""
    return _save(history_figure(history, title, objective_label, constraint_names,
                                objective_scale), path)
