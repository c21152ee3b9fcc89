"""Calls: functions annotated with ``NamedArray[...]``, and ``tx.named`` / ``tx.positional``.

A call of an annotated function binds each axis name to one size across all its arguments, as
``@tx.typed`` does at run time (``match_shape_spec``): ``f(x, y)`` with ``batch=3`` in ``x`` and ``batch=4``
in ``y`` is ``named-axis-size``, and the return type's unknown sizes are filled from the bindings. A
per-argument mismatch is mypy's own ``arg-type`` error; the plugin adds a note in the user's notation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mypy.types import CallableType, Type, UnionType, get_proper_type

from ..._algebra import (
    GROUP_PREFIX,
    AxisMap,
    AxisSpec,
    Binding,
    ErrorKind,
    Mismatch,
    NamedShapeError,
    ShapeSpec,
    Size,
    check_named,
    check_new_names,
    check_positional,
    match_shape_spec,
    parse_axis_map,
)
from .._core._codes import CODE_OF_KIND, NAMED_AXIS_SIZE
from .._core._encoding import Shape, decode, describe, has_group, is_named_array, items_of, map_items
from .._core._literals import UNKNOWN, literal_value
from .._core._support import arg, arg_expr, fail, label, report

if TYPE_CHECKING:
    from mypy.nodes import Context, Expression
    from mypy.plugin import FunctionContext

    from ._protocols import TypedXmapPlugin

__all__ = ["annotated_call_hook", "bind_arguments", "has_named_params", "named_hook", "positional_hook"]


def has_named_params(callee: CallableType) -> bool:
    """Whether a parameter is a NamedArray with a known named shape (worth binding across the call)."""
    for typ in callee.arg_types:
        if is_named_array(typ):
            shape = decode(typ)
            if shape is not None and shape.named is not None:
                return True
    return False


def _spec(shape: Shape) -> ShapeSpec:
    """The annotation a declared parameter type stands for (positional dims aside: symbols are not kept)."""
    named = shape.named or {}
    groups = [name[len(GROUP_PREFIX) :] for name in named if name.startswith(GROUP_PREFIX)]
    axes = tuple(AxisSpec(name, size) for name, size in named.items() if not name.startswith(GROUP_PREFIX))
    return ShapeSpec(axes, group=groups[0] if groups else None)


def annotated_call_hook(plugin: TypedXmapPlugin, callee: CallableType, ctx: FunctionContext) -> Type:
    per_formal = [
        [(typ, expr) for typ, expr in zip(types, exprs, strict=False)]
        for types, exprs in zip(ctx.arg_types, ctx.args, strict=False)
    ]
    return bind_arguments(plugin, callee, per_formal, ctx.api, ctx.context, ctx.default_return_type)


def bind_arguments(
    plugin: TypedXmapPlugin,
    callee: CallableType,
    per_formal: Sequence[Sequence[tuple[Type, Expression | None]]],
    api: Any,
    context: Context,
    default_return_type: Type,
) -> Type:
    """Bind each axis name to one size across the actual arguments of ``callee``'s parameters
    (``per_formal[i]``: the types and expressions passed for parameter ``i``); the return type with the
    bound sizes filled in."""
    bindings: dict[str, Binding] = {}
    name = callee.name or "the function"
    for index, actuals in enumerate(per_formal):
        if index >= len(callee.arg_types):
            break
        declared = _declared(callee.arg_types[index])
        if declared is None or declared.named is None:
            continue
        spec = _spec(declared)
        param = callee.arg_names[index] or f"argument {index + 1}"
        for typ, expr in actuals:
            shape = decode(typ)
            if shape is None or shape.named is None or shape.scalar:
                continue
            alone = match_shape_spec(spec, shape.named, (), {})
            if isinstance(alone, Mismatch):
                if plugin.config.call_notes and expr is not None:
                    fail(
                        api,
                        f'{label(expr, "the argument")} does not fit parameter "{param}" of "{name}": {alone.reason}',
                        context,
                        note=True,
                    )
                continue
            found = match_shape_spec(spec, shape.named, (), bindings)
            if isinstance(found, Mismatch):
                given = label(expr, "the argument") if expr is not None else "bound"
                fix = (
                    f"pass values whose {spec.group_key} axes are the same"
                    if found.kind is ErrorKind.AXIS_MISSING
                    else "one axis name has one size in a call; pass values whose shared axes agree"
                )
                fail(
                    api,
                    f'argument "{param}" of "{name}" ({given}: {describe(shape.named)}): {found.reason}. Fix: {fix}',
                    context,
                    code=CODE_OF_KIND.get(found.kind, NAMED_AXIS_SIZE),
                )
                continue
            bindings.update(found)
    return _bound_return(plugin, default_return_type, bindings)


def _declared(typ: Type) -> Shape | None:
    """A parameter's declared shape: its NamedArray's, of an optional one (``X | None``) too."""
    members = items_of(typ) if isinstance(get_proper_type(typ), UnionType) else None
    if members is None:
        return decode(typ)
    shapes = [shape for shape in map(decode, members) if shape is not None and not shape.scalar]
    return shapes[0] if len(shapes) == 1 else None


def _bound_return(plugin: TypedXmapPlugin, typ: Type, bindings: Mapping[str, Binding]) -> Type:
    """The declared return type with the call's bindings (``_bound_shape``), the items of a tuple or union alike."""
    mapped = map_items(typ, lambda item: _bound_return(plugin, item, bindings))
    if mapped is not None:
        return mapped
    result = decode(typ)
    if result is None or result.named is None or (not bindings and not has_group(result.named)):
        return typ
    return plugin.types.array(result.dtype, _bound_shape(result.named, bindings), result.positional)


