"""Values routed by a table, outside the table of operations: ``tx.moe_route``, ``tx.moe_dispatch``,
``tx.moe_combine`` and the segment reductions ``tnp.segment_sum``/``tnp.segment_max``.

The algebra's rules check the arguments as at run time (``route_axes``, ``dispatch_axes``, ``segment_shape``);
the results are what the runtime computes: ``moe_route``'s dispatch and combine tables have the logits' axes and
``slot`` (of size ``capacity``), its balance loss none; ``moe_dispatch`` and ``moe_combine`` are the brace einsums
the runtime runs (``{tokens},{tokens}->{}`` and ``{expert,slot},{expert,slot}->{}``), typed by the einsum's
rule; a segment reduction replaces ``axis`` by ``new_axis`` of size ``num_segments``. A size the checker cannot
read (``capacity``, ``k``, ``num_segments`` from a config) keeps the names: its axis gets the size's symbol, or
an unknown size (names first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mypy.types import TupleType, Type, get_proper_type

from ..._algebra import NamedShapeError, Size, StaticSize, dispatch_axes, route_axes, segment_shape
from .._core._names_first import PROBE, Arguments, Unreadable
from .._core._sizes import erased, static_size, symbols_of, with_symbols
from .._core._support import arg_expr, certain_error, label, named_operand, report
from ._einsum import _contract

if TYPE_CHECKING:
    from mypy.plugin import FunctionContext

    from ._protocols import TypedXmapPlugin

__all__ = ["MOE_AND_SEGMENTS", "MOE_AXIS_ARGUMENTS", "moe_segments_hook"]

_MODULES = {
    "moe_route": ("typed_xmap", "typed_xmap._ops._moe"),
    "moe_dispatch": ("typed_xmap", "typed_xmap._ops._moe"),
    "moe_combine": ("typed_xmap", "typed_xmap._ops._moe"),
    "segment_sum": ("typed_xmap.numpy", "typed_xmap._ops._tnp._segments"),
    "segment_max": ("typed_xmap.numpy", "typed_xmap._ops._tnp._segments"),
}
MOE_AND_SEGMENTS = {f"{module}.{name}": name for name, modules in _MODULES.items() for module in modules}
"""The functions typed here, by full name (the stubs' and the runtime modules') -> their name."""
MOE_AXIS_ARGUMENTS = {"expert": "expert", "tokens": "seq", "slot": "slot"}
"""The axis-name arguments of the three ``moe`` functions and their defaults."""


def _size(ctx: FunctionContext, name: str, position: int) -> StaticSize:
    """An int argument: its value, its symbol (``cfg.capacity``) or unknown."""
    return static_size(ctx.api, arg_expr(ctx, name, position))


def _route(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    logits = named_operand(ctx, "logits", 0, group=False)
    default = get_proper_type(ctx.default_return_type)
    if logits is None or not isinstance(default, TupleType) or len(default.items) != 3:
        return ctx.default_return_type
    read = Arguments(ctx, MOE_AXIS_ARGUMENTS).read
    k, capacity = _size(ctx, "k", 1), _size(ctx, "capacity", 2)
    try:
        slot = read("slot", None)
        route_axes(
            logits.named or {},
            k if isinstance(k, int) else PROBE,
            capacity if isinstance(capacity, int) else PROBE,
            expert=read("expert", None),
            tokens=read("tokens", None),
            slot=slot,
        )
    except Unreadable:
        return ctx.default_return_type
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
        return ctx.default_return_type
    table = {**with_symbols(logits), str(slot): capacity}
    dtype = plugin.types.any()  # one-hot tables: float32, float64 under jax_enable_x64
    tables = plugin.types.array(dtype, erased(table), logits.positional, symbols_of(table))
    balance = plugin.types.array(dtype, {}, logits.positional)
    return default.copy_modified(items=[tables, tables, balance])


def _axes(value: object) -> tuple[str, ...]:
    """An axis-name argument (a name or a list of names) as a tuple; ``Unreadable`` when it is neither."""
    axes = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else ()
    if not axes or not all(isinstance(a, str) for a in axes):
        raise Unreadable
    return axes


def _spec(axes: tuple[str, ...]) -> str:
    return "{" + ",".join(axes) + "}"


def _moved(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    """``moe_dispatch(x, dispatch)``: one einsum over the tokens; ``moe_combine(y, combine)``: over ``expert``
    and ``slot``."""
    first, table = ("x", "dispatch") if name == "moe_dispatch" else ("y", "combine")
    value, routing = named_operand(ctx, first, 0, group=False), named_operand(ctx, table, 1, group=False)
    if value is None or routing is None:
        return ctx.default_return_type
    read = Arguments(ctx, MOE_AXIS_ARGUMENTS).read
    try:
        expert, slot = read("expert", None), read("slot", None)
        if not (isinstance(expert, str) and isinstance(slot, str)):
            raise Unreadable
        if name == "moe_dispatch":
            tokens = _axes(read("tokens", None))
            dispatch_axes(value.named or {}, routing.named or {}, tokens, expert=expert, slot=slot)
            spec = _spec(tokens)
        else:
            spec = _spec((expert, slot))
    except Unreadable:
        return ctx.default_return_type
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
        return ctx.default_return_type
    labels = [label(arg_expr(ctx, first, 0), first), label(arg_expr(ctx, table, 1), table)]
    return _contract(plugin, ctx.api, f"{spec},{spec}->{{}}", [value, routing], labels, ctx.context, f"tx.{name}")


def _segment(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    data = named_operand(ctx, "data", 0, group=True)
    if data is None:
        return ctx.default_return_type
    read = Arguments(ctx).read
    count = _size(ctx, "num_segments", 2)
    try:
        axis, new = read("axis", 3), read("new_axis", 4)
    except Unreadable:
        return ctx.default_return_type
    ids = named_operand(ctx, "segment_ids", 1, group=False)
    ids_shape: dict[str, Size] = dict(ids.named or {}) if ids is not None else {str(axis): None}
    operation = f"tnp.{name}(data, segment_ids, num_segments, axis={axis!r}, new_axis={new!r})"

    def rule(values: Mapping[str, Size], segment_ids: Mapping[str, Size]) -> dict[str, Size]:
        return segment_shape(
            values, segment_ids, count if isinstance(count, int) else PROBE, axis, new, operation=operation
        )

    try:
        named = rule(data.named or {}, ids_shape)
    except NamedShapeError as error:
        certain = certain_error(error, [data.named, ids_shape], rule)
        if certain is not None:
            report(ctx.api, certain, ctx.context)
        return ctx.default_return_type
    static = with_symbols(data)  # the rule's names, with the data's symbols and num_segments' own
    sizes = {n: count if n == new else static.get(n) for n in named}
    return plugin.types.array(data.dtype, erased(sizes), data.positional, symbols_of(sizes))


def moe_segments_hook(plugin: TypedXmapPlugin, fullname: str, ctx: FunctionContext) -> Type:
    """The hook of a function of ``MOE_AND_SEGMENTS``."""
    name = MOE_AND_SEGMENTS[fullname]
    if name == "moe_route":
        return _route(plugin, ctx)
    if name.startswith("moe_"):
        return _moved(plugin, name, ctx)
    return _segment(plugin, name, ctx)
