"""``tx.visualize``: draw how a NamedArray is split over devices, labelled by axis name."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from .._algebra import ErrorKind, NamedShapeError
from .._value._named_array import NamedArray
from .._value._printing import shape_repr
from ._sharding import resources_of

__all__ = ["visualize"]


def _span(piece: slice, size: int) -> str:
    start, stop, _ = piece.indices(size)
    return f"{start}:{stop}"


def sharding_diagram(x: NamedArray) -> Group:
    """A heading and a table of which devices hold which block of ``x``, labelled by axis name.

    With two split axes it is a grid (rows along one, columns along the other); otherwise one row per
    block and one column per named axis.
    """
    if not isinstance(x, NamedArray):
        raise NamedShapeError(
            f"tx.visualize takes a NamedArray, got {type(x).__name__}. Fix: tx.visualize(tx.named(array, axes)), "
            f"or jax.debug.visualize_array_sharding(array) for a positional array",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    data = x.data
    sharding = getattr(data, "sharding", None)
    if sharding is None:
        raise NamedShapeError(
            "tx.visualize needs a concrete array, not a tracer. Fix: call it outside jax.jit, on the result, "
            "or use tx.resources_of(x) inside",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    placement = resources_of(x)
    shown = [a for a in x.axes if a in placement] or list(x.axes)
    dims = {name: x.ndim + x.axes.index(name) for name in shown}
    named = x.named_shape
    blocks: dict[tuple[str, ...], list[str]] = {}
    for device, index in sorted(sharding.devices_indices_map(data.shape).items(), key=lambda kv: kv[0].id):
        key = tuple(_span(index[dims[name]], named[name]) for name in shown)
        blocks.setdefault(key, []).append(str(device.id))
    where = ", ".join(f"{name} -> {placement[name]}" for name in placement) or "replicated"
    title = f"{shape_repr(x)}  split: {where}"
    label = {name: f"{name}" + (f" on {placement[name]}" if name in placement else "") for name in shown}
    if len(shown) == 2:  # a grid: rows along the first axis, columns along the second
        rows = list(dict.fromkeys(key[0] for key in blocks))
        columns = list(dict.fromkeys(key[1] for key in blocks))
        table = Table(show_lines=True)
        table.add_column(f"{label[shown[0]]} \\ {label[shown[1]]}")
        for column in columns:
            table.add_column(column, justify="center")
        for row in rows:
            table.add_row(row, *(" ".join(blocks.get((row, column), [])) for column in columns))
        return Group(Text(title), table)
    table = Table()
    for name in shown:
        table.add_column(label[name])
    table.add_column("devices")
    for key, devices in blocks.items():
        table.add_row(*key, " ".join(devices))
    return Group(Text(title), table)


def visualize(x: NamedArray, *, console: Any = None) -> None:
    """Print which devices hold which block of ``x``, with rows and columns named by axis.

    Args:
        x: the NamedArray (on one device or split over a mesh).
        console: a ``rich`` console to print to (the default: the terminal).

    Raises:
        NamedShapeError: ``x`` not a NamedArray, or a traced value (inside ``jax.jit``: use ``tx.resources_of``).

    Examples:
        >>> tx.visualize(tx.named(jnp.ones((8, 4)), ["batch", "embed"]))  # one device: one block
        NamedArray(float32[batch=8, embed=4])  split: replicated
        ┏━━━━━━━━━━━━━━━┳━━━━━┓
        ┃ batch \\ embed ┃ 0:4 ┃
        ┡━━━━━━━━━━━━━━━╇━━━━━┩
        │ 0:8           │  0  │
        └───────────────┴─────┘
    """
    (console or Console()).print(sharding_diagram(x))
