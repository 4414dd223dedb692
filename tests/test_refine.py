"""`fem.nested_elements`: the coarse element of each element of a refined mesh."""

import numpy as np
import pytest
import skfem

from topopt import fem

GRADED = (np.array([0.0, 1.0, 3.0, 3.5, 6.0]), np.array([0.0, 2.0, 2.5, 4.0]),
          np.array([0.0, 1.0, 3.0]))


def coarse_grid(dim):
    if dim == 2:
        return skfem.MeshQuad.init_tensor(*GRADED[:2])
    return skfem.MeshHex.init_tensor(*GRADED)


def split_axes(div, dim):
    """Each interval of the graded axes cut into `div` equal parts."""
    return [np.concatenate([np.linspace(a, b, div + 1)[:-1] for a, b in zip(ax[:-1], ax[1:])]
                           + [ax[-1:]]) for ax in GRADED[:dim]]


def fine_grid(div, dim):
    cls = skfem.MeshQuad if dim == 2 else skfem.MeshHex
    return cls.init_tensor(*split_axes(div, dim))


def inside(fine, child, coarse, elements, parent):
    lo_c, hi_c = (f(coarse.p[:, coarse.t[:, elements[parent]]], axis=1) for f in (np.min, np.max))
    c = fem.element_centroids(fine)[child].T
    return np.all((lo_c < c) & (c < hi_c))


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("div", [1, 2, 3])
def test_each_coarse_element_holds_its_refinement(dim, div):
    coarse, fine = coarse_grid(dim), fine_grid(div, dim)
    elements = np.arange(coarse.t.shape[1])[::-2]               # a subset, in any order
    child, parent = fem.nested_elements(coarse, fine, div, elements)
    assert np.all(np.diff(child) > 0)
    np.testing.assert_array_equal(np.bincount(parent, minlength=elements.size), div ** dim)
    assert inside(fine, child, coarse, elements, parent)
    # a density carried over keeps its integral: sum_c rho_c V_c = sum_f rho[parent_f] V_f
    rho = np.random.default_rng(div).uniform(0, 1, elements.size)
    coarse_mass = rho @ fem.element_volumes(coarse)[elements]
    assert fem.element_volumes(fine)[child] @ rho[parent] == pytest.approx(coarse_mass, rel=1e-12)


def test_skfem_refined_mesh_nests():
    """scikit-fem's own refinement (its element order) halves each quadrilateral."""
    coarse = coarse_grid(2)
    for times, div in ((1, 2), (2, 4)):
        child, parent = fem.nested_elements(coarse, coarse.refined(times), div)
        assert child.size == coarse.t.shape[1] * div ** 2
        assert inside(coarse.refined(times), child, coarse, np.arange(coarse.t.shape[1]), parent)


def test_outside_the_elements_anything_goes():
    """Only the looked-up elements must nest: the fine mesh may be coarser elsewhere."""
    xs, ys = GRADED[:2]
    fine = skfem.MeshQuad.init_tensor(np.r_[xs[:2], xs[1:3].mean(), xs[2:]], ys)
    child, parent = fem.nested_elements(coarse_grid(2), fine, 1, [0, 1, 2])
    assert child.size == 3 and parent.tolist() == [0, 1, 2]


@pytest.mark.parametrize("fine, div", [
    (lambda: fine_grid(2, 2), 3),                                         # wrong factor
    (lambda: skfem.MeshQuad.init_tensor(*(a + 0.1 for a in split_axes(2, 2))), 2),  # shifted
    (lambda: skfem.MeshTri.init_tensor(*split_axes(1, 2)), 1),            # two per element
    (lambda: skfem.MeshQuad.init_tensor(np.r_[0.0, 6.0], np.r_[0.0, 4.0]), 1),  # coarser
])
def test_a_mesh_that_does_not_nest(fine, div):
    with pytest.raises(ValueError, match="does not nest"):
        fem.nested_elements(coarse_grid(2), fine(), div)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(div=0), ValueError, "div must be an integer >= 1"),
    (dict(div=True), TypeError, "div must be an integer"),
    (dict(elements=[0.5]), TypeError, "elements must be a 1-D array of element indices"),
    (dict(elements=[[0]]), TypeError, "elements must be a 1-D array"),
    (dict(elements=[12]), ValueError, r"elements must lie in \[0, 11\]"),
    (dict(elements=[1, 1]), ValueError, "must not repeat"),
    (dict(coarse="mesh"), TypeError, "coarse must be a scikit-fem Mesh"),
    (dict(coarse=skfem.MeshTri.init_tensor(*GRADED[:2])), ValueError, "tensor-product grid"),
    (dict(fine=skfem.MeshHex.init_tensor(*GRADED)), ValueError, "fine must be 2-D"),
])
def test_bad_input(kwargs, exc, match):
    args = dict(coarse=coarse_grid(2), fine=fine_grid(1, 2), div=1) | kwargs
    with pytest.raises(exc, match=match):
        fem.nested_elements(**args)
