"""Symbolic sizes: a size known by where it comes from (``cfg.mlp``, ``x.named_shape['seq']``, ``n``), not by value.

The mypy plugin meets them: real models take every size from a config. A symbol keeps its identity through
simple arithmetic, in one canonical form, ``scale * atoms // divisor + offset`` (``2 * n`` and ``n * 2`` are
one symbol). Every step is exact: a floor division is folded into the form only where the result is the same
number for every config (``(n // 2) // 2`` is ``n // 4``; ``2 * (n // 2)`` is not ``n``, so ``(n // 2)`` becomes
an atom of its own, a *derived* atom, written in parentheses). Two sizes *differ* only when that is certain
for every config whose sizes are positive ints: two ints that differ, two symbols over the same atoms with one
arithmetic but for their offsets (``n`` vs ``n + 1``), or whose bounds keep them apart from the smallest config
on (``cfg.mlp`` vs ``cfg.mlp // 2``, ``2 * n`` vs ``n``, ``4 * (n // 2)`` vs ``4 * n``; never ``n`` vs
``n // 2 + 1``, equal for ``n = 2``). A symbol and an int, or symbols over unrelated atoms, may be equal at
run time: they never differ (gradual, never a false error).

Pure Python; the plugin calls it, the runtime only ever has ints.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ._errors import ErrorKind, NamedShapeError
from ._spec import format_placed_name

__all__ = [
    "StaticSize",
    "SymbolicSize",
    "format_size",
    "meet_sizes",
    "parse_size",
    "parse_symbolic_spec",
    "size_add",
    "size_floordiv",
    "size_mul",
    "sizes_differ",
    "symbol",
    "symbolic_spec",
]


@dataclass(frozen=True, slots=True)
class SymbolicSize:
    """``scale * atoms[0] * atoms[1] ... // divisor + offset``, atoms sorted, ``scale``/``divisor`` coprime."""

    atoms: tuple[str, ...]
    scale: int = 1
    divisor: int = 1
    offset: int = 0

    def __str__(self) -> str:
        return format_size(self)


StaticSize = int | SymbolicSize | None
"""A size as the plugin knows it: an int, a symbol, or unknown (``None``)."""


def symbol(atom: str) -> SymbolicSize:
    """The size named ``atom`` (its source text: ``cfg.mlp``, ``n``, ``x.named_shape['seq']``)."""
    return SymbolicSize((atom,))


def _canonical(atoms: tuple[str, ...], scale: int, divisor: int, offset: int) -> StaticSize:
    if scale == 0:
        return offset
    if scale < 0 or divisor <= 0:
        return None  # a negative or unbounded form: not a size the checker follows
    common = math.gcd(scale, divisor)
    return SymbolicSize(tuple(sorted(atoms)), scale // common, divisor // common, offset)


def size_add(a: StaticSize, b: StaticSize) -> StaticSize:
    """``a + b``: an int or symbol when both are known and the sum stays in canonical form, else unknown."""
    if a is None or b is None:
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if isinstance(a, int):
        a, b = b, a
    assert isinstance(a, SymbolicSize)
    if isinstance(b, int):
        return _canonical(a.atoms, a.scale, a.divisor, a.offset + b)
    if a.atoms == b.atoms and a.divisor == b.divisor == 1:
        return _canonical(a.atoms, a.scale + b.scale, 1, a.offset + b.offset)
    return None


def size_mul(a: StaticSize, b: StaticSize) -> StaticSize:
    """``a * b`` (a merged axis' size, ``2 * n``)."""
    if a is None or b is None:
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int):
        a, b = b, a
    assert isinstance(a, SymbolicSize)
    if isinstance(b, int):
        if a.divisor != 1:  # (n // 4) * 2 is not n // 2: the floor division becomes an atom
            inner = _derived(a)
            return size_mul(inner, b) if inner is not None else None
        return _canonical(a.atoms, a.scale * b, 1, a.offset * b)
    if a.divisor == b.divisor == 1 and a.offset == b.offset == 0:
        return _canonical(a.atoms + b.atoms, a.scale * b.scale, 1, 0)
    return None


