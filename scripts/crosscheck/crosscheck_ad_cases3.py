"""Round-three forms of the JAX cross-check (`crosscheck_ad_jax.py`), issue 35.

The derivatives JAX gave and `topopt.ad` refused: `linalg.qr`, `svd`,
`svdvals`, `lstsq`, `cond`, every `numpy.fft` transform with ``n=`` / ``s=``
/ ``norm=``, `gradient`, `meshgrid`, `correlate`, `cov`..., and `sign` of
complex input. Same convention as `CASES` there: ``f(xp, L, x)`` with `xp`
numpy or jax.numpy and a real `x` (complex values are made inside `f`).

Two references are not ``jax.numpy``'s function of the same name:
``jnp.sign`` of complex input has derivative zero in JAX (its ``sign``
primitive is declared piecewise constant), so the reference of
``sign(z)`` is JAX's ``z / |z|``; and singular vectors are compared
through functions that do not depend on their signs or phases
(``U o U``, ``U_k Vh_k``), which are what a derivative of them is
defined for (LAPACK's and JAX's sign choices may differ).
"""

import numpy as np

V4 = np.array([0.3, 1.7, -2.4, 3.9])
V5 = np.array([0.0, 0.4, 1.1, 1.5, 2.6])
M34 = np.array([[0.3, -1.2, 0.7, 2.1], [1.1, 0.4, -0.9, 0.2], [-0.5, 1.6, 0.8, -1.3]])
M43 = M34.T.copy()
M33 = np.array([[2.3, -0.4, 0.6], [0.5, 1.2, -0.9], [-0.7, 0.8, 3.1]])
C34 = np.array([[0.5, 0.1, -1.1, 0.7], [-0.4, 1.3, 0.2, 0.9], [1.0, -0.6, 0.8, 0.3]])
COORDS = np.array([0.0, 1.0, 3.0, 4.5])


def _z(x, xp):
    """A complex array of the shape of `x`, made from `x` (holomorphic in neither part)."""
    return x * (1.0 + 0.5j) + 1j * xp.flip(x) + 0.3j


def _sign(xp):
    return np.sign if xp is np else (lambda z: z / xp.abs(z))


def _join(xp, *arrays):
    return xp.concatenate([xp.ravel(a) for a in arrays])


def _uv(xp, u, vh, k):
    """``u[:, :k] @ vh[:k]`` and ``|u|^2``: free of the singular vectors' signs and phases."""
    return _join(xp, u[..., :, :k] @ vh[..., :k, :], xp.abs(u) ** 2)


