"""``tx.vmap(f, axis="batch")``: ``f``'s type with the mapped axis added, as the runtime maps.

At run time each NamedArray argument leaf that carries the axis is mapped over it and every other leaf is
broadcast; every output leaf gets the axis back (a positional array or scalar becomes a NamedArray with that
axis). So the typed result takes, for a parameter ``NamedArray[f32, "in"]``, a value with axes ``in`` and
optionally ``batch`` (the axis is a non-required key of the closed named shape), and returns ``f``'s return
type with ``batch`` added to each NamedArray leaf (in a tuple, a ``TypedDict``, a dict or list value).
``f`` is written per example, without the axis: ``tx.vmap(jax.grad(loss), axis="batch")(params, xs, ys)``
has the type of ``params`` with ``batch`` added to every leaf.

The results' mapped axis is placed by ``axis_resources`` and, where ``tx.vmap(f, ...)`` is called at once
(``tx.vmap(f, axis="batch")(x)``), by the placements of the argument leaves that carry it (the algebra's
``vmap_placement``: JAX carries a mapped axis's mesh axes to the results); the results' other axes are placed
as ``f``'s declared return type places them (as a call of ``f`` is typed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from mypy.nodes import ARG_NAMED, ARG_POS
from mypy.types import (
    CallableType,
    Instance,
    LiteralType,
    NoneType,
    TupleType,
    Type,
    TypedDictType,
    get_proper_type,
)

from .._core._encoding import NAMED_ARRAY, decode, has_group, open_groups
from .._core._literals import literal_value
from .._core._support import arg_expr
from ._lambdas import caller
from ._open_arguments import read_without_call
from ._placement_vmap import vmap_resources, vmapped_leaf

if TYPE_CHECKING:
    from mypy.plugin import FunctionContext

    from ..._algebra import Placement
    from ._protocols import TypedXmapPlugin

__all__ = ["DEPTH", "NAMED_VMAP", "leaves", "named_vmap_hook"]

NAMED_VMAP = frozenset({"typed_xmap.vmap", "typed_xmap._ops._vmap.vmap"})
CONTAINERS = frozenset(
    {"builtins.dict", "builtins.list", "builtins.tuple", "typing.Mapping", "typing.Sequence", "typing.MutableMapping"}
)
"""Generic containers whose type arguments are the types of their leaves (``dict[str, NamedArray[...]]``)."""
COVARIANT = {"builtins.dict": "typing.Mapping", "builtins.list": "typing.Sequence"}
"""A parameter's invariant container, read-only in the typed result: a ``Params`` fits its changed type."""
POSITIONAL = frozenset({"jax._src.basearray.Array", "builtins.float", "builtins.int", "builtins.bool"})
"""Output leaves the runtime turns into a NamedArray with the mapped axes (``jnp.asarray`` of them)."""
UNNAMED = POSITIONAL | {"builtins.str", "numpy.ndarray"}
"""Argument leaves (and a dict's keys) that carry no named axis."""
DEPTH = 8


