"""Differentiable collectives: objectives in plain numpy on each rank's part.

Each MPI rank holds its part of the design and computes with plain numpy on
it; the few global quantities go through a collective here -- `allsum`
(entry-wise sum over the ranks), `alldot` (the global inner product) and
`allmax` (entry-wise maximum over the ranks). Each rank keeps its own tape;
the pullbacks and tangents of the collectives are collectives themselves, so
a response written for one process runs on many with the collectives named.
The communicator is an argument (``mpi4py.MPI.COMM_WORLD``, or any object
with ``size``, ``rank`` and mpi4py's buffer ``Allreduce``); `SELF` is the
one-rank stand-in, so everything runs without MPI. This module imports no
MPI: a communicator of more than one rank brings its own mpi4py, whose
operation constants are imported when first needed.

Values
------
A value is *local* (each rank its own part: the design, a residual) or
*replicated* (the same on every rank: the result of a collective, and
whatever a rank computes from replicated values alone).

Cotangents: the shares convention
---------------------------------
Take the global function ``F(x_1, ..., x_P)`` of the ranks' parts. The
cotangent of a local value on rank ``r`` is ``dF/dx_r``, as serially. The
cotangent of a replicated value ``y`` held on every rank is split into
*shares*: rank ``r`` holds ``ybar_r``, the derivative of what rank ``r``
computes from its copy of ``y``, and the cotangent of ``y`` is ``sum_r
ybar_r``. So

* the pullback of ``y = allsum(x)`` is ``xbar_r = allsum(ybar)``: every
  rank's part of `x` feeds every copy of `y`. This is right whatever the code
  after the collective does with `y`: replicated post-processing
  (``allsum(sum(x ** 2)) ** 0.5``), or local computations with it. In the
  variance ``V = allsum(sum(d ** 2)) / N`` of ``d = x - m``, ``m =
  allsum(sum(x)) / N``, a cotangent ``Vbar`` (its shares summed) gives
  ``dbar_r = 2 Vbar d_r / N`` and rank ``r``'s share of ``mbar`` is ``-sum(dbar_r)``;
  the pullback of `m`'s allsum sums the shares to ``-2 Vbar sum_r sum(d_r) / N = 0``,
  so ``xbar_r = 2 Vbar d_r / N``, the serial gradient;
* a reverse pass seeded with 1 on every rank (what `gradient` does) computes
  the gradient of ``sum_r F = P F`` for a replicated output ``F``: ``P =
  comm.size`` times the gradient. `allgradient`, `value_and_allgradient` and
  `allhvp` divide by ``P`` (after checking that the value is the same on
  every rank); call them instead of `gradient` and `hvp`. They nest:
  ``allgradient(lambda x: t(allgradient(f, x, comm=c)), x, comm=c)``;
* forward mode needs no convention: tangents of replicated values are
  replicated, the tangent of ``allsum(x)`` is ``allsum(xdot)`` and `jvp`
  gives the directional derivative on every rank (no factor ``P``).

Every rank must run the same collectives in the same order: the same code on
parts of the same structure (an allsum's argument of one shape everywhere).
The pullbacks run in the order of the tape, which is the order of the code,
so a reverse pass is collective too: run it on every rank.

Examples
--------
>>> import numpy as np
>>> from topopt import ad
>>> x = np.array([3.0, 4.0])        # this rank's part
>>> float(ad.allsum(np.sum(x ** 2), ad.SELF) ** 0.5)
5.0
>>> ad.allgradient(lambda x: ad.allsum(np.sum(x ** 2), ad.SELF) ** 0.5, x, comm=ad.SELF)
array([0.6, 0.8])
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .api import jvp, value_and_gradient
from .core import value
from .extend import frule, primitive, rrule
from .tree import map as _tree_map

__all__ = ["SerialComm", "SELF", "allsum", "alldot", "allmax", "allgradient",
           "value_and_allgradient", "allhvp"]


class SerialComm:
    """A communicator of one rank: the serial stand-in for ``mpi4py.MPI.COMM_WORLD``.

    ``size == 1``, ``rank == 0``; ``allreduce`` returns its value and
    ``Allreduce`` copies its send buffer, whatever the operation. `SELF` is
    the one instance the library uses.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> comm = ad.SerialComm()
    >>> comm.size, comm.rank, comm.allreduce(2.5)
    (1, 0, 2.5)
    >>> float(ad.allsum(np.arange(4.0), comm).sum())
    6.0
    """

    size = 1
    rank = 0

    def allreduce(self, sendobj, op=None):
        """The reduction over one rank: `sendobj` itself."""
        return sendobj

    def Allreduce(self, sendbuf, recvbuf, op=None):  # noqa: N802 -- mpi4py's name
        """The buffer reduction over one rank: `recvbuf` gets a copy of `sendbuf`."""
        np.copyto(np.asarray(recvbuf), np.asarray(sendbuf))

    def __repr__(self) -> str:
        return "SerialComm()"


SELF = SerialComm()


def _check_comm(comm, where: str) -> int:
    """``comm.size`` after checking that `comm` is a communicator (`where` names the call)."""
    size = getattr(comm, "size", None)
    if not (isinstance(size, (int, np.integer)) and size >= 1
            and isinstance(getattr(comm, "rank", None), (int, np.integer))
            and callable(getattr(comm, "Allreduce", None))):
        raise TypeError(f"{where}: comm must be a communicator with size, rank and "
                        f"Allreduce (mpi4py.MPI.COMM_WORLD, or ad.SELF on one process), "
                        f"got {comm!r}")
    return int(size)


def _allreduce(x, comm, op: str):
    """The reduction `op` ("sum", "max", "min") of the plain array `x` over `comm`'s ranks."""
    x = np.asarray(x)
    if x.dtype.kind == "b":
        x = x.astype(np.int64)
    if comm.size == 1:              # any communicator of one rank: the identity
        return x.copy()
    from mpi4py import MPI         # the communicator's own library (lazily)
    send = np.ascontiguousarray(x)            # (1,) for a 0-d x
    out = np.empty_like(send)
    comm.Allreduce(send, out, op={"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op])
    return out.reshape(x.shape)


def _plain(x, where: str):
    """`x` as a numeric array, or a TypeError naming `where`."""
    x = np.asarray(x)
    if x.dtype.kind not in "biufc":
        raise TypeError(f"{where}: x must be a numeric array or scalar, got dtype {x.dtype}")
    return x


def _scalar_if(x, y):
    """`y` as a numpy scalar when `x` is 0-d (numpy's reductions give scalars)."""
    return y[()] if np.ndim(x) == 0 else y


# --------------------------------------------------------------------- allsum

def allsum(x, comm):
    """Entry-wise sum of `x` over the ranks of `comm`; the same on every rank.

    Differentiable in every mode: the pullback of the cotangent shares is
    their `allsum`, the tangent the `allsum` of the tangents (see the module
    docstring for the shares convention).

    Parameters
    ----------
    x : array_like
        This rank's array, of one shape and dtype on every rank; traced or not.
    comm : communicator
        ``mpi4py.MPI.COMM_WORLD`` (or another mpi4py communicator), or `SELF`.

    Returns
    -------
    numpy.ndarray or numpy scalar
        ``sum_r x_r``, replicated; of `x`'s shape.

    Raises
    ------
    TypeError
        If `comm` is not a communicator or `x` is not numeric.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> ad.allsum(np.array([1.0, 2.0]), ad.SELF)
    array([1., 2.])
    >>> ad.gradient(lambda x: ad.allsum(np.sum(x ** 2), ad.SELF), np.array([1.0, 2.0]))
    array([2., 4.])
    """
    _check_comm(comm, "allsum")
    return _allsum(x, comm)


@primitive
def _allsum(x, comm):
    x = _plain(x, "allsum")
    return _scalar_if(x, _allreduce(x, comm, "sum"))


@rrule(_allsum)
def allsum_rrule(x, comm):
    y = _allsum(x, comm)

    def allsum_pullback(ybar):
        # every rank's x_r feeds every copy of y: xbar_r = sum_s ybar_s (the shares' sum)
        return _allsum(ybar, comm), None
    return y, allsum_pullback


@frule(_allsum)
def allsum_frule(primals, tangents):
    x, comm = primals
    xdot = tangents[0]
    if xdot is None:                 # every rank joins the collective
        xdot = np.zeros(np.shape(value(x)), np.asarray(value(x)).dtype)
    return _allsum(x, comm), _allsum(xdot, comm)


def alldot(a, b, comm):
    """The global inner product ``sum_r sum(a_r * b_r)`` (no conjugation); replicated.

    A composite of `allsum`, so differentiable in every mode in `a` and `b`.

    Parameters
    ----------
    a, b : array_like
        This rank's parts, of one shape (may differ between ranks).
    comm : communicator
        As for `allsum`.

    Returns
    -------
    numpy scalar
        The same on every rank.

    Raises
    ------
    ValueError
        If `a` and `b` have different shapes.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> float(ad.alldot(np.array([1.0, 2.0]), np.array([3.0, 4.0]), ad.SELF))
    11.0
    """
    _check_comm(comm, "alldot")
    if np.shape(a) != np.shape(b):
        raise ValueError(f"alldot: a has shape {np.shape(a)} and b {np.shape(b)}; give "
                         "this rank's parts of two vectors of one layout")
    return allsum(np.sum(a * b), comm)


# --------------------------------------------------------------------- allmax

def allmax(x, comm):
    """Entry-wise maximum of `x` over the ranks of `comm`; the same on every rank.

    The derivative of each entry is the one of the rank holding the maximum;
    where several ranks hold it (a tie), the lowest of them: the pullback
    sends the summed cotangent shares of an entry to that rank's entry, zero
    to the others, and the tangent is that rank's tangent. For the maximum of
    a local array, reduce on the rank first: ``allmax(np.max(x), comm)``.

    Parameters
    ----------
    x : array_like
        This rank's real array, of one shape on every rank, without NaN (MPI's
        maximum is undefined with NaN); traced or not.
    comm : communicator
        As for `allsum`.

    Returns
    -------
    numpy.ndarray or numpy scalar
        ``max_r x_r`` entry-wise, replicated.

    Raises
    ------
    TypeError
        If `x` is complex or not numeric, or `comm` is not a communicator.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> x = np.array([1.0, 3.0, 2.0])
    >>> float(ad.allmax(np.max(x), ad.SELF))
    3.0
    >>> ad.gradient(lambda x: ad.allmax(np.max(x), ad.SELF), x)
    array([0., 1., 0.])
    """
    _check_comm(comm, "allmax")
    if np.iscomplexobj(value(x)):
        raise TypeError("allmax: x is complex and has no maximum; pass np.real(x) or "
                        "np.abs(x)")
    return _allmax(x, comm)


@primitive
def _allmax(x, comm):
    x = _plain(x, "allmax")
    return _scalar_if(x, _allreduce(x, comm, "max"))


def _owner_mask(x, y, comm):
    """True at the entries where this rank is the lowest rank holding the maximum `y`."""
    x = np.asarray(value(x))
    holds = x == np.asarray(value(y))
    owner = _allreduce(np.where(holds, comm.rank, comm.size), comm, "min")
    return holds & (owner == comm.rank)


@rrule(_allmax)
def allmax_rrule(x, comm):
    y = _allmax(x, comm)
    mask = _owner_mask(x, y, comm)

    def allmax_pullback(ybar):
        # the summed shares of each entry go to the (lowest) rank holding its maximum
        total = _allsum(ybar, comm)
        return np.where(mask, total, 0.0), None
    return y, allmax_pullback


@frule(_allmax)
def allmax_frule(primals, tangents):
    x, comm = primals
    y = _allmax(x, comm)
    mask = _owner_mask(x, y, comm)
    xdot = tangents[0]
    if xdot is None:
        xdot = np.zeros(np.shape(mask))
    return y, _allsum(np.where(mask, xdot, 0.0), comm)


# ------------------------------------------------------------------ gradients

def _check_replicated(val, comm, where: str) -> None:
    """Raise unless the real scalar `val` is the same on every rank (one collective)."""
    v = float(np.real(value(val)))
    pair = np.array([v, -v]) if np.isfinite(v) else np.array([np.inf, np.inf])
    hi, neg_lo = _allreduce(pair, comm, "max")
    lo = -neg_lo
    if np.isfinite(hi) and np.isfinite(lo) and not hi - lo <= 1e-10 * max(abs(hi), abs(lo)):
        raise ValueError(
            f"{where}: fun's value differs between the ranks (from {lo:.17g} to {hi:.17g}); "
            "return a replicated value: reduce the local parts with ad.allsum(..., comm)")


def value_and_allgradient(fun: Callable, *args, comm, argnums=0, has_aux: bool = False):
    """Value of a replicated real scalar `fun` and this rank's part of its gradient.

    `fun` computes on this rank's parts and reduces with the collectives of
    this module, so that its value is the same on every rank. This is
    `value_and_gradient` divided by ``P = comm.size`` (a reverse pass seeded
    with 1 on every rank gives ``P`` times the gradient under the shares
    convention), after checking that the value is replicated. Collective:
    call it on every rank. Traced arguments of an outer derivative pass
    through, so it nests (`allhvp`, ``allgradient`` of an ``allgradient``).

    Parameters
    ----------
    fun : callable
        ``fun(*args)``, a real scalar, the same on every rank.
    *args
        Its arguments (this rank's parts).
    comm : communicator
        Keyword-only: ``mpi4py.MPI.COMM_WORLD``, or `SELF`.
    argnums, has_aux
        As for `value_and_gradient`.

    Returns
    -------
    tuple
        ``(value, gradient)`` (``((value, aux), gradient)`` with `has_aux`);
        the gradient is this rank's part, of the shape of its argument.

    Raises
    ------
    ValueError
        If the value differs between the ranks (a local value not reduced).
    TypeError
        If `comm` is not a communicator (and as `value_and_gradient`).

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> x = np.array([1.0, 2.0, 3.0])
    >>> def variance(x):
    ...     mean = ad.allsum(np.sum(x), ad.SELF) / 3
    ...     return ad.allsum(np.sum((x - mean) ** 2), ad.SELF) / 3
    >>> v, g = ad.value_and_allgradient(variance, x, comm=ad.SELF)
    >>> round(float(v), 12), g
    (0.666666666667, array([-0.66666667,  0.        ,  0.66666667]))
    """
    size = _check_comm(comm, "value_and_allgradient")
    out, grads = value_and_gradient(fun, *args, argnums=argnums, has_aux=has_aux)
    _check_replicated(out[0] if has_aux else out, comm, "value_and_allgradient")
    if size > 1:
        grads = _tree_map(lambda g: g / size, grads)
    return out, grads


def allgradient(fun: Callable, *args, comm, argnums=0, has_aux: bool = False):
    """This rank's part of the gradient of a replicated real scalar `fun`.

    `value_and_allgradient` without the value; with `has_aux`, ``(gradient,
    aux)``. Collective: call it on every rank.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> ad.allgradient(lambda x: ad.alldot(x, x, ad.SELF), np.array([1.0, -2.0]),
    ...                comm=ad.SELF)
    array([ 2., -4.])
    """
    out, grads = value_and_allgradient(fun, *args, comm=comm, argnums=argnums,
                                       has_aux=has_aux)
    return (grads, out[1]) if has_aux else grads


def allhvp(fun: Callable, x, v, *args, comm):
    """This rank's part of the Hessian-vector product ``H(x) v`` of a replicated `fun`.

    Forward over `allgradient` (so no factor ``P``): `x` and `v` are this
    rank's parts, `args` are passed to `fun` and not differentiated.
    Collective: call it on every rank.

    Examples
    --------
    >>> import numpy as np
    >>> from topopt import ad
    >>> f = lambda x: ad.allsum(np.sum(x ** 3), ad.SELF)
    >>> ad.allhvp(f, np.array([1.0, 2.0]), np.array([1.0, 0.0]), comm=ad.SELF)
    array([6., 0.])
    """
    _check_comm(comm, "allhvp")
    return jvp(lambda y: allgradient(fun, y, *args, comm=comm), (x,), (v,))[1]

