"""The 2-D symbol of each kind of marker (`topopt.plot.setup.KINDS`), drawn by one function.

`draw_markers` draws a `Markers` on a design's axes: supports as triangles
(`topopt.plot.markers`), loads as red arrows (several load cases in turn
red, orange, pink, olive; a distributed load as equal arrows with their
tails joined, or as its resultant when it acts along its own line), a body
load as a green arrow (a scalar one as a dotted frame), masses as orange
discs, heat sources as stars, ports as hollow-headed purple arrows from a
ring, springs as zigzags to the ground, focal points as crosses, regions as
dashed outlines, directions as grey hollow-headed arrows. Each artist has
the kind as its ``gid``; labelled markers give the legend's entries.
`draw_axes` gives the design its lengths: the x and y axes with ticks at
the domain's ends, in the problem's units.
"""

from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.ticker import FuncFormatter

from .markers import (LOAD_COLOR, MARKER_SIZE, SUPPORT_COLOR, _draw_supports,
                      _load_arrows)

__all__ = ["draw_markers", "draw_axes"]

COLORS = {"support": SUPPORT_COLOR, "load": LOAD_COLOR, "body_load": "tab:green",
          "mass": "tab:orange", "heat": "gold", "port": "tab:purple", "spring": "tab:brown",
          "focus": "tab:red", "region": "deepskyblue", "direction": "0.25"}
#: The colours of several load markers (load cases), in turn.
LOAD_CASE_COLORS = (LOAD_COLOR, "darkorange", "tab:pink", "tab:olive")
#: A distributed load of more points is drawn with this many arrows.
MAX_ARROWS = 9


def _arrow(ax, tail, tip, color, gid, hollow=False, scale=14, lw=1.8):
    ax.add_patch(FancyArrowPatch(tuple(tail), tuple(tip), arrowstyle="-|>",
                                 mutation_scale=scale, edgecolor=color, lw=lw, gid=gid,
                                 facecolor="white" if hollow else color, zorder=5,
                                 shrinkA=0, shrinkB=0, clip_on=False))


def _along(points):
    """`points` ordered along their principal direction (a distributed load's line)."""
    c = points - points.mean(axis=0)
    axis = np.linalg.svd(c, full_matrices=False)[2][0] if len(points) > 1 else np.ones(2)
    return np.argsort(c @ axis, kind="stable")


def _load_ends(m, bbox, length):
    """``(tails, tips, far)`` of a load marker's arrows (`_load_arrows`; a distributed load,
    3 or more points, as at most `MAX_ARROWS` equal arrows, ``far`` their ends off the
    nodes; one along its own line as its resultant at its centre, ``far`` None)."""
    p, v = m["points"], m["vectors"]
    keep = np.linalg.norm(v, axis=1) > 0
    p, v = p[keep], v[keep]
    if len(p) >= 3:
        order = _along(p)
        line = _unit((p[order[-1]] - p[order[0]])[None])[0]
        if abs(_unit(v.sum(axis=0, keepdims=True))[0] @ line) > 0.7:   # along its line:
            return _load_arrows(np.column_stack([p.mean(axis=0, keepdims=True),  # resultant
                                                 v.sum(axis=0, keepdims=True)]), bbox,
                                length) + (None,)
        pick = np.unique(np.round(np.linspace(0, len(p) - 1, min(MAX_ARROWS, len(p)))).astype(int))
        p, v = p[order][pick], _unit(v[order][pick])
        length = 0.7 * length
    tails, tips = _load_arrows(np.column_stack([p, v]), bbox, length)
    at_node = np.linalg.norm(tips - p, axis=1) <= 1e-12 * max(length, 1.0)
    return tails, tips, np.where(at_node[:, None], tails, tips)


def _marker_extent(markers, bbox, length) -> np.ndarray:
    """Every point a drawing of `markers` reaches (arrow ends, spring grounds): ``(n, 2)``."""
    pts = [np.zeros((0, 2))]
    for m in markers:
        kind = m["kind"]
        if kind == "load":
            pts += list(_load_ends(m, bbox, length)[:2])
        elif kind in ("port", "body_load", "direction") and m["vectors"] is not None:
            d = _unit(m["vectors"]) * length
            pts += [m["points"], m["points"] + d]
        elif kind == "spring":
            pts += [np.concatenate(_spring_lines(p, v, bbox, length, 0.0))
                    for p, v in zip(m["points"], m["vectors"])]
        else:
            pts.append(m["points"])
    return np.concatenate(pts)