def size_floordiv(a: StaticSize, b: StaticSize) -> StaticSize:
    """``a // b``: for an int ``b`` in canonical form (``cfg.mlp // 2``); by a symbol, an atom of its own
    (``(cfg.embed // cfg.heads)``, equal only to itself); unknown otherwise."""
    if isinstance(b, SymbolicSize) and a is not None:
        text = f"({_operand(a)} // {_operand(b)})"
        return symbol(text) if " * " not in text else None  # an atom never holds " * " (parse_size splits there)
    if a is None or not isinstance(b, int) or b <= 0:
        return None
    if isinstance(a, int):
        return a // b
    if a.offset != 0:  # (n + 1) // 2 is not n // 2 + 1 // 2: an atom of its own
        text = f"({_operand(a)} // {b})"
        return symbol(text) if " * " not in text else None
    return _canonical(a.atoms, a.scale, a.divisor * b, 0)  # floor(floor(m / d) / b) == floor(m / (d * b))


def _operand(size: StaticSize) -> str:
    """A size as the operand of a derived atom's ``//``: parenthesized unless it is one atom or an int."""
    text = format_size(size)
    if isinstance(size, SymbolicSize) and (size.scale != 1 or size.divisor != 1 or size.offset or len(size.atoms) > 1):
        return f"({text})"
    return text


def _derived(size: SymbolicSize) -> SymbolicSize | None:
    """A symbol with a floor division as a derived atom (``(n // 4)``), to multiply it exactly."""
    base = SymbolicSize(size.atoms, size.scale, size.divisor, 0)
    text = f"({format_size(base)})"
    if " * " in text:
        return None  # an atom never holds " * " (parse_size splits there)
    return SymbolicSize((text,), 1, 1, size.offset)


def _is_derived(atom: str) -> bool:
    """Whether an atom is a floor division this module made (``(n // 4)``, ``(cfg.embed // cfg.heads)``): its
    value may be 0 or negative, where a config's own size is a positive int."""
    return atom.startswith("(")


def sizes_differ(a: StaticSize, b: StaticSize) -> bool:
    """Whether two sizes certainly differ, for every config whose sizes are positive ints; unknown, int vs
    symbol, or symbols over unrelated atoms never do. Over one atom ``X`` (or one side over ``(X // n)``,
    the other over ``X``: ``4 * (cfg.hidden // 2)`` vs ``4 * cfg.hidden``) each side lies between two lines
    in ``X``; the sizes differ when the lines keep them apart from ``X = 1`` on."""
    if isinstance(a, int) and isinstance(b, int):
        return a != b
    if not (isinstance(a, SymbolicSize) and isinstance(b, SymbolicSize)) or a == b:
        return False
    if a.atoms == b.atoms and (a.scale, a.divisor) == (b.scale, b.divisor):
        return True  # one arithmetic, another offset: apart by the offsets' difference for every config
    base_a, base_b = _over_base(a), _over_base(b)
    if base_a is None or base_b is None or base_a[0] != base_b[0]:
        return False  # unrelated atoms, or a derived atom that may be 0 or negative: no smallest config
    (slope_a, low_a, high_a), (slope_b, low_b, high_b) = base_a[1:], base_b[1:]
    # a - b >= (slope_a - slope_b) * X + low_a - high_b, and b - a likewise: one of them above 0 from X = 1 on
    above = slope_a >= slope_b and slope_a - slope_b + low_a - high_b > 0
    below = slope_b >= slope_a and slope_b - slope_a + low_b - high_a > 0
    return above or below


_FLOORED = re.compile(r"^\(([^()\s]+) // (\d+)\)$")


def _over_base(size: SymbolicSize) -> tuple[tuple[str, ...], Fraction, Fraction, Fraction] | None:
    """``size`` as lines in its base atoms' product ``X >= 1``: ``(base atoms, slope, low, high)`` with
    ``slope * X + low <= size <= slope * X + high``; ``None`` for a derived atom that is not ``(X // n)``.
    ``floor(s * floor(X / n) / d) + o`` lies between ``s * X / (n * d) + o`` and that less
    ``s * (n - 1) / (n * d) + (d - 1) / d`` (each floor loses less than one step of its divisor)."""
    atoms, n = size.atoms, 1
    if any(_is_derived(atom) for atom in atoms):
        found = _FLOORED.match(atoms[0]) if len(atoms) == 1 else None
        if found is None:
            return None
        atoms, n = (found.group(1),), int(found.group(2))
    slope = Fraction(size.scale, n * size.divisor)
    loss = Fraction(size.scale * (n - 1), n * size.divisor) + Fraction(size.divisor - 1, size.divisor)
    return atoms, slope, size.offset - loss, Fraction(size.offset)