def named_vmap_hook(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    """The type of ``tx.vmap(f, axis=...)`` from ``f``'s signature and a literal ``axis``."""
    fun = get_proper_type(ctx.arg_types[0][0]) if ctx.arg_types and len(ctx.arg_types[0]) == 1 else None
    axis = literal_value(arg_expr(ctx, "axis", 1))
    listed = [axis] if isinstance(axis, str) else list(axis) if isinstance(axis, (list, tuple)) else []
    names = tuple(n for n in listed if isinstance(n, str))
    if not isinstance(fun, CallableType) or fun.is_type_obj() or not names or len(names) != len(listed):
        return ctx.default_return_type
    return fun.copy_modified(
        arg_types=[leaves(plugin, t, partial(_accepting, plugin, names), DEPTH, read_only=True) for t in fun.arg_types],
        ret_type=leaves(
            plugin,
            fun.ret_type,
            partial(_returning, plugin, ctx, names, vmap_resources(ctx, names, _called_with(ctx, names))),
            DEPTH,
            read_only=False,
        ),
    )


def leaves(
    plugin: TypedXmapPlugin, typ: Type, change: Callable[[Type], Type | None], depth: int, *, read_only: bool
) -> Type:
    """``typ`` with each leaf ``change`` types (``None``: not a leaf) changed, inside pytree containers.
    ``read_only`` (a parameter's type): a ``TypedDict``'s keys become read-only and a dict or list a
    ``Mapping`` or ``Sequence``, so their items are covariant and the user's ``Params`` fits the changed one."""
    changed = change(typ)
    if changed is not None or depth == 0:
        return changed if changed is not None else typ
    proper = get_proper_type(typ)
    if isinstance(proper, TupleType):
        return proper.copy_modified(
            items=[leaves(plugin, t, change, depth - 1, read_only=read_only) for t in proper.items]
        )
    if isinstance(proper, TypedDictType):
        keys = set(proper.items) if read_only else proper.readonly_keys
        items = {k: leaves(plugin, t, change, depth - 1, read_only=read_only) for k, t in proper.items.items()}
        return TypedDictType(items, proper.required_keys, keys, proper.fallback, is_closed=proper.is_closed)
    if isinstance(proper, Instance) and proper.type.fullname in CONTAINERS:
        args = [leaves(plugin, t, change, depth - 1, read_only=read_only) for t in proper.args]
        covariant = COVARIANT.get(proper.type.fullname) if read_only else None  # so list[X] fits list[X']
        info = plugin.types.info(covariant) if covariant is not None else None
        return Instance(info, args) if info is not None else proper.copy_modified(args=args)
    return typ


def _called_with(ctx: FunctionContext, names: tuple[str, ...]) -> list[tuple[Sequence[str], Placement]]:
    """The axes and placement of each argument leaf of the call of ``tx.vmap(f, ...)`` right after it
    (``tx.vmap(f, axis="batch")(x)``): none where it is not called at once, or is called with an argument read
    by a call (it is typed after this, and typing it here would check it twice) or a star argument."""
    outer = caller(ctx)
    if outer is None or any(kind not in (ARG_POS, ARG_NAMED) for kind in outer.arg_kinds):
        return []
    if not all(read_without_call(argument) for argument in outer.args):
        return []
    return [leaf for a in outer.args for leaf in _carried(ctx.api.get_expression_type(a), names, DEPTH)]


def _carried(typ: Type, names: tuple[str, ...], depth: int) -> list[tuple[Sequence[str], Placement]]:
    """The axes and placement of each NamedArray leaf of an argument's type; a leaf whose axes are unknown
    (``Any``, a class the checker cannot see into, a ``*rest`` group) may carry every mapped axis, placed
    unknown."""
    unknown: list[tuple[Sequence[str], Placement]] = [(names, {})]
    shape = decode(typ)
    if shape is not None:
        if shape.scalar:
            return []
        return unknown if shape.named is None or has_group(shape.named) else [(tuple(shape.named), shape.placement)]
    proper = get_proper_type(typ)
    proper = proper.fallback if isinstance(proper, LiteralType) else proper
    if depth == 0:
        return unknown
    items: list[Type] | None = None
    if isinstance(proper, TupleType):
        items = proper.items
    elif isinstance(proper, TypedDictType):
        items = list(proper.items.values())
    elif isinstance(proper, Instance) and proper.type.fullname in CONTAINERS:
        items = list(proper.args)
    elif isinstance(proper, NoneType) or (isinstance(proper, Instance) and proper.type.fullname in UNNAMED):
        return []
    if items is None:
        return unknown
    return [leaf for item in items for leaf in _carried(item, names, depth - 1)]


def _accepting(plugin: TypedXmapPlugin, names: tuple[str, ...], typ: Type) -> Type | None:
    """A NamedArray parameter's type that also accepts the mapped axes (a non-required key each)."""
    shape = decode(typ)
    if shape is None:
        return None
    if shape.scalar:
        return typ
    proper = get_proper_type(typ)
    named = get_proper_type(proper.args[1]) if isinstance(proper, Instance) else None
    if shape.named is None or not isinstance(proper, Instance) or not isinstance(named, TypedDictType):
        return typ
    if has_group(shape.named):
        return open_groups(typ)  # a group stands for any other axes, the mapped ones too
    items = dict(named.items)
    optional = [name for name in names if name not in items]
    for name in optional:
        items[name] = plugin.types.any()
    fallback, text = named.fallback, get_proper_type(named.fallback.args[0]) if named.fallback.args else None
    if optional and isinstance(text, LiteralType) and isinstance(text.value, str):  # shown as 'in batch?'
        shown = " ".join([text.value, *(f"{name}?" for name in optional)]).strip()
        fallback = fallback.copy_modified(args=[LiteralType(shown, text.fallback)])
    accepting = TypedDictType(items, set(named.required_keys), set(items), fallback, is_closed=True)
    return proper.copy_modified(args=[proper.args[0], accepting, proper.args[2]])


def _returning(
    plugin: TypedXmapPlugin, ctx: FunctionContext, names: tuple[str, ...], mapped: Placement, typ: Type
) -> Type | None:
    """An output leaf's type with the mapped axes in front of its named axes, placed by its own placements and
    the mapped axes' (``mapped``: ``tx.vmap``'s ``axis_resources``)."""
    proper = get_proper_type(typ)
    shape = decode(typ)
    if shape is not None and not shape.scalar and isinstance(proper, Instance) and proper.type.fullname == NAMED_ARRAY:
        if shape.named is None or has_group(shape.named):
            return plugin.types.array(shape.dtype, None, shape.positional)
        added = plugin.types.array(shape.dtype, dict.fromkeys(names) | shape.named, shape.positional, shape.symbols)
        return vmapped_leaf(plugin, ctx, shape.placement, added, mapped)
    if isinstance(proper, Instance) and proper.type.fullname in POSITIONAL:
        rank = () if shape is not None and shape.scalar else None
        return vmapped_leaf(plugin, ctx, {}, plugin.types.array(plugin.types.any(), dict.fromkeys(names), rank), mapped)
    return None
