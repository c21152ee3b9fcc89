"""``tx.shard(x, {...})`` and ``tx.constrain(x, {...})``: the axis-resource conflict rule
(``resource_conflicts``) on the named axes of ``x``, or of every NamedArray of a pytree ``x`` (a dict, list,
tuple, ``TypedDict``, ``NamedTuple`` or dataclass of them: one mapping serves every value, each taking the
keys it carries, as at run time), as the runtime raises ``AxisResourceConflict``. The mapping is a literal or
a module-level constant (``RESOURCES = {...}``, ``_constants``). The result of placing one NamedArray carries
its placement in its type (``NamedArray[f32, "batch@data seq"]``; ``_placement`` carries it on), and so does each
array of a tuple of them (``tokens, targets = tx.shard(batch, RESOURCES)``). Every axis the mapping does not place
is known whole there (``mapped_placement``: ``seq@()``, shown as ``seq``), as the ``PartitionSpec`` it builds says."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mypy.maptype import map_instance_to_supertype
from mypy.nodes import Var
from mypy.types import Instance, TupleType, Type, TypedDictType, get_proper_type

from ..._algebra import (
    NamedShapeError,
    conflict_error,
    mapped_placement,
    move_placement,
    normalize_axis_resources,
    resource_conflicts,
)
from .._core._constants import constant_value
from .._core._encoding import Shape, decode, describe, has_group
from .._core._support import arg, arg_expr, label, report
from ._merges import settled
from ._placement import note_collectives

if TYPE_CHECKING:
    from mypy.plugin import FunctionContext

    from ..._algebra import Resource
    from ._protocols import TypedXmapPlugin

    Resources = dict[str, tuple[Resource, ...]]

__all__ = ["SHARDING_NAMES", "checked_mapping", "mapping_conflict", "sharding_hook"]

SHARDING_NAMES = {
    "typed_xmap._ops._sharding.shard": "tx.shard",
    "typed_xmap.shard": "tx.shard",
    "typed_xmap._ops._sharding.constrain": "tx.constrain",
    "typed_xmap.constrain": "tx.constrain",
}
DEPTH = 8
"""How deep ``_named_leaves`` looks into nested containers (a recursive type stops there)."""


def sharding_hook(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    plugin.containers.record(ctx.api)  # a placed value may meet a declared type: ``_declared`` checks the module
    types = arg(ctx, "x", 0)
    value = constant_value(ctx.api, arg_expr(ctx, "axis_resources", 1))
    if len(types) != 1 or not isinstance(value, dict):
        return ctx.default_return_type
    leaves = list(_named_leaves(types[0], "", DEPTH))
    if not leaves:
        return ctx.default_return_type
    resources = checked_mapping(ctx, value)
    if resources is None:
        return ctx.default_return_type
    operand = label(arg_expr(ctx, "x", 0), "...")
    for path, shape in leaves:
        assert shape.named is not None  # _named_leaves yields known named shapes only
        if mapping_conflict(ctx, shape.named, resources, f"{name}({operand}, ...){' at ' + path if path else ''}"):
            return ctx.default_return_type
    if len(leaves) == 1 and not leaves[0][0]:
        _note_move(plugin, ctx, name, leaves[0][1], resources)
    return _placed(plugin, types[0], resources, DEPTH) or ctx.default_return_type


def checked_mapping(ctx: Any, value: dict[Any, Any]) -> Resources | None:
    """A literal ``axis -> mesh axes`` mapping normalised; ``None``, its error reported, where it does not."""
    try:
        return normalize_axis_resources(value)
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
        return None


def mapping_conflict(ctx: Any, named: Mapping[str, Any], resources: Resources, where: str) -> bool:
    """Whether ``resources`` puts two axes of a value (axes ``named``) on one mesh axis; reported at the call,
    named by ``where``, if so."""
    conflicts = resource_conflicts(list(named), resources)
    if conflicts:
        where = f"{where} (a value with axes {describe(named)})"
        report(ctx.api, conflict_error(conflicts[0], where), ctx.context)
    return bool(conflicts)


def _note_move(plugin: TypedXmapPlugin, ctx: FunctionContext, name: str, shape: Shape, resources: Resources) -> None:
    """The collectives that move one NamedArray of known placement to ``resources`` (``move_placement``, per
    named axis: the mesh axes leaving it are an all-gather, or an all-to-all per axis they now split; another
    mesh axis taking their place is a ``reshard``); the axes ``resources`` leaves out end whole, as at run time.
    Recorded for the backward pass (its transpose: the move back)."""
    assert shape.named is not None
    expr = arg_expr(ctx, "x", 0)
    source = settled(ctx.api, expr, shape)
    if source.placement:
        target = mapped_placement(shape.named, resources)
        note_collectives(ctx, move_placement(list(shape.named), source.placement, target, operation=name))
        operation = f"{name}({label(expr, '...')}, ...)"
        moved = replace(shape, placement=target)
        plugin.backward.record(ctx, "move", moved, [source], [label(expr, "x")], [expr], target, operation)


def _placed(plugin: TypedXmapPlugin, typ: Type, resources: Resources, depth: int) -> Type | None:
    """``typ`` (a NamedArray, or a tuple of them, nested) with each array placed by ``resources``: where its axes
    now live, the others whole; ``None`` for other types (a dict or dataclass of arrays keeps its declared type)."""
    shape = decode(typ)
    if shape is not None and not shape.scalar and shape.named is not None and not has_group(shape.named):
        return plugin.types.encode(replace(shape, placement=mapped_placement(shape.named, resources)))
    proper = get_proper_type(typ)
    if isinstance(proper, TupleType) and depth > 0:
        items = [_placed(plugin, item, resources, depth - 1) for item in proper.items]
        if any(item is not None for item in items):
            return proper.copy_modified(items=[p or t for p, t in zip(items, proper.items, strict=True)])
    return None


def _named_leaves(typ: Type, path: str, depth: int) -> Iterator[tuple[str, Shape]]:
    """The NamedArrays of known named shape in a pytree type, with their paths (``['w']``, ``[0]``, ``.h``)."""
    shape = decode(typ)
    if shape is not None:
        if not shape.scalar and shape.named is not None and not has_group(shape.named):
            yield path, shape
        return
    proper = get_proper_type(typ)
    if depth == 0:
        return
    if isinstance(proper, TypedDictType):
        for key, item in proper.items.items():
            yield from _named_leaves(item, f"{path}[{key!r}]", depth - 1)
    elif isinstance(proper, TupleType):
        fields = proper.partial_fallback.type.metadata.get("namedtuple", {}).get("fields")
        for i, item in enumerate(proper.items):
            where = f".{fields[i]}" if fields and i < len(fields) else f"[{i}]"
            yield from _named_leaves(item, path + where, depth - 1)
    elif isinstance(proper, Instance):
        yield from _instance_leaves(proper, path, depth)


def _instance_leaves(typ: Instance, path: str, depth: int) -> Iterator[tuple[str, Shape]]:
    """A mapping's values, a sequence's items (at ``[...]``: any key), a dataclass's fields."""
    info = typ.type
    attributes = info.metadata.get("dataclass", {}).get("attributes")
    if attributes:
        for attribute in attributes:
            node = info.get(attribute["name"])
            var = node.node if node is not None else None
            if isinstance(var, Var) and var.type is not None:
                yield from _named_leaves(var.type, f"{path}.{var.name}", depth - 1)
        return
    for base, index in (("typing.Mapping", 1), ("typing.Sequence", 0)):
        if info.has_base(base):
            args = map_instance_to_supertype(typ, info.mro[[b.fullname for b in info.mro].index(base)]).args
            if len(args) > index:
                yield from _named_leaves(args[index], f"{path}[...]", depth - 1)
            return
