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


def check_refusal(call, x, mode: str, exc, words) -> None:
    """`call` refused in `mode` with an `exc` whose message holds every one of `words`."""
    message = refusal_message(call, x, mode, exc)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
