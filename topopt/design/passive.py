"""Passive regions of a design: free design variables <-> the element vector.

Some elements of a design domain are not designed: a hole that must stay
empty (passive void, density 0) or a region that must stay solid (passive
solid, density 1) -- top99's ``passive`` array (Sigmund 2001, sect. 5.3). A
`Passive` holds which elements are fixed and at which value; the optimizer
sees only the free variables ``x`` (``n_free`` of them) and

* `embed` (the primitive behind ``passive(x)``) scatters them into the full
  element vector with the fixed values in place, the vector the filter
  sees;
* `Passive.fix` resets the fixed elements of a filtered (and projected)
  field, so ``x_phys`` is exactly 1 on passive solid and 0 on passive void
  whatever the filter smeared into them (top99: ``x(passive) = xmin`` after
  every update).

``embed`` is linear in ``x``: its pullback is the gather ``ybar[free]``
and its forward rule scatters the tangent into zeros, both written with
traced numpy operations, so second derivatives go through it.

Examples
--------
>>> import numpy as np
>>> from topopt import ad, fem
>>> from topopt.design import Passive
>>> passive = Passive(5, solid=[0], void=[4])
>>> passive(np.array([0.2, 0.4, 0.6]))
array([1. , 0.2, 0.4, 0.6, 0. ])
>>> ad.gradient(lambda x: np.sum(passive(x) * np.arange(5.0)), np.zeros(3))
array([1., 2., 3.])
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import skfem

from .. import ad
from .._validate import (check_array_range, check_callable, check_finite_values, check_int,
                         check_real_array, check_type, warn)

__all__ = ["Passive", "embed"]


def _elements(name: str, where, n_el: int) -> np.ndarray:
    """Sorted element indices of `where`: a boolean mask of length `n_el` or indices."""
    if where is None:
        return np.array([], dtype=np.int64)
    if ad.is_traced(where):
        raise TypeError(f"{name} must be a boolean mask or element indices, not a traced value")
    arr = np.asarray(where)
    if arr.dtype == bool:
        if arr.shape != (n_el,):
            raise ValueError(f"{name} is a boolean mask of shape {arr.shape}; expected "
                             f"({n_el},), one entry per element")
        return np.flatnonzero(arr)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise TypeError(f"{name} must be a boolean mask of shape ({n_el},) or a 1-D array "
                        f"of element indices, got dtype {arr.dtype}, shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n_el):
        raise ValueError(f"{name} has element indices outside [0, {n_el}): "
                         f"[{arr.min()}, {arr.max()}]")
    idx = np.unique(arr.astype(np.int64))
    if idx.size != arr.size:
        raise ValueError(f"{name} repeats element indices")
    return idx


class Passive:
    """Passive solid and void elements of an ``n_el``-element design.

    Parameters
    ----------
    n_el : int >= 1
        Number of elements (design values) of the mesh.
    solid, void : bool mask of shape (n_el,) or int array of indices, optional
        Elements held at density 1 (solid) and 0 (void). They must not
        overlap and must leave at least one free element.

    Attributes
    ----------
    n_el, n_free : int
        Number of elements and of free design variables.
    free, solid, void : int arrays
        Sorted element indices of each kind.
    values : (n_el,) array
        1 on passive solid, 0 elsewhere (the fixed part of `embed`).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.design import Passive
    >>> p = Passive(4, void=np.array([False, True, False, False]))
    >>> p.n_free, p.free.tolist()
    (3, [0, 2, 3])
    >>> p.fix(np.array([0.5, 0.3, 0.7, 0.9]))
    array([0.5, 0. , 0.7, 0.9])
    """

    def __init__(self, n_el: int, solid=None, void=None):
        self.n_el = check_int("n_el", n_el, 1, what="number of elements")
        self.solid = _elements("solid", solid, self.n_el)
        self.void = _elements("void", void, self.n_el)
        both = np.intersect1d(self.solid, self.void)
        if both.size:
            raise ValueError(f"solid and void overlap at {both.size} element(s), e.g. "
                             f"{both[:5].tolist()}; an element is solid, void or free")
        fixed = np.zeros(self.n_el, dtype=bool)
        fixed[self.solid] = fixed[self.void] = True
        self.free = np.flatnonzero(~fixed)
        if self.free.size == 0:
            raise ValueError("solid and void cover every element: nothing is left to design")
        self.n_free = int(self.free.size)
        self.values = np.zeros(self.n_el)
        self.values[self.solid] = 1.0

    @classmethod
    def from_mesh(cls, mesh: skfem.Mesh, solid: Callable | None = None,
                  void: Callable | None = None) -> "Passive":
        """Passive elements of `mesh` chosen by predicates of the element centroids.

        `solid` and `void` take the centroids, shape ``(dim, n_el)``, and
        return one bool per element.

        Examples
        --------
        >>> from topopt import fem
        >>> from topopt.design import Passive
        >>> p = Passive.from_mesh(fem.rectangle(4, 2), void=lambda c: c[0] > 3)
        >>> p.void.tolist()
        [6, 7]
        """
        check_type("mesh", mesh, skfem.Mesh, "a scikit-fem Mesh")
        centroids = mesh.p[:, mesh.t].mean(axis=1)
        n_el = mesh.t.shape[1]
        masks = {}
        for name, where in (("solid", solid), ("void", void)):
            check_callable(name, where, allow_none=True)
            masks[name] = None if where is None else _predicate(name, where, centroids, n_el)
        return cls(n_el, **masks)

    def __repr__(self):
        return (f"Passive({self.n_el} elements: {self.solid.size} solid, {self.void.size} "
                f"void, {self.n_free} free)")

    @property
    def any(self) -> bool:
        """Whether any element is passive (else `embed` and `fix` are the identity)."""
        return self.n_free < self.n_el

    @classmethod
    def of(cls, passive: "Passive | None", n_el: int) -> "Passive":
        """A problem's `passive` argument checked against its mesh of `n_el` elements.

        None is a design without passive elements (``Passive(n_el)``); any
        other value must be a `Passive` of `n_el` elements (`TypeError`,
        `ValueError` naming ``passive`` otherwise).

        Examples
        --------
        >>> from topopt.design import Passive
        >>> Passive.of(None, 4)
        Passive(4 elements: 0 solid, 0 void, 4 free)
        >>> Passive.of(Passive(3, void=[0]), 4)
        Traceback (most recent call last):
        ...
        ValueError: passive is for 3 elements; the mesh has 4
        """
        if passive is None:
            return cls(n_el)
        check_type("passive", passive, cls, "a topopt.design.Passive or None")
        if passive.n_el != n_el:
            raise ValueError(f"passive is for {passive.n_el} elements; the mesh has {n_el}")
        return passive

    def check_volume(self, volfrac: float, weights, name: str = "volfrac") -> None:
        """Refuse a volume bound ``v(x_phys) <= volfrac`` that the passive solid breaks.

        ``v = sum(w x_phys) / sum(w)`` with element volumes `weights`. The
        passive solid alone has ``v_solid``: if it exceeds `volfrac` (beyond
        1e-12) no design meets the bound, a `ValueError` naming both numbers
        (a problem calls this before its filter and system are built). Passive
        void that leaves less than `volfrac` to design makes the bound
        inactive: a `TopoptWarning`. One pass over `weights`; see also
        `check_filtered_volume`.

        Examples
        --------
        >>> import numpy as np
        >>> from topopt.design import Passive
        >>> Passive(4, solid=[0, 1, 2]).check_volume(0.5, np.ones(4))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: passive solid fills 0.75 of the volume (3 of 4 elements) > volfrac = 0.5: ...
        """
        w = check_real_array("weights", weights, allow_bool=True)
        total = float(np.sum(w))
        solid = float(np.sum(w[self.solid])) / total
        if solid > volfrac + 1e-12:
            raise ValueError(f"passive solid fills {solid:.6g} of the volume ({self.solid.size} "
                             f"of {self.n_el} elements) > {name} = {volfrac:g}: the volume "
                             f"constraint can never hold; raise {name} above {solid:.6g} or "
                             "make fewer elements passive solid")
        void = float(np.sum(w[self.void])) / total
        if void > 1.0 - volfrac + 1e-12:
            warn(f"passive void fills {void:.6g} of the volume: even all solid, the design "
                 f"has volume {1 - void:.6g} < {name} = {volfrac:g}, so the volume "
                 f"constraint is never active; lower {name} or make fewer elements void")

    def check_filtered_volume(self, volfrac: float, minimum, name: str = "volfrac") -> None:
        """Warn when the design with every free variable 0 already exceeds `volfrac`.

        `minimum` is a callable returning that design's volume (``x_phys`` of
        zeros: the filter spreads the passive solid into its neighbours); a
        projection stage may still get under the bound, so this is a
        `TopoptWarning`, not an error. Not called without passive solid.
        """
        if not self.solid.size:
            return
        v_min = float(minimum())
        if v_min > volfrac + 1e-12:
            warn(f"with every free variable 0 the filtered design has volume {v_min:.6g} "
                 f"> {name} = {volfrac:g} (the passive solid plus what the filter spreads "
                 f"around it): the volume constraint cannot hold without projection; "
                 f"raise {name} or use a smaller filter radius")

    def __call__(self, x):
        """The element vector of the free variables `x` (`embed`); differentiable."""
        return embed(self, x)

    def free_design(self, x, name: str = "the design vector") -> np.ndarray:
        """A problem's plain design `x` as its free variables (a problem's ``check_design``).

        `x` is the ``n_free`` free variables or the full element vector (then
        holding the fixed values, see `expand`); NaN or inf is a `ValueError`.

        Examples
        --------
        >>> import numpy as np
        >>> from topopt.design import Passive
        >>> Passive(3, solid=[2]).free_design(np.array([0.5, 0.25, 1.0]))
        array([0.5 , 0.25])
        """
        x = check_real_array(name, ad.value(x))
        if x.shape not in ((self.n_free,), (self.n_el,)):
            what = "one value per element" if not self.any else \
                f"the {self.n_free} free variables or one value per element ({self.n_el})"
            raise ValueError(f"{name} has shape {x.shape}; expected "
                             f"({self.n_free},), {what}")
        check_finite_values(name, x, "a design must be finite, without NaN or inf")
        check_array_range(name, x, 0.0, 1.0, tol=1e-9, what="a density")
        return self.expand(x)[self.free] if self.any else x

    def elements(self, x):
        """The element vector the filter sees: `embed` of the free variables `x`.

        A full element vector is returned as it is once its fixed values are
        checked (`expand`); without passive elements `x` is returned as it is.
        Differentiable; ``x_phys = passive.fix(chain(passive.elements(x)))``
        is a problem's physical density (top99 sect. 5.3).

        Examples
        --------
        >>> import numpy as np
        >>> from topopt.design import Passive
        >>> Passive(3, void=[0]).elements(np.array([0.5, 0.7]))
        array([0. , 0.5, 0.7])
        """
        if np.iscomplexobj(ad.value(x)):
            raise TypeError("x must be real design variables, got a complex array")
        if not self.any:
            return x
        if np.shape(ad.value(x)) == (self.n_free,):
            return embed(self, x)
        self.expand(x)                                   # a full vector: its fixed values checked
        return x

    def fix(self, x_el):
        """`x_el` (one value per element) with the passive entries reset; differentiable.

        Applied after the filter (top99 sect. 5.3): the passive elements of
        ``x_phys`` are exactly their fixed values, and no derivative flows
        through them. Without passive elements `x_el` is returned as it is.
        """
        self._check(x_el, "x_el", self.n_el)
        return embed(self, x_el[self.free]) if self.any else x_el

    def expand(self, x) -> np.ndarray:
        """A plain design as the full element vector: the free variables or the vector itself.

        A full vector (``n_el`` entries) must hold the fixed values at the
        passive elements; anything else is a `ValueError` naming the first
        element that differs.
        """
        x = np.asarray(ad.value(x), dtype=float)
        if x.shape == (self.n_free,):
            return embed(self, x)
        self._check(x, "x", self.n_el, also=self.n_free)
        fixed = np.union1d(self.solid, self.void)
        wrong = fixed[x[fixed] != self.values[fixed]]
        if wrong.size:
            e = int(wrong[0])
            raise ValueError(f"x[{e}] = {x[e]:g} at a passive element; expected its fixed "
                             f"value {self.values[e]:g} ({wrong.size} passive entries differ)")
        return x

    def _check(self, x, name: str, size: int, also: int | None = None) -> None:
        shape = np.shape(ad.value(x))
        if shape != (size,):
            sizes = f"({size},)" if also is None or also == size else f"({also},) or ({size},)"
            raise ValueError(f"{name} has shape {shape}; expected {sizes} ({self.n_free} free "
                             f"design variables, {self.n_el} elements)")


def _predicate(name: str, where: Callable, centroids: np.ndarray, n_el: int) -> np.ndarray:
    mask = np.asarray(where(centroids))
    if mask.dtype != bool or mask.shape != (n_el,):
        raise TypeError(f"{name} must return a boolean array of shape ({n_el},), one per "
                        f"element; got dtype {mask.dtype}, shape {mask.shape}")
    return mask


# --------------------------------------------------------------- the primitive

@ad.primitive
def embed(passive: Passive, x) -> np.ndarray:
    """The element vector: the free variables `x` at ``passive.free``, fixed values elsewhere.

    ``y = values + P x`` with ``P`` the 0/1 scatter onto the free elements;
    its pullback is ``P^T ybar = ybar[free]``.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> from topopt.design import Passive, embed
    >>> passive = Passive(6, solid=[5], void=[0, 1])
    >>> report = ad.check_rule(embed, passive, np.linspace(0.1, 0.9, 3))
    >>> report["arg 1 reverse"] < 1e-8
    True
    """
    check_type("passive", passive, Passive, "a topopt.design.Passive")
    x = np.asarray(x)
    if x.dtype.kind not in "iuf":
        raise TypeError(f"x must be a real array, got dtype {x.dtype}")
    passive._check(x, "x", passive.n_free)
    y = passive.values.copy()
    y[passive.free] = x
    return y


@ad.rrule(embed)
def embed_rrule(passive, x):
    def embed_pullback(ybar):
        return None, ybar[passive.free]
    return embed(passive, x), embed_pullback


@ad.frule(embed)
def embed_frule(primals, tangents):
    passive, x = primals
    xdot = tangents[1]
    y = embed(passive, x)
    if xdot is None:
        return y, None
    return y, ad.scatter_add(np.zeros(passive.n_el), passive.free, xdot)