def _unit(v):
    n = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v), where=n > 0)


def _outward(p, axis, bbox):
    """+1 or -1: the side of `p` along coordinate `axis` that leaves the domain soonest."""
    lo, hi = bbox[2 * axis], bbox[2 * axis + 1]
    return -1.0 if p[axis] - lo <= hi - p[axis] else 1.0


def _spring_lines(p, v, bbox, length, shift):
    """The zigzag of a grounded spring at `p` along its first direction of `v`, outward,
    moved sideways by `shift`: ``(zigzag (k, 2), ground (2, 2))``."""
    axis = int(np.argmax(np.abs(v) > 0))
    d = np.zeros(2)
    d[axis] = _outward(p, axis, bbox)
    n = np.array([-d[1], d[0]])
    base = p + n * shift
    s = np.linspace(0.0, 0.8 * length, 10)
    wiggle = np.where(np.arange(10) % 2, 1.0, -1.0) * 0.12 * length
    wiggle[[0, 1, -2, -1]] = 0.0                           # straight ends
    zig = base + np.outer(s, d) + np.outer(wiggle, n)
    end = base + d * length * 0.8
    ground = np.array([end - n * 0.22 * length, end + n * 0.22 * length])
    lines = [zig, ground]
    if shift:
        lines[0] = np.concatenate([[p], zig])
    return lines


