"""Meshes of non-rectangular domains: the L-bracket and a plate with a circular hole.

* `l_shape`: a square of ``n x n`` unit-size bilinear elements with the
  upper-right ``(n - arm) x (n - arm)`` square removed (the L-bracket of Le,
  Norato, Bruns, Ha & Tortorelli 2010: ``arm = 0.4 n``). Every
  element is a translate of the first, so `topopt.fem.elasticity` computes
  one element matrix.
* `plate_with_hole`: a quarter of a square plate ``[0, L]^2`` with a quarter
  hole of radius ``a`` at the origin, meshed by bilinear quadrilaterals
  mapped around the hole (an O-grid): the nodes of the innermost ring lie on
  the circle and the rings are graded geometrically, so the stress at the
  hole converges to Kirsch's value (a voxel staircase does not).
"""

from __future__ import annotations

import numpy as np
import skfem

from .._validate import check_int, check_positive, check_range

__all__ = ["l_shape", "plate_with_hole"]


def l_shape(n: int = 100, arm: int = 40, h: float = 1.0) -> skfem.MeshQuad1:
    """An L of ``n x n`` square elements of size `h` without its upper-right corner.

    The vertical arm ``[0, arm h] x [0, n h]`` and the horizontal arm ``[0, n
    h] x [0, arm h]`` meet at the re-entrant corner ``(arm h, arm h)``.

    Parameters
    ----------
    n : int >= 2
        Elements along each outer side.
    arm : int in [1, n - 1]
        Width of both arms, in elements.
    h : float > 0
        Element size.

    Examples
    --------
    >>> from topopt.fem.shapes import l_shape
    >>> m = l_shape(10, 4)
    >>> m.t.shape[1], m.p.shape[1]              # 100 - 36 elements, 121 - 36 nodes
    (64, 85)
    """
    n = check_int("n", n, 2, what="elements along each side")
    arm = check_int("arm", arm, 1, n - 1, what="arm width in elements, < n")
    h = check_positive("h", h, "element size")
    square = skfem.MeshQuad.init_tensor(h * np.arange(n + 1.0), h * np.arange(n + 1.0))
    centroids = square.p[:, square.t].mean(axis=1)
    corner = (centroids[0] > arm * h) & (centroids[1] > arm * h)
    return square.remove_elements(np.flatnonzero(corner))


def _square_edge(s: np.ndarray, L: float) -> np.ndarray:
    """Points of the outer boundary of ``[0, L]^2`` from ``(L, 0)`` over ``(L, L)`` to
    ``(0, L)``, uniform in the parameter ``s`` in ``[0, 1]`` (the corner at 1/2)."""
    right = np.stack([np.full_like(s, L), 2 * s * L])
    top = np.stack([(2 - 2 * s) * L, np.full_like(s, L)])
    return np.where(s <= 0.5, right, top)


def plate_with_hole(a: float = 1.0, L: float = 10.0, n_theta: int = 48, n_radial: int = 40,
                    growth: float = 1.1) -> skfem.MeshQuad1:
    """Quarter plate ``[0, L]^2`` minus the disk of radius `a` at the origin.

    Node ``(i, j)`` lies on the segment from ``a (cos t_j, sin t_j)``, ``t_j =
    (pi/2) j / n_theta``, to the outer boundary point of the same index
    (uniform along the right edge, then the top edge), at the fraction
    ``(growth^i - 1) / (growth^n_radial - 1)``: the ring widths grow by
    `growth` from the hole outwards.

    Parameters
    ----------
    a : float > 0
        Hole radius.
    L : float > a
        Half the side of the plate.
    n_theta : even int >= 2
        Elements around the quarter circle.
    n_radial : int >= 1
        Rings of elements from the hole to the outer boundary.
    growth : float >= 1
        Ratio of neighbouring ring widths (1: uniform rings).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.fem.shapes import plate_with_hole
    >>> m = plate_with_hole(a=1.0, L=5.0, n_theta=8, n_radial=4)
    >>> m.t.shape[1]
    32
    >>> r = np.hypot(*m.p)
    >>> bool(np.allclose(r[:9], 1.0)), float(m.p[0].max()), float(m.p[1].max())
    (True, 5.0, 5.0)
    """
    a = check_positive("a", a, "hole radius")
    L = check_range("L", L, a, None, lo_open=True, what="half side of the plate, > a")
    n_theta = check_int("n_theta", n_theta, 2, what="elements around the quarter circle")
    if n_theta % 2:
        raise ValueError(f"n_theta must be even (the corner of the plate is a node), "
                         f"got {n_theta}")
    n_radial = check_int("n_radial", n_radial, 1, what="rings of elements")
    growth = check_range("growth", growth, 1.0, None, what="ratio of ring widths")
    t = 0.5 * np.pi * np.arange(n_theta + 1) / n_theta
    inner = a * np.stack([np.cos(t), np.sin(t)])
    outer = _square_edge(np.arange(n_theta + 1) / n_theta, L)
    k = np.arange(n_radial + 1.0)
    s = k / n_radial if growth == 1.0 else (growth ** k - 1) / (growth ** n_radial - 1)
    p = inner[:, None, :] + s[None, :, None] * (outer - inner)[:, None, :]  # (2, ring, j)
    p = p.reshape(2, -1)
    node = np.arange((n_radial + 1) * (n_theta + 1)).reshape(n_radial + 1, n_theta + 1)
    # counterclockwise: outward along the ring index, then around
    t_quad = np.stack([node[:-1, :-1], node[1:, :-1], node[1:, 1:], node[:-1, 1:]])
    return skfem.MeshQuad(p, t_quad.reshape(4, -1))
