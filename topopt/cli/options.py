"""The value converters of the command line: each checks a range and states it.

A converter turns an option's text into its value or raises
``argparse.ArgumentTypeError`` (argparse makes it a one-line usage error,
exit status 2). Each carries the range it accepts, as a phrase (``accepts``:
``"an integer >= 1"``) that `topopt.cli.Option` appends to the option's help,
and as numbers (``bounds``: a `Bounds`), so that the help and the parser
cannot disagree: the help texts of the problem scripts state no range of
their own (``tests/test_cli.py`` walks every script's options).
"""

from __future__ import annotations

import argparse
import decimal
import math
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Bounds", "number", "positive_int", "non_negative_int", "positive_float",
           "open_unit", "at_least", "accepts"]


@dataclass(frozen=True)
class Bounds:
    """The range of a numeric option: ``low`` (``>`` if `low_strict`), ``high`` (``<``
    if `high_strict`), integers (`kind` int), even ones (`even`)."""

    kind: type = float
    low: float | None = None
    high: float | None = None
    low_strict: bool = False
    high_strict: bool = False
    even: bool = False

    def phrase(self) -> str:
        """``"an integer >= 1"``, ``"a number in (0, 1)"``, ``"a number > 0 and < 3"``.

        Examples
        --------
        >>> Bounds(int, 4, even=True).phrase(), Bounds(float, 0, 1, True, True).phrase()
        ('an even integer >= 4', 'a number in (0, 1)')
        >>> Bounds(int, 1, 2**31 - 1).phrase()
        'an integer >= 1 and <= 2147483647'

        >>> Bounds(float, 0, 3, True, True, ).phrase() == 'a number in (0, 3)'
        True
        """
        noun = ("an even integer" if self.even else "an integer") if self.kind is int \
            else "a number"
        show = (lambda v: str(int(v))) if self.kind is int else (lambda v: f"{v:g}")
        if self.kind is float and self.low is not None and self.high is not None \
                and self.low_strict == self.high_strict:
            a, b = ("(", ")") if self.low_strict else ("[", "]")
            return f"{noun} in {a}{show(self.low)}, {show(self.high)}{b}"
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_strict else '>='} {show(self.low)}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_strict else '<='} {show(self.high)}")
        return f"{noun} {' and '.join(parts)}".rstrip()

    def holds(self, value) -> bool:
        """Whether `value` lies in the range."""
        if self.low is not None and (value <= self.low if self.low_strict else value < self.low):
            return False
        if self.high is not None and (value >= self.high if self.high_strict
                                      else value > self.high):
            return False
        return not (self.even and value % 2)


#: The largest integer an option may hold (numpy's int64: counts, sizes, seeds).
INT_MAX = 2**63 - 1


def _integer(text: str) -> int:
    """``int(text)``, or an integral number in other notation (``1e8``, ``2.0``), exactly."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        raise ValueError(text) from None
    if not value.is_finite() or value != value.to_integral_value():
        raise ValueError(text)
    return int(value)


def _parse(text: str, kind: type):
    """`text` as `kind`; an integer may be written ``1e8``.

    Examples
    --------
    >>> _parse("1e8", int), _parse("60", int)
    (100000000, 60)
    >>> _parse("2.5", int)
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '2.5' is not an integer
    >>> _parse("1e400", int)
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '1e400' is too large: an integer option is at most 9223372036854775807 in size (a 64-bit integer)
    """
    try:
        value = _integer(text) if kind is int else kind(text)
    except ValueError:
        noun = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"{text!r} is not {noun}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    if kind is int and abs(value) > INT_MAX:
        raise argparse.ArgumentTypeError(f"{text!r} is too large: an integer option is at "
                                         f"most {INT_MAX} in size (a 64-bit integer)")
    return value


def number(bounds: Bounds, message: str | None = None) -> Callable[[str], Any]:
    """The converter of `bounds`; its error ``must be <phrase>, got V`` (or `message`).

    Examples
    --------
    >>> number(Bounds(float, 0, 3, True, True))("3")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a number in (0, 3), got 3.0
    """
    phrase = bounds.phrase()

    def convert(text: str):
        value = _parse(text, bounds.kind)
        if not bounds.holds(value):
            raise argparse.ArgumentTypeError(f"{message or f'must be {phrase}'}, got {value!r}")
        return value

    convert.__name__ = phrase          # argparse's "invalid <name> value" if ever used
    convert.accepts, convert.bounds = phrase, bounds
    return convert


def accepts(convert) -> str | None:
    """The range phrase of a converter (None for ``str``, ``bool`` and the like)."""
    return getattr(convert, "accepts", None)


#: An integer >= 1.
positive_int = number(Bounds(int, 1))
positive_int.__doc__ = """An integer >= 1.

    Examples
    --------
    >>> positive_int("60")
    60
    >>> positive_int("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be an integer >= 1, got 0
    """
#: An integer >= 0 (a seed).
non_negative_int = number(Bounds(int, 0))
#: A finite number > 0.
positive_float = number(Bounds(float, 0, low_strict=True))
#: A number in the open interval (0, 1) (a volume fraction).
open_unit = number(Bounds(float, 0, 1, True, True), "must lie in the open interval (0, 1)")
open_unit.__doc__ = """A number in the open interval (0, 1) (a volume fraction).

    Examples
    --------
    >>> open_unit("0.5")
    0.5
    >>> open_unit("1.2")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must lie in the open interval (0, 1), got 1.2
    """


def at_least(low: float, kind: type = float, strict: bool = False,
             high: float | None = None, even: bool = False,
             below: float | None = None) -> Callable[[str], Any]:
    """A converter for numbers ``>= low`` (``> low`` if `strict`), ``<= high`` or
    ``< below``, even.

    Examples
    --------
    >>> at_least(1.0)("3")
    3.0
    >>> at_least(4, int, even=True)("5")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be an even integer >= 4, got 5
    >>> at_least(0.0, strict=True, below=3.0)("3")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a number in (0, 3), got 3.0
    """
    if high is not None and below is not None:
        raise ValueError("give high (<=) or below (<), not both")
    return number(Bounds(kind, low, below if below is not None else high, strict,
                         below is not None, even))
