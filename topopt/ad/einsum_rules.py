"""Rules for numpy.einsum and numpy.tensordot.

``einsum`` is multilinear: the cotangent of operand ``k`` is the einsum of
the output cotangent with the conjugated other operands, contracted to
operand ``k``'s subscripts. Three cases need more than one einsum call:

* a label only operand ``k`` carries (summed there, e.g. ``ij->i``): its
  cotangent is constant along that label, a broadcast;
* a label broadcast from length 1 in operand ``k``: summed back;
* a repeated label (a diagonal, e.g. ``ii->i``): the cotangent lives on the
  diagonal, a product with an identity mask.

Every call form is accepted: explicit and implicit output, ``...``, two or
more operands, and the interleaved form ``einsum(x, [0, 1], y, [1, 2])``.
"""

from __future__ import annotations

import string

import numpy as np

from .callforms import callform, lifting
from .coerce import _lift_einsum
from .core import Box, NoRuleError, _shape
from .extend import frule, rrule
from .rulekit import _add, _conj

__all__: list = []

_LETTERS = string.ascii_letters


def _from_sublist(sub) -> str:
    return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in sub)


def _split(operands):
    """Subscripts of each operand, the output (None: implicit) and the operands' positions."""
    if isinstance(operands[0], str):
        spec = operands[0].replace(" ", "")
        ins, _, out = spec.partition("->")
        return ins.split(","), (out if "->" in spec else None), list(range(1, len(operands)))
    n = len(operands)
    positions = list(range(0, n - n % 2, 2))
    ins = [_from_sublist(operands[i + 1]) for i in positions]
    return ins, (_from_sublist(operands[-1]) if n % 2 else None), positions


def _expand_ellipsis(ins, out, shapes):
    """Replace ``...`` by unused letters, right-aligned as numpy broadcasts them."""
    used = set("".join(ins) + (out or "")) - {"."}
    spare = [c for c in _LETTERS if c not in used]
    counts = [len(shape) - (len(s) - 3) if "..." in s else 0 for s, shape in zip(ins, shapes)]
    ell = "".join(spare[:max(counts, default=0)])
    ins = [s.replace("...", ell[len(ell) - c:]) for s, c in zip(ins, counts)]
    if out is None:
        once = [c for c in set("".join(ins)) if c not in ell and "".join(ins).count(c) == 1]
        return ins, ell + "".join(sorted(once))
    return ins, out.replace("...", ell)


def _parse(operands):
    ins, out, positions = _split(operands)
    shapes = [_shape(operands[i]) for i in positions]
    ins, out = _expand_ellipsis(ins, out, shapes)
    return ins, out, positions


_OPTIONS = ("optimize", "dtype", "order", "casting")


def _check_keywords(kw):
    for key, v in kw.items():
        if key == "out":
            raise TypeError("numpy.einsum(..., out=...) on a traced value: traced arrays are "
                            "immutable; use the returned array instead of out=")
        if key not in _OPTIONS:
            raise NoRuleError(f"no differentiation rule for numpy.einsum with the argument "
                              f"{key}={v!r}; the rule supports {', '.join(_OPTIONS)}")
        if isinstance(v, Box):
            raise NoRuleError(f"argument '{key}' of numpy.einsum is traced; pass ad.value(...)")
        if key == "casting" and v == "unsafe":
            raise NoRuleError("no differentiation rule for numpy.einsum with casting='unsafe' "
                              "(a complex to real cast drops the imaginary part); take np.real "
                              "of the result instead")
    if kw.get("dtype") is not None and np.dtype(kw["dtype"]).kind not in "fc":
        raise TypeError(f"numpy.einsum(..., dtype={np.dtype(kw['dtype']).name}) of a traced "
                        "value: an integer or boolean result has no derivative")


def _setup(operands, kw):
    """Subscripts, output, operand positions and the `optimize` of the cotangent einsums."""
    opt = kw.get("optimize", False)
    return (*_parse(operands), opt if isinstance(opt, (bool, str)) else True)


def _diagonal_mask(s, shape):
    """True where every repeated label of `s` indexes equal positions."""
    nd = len(s)
    mask = np.ones((1,) * nd, dtype=bool)
    for p, label in enumerate(s):
        first = s.index(label)
        if first != p:
            ip = np.arange(shape[p]).reshape([-1 if i == p else 1 for i in range(nd)])
            jf = np.arange(shape[first]).reshape([-1 if i == first else 1 for i in range(nd)])
            mask = mask & (ip == jf)
    return mask