CASES3 = {
    # sign of complex input, and the other complex-input audit forms
    "sign complex": (lambda xp, L, x: _sign(xp)(_z(x, xp)), V4),
    "sign complex times x": (lambda xp, L, x: _sign(xp)(x * (1 + 2j) + 0.5j) * x, V4),
    "abs complex (35)": (lambda xp, L, x: xp.abs(_z(x, xp)), V4),
    "angle complex": (lambda xp, L, x: xp.angle(_z(x, xp)), V4),
    "sqrt complex (35)": (lambda xp, L, x: xp.sqrt(_z(x, xp)), V4),
    "log complex": (lambda xp, L, x: xp.log(_z(x, xp)), V4),
    "maximum complex": (lambda xp, L, x: xp.maximum(_z(x, xp), 0.5 + 0.5j), V4),
    "real/imag/conj": (lambda xp, L, x: xp.real(_z(x, xp)) * xp.imag(_z(x, xp))
                       + xp.conj(_z(x, xp)), V4),
    "nan_to_num complex": (lambda xp, L, x: xp.nan_to_num(_z(x, xp)), V4),
    "arcsin": (lambda xp, L, x: xp.arcsin(x / 5), V4),
    "arccos complex": (lambda xp, L, x: xp.arccos(_z(x, xp) / 5), V4),
    "arcsinh": (lambda xp, L, x: xp.arcsinh(x), V4),
    "arccosh": (lambda xp, L, x: xp.arccosh(xp.abs(x) + 1.5), V4),
    "arctanh complex": (lambda xp, L, x: xp.arctanh(_z(x, xp) / 5), V4),
    "fabs": (lambda xp, L, x: xp.fabs(x), V4),
    # decompositions
    "qr tall": (lambda xp, L, x: _join(xp, *xp.linalg.qr(x)), M43),
    "qr square complete": (lambda xp, L, x: _join(xp, *xp.linalg.qr(x, mode="complete")), M33),
    "qr mode r": (lambda xp, L, x: xp.linalg.qr(x, mode="r"), M43),
    "qr complex": (lambda xp, L, x: _join(xp, *xp.linalg.qr(_z(x, xp))), M43),
    "svd values": (lambda xp, L, x: xp.linalg.svd(x, compute_uv=False), M34),
    "svd values complex": (lambda xp, L, x: xp.linalg.svd(_z(x, xp), compute_uv=False), M43),
    "svdvals": (lambda xp, L, x: xp.linalg.svdvals(x), M43),
    "svd wide U Vh": (lambda xp, L, x: (lambda u, s, vh: _join(xp, _uv(xp, u, vh, 2), s))(
        *xp.linalg.svd(x, full_matrices=False)), M34),
    "svd tall U Vh": (lambda xp, L, x: (lambda u, s, vh: _uv(xp, u, vh, 1))(
        *xp.linalg.svd(x, full_matrices=False)), M43),
    "svd square": (lambda xp, L, x: (lambda u, s, vh: _join(xp, _uv(xp, u, vh, 2), s))(
        *xp.linalg.svd(x)), M33),
    "svd complex wide": (lambda xp, L, x: (lambda u, s, vh: _uv(xp, u, vh, 2))(
        *xp.linalg.svd(_z(x, xp), full_matrices=False)), M34),
    "svd complex tall": (lambda xp, L, x: (lambda u, s, vh: _uv(xp, u, vh, 1))(
        *xp.linalg.svd(_z(x, xp), full_matrices=False)), M43),
    "svd hermitian values": (lambda xp, L, x: xp.linalg.svd(
        x @ x.T - 2 * xp.eye(3), compute_uv=False, hermitian=True), M34),
    "norm nuc": (lambda xp, L, x: xp.linalg.norm(x, "nuc"), M34),
    "norm 2 complex": (lambda xp, L, x: xp.linalg.norm(_z(x, xp), 2), M34),
    "cond": (lambda xp, L, x: xp.linalg.cond(x), M33),
    "cond fro": (lambda xp, L, x: xp.linalg.cond(x, "fro"), M33),
    "lstsq tall": (lambda xp, L, x: xp.linalg.lstsq(x, L([1.0, -2.0, 0.5, 3.0]))[0], M43),
    "lstsq tall residuals": (lambda xp, L, x: xp.linalg.lstsq(x, L([1.0, -2.0, 0.5, 3.0]))[1],
                             M43),
    "lstsq wide": (lambda xp, L, x: xp.linalg.lstsq(x, L([1.0, -2.0, 0.5]))[0], M34),
    "lstsq b traced": (lambda xp, L, x: xp.linalg.lstsq(xp.asarray(M43), x)[0], V4),
    "lstsq complex": (lambda xp, L, x: xp.linalg.lstsq(_z(x, xp), L([1.0, -2.0, 0.5, 3.0]))[0],
                      M43),
    "eigvalsh (35)": (lambda xp, L, x: xp.linalg.eigvalsh(x @ x.T), M34),
    # fft: n= / s= / axes= / norm=, real transforms
    "fft n pads": (lambda xp, L, x: xp.fft.fft(x, 7), V4),
    "fft n crops ortho": (lambda xp, L, x: xp.fft.fft(_z(x, xp), 3, norm="ortho"), V4),
    "fft axis 0 forward": (lambda xp, L, x: xp.fft.fft(x, 5, axis=0, norm="forward"), M34),
    "ifft n": (lambda xp, L, x: xp.fft.ifft(_z(x, xp), 6, norm="forward"), V4),
    "rfft": (lambda xp, L, x: xp.fft.rfft(x), V4),
    "rfft n=7 ortho": (lambda xp, L, x: xp.fft.rfft(x, 7, norm="ortho"), V4),
    "rfft n=2 axis 0": (lambda xp, L, x: xp.fft.rfft(x, 2, axis=0, norm="forward"), M34),
    "irfft": (lambda xp, L, x: xp.fft.irfft(_z(x, xp)), V4),
    "irfft n=7 ortho": (lambda xp, L, x: xp.fft.irfft(_z(x, xp), 7, norm="ortho"), V4),
    "irfft n=3": (lambda xp, L, x: xp.fft.irfft(_z(x, xp), 3), V4),
    "irfft real input": (lambda xp, L, x: xp.fft.irfft(x, 6), V4),
    "fft2": (lambda xp, L, x: xp.fft.fft2(x), M34),
    "fft2 s ortho": (lambda xp, L, x: xp.fft.fft2(_z(x, xp), s=(4, 3), norm="ortho"), M34),
    "ifft2": (lambda xp, L, x: xp.fft.ifft2(x), M34),
    "fftn s axes": (lambda xp, L, x: xp.fft.fftn(x, (2, 5), (0, 1), "forward"), M34),
    "ifftn s axes": (lambda xp, L, x: xp.fft.ifftn(_z(x, xp), s=(2, 5), axes=(0, 1)), M34),
    "rfft2": (lambda xp, L, x: xp.fft.rfft2(x), M34),
    "rfftn s axes": (lambda xp, L, x: xp.fft.rfftn(x, (4, 6), (0, 1), "forward"), M34),
    "irfft2": (lambda xp, L, x: xp.fft.irfft2(_z(x, xp)), M34),
    "irfftn s axes": (lambda xp, L, x: xp.fft.irfftn(_z(x, xp), (4, 5), (0, 1), "ortho"), M34),
    "hfft": (lambda xp, L, x: xp.fft.hfft(_z(x, xp)), V4),
    "hfft n=5 ortho": (lambda xp, L, x: xp.fft.hfft(_z(x, xp), 5, norm="ortho"), V4),
    "ihfft": (lambda xp, L, x: xp.fft.ihfft(x, 5), V4),
    "fftshift": (lambda xp, L, x: xp.fft.fftshift(x), M34),
    "ifftshift axes": (lambda xp, L, x: xp.fft.ifftshift(x, axes=1), M34),
    # finite differences, grids, correlations
    "gradient (35)": (lambda xp, L, x: xp.gradient(x), V4),
    "gradient spacing": (lambda xp, L, x: xp.gradient(x, 0.5), V4),
    "gradient 2d": (lambda xp, L, x: _join(xp, *xp.gradient(x, 0.5, 2.0)), M34),
    "gradient axis 1": (lambda xp, L, x: xp.gradient(x, axis=1), M34),
    "gradient coordinates": (lambda xp, L, x: xp.gradient(x, xp.asarray(COORDS)), V4),
    "gradient traced coordinates": (lambda xp, L, x: xp.gradient(x * x, x + COORDS), V4),
    "gradient complex": (lambda xp, L, x: xp.gradient(_z(x, xp), 0.3), V4),
    "meshgrid xy": (lambda xp, L, x: _join(xp, *xp.meshgrid(x, x[:3] * 2)), V4),
    "meshgrid ij sparse": (lambda xp, L, x: _join(xp, *xp.meshgrid(x, x[:3] * 2, indexing="ij",
                                                                  sparse=True)), V4),
    "meshgrid three": (lambda xp, L, x: _join(xp, *xp.meshgrid(x, x[:2], x[1:] ** 2)), V4),
    "correlate valid": (lambda xp, L, x: xp.correlate(x, x[:2] * 2), V4),
    "correlate full complex": (lambda xp, L, x: xp.correlate(_z(x, xp), x[:3], "full"), V4),
    "correlate same": (lambda xp, L, x: xp.correlate(x[:2], x * 1j, "same"), V4),
    "convolve same (35)": (lambda xp, L, x: xp.convolve(x[:3], x, "same"), V4),
    "ediff1d": (lambda xp, L, x: xp.ediff1d(x, to_begin=x[:1], to_end=L([1.0, 2.0])), V4),
    "diagflat": (lambda xp, L, x: xp.diagflat(x, 1), V4),
    "vander": (lambda xp, L, x: xp.vander(x, 3), V4),
    "vander increasing": (lambda xp, L, x: xp.vander(x, increasing=True), V4),
    "cov": (lambda xp, L, x: xp.cov(x), M34),
    "cov rowvar ddof": (lambda xp, L, x: xp.cov(x, rowvar=False, ddof=0), M34),
    "corrcoef": (lambda xp, L, x: xp.corrcoef(x), M34),
    "take_along_axis": (lambda xp, L, x: xp.take_along_axis(x, xp.asarray(
        np.argsort(C34, axis=1)), axis=1), M34),
    "modf": (lambda xp, L, x: xp.modf(2 * x)[0], V4),
    "frexp": (lambda xp, L, x: xp.frexp(x)[0], V4),
    "ldexp": (lambda xp, L, x: xp.ldexp(x, 3), V4),
    "divmod": (lambda xp, L, x: xp.divmod(x, 0.7)[1], V4),
    "trapezoid (35)": (lambda xp, L, x: xp.trapezoid(x, xp.asarray(COORDS)), V4),
    "cross": (lambda xp, L, x: xp.cross(x[:3], x[1:]), V4),
    "interp": (lambda xp, L, x: xp.interp(L([0.5, 2.5]), xp.asarray(COORDS), x), V4),
    "polyval": (lambda xp, L, x: xp.polyval(x, 0.3), V4),
    "matrix_power (35)": (lambda xp, L, x: xp.linalg.matrix_power(x, 3), M33),
    "slogdet (35)": (lambda xp, L, x: xp.linalg.slogdet(x)[1], M33),
    "pinv (35)": (lambda xp, L, x: xp.linalg.pinv(x), M34),
    "cumprod": (lambda xp, L, x: xp.cumprod(x), V4),
    "roll (35)": (lambda xp, L, x: xp.roll(x, 1, axis=1), M34),
    "diff prepend append": (lambda xp, L, x: xp.diff(x, prepend=x[:1], append=L([1.0])), V4),
    # numpy 2's array-API names, tensor forms, polynomials, selection
    "solve stack 1-d b": (lambda xp, L, x: xp.linalg.solve(xp.stack([x, 2 * x.T]), L(
        [1.0, 2.0, -1.0])), M33),
    "solve broadcast b": (lambda xp, L, x: xp.linalg.solve(xp.stack([x, x.T]), x[:, :2]), M33),
    "matrix_transpose": (lambda xp, L, x: xp.linalg.matrix_transpose(x) * 2, M34),
    "linalg.outer": (lambda xp, L, x: xp.linalg.outer(x, x[:2]), V4),
    "linalg.cross axis": (lambda xp, L, x: xp.linalg.cross(x[:, :2], x[:, 2:], axis=0), M34),
    "linalg.trace": (lambda xp, L, x: xp.linalg.trace(x, offset=1) * x, M34),
    "linalg.diagonal": (lambda xp, L, x: xp.linalg.diagonal(x, offset=-1) ** 2, M34),
    "linalg.vecdot": (lambda xp, L, x: xp.linalg.vecdot(_z(x, xp), x, axis=0), M34),
    "linalg.matmul": (lambda xp, L, x: xp.linalg.matmul(x, x.T), M34),
    "linalg.tensordot": (lambda xp, L, x: xp.linalg.tensordot(x, x.T, axes=1), M34),
    "matrix_norm nuc": (lambda xp, L, x: xp.linalg.matrix_norm(x, ord="nuc"), M34),
    "vector_norm ord 3": (lambda xp, L, x: xp.linalg.vector_norm(x, ord=3, axis=1), M34),
    "multi_dot": (lambda xp, L, x: xp.linalg.multi_dot([x[0], x.T, x, x[0]]), M34),
    "tensorinv": (lambda xp, L, x: xp.linalg.tensorinv(xp.reshape(x, (3, 3)) + 3 * xp.eye(3),
                                                      1), M33),
    "tensorsolve": (lambda xp, L, x: xp.linalg.tensorsolve(x + 3 * xp.eye(3), x[0]), M33),
    "polyder": (lambda xp, L, x: xp.polyder(x, 2), V4),
    "polyint": (lambda xp, L, x: xp.polyint(x, 2, L([1.0, 3.0])), V4),
    "polyfit": (lambda xp, L, x: xp.polyfit(xp.asarray(V5), xp.concatenate([x, x[:1]]), 2),
                V4),
    "select": (lambda xp, L, x: xp.select([V4 > 1, V4 > 0], [x, x * x], 0.5), V4),
    "resize": (lambda xp, L, x: xp.resize(x, (3, 5)), V4),
    "sort_complex": (lambda xp, L, x: xp.sort_complex(x), V4),
    "cumulative_prod": (lambda xp, L, x: xp.cumulative_prod(x, axis=1, include_initial=True),
                        M34),
    "unstack": (lambda xp, L, x: xp.unstack(x, axis=1)[2], M34),
    "add.reduce": (lambda xp, L, x: xp.add.reduce(x), M34),
    "multiply.reduce keepdims": (lambda xp, L, x: xp.multiply.reduce(x, 1, keepdims=True), M34),
    "maximum.reduce": (lambda xp, L, x: xp.maximum.reduce(x, axis=None) * x, M34),
    "add.accumulate": (lambda xp, L, x: xp.add.accumulate(x, 1), M34),
    "multiply.accumulate": (lambda xp, L, x: xp.multiply.accumulate(x), M34),
    "subtract.outer": (lambda xp, L, x: xp.subtract.outer(x, x[:2]), V4),
}
