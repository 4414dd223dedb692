"""Elasticity and heat on a `Grid`: the model of the voxel path.

`GridModel` is `topopt.fem.Model`'s counterpart without a mesh: supports,
springs and point loads are chosen by node predicates (evaluated one plane
of nodes at a time) or points, the element matrix is the one ``K0``, and
`system` gives the matrix-free `GridSystem` (``"voxel"``) or, for small
grids and comparisons, the assembled `topopt.fem.LinearSystem` of a direct
backend in the same numbering. `topopt.formulations` take it where they
take a `Model`.
"""

from __future__ import annotations

import numpy as np

from .._validate import check_finite_array, check_int, check_positive
from ..fem.budget import check_dofs, run_path
from ..fem.models import _Selection, _as_point
from .element import elasticity_matrix, heat_matrix
from .grid import Grid
from .multigrid import coarsest
from .system import GridSystem

__all__ = ["GridModel", "grid_elasticity", "grid_heat"]


class GridModel(_Selection):
    """A grid, its element matrix ``K0``, supports, springs and loads.

    Attributes
    ----------
    grid : Grid
        (also as ``mesh``: what the run writers and filters are given).
    Ke : (n_loc, n_loc) array
        The element matrix at unit coefficient.
    components : int
    fixed : int array
        The supported dofs (component-major: ``component * n_nodes + node``).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt.grid import Grid, grid_elasticity
    >>> model = grid_elasticity(Grid((4, 2))).fix(nodes=lambda x: x[0] == 0)
    >>> f = model.point_load((4, 0), (0, -1))
    >>> u = model.solve(np.ones(8), f)
    >>> round(float(f @ u), 4)                 # the fem.rectangle(4, 2) cantilever
    34.5726
    """

    def __init__(self, grid: Grid, Ke: np.ndarray, components: int):
        if not isinstance(grid, Grid):
            raise TypeError(f"grid must be a topopt.grid.Grid, got {type(grid).__name__}")
        self.grid = self.mesh = grid
        self.components = check_int("components", components, 1, what="dofs per node")
        n_loc = grid.corners.shape[0] * self.components
        self.Ke = check_finite_array("Ke", Ke, (n_loc, n_loc))
        self.ndof, self.n_el = grid.n_nodes * self.components, grid.n_el
        check_dofs(self.ndof, grid.dim, f"a model on {grid!r}", path="voxel",  # no array yet
                   coarse=coarsest(grid.shape, self.components))
        self.fixed = np.array([], dtype=np.int64)
        self._springs: dict = {}                         # dof -> stiffness
        self._systems: dict = {}

    def __repr__(self):
        return (f"GridModel({self.grid!r}, {self.n_el} elements, {self.ndof} dofs, "
                f"{self.fixed.size} fixed)")

    # ---------------------------------------------------------- selection
    def nearest_node(self, point) -> int:
        """The grid node at `point`, which must lie within half an element of it."""
        g = self.grid
        point = check_finite_array("point", _as_point(point), shape=(g.dim,))
        ijk = np.rint(point / g.h).astype(np.int64)
        inside = np.clip(ijk, 0, np.array(g.shape))
        dist = float(np.linalg.norm(point - g.h * inside))
        if dist > 0.5 * g.h * (1 + 1e-12):
            raise ValueError(f"point {tuple(map(float, point))} is {dist:.6g} from the nearest "
                             f"grid node; a point must lie within half an element "
                             f"({0.5 * g.h:g}) of a node")
        return g.node_index(inside)

    def _nodes(self, where) -> np.ndarray:
        nodes = (self.grid.nodes_where(where) if callable(where)
                 else np.array([self.nearest_node(where)]))
        if nodes.size == 0:
            raise ValueError("no grid node satisfies the selection")
        return nodes

    def dofs(self, nodes, components=None) -> np.ndarray:
        """Dofs at the `nodes` (a predicate of the coordinates, or a point), sorted."""
        names = self._names(components)
        comps = [0] if names is None else [int(n[2:]) - 1 for n in names]
        picked = self._nodes(nodes)
        return np.sort(np.concatenate([c * self.grid.n_nodes + picked for c in comps]))

    def fix(self, nodes, components=None) -> "GridModel":
        """Add homogeneous Dirichlet supports; returns the model for chaining."""
        self.fixed = np.union1d(self.fixed, self.dofs(nodes, components))
        self._systems.clear()
        return self

    def spring(self, nodes, components, k: float) -> "GridModel":
        """Add grounded springs of stiffness `k` at the selected dofs (as `Model.spring`)."""
        k = check_positive("k", k, "spring stiffness")
        for d in self.dofs(nodes, components):
            self._springs[int(d)] = self._springs.get(int(d), 0.0) + k
        self._systems.clear()
        return self

    def springs(self) -> np.ndarray | None:
        """The grounded springs per dof, or None without."""
        if not self._springs:
            return None
        s = np.zeros(self.ndof)
        s[list(self._springs)] = list(self._springs.values())
        return s

    def point_load(self, nodes, value) -> np.ndarray:
        """Load vector with `value` (one entry per component) at each selected node."""
        value = self._value(value)
        f = np.zeros(self.ndof)
        picked = self._nodes(nodes)
        for c, v in enumerate(value):
            if v:
                f[c * self.grid.n_nodes + picked] += v
        return f

    def nodal_values(self, u) -> np.ndarray:
        """One solution column `u` per node: ``(n_nodes, components)`` (a view)."""
        return np.asarray(u).reshape(self.components, self.grid.n_nodes).T

    def element_dofs(self) -> np.ndarray:
        """``(n_el, n_loc)`` dofs of each element, local ``q c + i`` (small grids)."""
        nodes = self.grid.element_nodes()
        return (np.arange(self.components)[None, None, :] * self.grid.n_nodes
                + nodes[:, :, None]).reshape(self.n_el, -1)

    # --------------------------------------------------------------- solve
    def system(self, solver: str = "auto", solver_options: dict | None = None):
        """``"auto"`` / ``"voxel"``: the matrix-free `GridSystem`; a direct backend's name
        (``"cholmod"``, ``"superlu"``, ...): the assembled `topopt.fem.LinearSystem`."""
        if solver_options is not None and not isinstance(solver_options, dict):
            raise TypeError(f"solver_options must be a dict or None, got "
                            f"{type(solver_options).__name__}")
        key = (solver, tuple(sorted(solver_options.items()))) if solver_options else solver
        if key not in self._systems:
            if solver in ("auto", "voxel"):
                system = GridSystem(self.grid, self.Ke, self.components, self.fixed,
                                    self.springs(), solver_options)
                system.requested_solver = solver
            else:                        # the assembled matrix of a direct backend
                check_dofs(self.ndof, self.grid.dim, f"{self!r} with solver={solver!r}",
                           path=run_path(solver, self.grid.dim, self.ndof),
                           others=[("voxel", "solver='voxel'")])
                from ..fem.system import LinearSystem
                import scipy.sparse as sps
                s = self.springs()
                system = LinearSystem(self.element_dofs(), self.Ke, self.ndof, self.fixed,
                                      K0=None if s is None else sps.diags(s).tocsr(),
                                      solver=solver, solver_options=solver_options)
            self._systems[key] = system
        return self._systems[key]


def grid_elasticity(grid: Grid, nu: float = 0.3, E0: float = 1.0,
                    plane: str = "stress") -> GridModel:
    """Linear elasticity on `grid` (2-D plane stress or strain, 3-D Hooke's law).

    Examples
    --------
    >>> from topopt.grid import Grid, grid_elasticity
    >>> grid_elasticity(Grid((2, 1, 1))).ndof
    36
    """
    return GridModel(grid, elasticity_matrix(grid, nu, E0, plane), grid.dim)


def grid_heat(grid: Grid, k0: float = 1.0) -> GridModel:
    """Steady heat conduction with conductivity `k0` on `grid`.

    Examples
    --------
    >>> from topopt.grid import Grid, grid_heat
    >>> grid_heat(Grid((2, 2))).Ke.shape
    (4, 4)
    """
    return GridModel(grid, heat_matrix(grid, k0), 1)
