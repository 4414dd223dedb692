"""The setup drawn on a design: one declaration of every marker, `Markers`.

A problem declares what its picture shows beside the design: supports,
point and distributed loads, body loads, masses, heat sources, ports,
springs, focal points, passive regions and directions (a build direction).
Each is one entry of a kind of `KINDS` with its points (and, for the kinds
that have one, a direction per point) and an optional label, which puts it
in the picture's legend.
`Markers.of` reads the supports, loads and springs of a model;
`topopt.plot.design_figure` draws them all (`topopt.plot.symbols`);
`topopt.io.write_results` (``markers=``) draws a run's ``design.png`` with
them and keeps them in ``result.json`` (`record` / `from_record`), from
which ``topopt show`` draws them again.
"""

from __future__ import annotations

import difflib

import numpy as np

from .._validate import check_finite_array, check_int

__all__ = ["Markers", "KINDS"]

#: The kinds of marker, and what their ``vectors`` hold (None: no vectors).
KINDS = {
    "support": "the fixed components (1 fixed, 0 free), one column per component",
    "load": "the force at each point (several points: a distributed load)",
    "body_load": "its direction at the anchor point (no vectors: a scalar source)",
    "mass": None,
    "heat": None,
    "port": "the direction of the displacement measured there",
    "spring": "the spring's direction",
    "focus": None,
    "region": None,
    "direction": "the direction shown (a build direction): an arrow at the anchor point",
}
#: Kinds whose ``vectors`` are optional (a scalar body load, a support without its mask).
OPTIONAL_VECTORS = ("body_load", "support")


