"""How a NamedArray shows in notebooks and rich terminals: one line with its names, sizes, dtype and statistics.

``NamedArray(float32[batch=2, embed=3]) min=0 max=5 mean=2.5``: the line ``_repr_html_`` (Jupyter), ``__rich__``
(``rich.print``) and treescope show; treescope also draws the values by axis name (``treescope.render_array``).
treescope is optional: its hooks import it only when treescope calls them. ``NamedArray`` inherits the hooks from
``NamedArrayDisplay``.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

__all__ = ["NamedArrayDisplay", "summary_line"]


def summary_line(x: Any) -> str:
    """The named shape and, for a value readable here, what it holds: ``min=.. max=.. mean=..`` (no values)."""
    from ._named_array import readable, shape_repr, summary

    header = shape_repr(x)
    if not readable(x):
        return header
    return f"{header} {summary(np.asarray(x.data)).replace(', ', ' ')}"


class NamedArrayDisplay:
    """The display hooks of ``NamedArray``: Jupyter, rich and treescope find them by name."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        """The summary line, unfolding to the values (``repr``)."""
        line, values = html.escape(summary_line(self)), html.escape(repr(self))
        return f"<details><summary><code>{line}</code></summary><pre>{values}</pre></details>"

    def __rich__(self) -> Any:
        from rich.text import Text

        return Text(summary_line(self))

    def __treescope_repr__(self, path: str | None, subtree_renderer: Any) -> Any:
        from ._treescope import render

        return render(self, path)

    def __treescope_ndarray_adapter__(self) -> Any:
        from ._treescope import NamedArrayAdapter

        return NamedArrayAdapter()
