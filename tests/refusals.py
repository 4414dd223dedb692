"""A call form that `topopt.ad` refuses, run in reverse or forward mode."""

import numpy as np
import pytest

from topopt import ad


def refusal_message(call, x, mode: str, exc) -> str:
    """The message of the `exc` that `call` raises when differentiated at `x` in `mode`."""
    with pytest.raises(exc) as info:
        if mode == "reverse":
            ad.pullback(call, x)
        else:
            ad.jvp(call, (x,), (np.ones_like(x),))
    return str(info.value)
