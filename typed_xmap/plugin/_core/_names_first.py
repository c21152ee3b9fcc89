"""Names first: an argument that is not a name and that the checker cannot read (a window, stride, padding,
dilation, ``k``, section count or size from a config: ``tnp.max_pool(x, {"height": cfg.pool}, cfg.pool)``)
never erases the result's axis names; it makes unknown only the sizes of the axes the call names.

The hooks read their arguments through ``Arguments``: names bound once stand for their values
(``_constants.flow_value``); an argument in ``NUMBERS`` (a number, or one per axis name) or ``KEYED`` (a dict
keyed by names) with a part it cannot read gets a *probe*, ``1``, in its place. ``run`` then calls the
algebra's rule: when a probe was used, it reports only errors about names (a probe may make a size error
that the real value would not), retries with the operands' sizes unknown where a size error stopped it, and
gives the result's axes that the call names (a windowed axis, a new axis) an unknown size; the other axes
keep the operands' sizes, which no number of the call changes (batch axes, a kernel's output features).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..._algebra import ErrorKind, NamedShapeError, Size
from ._constants import resolved
from ._literals import UNKNOWN, literal_value
from ._support import arg_expr, certain_error, report

if TYPE_CHECKING:
    from mypy.nodes import Expression

__all__ = ["KEYED", "NAME_KINDS", "NUMBERS", "Arguments", "Unreadable", "rerun", "run"]

NUMBERS = frozenset({"strides", "padding", "dilation", "feature_group_count", "k", "sections", "shift", "size"})
"""The arguments of the table's operations (and ``tx``'s) that are numbers, one or one per axis name (a dict):
a probe stands in for what the checker cannot read of them."""
KEYED: dict[str, object] = {
    "window": 1,
    "pad_width": (1, 1),
    "new_axes": 1,
    "shape": 1,
    "parts": 1,
    "slice_sizes": 1,
    "start_indices": 1,
}
"""The arguments that are dicts keyed by axis names, and the probe for a value the checker cannot read (their
keys, names, must be read)."""
PROBE = 1
"""What stands in for an unread number: the smallest size, window, stride and dilation there is."""
NAME_KINDS = frozenset({ErrorKind.AXIS_MISSING, ErrorKind.SYNTAX, ErrorKind.UNBOUND_AXIS, ErrorKind.RESOURCE_CONFLICT})
"""The errors about names, which no probe can cause: reported when a probe was used."""


class Unreadable(Exception):
    """An argument that holds names (or a dict whose keys are names) the checker cannot read."""


class Arguments:
    """A call's arguments as values, names first: ``read(name, position)``."""

    def __init__(self, ctx: Any, defaults: Mapping[str, object] | None = None) -> None:
        self.ctx = ctx
        self.defaults = defaults or {}
        self.probed = False
        """Whether a probe stood in for an unread part of an argument."""
        self.touched: set[str] = set()
        """Every string the arguments hold: the axes the call names (a padding ``'SAME'`` too, harmlessly)."""

    def expression(self, name: str, position: int | None) -> Expression | None:
        expr = arg_expr(self.ctx, name, position)
        return resolved(self.ctx.api, expr) if expr is not None else None

    def read(self, name: str, position: int | None) -> object:
        expr = arg_expr(self.ctx, name, position)
        if expr is None:
            return self.defaults.get(name)
        numbers = name in NUMBERS or name in KEYED
        value = literal_value(expr, lambda e: resolved(self.ctx.api, e), partial=numbers)
        if name in KEYED and isinstance(value, dict):
            value = {k: self._probed(v, KEYED[name]) for k, v in value.items()}
        elif name in NUMBERS:
            value = self._probed(value, PROBE)
        elif _unknown_in(value):
            raise Unreadable
        self.touched.update(_strings(value))
        return value

    def _probed(self, value: object, probe: object) -> object:
        if value is UNKNOWN:
            self.probed = True
            return probe
        if isinstance(value, dict):
            return {k: self._probed(v, probe) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            items = [self._probed(v, PROBE) for v in value]
            return items if isinstance(value, list) else tuple(items)
        return value


def _unknown_in(value: object) -> bool:
    if value is UNKNOWN:
        return True
    if isinstance(value, dict):
        return any(_unknown_in(v) for v in value.values())
    return isinstance(value, (list, tuple)) and any(_unknown_in(v) for v in value)


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


Named = Mapping[str, Size]


def run(
    ctx: Any, args: Arguments, operands: Sequence[Named], rule: Callable[..., Mapping[str, Size]]
) -> dict[str, Size] | None:
    """``rule(*operands)``'s named shape, names first; ``None`` when an argument is unreadable or the call is
    wrong (reported; with a probe, only an error about names; not an axis a ``*rest`` group may hold)."""
    try:
        return _sized(args, operands, rule(*operands))
    except Unreadable:
        return None
    except NamedShapeError as error:
        certain = certain_error(error, operands, rerun(rule))
        if certain is None:
            return None
        if not args.probed or certain.kind in NAME_KINDS:
            report(ctx.api, certain, ctx.context)
            return None
    unsized = [dict.fromkeys(o) for o in operands]  # a probe made a size error: the names alone
    try:
        return _sized(args, operands, rule(*unsized))
    except (Unreadable, NamedShapeError):
        return None


def rerun(rule: Callable[..., object]) -> Callable[..., object]:
    """``rule`` for ``certain_error`` to run again on operands whose groups it gave axes: an argument it cannot
    read there (``Unreadable``) makes nothing certain, as a pass does."""

    def again(*named: object) -> object:
        try:
            return rule(*named)
        except Unreadable:
            return None

    return again


def _sized(args: Arguments, operands: Sequence[Named], result: Mapping[str, Size]) -> dict[str, Size]:
    """With a probe, the sizes of the axes the call names unknown, the others the operands'."""
    if not args.probed:
        return dict(result)
    kept: dict[str, Size] = {}
    for operand in operands:
        for name, size in operand.items():
            kept.setdefault(name, size)
    return {n: None if n in args.touched else kept.get(n) for n in result}
