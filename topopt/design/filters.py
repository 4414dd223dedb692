"""Density filters on scikit-fem meshes: classic (top88) and Helmholtz PDE.

A filter is a linear map ``x -> F x`` of element values (one per column of
``mesh.t``). Calling a filter runs the primitive `apply_filter`, whose
pullback is the primitive `apply_filter_transpose` and vice versa, so a
gradient through a filter costs one application of ``F^T`` and second
derivatives (`ad.hvp`) go through it too.

`DensityFilter` is here; the base `LinearFilter` and the primitive pair are
`linear_filter`, the PDE filter `helmholtz_filter`, its field at quadrature
points `quadrature`; the package `topopt.design` exports them all
(``from topopt.design import DensityFilter, HelmholtzFilter``).

Examples
--------
>>> from topopt import ad
>>> from topopt.design import filters
>>> import numpy as np, skfem
>>> flt = filters.DensityFilter(skfem.MeshQuad.init_tensor(np.arange(4.0), np.arange(2.0)),
...                             rmin=1.5)
>>> flt(np.array([1.0, 0.0, 0.0]))
array([0.75, 0.2 , 0.  ])
>>> ad.gradient(lambda x: flt(x)[0], np.zeros(3))
array([0.75, 0.25, 0.  ])
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from .._validate import check_positive
from .linear_filter import LinearFilter, _mesh, _warn_radius

__all__ = ["DensityFilter"]


class DensityFilter(LinearFilter):
    """Classic density filter: weighted average over element centroids.

    ``x_tilde_e = sum_i H_ei x_i / sum_i H_ei`` (the density filter of
    top88, Andreassen et al. 2011, Sect. 2) with weights
    ``H_ei = max(0, rmin - |c_e - c_i|)`` (top88 eq. (6)) between
    element centroids ``c`` (the mean of an element's vertices).

    Parameters
    ----------
    mesh : skfem.Mesh
        Any scikit-fem mesh; one design value per element.
    rmin : float
        Filter radius, > 0, in the mesh's length unit. A radius larger than
        the domain (`domain_size`) warns (`topopt._validate.TopoptWarning`).

    Attributes
    ----------
    H : scipy.sparse.csr_matrix
        The weights ``H_ei``.
    Hs : numpy.ndarray
        Their row sums.

    Examples
    --------
    >>> import numpy as np
    >>> from skfem import MeshQuad
    >>> from topopt import ad
    >>> from topopt.design.filters import DensityFilter
    >>> mesh = MeshQuad.init_tensor(np.arange(5.0), np.arange(3.0))
    >>> flt = DensityFilter(mesh, rmin=1.5)
    >>> np.allclose(flt(np.ones(8)), 1.0)
    True
    >>> x, w = np.linspace(0, 1, 8), np.arange(8.0)
    >>> g = ad.gradient(lambda x: flt(x) @ w, x)
    >>> np.allclose(g, flt.matrix.T @ w)
    True
    """

    def __init__(self, mesh: Mesh, rmin: float):
        self.rmin = check_positive("rmin", rmin, "filter radius")
        self.n = _mesh(mesh)
        _warn_radius(mesh, self.rmin, "rmin")
        from scipy.spatial import cKDTree     # here: scipy.spatial stays out of `import topopt`
        centroids = mesh.p[:, mesh.t].mean(axis=1).T
        tree = cKDTree(centroids)
        pairs = tree.sparse_distance_matrix(tree, self.rmin, output_type="ndarray")
        w = self.rmin - pairs["v"]  # top88 eq. (6); pairs within rmin, self included
        keep = w > 0
        self.H = sps.csr_matrix((w[keep], (pairs["i"][keep], pairs["j"][keep])),
                                shape=(self.n, self.n))
        self.Hs = np.asarray(self.H.sum(axis=1)).ravel()

    @property
    def matrix(self) -> sps.csr_matrix:
        """The filter as a sparse matrix ``diag(1 / Hs) H``."""
        return sps.csr_matrix(sps.diags(1.0 / self.Hs) @ self.H)

    def _forward(self, x):
        return (self.H @ x) / self.Hs  # top88 density filter: H x / Hs

    def _transpose(self, y):
        # top88 chain rule of the density filter: d x_tilde_e / d x_i = H_ei / Hs_e
        return self.H.T @ (y / self.Hs)