def format_size(size: StaticSize) -> str:
    """The user's notation: ``8``, ``cfg.mlp // 2``, ``2 * n``, ``cfg.expert + 1``; ``?`` when unknown."""
    if size is None:
        return "?"
    if isinstance(size, int):
        return str(size)
    text = " * ".join(size.atoms)
    if size.scale != 1:
        text = f"{size.scale} * {text}"
    if size.divisor != 1:
        text = f"{text} // {size.divisor}"
    if size.offset:
        text = f"{text} {'+' if size.offset > 0 else '-'} {abs(size.offset)}"
    return text


_OFFSET = re.compile(r"^(.*) ([+-]) (\d+)$")
_DIVISOR = re.compile(r"^(.*) // (\d+)$")
_SCALE = re.compile(r"^(\d+) \* (.*)$")


def parse_size(text: str) -> StaticSize:
    """``format_size``'s inverse: ``"cfg.mlp // 2"`` -> the symbol; ``"8"`` -> 8; ``"?"`` -> unknown."""
    if text == "?":
        return None
    if text.isdigit():
        return int(text)
    offset, divisor, scale = 0, 1, 1
    if found := _OFFSET.match(text):
        text, offset = found.group(1), int(found.group(3)) * (1 if found.group(2) == "+" else -1)
    if found := _DIVISOR.match(text):
        text, divisor = found.group(1), int(found.group(2))
    if found := _SCALE.match(text):
        scale, text = int(found.group(1)), found.group(2)
    return _canonical(tuple(text.split(" * ")), scale, divisor, offset)


def symbolic_spec(named: Mapping[str, StaticSize], placement: Mapping[str, Sequence[str]] | None = None) -> str:
    """A named shape in annotation notation with symbols: ``batch=8 mlp=cfg.mlp // 2 embed``; with the known
    placements, ``batch@data=8 ...``."""
    where = placement or {}
    return " ".join(
        f"{format_placed_name(name, where.get(name))}{'' if size is None else '=' + format_size(size)}"
        for name, size in named.items()
    )


_OPERATORS = frozenset({"*", "//", "+", "-"})


def parse_symbolic_spec(text: str) -> dict[str, StaticSize]:
    """``symbolic_spec``'s inverse: ``"batch=8 mlp=cfg.mlp // 2 embed"`` -> ``{"batch": 8, "mlp": ..., ...}``
    (placements, ``batch@data=8``, left out: ``parse_placed_text`` reads them)."""
    axes: dict[str, list[str]] = {}
    current: list[str] | None = None
    for token in text.split():
        if current is not None and (token in _OPERATORS or (current and current[-1] in _OPERATORS)):
            current.append(token)
            continue
        name, _, size = token.partition("=")
        current = axes[name.partition("@")[0]] = [size] if size else []
        if not size:
            current = None
    return {name: parse_size(" ".join(parts)) if parts else None for name, parts in axes.items()}


def meet_sizes(
    shapes: Sequence[Mapping[str, StaticSize]],
    *,
    operation: str,
    operands: Sequence[str] | None = None,
    skip: Collection[str] = (),
    shown: Sequence[Mapping[str, StaticSize]] | None = None,
) -> dict[str, StaticSize]:
    """Where values meet by name (broadcast, einsum, a call's arguments), one name has one size: the union
    of the axes, each with its most precise size (an int, else a symbol); sizes that certainly differ
    (``sizes_differ``) raise. Axes in ``skip`` (a concatenated axis) are not compared; ``shown`` are the
    shapes the message quotes, when they are not ``shapes``."""
    labels = operands or [f"operand {i}" for i in range(len(shapes))]
    quoted = shown or shapes
    result: dict[str, StaticSize] = {}
    owner: dict[str, int] = {}
    for index, shape in enumerate(shapes):
        for name, size in shape.items():
            known = result.get(name)
            if name in skip:
                result.setdefault(name, None)
            elif sizes_differ(known, size):
                other = owner[name]
                raise NamedShapeError(
                    f"axis {name!r} has size {format_size(known)} in {labels[other]} "
                    f"({symbolic_spec(quoted[other])!r}) but size {format_size(size)} in {labels[index]} "
                    f"({symbolic_spec(quoted[index])!r}) in {operation}; values meet by name, so one axis name "
                    f"must have one size, and these differ whatever the config. Fix: build both from the same "
                    f"size, or rename one of the axes",
                    kind=ErrorKind.AXIS_SIZE,
                    axes=[name],
                )
            elif name not in result or (size is not None and not isinstance(known, int)):
                result[name], owner[name] = size, index
    return result