def _bound_shape(declared: Mapping[str, Size], bindings: Mapping[str, Binding]) -> dict[str, Size] | None:
    """A declared return shape with the call's bindings: sizes filled in, a group replaced by the axes the
    arguments bound it to; ``None`` (unknown) when a group is unbound (an argument of unknown shape)."""
    named: dict[str, Size] = {}
    for axis, size in declared.items():
        bound = bindings.get(axis)
        if axis.startswith(GROUP_PREFIX):
            if not isinstance(bound, Mapping):
                return None
            named.update({n: s for n, s in bound.items() if n not in named})
        else:
            named[axis] = size if size is not None else bound if isinstance(bound, int) else None
    return named


def _axes_spec(ctx: FunctionContext) -> AxisMap | None:
    """The literal ``axes`` spec leaf of ``tx.named``/``tx.positional``; ``None`` if unknown or invalid."""
    axes = literal_value(arg_expr(ctx, "axes", 1))
    if axes is UNKNOWN:
        return None
    try:
        return parse_axis_map(axes, where="axes")
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
        return None


def named_hook(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    """``tx.named(array, ['batch', 'feat', ...])`` / ``tx.named(array, {0: 'batch'})``: ``check_named``'s rule."""
    spec = _axes_spec(ctx)
    if spec is None:
        return ctx.default_return_type
    array_types = arg(ctx, "array", 0)
    base = decode(array_types[0]) if len(array_types) == 1 else None
    dtype = base.dtype if base is not None and not base.scalar else plugin.types.any()
    base_named = base.named if base is not None and not base.scalar else {}
    positional = base.positional if base is not None and not base.scalar else None
    if base_named is None:
        return plugin.types.array(dtype, None, None)
    try:
        if positional is not None:
            check_named(spec, positional, base_named, where="axes")
        else:  # rank unknown: the names only
            check_new_names(spec, base_named, where="axes")
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
        return plugin.types.array(dtype, None, None)
    named = {n: (positional[d] if positional is not None else None) for d, n in spec.dims}
    named.update(base_named)
    taken = {d for d, _ in spec.dims}
    if positional is not None:
        rest: tuple[int | None, ...] | None = tuple(s for d, s in enumerate(positional) if d not in taken)
    else:
        rest = () if spec.rank is not None else None
    plugin.resources.check_value(ctx.api, named, "tx.named", ctx.context)
    return plugin.types.array(dtype, named, rest)


def positional_hook(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    """``tx.positional(x, ['batch', ...])``: the spec lists exactly the value's named axes (``check_positional``).
    The result is a ``jax.Array`` (so ``return tx.positional(loss, [])`` is not ``Any`` under ``--strict``)."""
    types = arg(ctx, "x", 0)
    shape = decode(types[0]) if len(types) == 1 else None
    spec = _axes_spec(ctx)
    result = plugin.types.instance("jax.Array") or ctx.default_return_type
    if spec is None or shape is None or shape.named is None:
        return result
    positional = shape.positional
    try:
        check_positional(
            spec,
            tuple(shape.named),
            len(positional) if positional is not None else None,
            where="axes",
            value=f"{label(arg_expr(ctx, 'x', 0), 'x')} ({describe(shape.named)})",
        )
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
    return result
