"""Distinct ``--comm`` notes for distinct sites on one line: mypy keeps one of the identical messages a line
holds (a hook runs several times for one expression, and mypy drops the repeats), so two sums of unnamed
operands on one line (``tnp.sum(a * a, "x") + tnp.sum(b * b, "x")``) would list one collective. A note at
another column of a line that already holds it names its column."""

from __future__ import annotations

from typing import Any

from .._core._per_check import PerCheck

__all__ = ["at_site"]

_FIRST_COLUMN: PerCheck[dict[tuple[int, str], int]] = PerCheck(dict)
"""Per check of a module: (line, note) -> the column of the first site noting it (a check of the same line again,
as mypy's deferral does, finds its own site there; the next check of the module starts anew)."""


def at_site(api: Any, message: str, line: int, column: int) -> str:
    """``message`` as the note of the site at ``line``/``column`` says it: with ``(column N)`` when an earlier
    site of the line, at another column, said it already."""
    first = _FIRST_COLUMN.of(api).setdefault((line, message), column)
    return message if first == column else f"{message} (column {column + 1})"