def _fit(g, labels, s, shape, present):
    """Cotangent `g` with axes `labels` shaped to an operand with subscripts `s`."""
    size = {label: shape[s.index(label)] for label in s}
    gshape = _shape(g)
    summed = tuple(i for i, lab in enumerate(labels) if gshape[i] != size[lab] and size[lab] == 1)
    if summed:
        g = np.sum(g, axis=summed, keepdims=True)
    unique = "".join(dict.fromkeys(s))
    missing = tuple(i for i, lab in enumerate(unique) if lab not in present)
    if missing:
        g = np.expand_dims(g, missing)
    full = tuple(size[lab] for lab in unique)
    if _shape(g) != full:
        g = np.broadcast_to(g, full)
    if len(unique) < len(s):
        repeats = tuple(p for p, lab in enumerate(s) if s.index(lab) != p)
        g = np.expand_dims(g, repeats) * _diagonal_mask(s, shape)
    return g


def _operand_cotangent(k, ins, out, arrays, ybar, opt):
    others = [(s, _conj(a)) for j, (s, a) in enumerate(zip(ins, arrays)) if j != k]
    others.append((out, ybar))
    present = set("".join(s for s, _ in others))
    labels = "".join(lab for lab in dict.fromkeys(ins[k]) if lab in present)
    spec = ",".join(s for s, _ in others) + "->" + labels
    g = np.einsum(spec, *[a for _, a in others], optimize=opt)
    return _fit(g, labels, ins[k], _shape(arrays[k]), present)


lifting(np.einsum, _lift_einsum)


@rrule(np.einsum)
def einsum_rrule(*operands, **kw):
    _check_keywords(kw)
    y = np.einsum(*operands, **kw)  # numpy checks the subscripts first
    ins, out, positions, opt = _setup(operands, kw)
    arrays = [operands[i] for i in positions]

    def einsum_pullback(ybar):
        cts = [None] * len(operands)
        for k, pos in enumerate(positions):
            cts[pos] = _operand_cotangent(k, ins, out, arrays, ybar, opt)
        return tuple(cts)
    return y, einsum_pullback


@frule(np.einsum)
def einsum_frule(primals, tangents, **kw):
    _check_keywords(kw)
    y = np.einsum(*primals, **kw)
    ins, out, positions, opt = _setup(primals, kw)
    arrays = [primals[i] for i in positions]
    spec = ",".join(ins) + "->" + out
    ydot = None
    for k, pos in enumerate(positions):
        if tangents[pos] is not None:
            args = [tangents[pos] if j == k else a for j, a in enumerate(arrays)]
            ydot = _add(ydot, np.einsum(spec, *args, optimize=opt))
    return y, ydot


# ---------------------------------------------------------------- tensordot

def _tensordot_axes(axes, na, nb):
    """numpy's `axes` argument as two lists of non-negative axes."""
    try:
        iter(axes)
    except TypeError:
        n = int(axes)
        ia, ib = list(range(na - n, na)), list(range(n))
    else:
        ia, ib = axes
        ia = [int(i) for i in np.ravel(ia)]
        ib = [int(i) for i in np.ravel(ib)]
    return [i % max(na, 1) for i in ia], [i % max(nb, 1) for i in ib]


def _inverse(perm):
    return tuple(int(i) for i in np.argsort(perm))


callform(np.tensordot, 2, ("axes",))


@rrule(np.tensordot)
def tensordot_rrule(a, b, axes=2):
    y = np.tensordot(a, b, axes)
    na, nb = len(_shape(a)), len(_shape(b))
    ia, ib = _tensordot_axes(axes, na, nb)
    fa = [i for i in range(na) if i not in ia]
    fb = [i for i in range(nb) if i not in ib]
    # tensordot(ybar, b) has axes fa + (b's contracted axes, ascending), mapped to a's
    a_order = fa + [ia[ib.index(j)] for j in sorted(ib)]
    b_order = [ib[ia.index(i)] for i in sorted(ia)] + fb

    def tensordot_pullback(ybar):
        ya = list(range(len(fa), len(fa) + len(fb)))
        abar = np.tensordot(ybar, _conj(b), (ya, fb))
        bbar = np.tensordot(_conj(a), ybar, (fa, list(range(len(fa)))))
        return np.transpose(abar, _inverse(a_order)), np.transpose(bbar, _inverse(b_order))
    return y, tensordot_pullback


@frule(np.tensordot)
def tensordot_frule(primals, tangents, axes=2):
    (a, b), (adot, bdot) = primals, tangents
    return np.tensordot(a, b, axes), _add(
        None if adot is None else np.tensordot(adot, b, axes),
        None if bdot is None else np.tensordot(a, bdot, axes))
