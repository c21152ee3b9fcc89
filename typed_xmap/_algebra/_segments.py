"""Segment reductions by name: ``tnp.segment_sum`` and ``tnp.segment_max``.

``segment_sum(data, segment_ids, num_segments, axis="edge", new_axis="node")`` reduces ``data`` along ``axis``
into ``num_segments`` segments, the segment of each element given by ``segment_ids`` (which carries ``axis``
alone): the result has ``axis`` replaced by ``new_axis`` of size ``num_segments``. The runtime (and the mypy
plugin, once it has a hook for these rows) calls this rule.

Pure Python.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._errors import ErrorKind, NamedShapeError
from ._shapes import Size, is_size
from ._spec import format_named_shape
from ._structure import new_axis, require_axis

__all__ = ["segment_shape"]

Shape = Mapping[str, Size]


def segment_shape(
    named: Shape, ids: Shape, num_segments: object, axis: object, new: object, *, operation: str
) -> dict[str, Size]:
    """The named shape of a segment reduction of ``named`` along ``axis`` by ids of named shape ``ids``."""
    name = require_axis(named, axis, operation=operation, operand="data")
    if not is_size(num_segments) or num_segments == 0:
        raise NamedShapeError(
            f"{operation}: num_segments is {num_segments!r}; it must be a positive int. Fix: pass how many "
            "segments there are, e.g. num_segments=nodes",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    if set(ids) != {name}:
        shown = format_named_shape({n: "?" if s is None else s for n, s in ids.items()}) or "none"
        raise NamedShapeError(
            f"{operation}: segment_ids has named axes {shown!r}; it must carry the axis {name!r} it segments, and "
            f"no other. Fix: give one segment id per element of {name!r}, e.g. tx.named(ids, [{name!r}])",
            kind=ErrorKind.AXIS_MISSING,
            axes=[name] if name not in ids else [n for n in ids if n != name],
        )
    if named[name] is not None and ids[name] is not None and named[name] != ids[name]:
        raise NamedShapeError(
            f"{operation}: segment_ids has {ids[name]} elements along {name!r} but data has {named[name]}. Fix: "
            f"give one segment id per element of {name!r}",
            kind=ErrorKind.AXIS_SIZE,
        )
    rest = {a: s for a, s in named.items() if a != name}
    return {**rest, new_axis(rest, new, operation=operation, operand="data"): num_segments}
