"""Rows of edge forms of `topopt.ad` (tests/test_ad_edges*.py): one call form each.

A row is ``(fun, label, call, inputs)``: `call` applied to the named input
arrays exercises the call form of `fun` in the form `label`; every row is
checked in every mode (reverse, forward, hvp, nested) against central
differences by `ad.check_modes`.
"""

import warnings

import numpy as np

from topopt import ad
from topopt.ad.registry import function_name


def row(fun, label, call, inputs):
    """One row: `call(*X[inputs])` exercises the call form of `fun` in the form `label`."""
    return fun, label, call, tuple(inputs.split(","))


def row_id(r):
    """The test id of row `r`: ``function[label]``."""
    return f"{function_name(r[0])}[{r[1]}]"


def check_in_every_mode(call, args, seed):
    """`ad.check_modes` of `call` at `args`: every mode, every argument (4 reports each)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        report = ad.check_modes(call, *args, seed=seed, rtol=1e-6)
    assert len(report) == 4 * len(args)
