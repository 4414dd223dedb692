"""The options of the command line: value converters, the `Option` row, the shared options.

A converter turns an option's text into its value or raises
``argparse.ArgumentTypeError`` (argparse makes it a one-line usage error,
exit status 2). Each carries the range it accepts, as a phrase (``accepts``:
``"an integer >= 1"``) that `topopt.cli.Option` appends to the option's help,
and as numbers (``bounds``: a `Bounds`), so that the help and the parser
cannot disagree: the help texts of the problem scripts state no range of
their own (``tests/test_cli.py`` walks every script's options).

A problem script declares each of its parameters as an `Option` (name,
converter, default, help); `build_parser` adds them and then the options
every script shares (`add_run_arguments`: ``--out``, ``--maxeval``,
``--solver`` from `SOLVERS`, ...). `compliance_options` are the parameters
of a compliance problem. The script's run, its checks and its ending are
`topopt.cli.script`'s.
"""

from __future__ import annotations

import argparse
import decimal
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = ["Bounds", "number", "positive_int", "non_negative_int", "positive_float",
           "open_unit", "at_least", "accepts", "Option", "add_run_arguments", "build_parser",
           "compliance_options", "SOLVERS", "DIRECT_SOLVERS", "GRID_SOLVERS"]


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


#: The largest ``--maxeval``: NLopt counts evaluations in a C int.
MAXEVAL_LIMIT = 2**31 - 1

#: The linear-solver backends a script may name (`topopt.fem.solvers`).
DIRECT_SOLVERS = ("auto", "cholmod", "umfpack", "superlu")
SOLVERS = DIRECT_SOLVERS + ("mg-cg", "amg-cg", "petsc")
#: ... and on a structured grid the matrix-free voxel path (`topopt.grid`; numpy only).
GRID_SOLVERS = SOLVERS + ("voxel",)


@dataclass(frozen=True)
class Option:
    """One problem parameter on the command line: ``--name`` -> ``run(name=...)``.

    `type` converts and checks the text (`positive_int`, `open_unit`, ...;
    ``bool`` makes a flag); `choices` restricts it. The help shows the range
    that `type` accepts (`topopt.cli.options`), so `help` names none itself.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> Option("q", at_least(0.0, strict=True, below=3.0), 0.5, "relaxation").add_to(parser)
    >>> parser._actions[-1].help
    'relaxation; a number in (0, 3) (default: %(default)s)'
    """

    name: str
    type: Callable[[str], Any]
    default: Any
    help: str
    choices: Sequence | None = None

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        if self.type is bool:
            parser.add_argument(f"--{self.name}", action="store_true", help=self.help)
            return
        phrase = accepts(self.type)
        text = self.help if phrase is None else f"{self.help}; {phrase}"
        parser.add_argument(f"--{self.name}", type=self.type, default=self.default,
                            choices=self.choices, help=f"{text} (default: %(default)s)")


def add_run_arguments(parser: argparse.ArgumentParser, out: str, maxeval: int | None = None,
                      solvers: Sequence[str] | None = None, seed: int | None = None,
                      maxeval_help: str = "MMA evaluations in all",
                      maxeval_min: int = 1) -> None:
    """The shared options: ``--out``, ``--maxeval``, ``--solver``, ``--checkpoint``,
    ``--resume``, ``--quiet``, and ``--seed`` when `seed` is given.

    ``--maxeval`` when `maxeval` is given (an integer >= `maxeval_min`; its
    help `maxeval_help` says how the script counts it: in all, per stage, per
    design), ``--solver`` when `solvers` is.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_run_arguments(parser, "results/demo", maxeval=300, solvers=SOLVERS, seed=0)
    >>> args = parser.parse_args(["--quiet"])
    >>> args.out, args.maxeval, args.solver, args.seed, args.checkpoint, args.quiet
    ('results/demo', 300, 'auto', 0, None, True)
    >>> args.dry_run
    False
    >>> parser.parse_args(["--resume", "ck.npz"]).resume      # checked by run_options
    'ck.npz'
    """
    parser.add_argument("--out", default=out,
                        help="results folder, created and write-tested before the run "
                             "(default: %(default)s)")
    if maxeval is not None:
        convert = at_least(maxeval_min, int, high=MAXEVAL_LIMIT)
        parser.add_argument("--maxeval", type=convert, default=maxeval,
                            help=f"{maxeval_help}; {accepts(convert)} (default: %(default)s)")
    if solvers is not None:
        from ..fem.solvers.auto import ITERATIVE_MIN_DOFS, VOXEL_MIN_DOFS
        auto = (f"auto: in 3-D the matrix-free voxel path from {VOXEL_MIN_DOFS[3]:,} dofs "
                f"(topopt.grid), multigrid CG from {ITERATIVE_MIN_DOFS[3]:,}, else "
                if "voxel" in solvers else "auto: ")
        parser.add_argument("--solver", choices=tuple(solvers), default="auto",
                            help=f"linear solver; {auto}CHOLMOD (UMFPACK if complex) with "
                                 "cvxopt, else SuperLU (default: %(default)s)")
    parser.add_argument("--checkpoint", default=None,
                        help="checkpoint file (default: OUT/checkpoint.npz)")
    parser.add_argument("--resume", default=None,
                        help="resume from this checkpoint; give the options of the "
                             "interrupted run (default: start afresh)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress line per evaluation")
    parser.add_argument("--dry-run", action="store_true",
                        help="check the options, the output paths and the memory estimate "
                             "of the solver path the run takes, print them and stop")
    if seed is not None:
        parser.add_argument("--seed", type=non_negative_int, default=seed,
                            help=f"seed of the random draws; {accepts(non_negative_int)} "
                                 "(default: %(default)s)")


def build_parser(doc: str, options: Sequence[Option], out: str, maxeval: int | None = None,
                 solvers: Sequence[str] | None = SOLVERS, seed: int | None = None,
                 maxeval_help: str = "MMA evaluations in all",
                 maxeval_min: int = 1) -> argparse.ArgumentParser:
    """The parser of a problem script: its `options`, then the shared ones."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    for option in options:
        option.add_to(parser)
    add_run_arguments(parser, out, maxeval, solvers, seed, maxeval_help, maxeval_min)
    return parser


#: The filters a compliance problem's ``--filter`` accepts (`topopt.formulations.FILTERS`).
FILTERS = ("density", "helmholtz")


def compliance_options(sizes: dict, volfrac: float, rmin: float) -> tuple[Option, ...]:
    """The command-line parameters of a compliance problem: mesh counts, volfrac, rmin, ...

    Examples
    --------
    >>> [o.name for o in compliance_options({"nelx": 60, "nely": 20}, 0.5, 2.4)]
    ['nelx', 'nely', 'volfrac', 'rmin', 'penal', 'filter']
    """
    return (*(Option(k, positive_int, v, f"elements along {k[-1]}") for k, v in sizes.items()),
            Option("volfrac", open_unit, volfrac, "volume fraction"),
            Option("rmin", positive_float, rmin, "filter radius (element widths)"),
            Option("penal", at_least(1.0), 3.0, "SIMP exponent"),
            Option("filter", str, "density", "density or Helmholtz (PDE) filter",
                   choices=FILTERS))