def _chains(segments) -> list[np.ndarray]:
    """`segments` ``(k, 2, 2)`` joined end to end into polylines (so that dashes run along
    an outline instead of restarting at every element edge)."""
    keys = [tuple(np.round(e, 9)) for e in segments.reshape(-1, 2)]
    ends: dict = {}
    for i, key in enumerate(keys):
        ends.setdefault(key, []).append(i)
    used = np.zeros(len(segments), dtype=bool)
    out = []
    for start in range(len(segments)):
        if used[start]:
            continue
        used[start] = True
        path = [segments[start, 0], segments[start, 1]]
        end = 2 * start + 1
        while True:
            nxt = [j for j in ends[keys[end]] if not used[j // 2]]
            if not nxt:
                break
            j = nxt[0]
            used[j // 2] = True
            end = j ^ 1                                      # the segment's other end
            path.append(segments[j // 2, end % 2])
        out.append(np.array(path))
    return out


def draw_markers(ax, markers, bbox, length) -> list[tuple]:
    """Draw `markers` (a `topopt.plot.Markers`) on `ax`, the domain's box `bbox`
    ``(x0, x1, y0, y1)``, arrows `length` long; returns ``(handle, label)`` legend entries."""
    entries = []
    loaded = {tuple(np.round(p, 9)) for m in markers if m["kind"] == "load"
              for p in m["points"]}                  # a spring there is drawn beside the arrow
    cases = sum(m["kind"] == "load" for m in markers)
    case = 0
    for m in markers:
        kind, p, v, color = m["kind"], m["points"], m["vectors"], COLORS[m["kind"]]
        if kind == "load" and cases > 1:                     # one colour per load case
            color = LOAD_CASE_COLORS[case % len(LOAD_CASE_COLORS)]
            case += 1
        if kind == "support":
            mask = v if v is not None else np.ones((len(p), 2))
            _draw_supports(ax, np.column_stack([p, mask]), bbox)
            handle = Line2D([], [], ls="none", marker="s" if mask.shape[1] == 1 else "^",
                            ms=MARKER_SIZE, color=color)
        elif kind == "load":
            tails, tips, far = _load_ends(m, bbox, length)
            for a, b in zip(tails, tips):
                _arrow(ax, a, b, color, "load")
            if far is not None and len(far) >= 3 and np.array_equal(far, tails):  # joined
                ax.plot(*far.T, color=color, lw=1.2, gid="load", clip_on=False, zorder=5)
            handle = Line2D([], [], color=color, lw=1.8, marker=">", ms=5)
        elif kind == "body_load":
            if v is None:
                lo, hi = p.min(axis=0), p.max(axis=0)
                ax.add_patch(Rectangle(tuple(lo), *(hi - lo), fill=False, ls=":", lw=2.0,
                                       ec="tab:orange", gid="body_load", zorder=4,
                                       clip_on=False))
                handle = Line2D([], [], color="tab:orange", ls=":", lw=2.0)
            else:
                for a, d in zip(p, _unit(v) * length):
                    _arrow(ax, a, a + d, color, "body_load", lw=2.2)
                handle = Line2D([], [], color=color, lw=2.2, marker="v", ms=5)
        elif kind == "direction":
            for a, d in zip(p, _unit(v) * length):
                _arrow(ax, a, a + d, color, "direction", hollow=True, lw=2.0)
            handle = Line2D([], [], color=color, lw=2.0, marker="^", mfc="white", ms=6)
        elif kind == "mass":
            handle, = ax.plot(*p.T, ls="none", marker="o", ms=MARKER_SIZE * 1.5, mfc=color,
                              mec="black", mew=1.0, gid="mass", zorder=6, clip_on=False)
        elif kind == "heat":
            handle, = ax.plot(*p.T, ls="none", marker="*", ms=MARKER_SIZE * 2.0, mfc=color,
                              mec="darkred", mew=1.0, gid="heat", zorder=6, clip_on=False)
        elif kind == "port":
            for a, d in zip(p, _unit(v) * 0.8 * length):
                _arrow(ax, a, a + d, color, "port", hollow=True)
            handle, = ax.plot(*p.T, ls="none", marker="o", ms=MARKER_SIZE, mfc="white",
                              mec=color, mew=1.8, gid="port", zorder=6, clip_on=False)
        elif kind == "spring":
            for a, d in zip(p, v):
                shift = 0.35 * length if tuple(np.round(a, 9)) in loaded else 0.0
                for line in _spring_lines(a, d, bbox, length, shift):
                    ax.plot(*line.T, color=color, lw=1.4, gid="spring", zorder=5,
                            clip_on=False)
            handle = Line2D([], [], color=color, lw=1.4, marker="$\u2307$", ms=8)
        elif kind == "focus":
            ax.plot(*p.T, ls="none", marker="o", ms=MARKER_SIZE * 1.6, mfc="none",
                    mec="white", mew=2.5, zorder=6, clip_on=False)
            handle, = ax.plot(*p.T, ls="none", marker="+", ms=MARKER_SIZE * 1.6, mfc="none",
                              mec=color, mew=2.0, gid="focus", zorder=7, clip_on=False)
        else:                                                # region: its outline's segments
            from matplotlib.collections import LineCollection
            ax.add_collection(LineCollection(_chains(p.reshape(-1, 2, 2)), colors=color,
                                             lw=1.4, linestyles="--", gid="region", zorder=4))
            handle = Line2D([], [], color=color, lw=1.4, ls="--")
        if m["label"]:
            entries.append((handle, m["label"]))
    return entries


def draw_axes(ax, bbox, units: str = "") -> None:
    """The x and y axes along the bottom and left of `ax`, ticks at the domain's ends
    (and 0 between them), labelled ``x``, ``y`` with `units`: the design's lengths."""
    x0, x1, y0, y1 = bbox
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side, (a, b) in (("bottom", (x0, x1)), ("left", (y0, y1))):
        ax.spines[side].set_bounds(a, b)
        ax.spines[side].set_color("0.4")
        ticks = [a, b] + ([0.0] if a < 0 < b else [])
        (ax.set_xticks if side == "bottom" else ax.set_yticks)(sorted(ticks))
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.4g}"))
    unit = f" ({units})" if units else ""
    ax.set_xlabel("x" + unit, fontsize=9, labelpad=1)
    ax.set_ylabel("y" + unit, fontsize=9, labelpad=1)
    ax.tick_params(labelsize=8, length=3, pad=1, colors="0.3")
