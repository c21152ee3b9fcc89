"""The closing table of ``typed-xmap bench``: each model family's ratios to plain jnp, each against its goal.

The family benchmarks (``bench/transformer_step.py``, ``vit_step.py``, ``moe_step.py``) record one row each as they
run (``record``); ``typed-xmap bench`` prints the rows recorded in its run (``summary_lines``), so the figures
are the ones the detailed tables above printed, measured once.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["Row", "record", "summary_lines"]

Row = Mapping[str, tuple[float, float]]
"""column -> (ratio, goal): a ratio to plain jnp (or plain arrays) and the most it should be."""

_ROWS: dict[str, Row] = {}


def record(family: str, row: Row) -> None:
    """Keep ``family``'s ratios for the table (a second run of one family replaces the first)."""
    _ROWS[family] = dict(row)


def summary_lines() -> list[str]:
    """The table of the rows recorded so far (none: no lines); a ratio over its goal as shown (two decimals) is
    marked ``!``."""
    if not _ROWS:
        return []
    columns = list(dict.fromkeys(c for row in _ROWS.values() for c in row))
    goals = {c: next(row[c][1] for row in _ROWS.values() if c in row) for c in columns}
    width = max(len(f) for f in _ROWS) + 2
    heads = [f"{c} (<={goals[c]:g}x)" for c in columns]
    lines = [
        "summary: ratio to plain jnp (flatten+unflatten: to plain arrays, per leaf); ! over the goal",
        " " * width + "".join(f"{h:>{len(h) + 3}}" for h in heads),
    ]
    for family, row in _ROWS.items():
        cells = []
        for c, h in zip(columns, heads, strict=True):
            text = "-" if c not in row else f"{row[c][0]:.2f}x" + ("!" if round(row[c][0], 2) > row[c][1] else " ")
            cells.append(f"{text:>{len(h) + 3}}")
        lines.append(f"{family:<{width}}" + "".join(cells))
    return lines
