"""Windows and selection along named axes: the ``WINDOW`` rows of the table of operations (``tnp.conv``,
``conv_transpose``, ``max_pool``, ``avg_pool``), the ``SELECTION`` rows (``tnp.sort``, ``argsort``, ``top_k``) and
``tx.random.randint/categorical/permutation``.

Literal arguments (the ``spatial`` dict, axis names, strides, ``k``) are read from the call and given to the
algebra's rules (``_algebra/_windows.py``, ``_algebra/_selection.py``), the runtime's own: the result's
named shape is theirs; their errors are reported with the code of their kind. An argument that is not a
literal, or an operand of unknown shape, gives an unknown named shape (never an error).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from mypy.types import TupleType, Type

from .._algebra import (
    NamedShapeError,
    Size,
    axis_sizes,
    conv_plan,
    conv_transpose_plan,
    pool_plan,
    sampled_shape,
    sorted_shape,
    top_k_shape,
)
from ._encoding import Shape, decode, has_group
from ._literals import UNKNOWN, literal_value
from ._support import arg, arg_expr, report

if TYPE_CHECKING:
    from mypy.plugin import FunctionContext

    from ._protocols import TypedXmapPlugin

__all__ = ["RANDOM_DRAWS", "random_hook", "selection_hook", "window_hook"]

RANDOM_DRAWS = frozenset(f"typed_xmap.random.{name}" for name in ("randint", "categorical", "permutation"))
"""The ``tx.random`` functions typed here, by full name."""

_DEFAULTS: dict[str, object] = {"padding": "VALID", "feature_group_count": 1, "contract": ()}


class _Unknown(Exception):
    """An argument the plugin cannot read as a literal: the result's named shape is unknown."""


def _reader(ctx: FunctionContext) -> Callable[[str, int | None], object]:
    def read(name: str, position: int | None) -> object:
        expr = arg_expr(ctx, name, position)
        if expr is None:
            return _DEFAULTS.get(name)
        value = literal_value(expr)
        if value is UNKNOWN:
            raise _Unknown
        return value

    return read


def _operand(ctx: FunctionContext, name: str, position: int) -> Shape | None:
    """The operand's shape when its named axes are all known (no ``*rest`` group), else ``None``."""
    types = arg(ctx, name, position)
    shape = decode(types[0]) if len(types) == 1 else None
    if shape is None or shape.scalar or shape.named is None or has_group(shape.named):
        return None
    return shape


def _typed(
    plugin: TypedXmapPlugin, ctx: FunctionContext, shape: Shape, dtype: Type, rule: Callable[[], dict[str, Size]]
) -> Type:
    """``rule()``'s named shape with ``shape``'s positional dims; unknown when unreadable or wrong (reported)."""
    try:
        return plugin.types.array(dtype, rule(), shape.positional)
    except _Unknown:
        pass
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
    return plugin.types.array(dtype, None, None)


def _named(shape: Shape) -> Mapping[str, Size]:
    return shape.named or {}


def window_hook(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    """``tnp.conv(x, kernel, spatial=..., contract=...)``, ``tnp.conv_transpose`` (the same arguments but
    ``feature_group_count``), ``tnp.max_pool(x, window)``, ``tnp.avg_pool``."""
    x = _operand(ctx, "x", 0)
    if x is None:
        return ctx.default_return_type
    read = _reader(ctx)
    operation = f"tnp.{name}"
    if name not in ("conv", "conv_transpose"):
        return _typed(
            plugin,
            ctx,
            x,
            x.dtype,
            lambda: (
                pool_plan(
                    _named(x), read("window", 1), read("strides", 2), read("padding", 3), operation=operation
                ).named_shape
            ),
        )
    kernel = _operand(ctx, "kernel", 1)
    if kernel is None:
        return plugin.types.array(x.dtype, None, None)

    def rule() -> dict[str, Size]:
        options = {k: read(k, None) for k in ("strides", "padding", "dilation")}
        spatial, contract = read("spatial", 2), read("contract", 3)
        if name == "conv_transpose":
            return conv_transpose_plan(
                _named(x), _named(kernel), spatial, contract, **options, operation=operation
            ).named_shape
        grouped = read("feature_group_count", None)
        return conv_plan(
            _named(x), _named(kernel), spatial, contract, **options, feature_group_count=grouped, operation=operation
        ).named_shape

    return _typed(plugin, ctx, x, x.dtype, rule)


def selection_hook(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    """``tnp.sort(x, axis)``, ``tnp.argsort`` (int32) and ``tnp.top_k(x, k, axis, new_axis)`` (a pair)."""
    x = _operand(ctx, "x", 0)
    if x is None:
        return ctx.default_return_type
    read = _reader(ctx)
    index = plugin.types.marker_dtype("i32")
    if name != "top_k":
        dtype = index if name == "argsort" else x.dtype
        return _typed(plugin, ctx, x, dtype, lambda: sorted_shape(_named(x), read("axis", 1), operation=f"tnp.{name}"))

    def rule() -> dict[str, Size]:
        k, axis, new = read("k", 1), read("axis", 2), read("new_axis", 3)
        operation = f"tnp.top_k(x, {k!r}, axis={axis!r}, new_axis={new!r})"
        return top_k_shape(_named(x), k, axis, new, operation=operation)

    values = _typed(plugin, ctx, x, x.dtype, rule)
    decoded = decode(values)
    indices = plugin.types.array(index, decoded.named if decoded else None, decoded.positional if decoded else None)
    fallback = ctx.api.named_generic_type("builtins.tuple", [plugin.types.any()])
    return TupleType([values, indices], fallback)


def random_hook(plugin: TypedXmapPlugin, fullname: str, ctx: FunctionContext) -> Type:
    """``tx.random.randint(key, shape, ...)``, ``categorical(key, logits, axis)``, ``permutation(key, x, axis)``."""
    name = fullname.rsplit(".", 1)[1]
    read = _reader(ctx)
    index = plugin.types.marker_dtype("i32")
    operation = f"tx.random.{name}"
    if name == "randint":
        dtype = index if arg_expr(ctx, "dtype", 4) is None else plugin.types.any()
        return _typed(
            plugin, ctx, Shape(dtype, {}, ()), dtype, lambda: dict(axis_sizes(read("shape", 1), operation=operation))
        )
    operand = _operand(ctx, "logits" if name == "categorical" else "x", 1)
    if operand is None:
        return ctx.default_return_type
    if name == "categorical":
        return _typed(
            plugin, ctx, operand, index, lambda: sampled_shape(_named(operand), read("axis", 2), operation=operation)
        )
    return _typed(
        plugin, ctx, operand, operand.dtype, lambda: sorted_shape(_named(operand), read("axis", 2), operation=operation)
    )
