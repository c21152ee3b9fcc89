"""The closing table of ``typed-xmap bench``: each benchmark's ratios, each against its goal.

The benchmarks record their rows as they run (``record``): the model families (``bench/transformer_step.py``,
``vit_step.py``, ``moe_step.py``) one row each in the families' table, ``layout_call.py`` and
``pytree_flatten.py`` a row each in a table of their own (their columns are not the families'). ``typed-xmap
bench`` prints the tables recorded in its run (``summary_lines``), the families' first, so the figures are the
ones the detailed tables above printed, measured once.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["FAMILIES", "Row", "record", "summary_lines"]

Row = Mapping[str, tuple[float, float]]
"""column -> (ratio, goal): a ratio to plain jnp (or plain arrays) and the most it should be."""

FAMILIES = "summary: ratio to plain jnp (flatten+unflatten: to plain arrays, per leaf); ! over the goal"
"""The title of the model families' table (the default table of ``record``)."""

_ROWS: dict[str, dict[str, Row]] = {}  # table title -> row name -> row


def record(family: str, row: Row, table: str = FAMILIES) -> None:
    """Keep ``family``'s ratios for the table titled ``table`` (a second run of one family replaces the first)."""
    _ROWS.setdefault(table, {})[family] = dict(row)


def summary_lines() -> list[str]:
    """The tables of the rows recorded so far, the families' first (none: no lines); a ratio over its goal as
    shown (two decimals) is marked ``!``."""
    titles = sorted(_ROWS, key=lambda title: title != FAMILIES)
    return [line for title in titles if _ROWS[title] for line in _table(title, _ROWS[title])]


def _table(title: str, rows: dict[str, Row]) -> list[str]:
    columns = list(dict.fromkeys(c for row in rows.values() for c in row))
    goals = {c: next(row[c][1] for row in rows.values() if c in row) for c in columns}
    width = max(len(f) for f in rows) + 2
    heads = [f"{c} (<={goals[c]:g}x)" for c in columns]
    lines = [title, " " * width + "".join(f"{h:>{len(h) + 3}}" for h in heads)]
    for family, row in rows.items():
        cells = []
        for c, h in zip(columns, heads, strict=True):
            text = "-" if c not in row else f"{row[c][0]:.2f}x" + ("!" if round(row[c][0], 2) > row[c][1] else " ")
            cells.append(f"{text:>{len(h) + 3}}")
        lines.append(f"{family:<{width}}" + "".join(cells))
    return lines
