"""Windows and selection along named axes: the ``WINDOW`` rows of the table of operations (``tnp.conv``,
``conv_transpose``, ``max_pool``, ``avg_pool``), the ``SELECTION`` rows (``tnp.sort``, ``argsort``, ``top_k``) and
``tx.random.randint/categorical/permutation``.

Literal arguments (the ``spatial`` dict, axis names, strides, ``k``; names bound once stand for their values)
are read from the call and given to the algebra's rules (``_algebra/_windows.py``, ``_algebra/_selection.py``),
the runtime's own: the result's named shape is theirs; their errors are reported with the code of their kind.
A number the checker cannot read (``strides=cfg.pool``) keeps the names (``_names_first``); names it cannot
read, or an operand of unknown shape, give an unknown named shape (never an error).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from mypy.types import TupleType, Type

from ..._algebra import (
    NamedShapeError,
    Size,
    conv_plan,
    conv_transpose_plan,
    meet_sizes,
    pool_plan,
    sampled_shape,
    sorted_shape,
    top_k_shape,
)
from .._core._encoding import Shape, decode
from .._core._names_first import Arguments, run
from .._core._sizes import with_symbols
from .._core._support import arg_expr, named_operand, report
from ._structure import dtype_argument, random_shape

if TYPE_CHECKING:
    from mypy.plugin import FunctionContext

    from ._protocols import TypedXmapPlugin

__all__ = ["RANDOM_DRAWS", "random_hook", "selection_hook", "window_hook"]

RANDOM_DRAWS = frozenset(f"typed_xmap.random.{name}" for name in ("randint", "categorical", "permutation"))
"""The ``tx.random`` functions typed here, by full name."""

_DEFAULTS: dict[str, object] = {"padding": "VALID", "feature_group_count": 1, "contract": ()}


def _typed(
    plugin: TypedXmapPlugin,
    ctx: FunctionContext,
    shape: Shape,
    dtype: Type,
    args: Arguments,
    operands: Sequence[Shape],
    rule: Callable[..., Mapping[str, Size]],
) -> Type:
    """``rule(*operands' named shapes)`` with ``shape``'s positional dims, names first (``_names_first``);
    unknown when unreadable or wrong (reported). An axis the call does not name keeps its operand's symbol
    (``batch=cfg.batch``, a kernel's ``out=cfg.channels``): no number of the call changes it."""
    named = run(ctx, args, [o.named or {} for o in operands], rule)
    if named is None:
        return plugin.types.array(dtype, None, None)
    symbols = {
        n: symbol
        for o in operands
        for n, symbol in o.symbols.items()
        if n in named and named[n] is None and n not in args.touched
    }
    return plugin.types.array(dtype, named, shape.positional, symbols)


def _contracted_symbols(ctx: FunctionContext, x: Shape, kernel: Shape, operation: str) -> None:
    """The axes ``x`` and the kernel share (the contracted ones) have one size: two symbols that differ
    whatever the config (``cfg.channels`` vs ``cfg.channels // 2``) are ``named-axis-size`` (the algebra
    compares ints). Not with ``feature_group_count``, where ``x``'s is a multiple of the kernel's."""
    if not (x.symbols or kernel.symbols) or arg_expr(ctx, "feature_group_count") is not None:
        return
    try:
        meet_sizes([with_symbols(x), with_symbols(kernel)], operation=operation, operands=["x", "kernel"])
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)


def window_hook(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    """``tnp.conv(x, kernel, spatial=..., contract=...)``, ``tnp.conv_transpose`` (the same arguments but
    ``feature_group_count``), ``tnp.max_pool(x, window)``, ``tnp.avg_pool``."""
    x = named_operand(ctx, "x", 0, group=True)
    if x is None:
        return ctx.default_return_type
    args = Arguments(ctx, _DEFAULTS)
    read = args.read
    operation = f"tnp.{name}"
    if name not in ("conv", "conv_transpose"):
        return _typed(
            plugin,
            ctx,
            x,
            x.dtype,
            args,
            [x],
            lambda x_named: (
                pool_plan(
                    x_named, read("window", 1), read("strides", 2), read("padding", 3), operation=operation
                ).named_shape
            ),
        )
    kernel = named_operand(ctx, "kernel", 1, group=False)
    if kernel is None:
        return plugin.types.array(x.dtype, None, None)

    def rule(x_named: Mapping[str, Size], kernel_named: Mapping[str, Size]) -> dict[str, Size]:
        options = {k: read(k, None) for k in ("strides", "padding", "dilation")}
        spatial, contract = read("spatial", 2), read("contract", 3)
        if name == "conv_transpose":
            return conv_transpose_plan(
                x_named, kernel_named, spatial, contract, **options, operation=operation
            ).named_shape
        grouped = read("feature_group_count", None)
        return conv_plan(
            x_named, kernel_named, spatial, contract, **options, feature_group_count=grouped, operation=operation
        ).named_shape

    dtype = dtype_argument(plugin, ctx, None, "preferred_element_type") or x.dtype
    _contracted_symbols(ctx, x, kernel, operation)
    return _typed(plugin, ctx, x, dtype, args, [x, kernel], rule)


def selection_hook(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    """``tnp.sort(x, axis)``, ``tnp.argsort`` (int32) and ``tnp.top_k(x, k, axis, new_axis)`` (a pair)."""
    x = named_operand(ctx, "x", 0, group=True)
    if x is None:
        return ctx.default_return_type
    args = Arguments(ctx)
    read = args.read
    index = plugin.types.marker_dtype("i32")
    if name != "top_k":
        dtype = index if name == "argsort" else x.dtype
        return _typed(
            plugin, ctx, x, dtype, args, [x], lambda n: sorted_shape(n, read("axis", 1), operation=f"tnp.{name}")
        )

    def rule(named: Mapping[str, Size]) -> dict[str, Size]:
        k, axis, new = read("k", 1), read("axis", 2), read("new_axis", 3)
        shown = "k" if args.probed else repr(k)
        operation = f"tnp.top_k(x, {shown}, axis={axis!r}, new_axis={new!r})"
        return top_k_shape(named, k, axis, new, operation=operation)

    values = _typed(plugin, ctx, x, x.dtype, args, [x], rule)
    decoded = decode(values)
    indices = plugin.types.array(index, decoded.named if decoded else None, decoded.positional if decoded else None)
    fallback = ctx.api.named_generic_type("builtins.tuple", [plugin.types.any()])
    return TupleType([values, indices], fallback)


def random_hook(plugin: TypedXmapPlugin, fullname: str, ctx: FunctionContext) -> Type:
    """``tx.random.randint(key, shape, ...)``, ``categorical(key, logits, axis)``, ``permutation(key, x, axis)``."""
    name = fullname.rsplit(".", 1)[1]
    args = Arguments(ctx)
    read = args.read
    index = plugin.types.marker_dtype("i32")
    operation = f"tx.random.{name}"
    if name == "randint":
        return random_shape(plugin, ctx, dtype_argument(plugin, ctx, 4) or index, operation)
    operand = named_operand(ctx, "logits" if name == "categorical" else "x", 1, group=True)
    if operand is None:
        return ctx.default_return_type
    if name == "categorical":
        return _typed(
            plugin,
            ctx,
            operand,
            index,
            args,
            [operand],
            lambda n: sampled_shape(n, read("axis", 2), operation=operation),
        )
    return _typed(
        plugin,
        ctx,
        operand,
        operand.dtype,
        args,
        [operand],
        lambda n: sorted_shape(n, read("axis", 2), operation=operation),
    )
