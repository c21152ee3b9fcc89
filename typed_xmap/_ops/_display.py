"""How a NamedArray shows in notebooks and rich terminals: one line with its names, sizes, dtype and statistics.

``NamedArray(float32[batch=2, embed=3]) min=0 max=5 mean=2.5`` (``summary_line``): the line
``_repr_mimebundle_`` (Jupyter), ``__rich__`` (``rich.print``) and treescope show, and IPython's text display of
a container (``_repr_pretty_``); treescope also draws the
values by axis name (``treescope.render_array``). treescope is optional: its hooks import it only when
treescope calls them. The hooks are bound onto
``NamedArray`` with its methods (``_methods.py``), as the value layer imports no display library.
"""

from __future__ import annotations

import html
from typing import Any

from .._value._named_array import NamedArray
from .._value._printing import summary_line

__all__ = ["DISPLAY_HOOKS"]


def _repr_mimebundle_(self: NamedArray, include: Any = None, exclude: Any = None) -> dict[str, str]:
    """What Jupyter shows: the summary line, unfolding to the values (``repr``), in HTML; ``repr`` as text.

    A mime bundle rather than ``_repr_html_``, which treescope would show again under its own rendering."""
    line, values = html.escape(summary_line(self)), html.escape(repr(self))
    shown = f"<details><summary><code>{line}</code></summary><pre>{values}</pre></details>"
    return {"text/html": shown, "text/plain": repr(self)}


def _repr_pretty_(self: NamedArray, printer: Any, cycle: bool) -> None:
    """IPython's text display: ``repr`` (the values) for the value itself, the summary line for one inside a
    container, so a params dict shows one line per array, not every value of every array.

    IPython's printer keeps the ids of the objects it is printing (``stack``): more than this one is a container.
    """
    printer.text(summary_line(self) if len(getattr(printer, "stack", ())) > 1 else repr(self))


def __rich__(self: NamedArray) -> Any:
    from rich.text import Text

    return Text(summary_line(self))


def __treescope_repr__(self: NamedArray, path: str | None, subtree_renderer: Any) -> Any:
    from ._treescope import render

    return render(self, path)


def __treescope_ndarray_adapter__(self: NamedArray) -> Any:
    from ._treescope import NamedArrayAdapter

    return NamedArrayAdapter()


DISPLAY_HOOKS = {
    hook.__name__: hook
    for hook in (_repr_mimebundle_, _repr_pretty_, __rich__, __treescope_repr__, __treescope_ndarray_adapter__)
}
"""What Jupyter, rich and treescope look up on the class, by name."""