class Markers:
    """The setup of a problem as drawn on its design: a list of markers.

    Each marker is a dict ``{"kind", "points", "vectors", "label"}``:
    ``points`` an ``(n, dim)`` array, ``vectors`` ``(n, k)`` or None (see
    `KINDS`), ``label`` the legend's text or None (no legend entry). A
    ``region`` marker's points are the ends of its outline's segments, two
    rows each (`region`).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import fem
    >>> model = fem.elasticity(fem.rectangle(4, 2)).fix(nodes=lambda p: p[0] == 0)
    >>> m = Markers.of(model, model.point_load((4, 1), (0, -1)))
    >>> m.add("mass", [(2.0, 1.0)], label="point mass")
    Markers(support: 3, load: 1, mass: 1)
    >>> Markers.from_record(m.record()).kinds()
    ['support', 'load', 'mass']
    """

    def __init__(self, dim: int = 2):
        self.dim = check_int("dim", dim, 2, 3)
        self.items: list[dict] = []

    def __repr__(self) -> str:
        counts = (len(m["points"]) // (2 if m["kind"] == "region" else 1) for m in self.items)
        return "Markers(" + ", ".join(f"{m['kind']}: {n}" for m, n in zip(self.items, counts)) + ")"

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def kinds(self) -> list[str]:
        """The kind of each marker, in order."""
        return [m["kind"] for m in self.items]

    def add(self, kind: str, points, vectors=None, label: str | None = None) -> "Markers":
        """Add a marker of `kind` (`KINDS`) at `points` ``(n, dim)``; returns self.

        `vectors` ``(n, k)`` as `KINDS` says (a load's force, a port's or a
        spring's direction, a support's fixed components); `label` puts the
        marker in the legend.
        """
        if kind not in KINDS:
            close = difflib.get_close_matches(str(kind), KINDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown marker kind {kind!r}{hint}; kind must be one of "
                             f"{tuple(KINDS)}")
        points = check_finite_array(f"{kind} points", np.atleast_2d(np.asarray(points, float)))
        if points.ndim != 2 or points.shape[1] != self.dim or len(points) == 0:
            raise ValueError(f"{kind} points have shape {points.shape}; expected (n, {self.dim}) "
                             "with n >= 1: one row of coordinates per point")
        if kind == "region" and len(points) % 2:
            raise ValueError(f"region points have {len(points)} rows; expected pairs (the ends "
                             "of each segment of the outline): use Markers.region")
        if vectors is None:
            if KINDS[kind] is not None and kind not in OPTIONAL_VECTORS:
                raise ValueError(f"a {kind} marker needs vectors: {KINDS[kind]}")
        else:
            if KINDS[kind] is None:
                raise ValueError(f"a {kind} marker takes no vectors, got {np.shape(vectors)}")
            vectors = check_finite_array(f"{kind} vectors",
                                         np.atleast_2d(np.asarray(vectors, float)))
            if vectors.ndim != 2 or len(vectors) != len(points):
                raise ValueError(f"{kind} vectors have shape {vectors.shape}; expected one row "
                                 f"per point: ({len(points)}, k)")
            want = self.dim if kind not in ("support", "spring") else None
            if want is not None and vectors.shape[1] != want:
                raise ValueError(f"{kind} vectors have {vectors.shape[1]} columns; expected "
                                 f"{want}: {KINDS[kind]}")
        if label is not None and not isinstance(label, str):
            raise TypeError(f"label must be a str or None, got {type(label).__name__}")
        self.items.append({"kind": kind, "points": points, "vectors": vectors, "label": label})
        return self

    def extend(self, other: "Markers") -> "Markers":
        """Add the markers of `other` (of the same dimension); returns self."""
        if other.dim != self.dim:
            raise ValueError(f"cannot add {other.dim}-D markers to {self.dim}-D ones")
        self.items += [dict(m) for m in other.items]
        return self

    # ------------------------------------------------------------------
    # from a model, a mesh

    @classmethod
    def of(cls, model, f=None, max_points: int = 64, labels: dict | None = None) -> "Markers":
        """The supports, loads (one marker per load case) and springs of `model`.

        `f`, `max_points` as in `topopt.plot.boundary_markers` (a load case on
        more nodes is a body load: declare it with ``add("body_load", ...)``).
        A scalar (heat) model's fixed nodes are supports of one component and
        its loads heat sources. `labels` gives legend entries by kind
        (``{"support": "clamped", "load": ["case 1", "case 2"], "spring":
        "k_in, k_out"}``: a list names each load case).
        """
        from .markers import boundary_markers
        labels = dict(labels or {})
        unknown = set(labels) - set(KINDS)
        if unknown:
            raise ValueError(f"labels has unknown kinds {sorted(unknown)}; kinds: {tuple(KINDS)}")
        supports, loads = boundary_markers(model, f, max_points)
        components = int(getattr(model, "components", 1))
        dim = int(supports.shape[1] if len(supports) else loads.shape[1]) - components
        out = cls(dim)
        if len(supports):
            out.add("support", supports[:, :dim], supports[:, dim:], labels.get("support"))
        cases = _load_cases(model, f, loads, max_points)
        for kind in ("load", "heat"):
            names = labels.get(kind)
            if isinstance(names, (list, tuple)) and len(names) != len(cases):
                raise ValueError(f"labels[{kind!r}] names {len(names)} load cases; f has "
                                 f"{len(cases)} drawn (a case on more than {max_points} nodes "
                                 "is not drawn)")
        for k, rows in enumerate(cases):
            name = labels.get("load" if components > 1 else "heat")
            name = name[k] if isinstance(name, (list, tuple)) else (name if k == 0 else None)
            if components == 1:
                out.add("heat", rows[:, :dim], label=name)
            else:
                out.add("load", rows[:, :dim], rows[:, dim:], label=name)
        K0 = getattr(model, "K0", None)
        if K0 is not None and hasattr(model, "basis"):
            nodal = np.asarray(model.basis.nodal_dofs)
            k = K0.diagonal()[nodal]                       # (components, n_points)
            nodes = np.flatnonzero(np.any(k > 0, axis=0))
            if len(nodes):
                out.add("spring", model.mesh.p[:, nodes].T, (k[:, nodes] > 0).T.astype(float),
                        labels.get("spring"))
        return out

    def region(self, mesh, elements, label: str | None = None) -> "Markers":
        """Add the outline of the elements `elements` of `mesh` (a passive region, the
        design region): the element edges that only one of them has (none for no elements); returns self."""
        t = np.asarray(mesh.t)
        elements = np.asarray(elements)
        if elements.dtype == bool:
            if elements.shape != (t.shape[1],):
                raise ValueError(f"elements has shape {elements.shape}; expected a mask "
                                 f"({t.shape[1]},) or element indices")
            elements = np.flatnonzero(elements)
        if elements.size == 0:                  # an empty region (a coarse mesh): no outline
            return self
        if elements.min() < 0 or elements.max() >= t.shape[1]:
            raise ValueError(f"elements must be indices in [0, {t.shape[1]}), got "
                             f"{elements.size} in [{elements.min(initial=0)}, "
                             f"{elements.max(initial=0)}]")
        cells = t[:, elements]
        n = cells.shape[0]
        edges = np.concatenate([cells[[i, (i + 1) % n]] for i in range(n)], axis=1).T
        keys, count = np.unique(np.sort(edges, axis=1), axis=0, return_counts=True)
        ends = np.asarray(mesh.p, float)[:, keys[count == 1].ravel()].T
        return self.add("region", ends, label=label)

    # ------------------------------------------------------------------
    # mirrored, kept

    def mirrored(self, x0: float, tol: float) -> "Markers":
        """The markers of the whole structure of a half model mirrored about ``x = x0``.

        A point on the line is drawn once, every other also at its mirror
        image (the x component of its vector reversed); a support on the line
        that fixes x alone is the symmetry condition and is dropped.
        """
        out = Markers(self.dim)
        for m in self.items:
            p, v = m["points"], m["vectors"]
            if m["kind"] == "region":
                image = p.copy()
                image[:, 0] = 2 * x0 - image[:, 0]
                out.items.append(dict(m, points=np.concatenate([p, image])))
                continue
            on = np.abs(p[:, 0] - x0) <= tol
            if m["kind"] == "support" and v is not None and v.shape[1] >= 2:
                keep = ~(on & (v[:, 0] > 0) & ~np.any(v[:, 1:] > 0, axis=1))
                p, v, on = p[keep], v[keep], on[keep]
                if not len(p):
                    continue
            image = p[~on].copy()
            image[:, 0] = 2 * x0 - image[:, 0]
            if v is not None:
                w = v[~on].copy()
                if m["kind"] != "support":
                    w[:, 0] = -w[:, 0]
                v = np.concatenate([v, w])
            out.items.append(dict(m, points=np.concatenate([p, image]), vectors=v))
        return out

    def record(self) -> list[dict]:
        """The markers as JSON-ready lists (`from_record` reads them back)."""
        return [{"kind": m["kind"], "points": m["points"].tolist(),
                 "vectors": None if m["vectors"] is None else m["vectors"].tolist(),
                 "label": m["label"]} for m in self.items]

    @classmethod
    def from_record(cls, record, dim: int | None = None) -> "Markers":
        """`Markers` from `record` (a list of `record`'s dicts); `dim` if it is empty."""
        if not isinstance(record, (list, tuple)):
            raise TypeError(f"a markers record is a list of dicts, got {type(record).__name__}")
        if dim is None:
            dim = len(record[0]["points"][0]) if record else 2
        out = cls(dim)
        for i, m in enumerate(record):
            if not isinstance(m, dict) or not {"kind", "points"} <= set(m):
                raise ValueError(f"markers record entry {i} is not a dict with kind and points")
            out.add(m["kind"], m["points"], m.get("vectors"), m.get("label"))
        return out


def _load_cases(model, f, loads, max_points: int) -> list[np.ndarray]:
    """`boundary_markers`' load rows split by load case (one array per drawn case)."""
    if f is None or not len(loads):
        return []
    f = np.asarray(f)
    if f.ndim == 1:
        return [loads]
    out, start = [], 0
    from .markers import boundary_markers
    for k in range(f.shape[1]):
        n = len(boundary_markers(model, f[:, k], max_points)[1])
        if n:
            out.append(loads[start:start + n])
        start += n
    return out


def _as_markers(markers, supports=None, loads=None, dim: int = 2) -> Markers:
    """One `Markers` of `markers` (a `Markers`, its record or None) and the arrays
    `supports`, `loads` of `topopt.plot.boundary_markers` (the older keywords)."""
    from .markers import _marker_array
    if markers is None:
        out = Markers(dim)
    elif isinstance(markers, Markers):
        out = Markers(markers.dim).extend(markers)
    else:
        out = Markers.from_record(markers, dim)
    if out.dim != dim:
        raise ValueError(f"markers are {out.dim}-D; the design is {dim}-D")
    if supports is not None:
        s = _marker_array("supports", supports, dim)
        if len(s):
            out.items.insert(0, Markers(dim).add("support", s[:, :dim], s[:, dim:]).items[0])
    if loads is not None:
        a = _marker_array("loads", loads, dim)
        if len(a):
            kind = "heat" if a.shape[1] == dim + 1 else "load"
            out.add(kind, a[:, :dim], None if kind == "heat" else a[:, dim:])
    return out
