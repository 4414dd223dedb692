"""Physics on scikit-fem meshes: element matrices, supports and loads by geometry."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sps
import skfem
from skfem.helpers import dot
from skfem.models.elasticity import lame_parameters, linear_elasticity
from skfem.models.poisson import laplace

from .. import ad
from .._validate import (check_array_range, check_callable, check_choice, check_finite_array,
                         check_finite_values, check_positive, check_range, check_type)
from .budget import check_unknowns
from .mesh import _translates, check_mesh
from .system import LinearSystem
from .adjoint import solve

__all__ = ["Model", "elasticity", "heat"]

Where = Callable[[np.ndarray], np.ndarray] | Sequence[float] | np.ndarray


class _Selection:
    """Component names, load values and the checked solve of a model
    (shared by `Model` and the grid's `topopt.grid.GridModel`)."""

    components: int

    def solve(self, E, f, solver: str = "auto"):
        """Displacements (temperatures) for element coefficients `E` and loads `f`."""
        if np.shape(ad.value(E)) != (self.n_el,):
            raise ValueError(f"E has shape {np.shape(ad.value(E))}; expected ({self.n_el},), "
                             "one value per element")
        check_finite_values("E", E, "element coefficients must be finite", ("element",))
        check_array_range("E", E, 0.0, None, what="element coefficients")
        return solve(self.system(solver), E, f)

    def _names(self, components):
        if self.components == 1:
            if components not in (None, (0,), [0], 0):
                raise ValueError(f"components of a scalar problem must be 0 or None, "
                                 f"got {components!r}")
            return None
        comps = range(self.components) if components is None else np.atleast_1d(components)
        if np.asarray(comps).dtype.kind not in "iu":
            raise TypeError(f"components must be integers in [0, {self.components}), "
                            f"got {components!r}")
        for c in comps:
            if not 0 <= int(c) < self.components:
                raise ValueError(f"components must lie in [0, {self.components}), got {c}")
        return [f"u^{int(c) + 1}" for c in comps]

    def _value(self, value) -> np.ndarray:
        value = np.atleast_1d(check_finite_array("value", value))
        if value.shape != (self.components,):
            raise ValueError(f"a load value needs {self.components} component(s), "
                             f"got {value.shape}")
        return value


class Model(_Selection):
    """A scikit-fem basis, its unit-coefficient element matrices, supports and loads.

    ``K(E) = sum_e E_e K_e`` with ``K_e`` computed once at construction by
    scikit-fem (``BilinearForm.elemental``). Build one with `elasticity` or
    `heat`; select supports and loads by geometry with `fix`, `point_load`
    and `traction`; solve with `solve`.

    Attributes
    ----------
    mesh, basis : scikit-fem mesh and basis
    Ke : (n_el, n_loc, n_loc) element matrices at unit coefficient
    fixed : int array of supported dofs
    K0 : sparse (ndof, ndof) or None
        The constant stiffness of the grounded springs (`spring`).
    """

    def __init__(self, basis: skfem.CellBasis, Ke: np.ndarray, components: int):
        self.basis = basis
        self.mesh = basis.mesh
        self.Ke = Ke
        self.components = components
        self.ndof = basis.N
        self.n_el = self.mesh.t.shape[1]
        self.fixed = np.array([], dtype=np.int64)
        self._springs = np.zeros(self.ndof)          # grounded spring stiffness per dof
        self._systems: dict = {}

    def __repr__(self):
        return (f"Model({type(self.mesh).__name__} with {self.n_el} elements, "
                f"{self.ndof} dofs, {self.fixed.size} fixed)")

    # ---------------------------------------------------------- selection
    def _nodes(self, where: Where) -> np.ndarray:
        p = self.mesh.p
        if callable(where):
            chosen = np.asarray(where(p))
            if chosen.dtype != bool or chosen.shape != (p.shape[1],):
                raise TypeError(f"a node predicate must return a boolean array of shape "
                                f"({p.shape[1]},), one per node; got dtype {chosen.dtype}, "
                                f"shape {chosen.shape}")
            nodes = np.flatnonzero(chosen)
        else:
            nodes = np.array([self.nearest_node(where)])
        if nodes.size == 0:
            raise ValueError("no mesh node satisfies the selection")
        return nodes

    def nearest_node(self, point) -> int:
        """Index of the mesh node nearest to `point`.

        Raises `ValueError` when that node is farther than half an element
        (half the largest side of the bounding boxes of the elements around
        it): the point is then not a node of this mesh, and snapping would
        put the support or load somewhere else.

        Examples
        --------
        >>> from topopt.fem import elasticity, rectangle
        >>> model = elasticity(rectangle(4, 2))
        >>> model.mesh.p[:, model.nearest_node((4.0, 0.2))].tolist()
        [4.0, 0.0]
        >>> model.nearest_node((40.0, 0.0))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: point (40, 0) is 36 from the nearest mesh node, (4, 0); a point must ...
        """
        p = self.mesh.p
        point = check_finite_array("point", _as_point(point), shape=(p.shape[0],))
        dist2 = np.sum((p - point[:, None]) ** 2, axis=0)
        node = int(np.argmin(dist2))
        dist = float(np.sqrt(dist2[node]))
        if dist > 0.0:
            around = np.flatnonzero(np.any(self.mesh.t == node, axis=0))
            size = float(np.max(np.ptp(p[:, self.mesh.t[:, around]], axis=1)))
            if dist > 0.5 * size:
                fmt = lambda v: "(" + ", ".join(f"{c:g}" for c in v) + ")"  # noqa: E731
                raise ValueError(f"point {fmt(point)} is {dist:.6g} from the nearest mesh node, "
                                 f"{fmt(p[:, node])}; a point must lie within half an element "
                                 f"({0.5 * size:g}) of a node")
        return node

    def dofs(self, nodes: Where | None = None, facets: Callable | None = None,
             components=None) -> np.ndarray:
        """Dofs at the `nodes` (a predicate of the coordinates, or a point) or
        on the boundary `facets` (a predicate of facet midpoints).

        A point selects its nearest node, which must lie within half an
        element of it (`nearest_node`); a predicate returns one bool per node.
        """
        if (nodes is None) == (facets is None):
            raise ValueError("select dofs with exactly one of nodes= or facets=")
        if nodes is not None:
            view = self.basis.get_dofs(nodes=self._nodes(nodes))
        else:
            check_callable("facets", facets)
            view = self.basis.get_dofs(facets=facets)
            if view.all().size == 0:
                raise ValueError("no boundary facet satisfies the selection")
        names = self._names(components)
        return view.all() if names is None else view.all(names)

    def fix(self, nodes: Where | None = None, facets: Callable | None = None,
            components=None) -> "Model":
        """Add homogeneous Dirichlet supports; returns the model for chaining."""
        self.fixed = np.union1d(self.fixed, self.dofs(nodes, facets, components))
        self._systems.clear()
        return self

    def spring(self, nodes: Where, components, k: float) -> "Model":
        """Add grounded linear springs of stiffness `k` at the selected dofs.

        Each selected dof gets ``k`` on its diagonal of the constant part ``K0``
        of ``K(E) = K0 + sum_e E_e K_e`` (the input and output springs of a
        compliant mechanism, Sigmund 1997): a term of the stiffness matrix,
        not an element, so neither the design nor the sensitivities see it.
        Springs at one dof add up. `nodes` as in `dofs`; `components` the
        spring's directions (None: all). Returns the model for chaining.

        Examples
        --------
        A unit square clamped on its left edge, with a spring of stiffness 2 at
        the right corners in x:

        >>> import numpy as np
        >>> from topopt.fem import elasticity, rectangle
        >>> model = elasticity(rectangle(1, 1)).fix(nodes=lambda x: x[0] == 0)
        >>> model = model.spring(lambda x: x[0] == 1, 0, k=2.0)
        >>> float(model.K0.sum()), model.K0.nnz
        (4.0, 2)
        """
        k = check_positive("k", k, "spring stiffness")
        dofs = self.dofs(nodes=nodes, components=components)
        np.add.at(self._springs, dofs, k)
        self._systems.clear()
        return self

    @property
    def K0(self):
        """The springs' constant stiffness, a sparse ``(ndof, ndof)`` diagonal (None without)."""
        dofs = np.flatnonzero(self._springs)
        if dofs.size == 0:
            return None
        return sps.csr_matrix((self._springs[dofs], (dofs, dofs)), shape=(self.ndof, self.ndof))

    # --------------------------------------------------------------- loads
    def point_load(self, nodes: Where, value) -> np.ndarray:
        """Load vector with `value` (one entry per component) at each selected node.

        `nodes` as in `dofs`: a point farther than half an element from every
        node raises `ValueError` with its distance (it used to snap silently).
        """
        value = self._value(value)
        f = np.zeros(self.ndof)
        for c, v in enumerate(value):
            if v:
                f[self.dofs(nodes=nodes, components=c if self.components > 1 else None)] += v
        return f

    def traction(self, facets: Callable, value) -> np.ndarray:
        """Load vector of a uniform traction (flux for heat) on the selected facets."""
        value = self._value(value)
        check_callable("facets", facets)
        chosen = self.mesh.facets_satisfying(facets, boundaries_only=True)
        if chosen.size == 0:
            raise ValueError("no boundary facet satisfies the selection")
        fb = skfem.FacetBasis(self.mesh, self.basis.elem, facets=chosen)
        if self.components == 1:
            form = skfem.LinearForm(lambda v, w: value[0] * v)
        else:
            form = skfem.LinearForm(lambda v, w: dot(value[:, None, None], v))
        f = form.assemble(fb)
        # the nodes off the facets (the elements' other nodes) get the roundoff of basis
        # functions that vanish there (1e-18 on a gmsh mesh): not loads, exact zeros
        f[np.abs(f) <= 1e-14 * np.max(np.abs(f))] = 0.0
        return f

    def body_load(self, value) -> np.ndarray:
        """Load vector of a uniform body force (heat source) over the domain."""
        value = self._value(value)
        if self.components == 1:
            form = skfem.LinearForm(lambda v, w: value[0] * v)
        else:
            form = skfem.LinearForm(lambda v, w: dot(value[:, None, None], v))
        return form.assemble(self.basis)

    def nodal_values(self, u) -> np.ndarray:
        """One solution column `u` per node: ``(n_points, components)``."""
        return np.asarray(u)[self.basis.nodal_dofs].T

    # --------------------------------------------------------------- solve
    def system(self, solver: str = "auto", solver_options: dict | None = None) -> LinearSystem:
        """The `LinearSystem` for the current supports and springs (built once per solver
        and options).

        `solver_options` go to the iterative solvers (see `topopt.fem.solvers.multigrid`)
        or, for a direct one, set its reanalysis (`topopt.fem.solvers.reanalysis`).
        """
        if solver_options is not None and not isinstance(solver_options, dict):
            raise TypeError(f"solver_options must be a dict or None, got "
                            f"{type(solver_options).__name__}")
        key = (solver, tuple(sorted(solver_options.items()))) if solver_options else solver
        if key not in self._systems:
            self._systems[key] = LinearSystem(
                self.basis.element_dofs.T, self.Ke, self.ndof, self.fixed, K0=self.K0,
                solver=solver, requires_support=True, geometry=(self.mesh.p, self.basis.nodal_dofs),
                solver_options=solver_options)
        return self._systems[key]


def _check_model(model) -> "Model":
    """`model` if it is a `Model` or a grid's `topopt.grid.GridModel` (what every problem
    class is built on).

    Examples
    --------
    >>> from topopt.fem.models import _check_model
    >>> _check_model(None)
    Traceback (most recent call last):
    ...
    TypeError: model must be a topopt.fem.Model (topopt.fem.elasticity(mesh) or topopt.fem.heat(mesh)) or a topopt.grid.GridModel, got NoneType
    """
    return check_type("model", model, _Selection,
                      "a topopt.fem.Model (topopt.fem.elasticity(mesh) or topopt.fem.heat(mesh)) "
                      "or a topopt.grid.GridModel")


def _as_point(point) -> np.ndarray:
    """A point given as a sequence of coordinates, as an array (no conversion of text)."""
    if isinstance(point, (str, bytes)):
        raise TypeError(f"point must be a sequence of coordinates, got {point!r} (nodes: a "
                        "predicate of the coordinates x -> bool array, or such a point)")
    return np.asarray(point)


def _element(mesh: skfem.Mesh) -> skfem.Element:
    check_type("mesh", mesh, skfem.Mesh, "a scikit-fem Mesh")
    elem = getattr(mesh, "elem", None)
    if elem is None:
        raise TypeError(f"unsupported mesh type {type(mesh).__name__}")
    return elem()


def _checked(mesh) -> bool:
    """Check `mesh` once (`topopt.fem.mesh.check_mesh`); whether it is a uniform lattice."""
    _element(mesh)
    uniform = _translates(mesh)
    check_mesh(mesh, uniform)
    return uniform


def _basis(mesh: skfem.Mesh, elem: skfem.Element, uniform: bool) -> skfem.CellBasis:
    """The basis; on `uniform` lattices with 2-point Gauss rules per direction.

    Those integrate the stiffness, mass and constant loads of bilinear and
    trilinear elements on parallelograms/parallelepipeds exactly, with 8
    instead of scikit-fem's default 64 points per hexahedron (the basis of a
    80 x 40 x 40 box then takes about 1 GB instead of 9 GB).
    """
    if uniform:
        return skfem.Basis(mesh, elem, intorder=3)
    return skfem.Basis(mesh, elem)


def _local(form, basis, uniform: bool, scale: float = 1.0, **params) -> np.ndarray:
    """Element matrices ``(n_el, n_loc, n_loc)`` of `form` (with its `params`).

    On a `uniform` lattice (`_translates`) they are computed once, on the
    first element, and broadcast (a read-only view, no memory per element).
    """
    mesh = basis.mesh
    if uniform:
        one = type(mesh)(mesh.p[:, mesh.t[:, 0]], np.arange(mesh.t.shape[0])[:, None])
        Ke = scale * form.elemental(skfem.Basis(one, basis.elem), **params).tolocal()
        return np.broadcast_to(Ke, (mesh.t.shape[1],) + Ke.shape[1:])
    return scale * np.ascontiguousarray(form.elemental(basis, **params).tolocal())


def elasticity(mesh: skfem.Mesh, nu: float = 0.3, E0: float = 1.0,
               plane: str = "stress") -> Model:
    """Linear elasticity with Young's modulus `E0` at unit coefficient.

    2-D meshes are plane stress (``plane="stress"``, unit thickness) or plane
    strain; 3-D meshes use the full Hooke's law.

    Examples
    --------
    Ke of a unit square, E = 1, nu = 0.3, plane stress: top88's ``KE``.

    >>> from topopt.fem import elasticity, rectangle
    >>> model = elasticity(rectangle(1, 1))
    >>> round(float(model.Ke[0, 0, 0]), 6)      # top88: (1/(1-nu^2)) (1/2 - nu/6)
    0.494505
    """
    nu = check_range("nu", nu, -1.0, 0.5, lo_open=True, hi_open=True, what="Poisson's ratio")
    E0 = check_positive("E0", E0, "Young's modulus")
    check_choice("plane", plane, ("stress", "strain"))
    lam, mu = lame_parameters(E0, nu)
    uniform = _checked(mesh)
    dim = mesh.p.shape[0]
    check_unknowns(mesh, dim, "fem.elasticity")
    if dim == 2 and plane == "stress":
        lam = 2 * lam * mu / (lam + 2 * mu)
    basis = _basis(mesh, skfem.ElementVector(_element(mesh)), uniform)
    return Model(basis, _local(linear_elasticity(lam, mu), basis, uniform), components=dim)


def heat(mesh: skfem.Mesh, k0: float = 1.0) -> Model:
    """Steady heat conduction with conductivity `k0` at unit coefficient.

    Examples
    --------
    >>> from topopt.fem import heat, rectangle
    >>> heat(rectangle(2, 2)).Ke.shape
    (4, 4, 4)
    """
    k0 = check_positive("k0", k0, "conductivity")
    uniform = _checked(mesh)
    check_unknowns(mesh, 1, "fem.heat")
    basis = _basis(mesh, _element(mesh), uniform)
    return Model(basis, _local(laplace, basis, uniform, k0), components=1)
