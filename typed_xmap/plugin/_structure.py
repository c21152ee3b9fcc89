"""Structure by name: ``tx.rename merge_axes split_axis broadcast_to``, the ``STRUCTURE`` and ``CONSTRUCTOR``
rows of the table of operations (``tnp.stack concatenate split roll pad cumsum cumprod zeros ... one_hot
causal_mask``), ``typed_xmap.random``, and the NamedArray methods that are these functions.

Literal axis names, dict keys and sizes are read from the call and given to the algebra's rules
(``_algebra/_structure.py``), the runtime's own: the result's named shape is theirs, their errors are
reported with the code of their kind (``named-axis-missing``, ``named-axis-size``, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mypy.nodes import ARG_POS, CallExpr, ListExpr, MemberExpr, NameExpr, StrExpr, TupleExpr
from mypy.plugin import FunctionContext
from mypy.types import Instance, Type, get_proper_type

from .._algebra import (
    MARKER_OF_DTYPE,
    NamedShapeError,
    Size,
    arange_shape,
    axis_sizes,
    broadcast_to_shape,
    concatenate_shape,
    like_shape,
    merge_axes_shape,
    new_axis,
    pad_shape,
    rename_shape,
    require_axis,
    same_positional,
    split_axis_shape,
    split_shape,
    stack_shape,
    two_axes,
)
from ._encoding import Shape, decode, has_group
from ._literals import UNKNOWN, literal_value
from ._reductions import reduction_hook
from ._support import arg, arg_expr, report

if TYPE_CHECKING:
    from mypy.plugin import MethodContext

    from ._protocols import TypedXmapPlugin

__all__ = ["METHODS", "ONE_OPERAND", "TX_FUNCTIONS", "method_hook", "structure_hook", "tx_hook"]

Named = dict[str, Size]
Read = Callable[[str, int], object]
"""Reads a literal argument by name and position (``_Unknown`` when it is not a literal)."""

ONE_OPERAND = {
    "rename": "tx.rename",
    "merge_axes": "tx.merge_axes",
    "split_axis": "tx.split_axis",
    "broadcast_to": "tx.broadcast_to",
    "roll": "tnp.roll",
    "cumsum": "tnp.cumsum",
    "cumprod": "tnp.cumprod",
    "pad": "tnp.pad",
    "one_hot": "tnp.one_hot",
    "zeros_like": "tnp.zeros_like",
    "ones_like": "tnp.ones_like",
    "full_like": "tnp.full_like",
}
"""Functions of one NamedArray (the first argument), and how messages name them."""


def _one_operand_rule(name: str, named: Mapping[str, Size], read: Read, operation: str) -> Named:
    """The algebra's rule for ``name`` on the operand's named shape."""
    if name == "rename":
        return rename_shape(named, read("renames", 1), operation=operation)
    if name == "merge_axes":
        return merge_axes_shape(named, read("axes", 1), read("into", 2), operation=operation)
    if name == "split_axis":
        return split_axis_shape(named, read("axis", 1), read("parts", 2), operation=operation)
    if name == "broadcast_to":
        return broadcast_to_shape(named, axis_sizes(read("shape", 1), operation=operation), operation=operation)
    if name in ("roll", "cumsum", "cumprod"):
        require_axis(named, read("axis", 2 if name == "roll" else 1), operation=operation)
        return dict(named)
    if name == "pad":
        return pad_shape(named, read("pad_width", 1), operation=operation)
    if name == "one_hot":
        axis = new_axis(named, read("axis", 1), operation=operation, operand="tokens")
        return {**named, axis: _int(read("size", 2))}
    return like_shape(named, read("new_axes", -1), operation=operation)  # zeros_like, ones_like, full_like


TX_FUNCTIONS = frozenset(
    f"{module}.{name}"
    for module in ("typed_xmap", "typed_xmap._ops._structure")
    for name in ("rename", "merge_axes", "split_axis", "broadcast_to")
) | frozenset(f"typed_xmap.random.{name}" for name in ("normal", "uniform", "bernoulli"))
"""The ``tx`` functions typed here, by full name (the stubs' and the runtime module's)."""

_REDUCTIONS = ("sum", "mean", "max", "min", "prod", "var", "std", "logsumexp", "all", "any", "argmax", "argmin")
METHODS = {
    f"typed_xmap._static.NamedArray_.{name}": name
    for name in (*_REDUCTIONS, "cumsum", "cumprod", "rename", "merge_axes", "split_axis", "broadcast_to")
}
"""NamedArray methods that are these functions (or reductions), by full name -> the function's name."""


def _int(value: object) -> Size:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Unknown(Exception):
    """A literal argument the plugin cannot read: the result's named shape is unknown."""


def _reader(ctx: FunctionContext) -> Callable[[str, int], object]:
    def read(name: str, position: int) -> object:
        expr = arg_expr(ctx, name, position)
        value = literal_value(expr) if expr is not None else None
        if value is UNKNOWN:
            raise _Unknown
        return value

    return read


def _operand(ctx: FunctionContext, name: str) -> Shape | None:
    types = arg(ctx, name, 0)
    shape = decode(types[0]) if len(types) == 1 else None
    return None if shape is None or shape.scalar else shape


_DTYPE_MODULES = ("jax.numpy.", "numpy.", "ml_dtypes.")


def _dtype_argument(plugin: TypedXmapPlugin, ctx: FunctionContext, position: int | None) -> Type | None:
    """The dtype a ``dtype=`` argument names, as annotations carry it (``jnp.float32``, ``np.float32`` or
    ``"float32"``: ``f32``'s); ``None`` when no ``dtype`` is passed, Any when it is not one of those."""
    expr = arg_expr(ctx, "dtype", position)
    if expr is None:
        return None
    name = None
    if isinstance(expr, StrExpr):
        name = expr.value
    elif isinstance(expr, (NameExpr, MemberExpr)) and expr.fullname.startswith(_DTYPE_MODULES):
        name = expr.fullname.rsplit(".", 1)[-1]
    marker = MARKER_OF_DTYPE.get(name) if name is not None else None
    return plugin.types.marker_dtype(marker) if marker is not None else plugin.types.any()


def _is_bool(dtype: Type) -> bool:
    proper = get_proper_type(dtype)
    return isinstance(proper, Instance) and proper.type.fullname in ("numpy.bool", "numpy.bool_")


def _result(plugin: TypedXmapPlugin, ctx: FunctionContext, dtype: Type | None, rule: Callable[[], Any]) -> Type:
    """``rule()``'s named shape as a NamedArray type; unknown on an unreadable literal, reported on an error."""
    declared = decode(ctx.default_return_type)
    if dtype is None:
        dtype = declared.dtype if declared is not None else plugin.types.any()
    try:
        named, positional = rule()
    except _Unknown:
        return plugin.types.array(dtype, None, None)
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
        return plugin.types.array(dtype, None, None)
    return plugin.types.array(dtype, named, positional)


def _one_operand(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    shape = _operand(ctx, "tokens" if name == "one_hot" else "x")
    if shape is None:
        return ctx.default_return_type
    dtype: Type | None = shape.dtype
    if name in ("one_hot", "zeros_like", "ones_like", "full_like", "cumsum", "cumprod"):  # dtype=, else the operand's
        given = _dtype_argument(plugin, ctx, {"zeros_like": 1, "ones_like": 1, "full_like": 2}.get(name))
        if given is not None:
            dtype = given
        elif name == "one_hot" or (name in ("cumsum", "cumprod") and _is_bool(shape.dtype)):
            dtype = None  # one_hot: float32, or float64 under jax_enable_x64; a bool scan counts in int32
    named = shape.named
    if named is None or has_group(named):
        return plugin.types.array(dtype if dtype is not None else plugin.types.any(), None, shape.positional)
    read = _reader(ctx)
    positional = shape.positional
    return _result(plugin, ctx, dtype, lambda: (_one_operand_rule(name, named, read, ONE_OPERAND[name]), positional))


def _operands(ctx: FunctionContext) -> list[Shape] | None:
    """The shapes of a literal list/tuple ``xs`` of NamedArrays, each read from its expression."""
    expr = arg_expr(ctx, "xs", 0)
    if not isinstance(expr, (ListExpr, TupleExpr)):
        return None
    shapes = []
    for item in expr.items:
        shape = decode(ctx.api.get_expression_type(item))
        if shape is None or shape.scalar or shape.named is None or has_group(shape.named):
            return None
        shapes.append(shape)
    return shapes


def _many(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    shapes = _operands(ctx)
    if not shapes:
        return ctx.default_return_type
    read = _reader(ctx)
    operation = f"tnp.{name}(xs, axis={{axis!r}})"

    def run() -> tuple[Named, Any]:
        axis = read("axis", 1)
        label = operation.format(axis=axis)
        named = [s.named or {} for s in shapes]
        same_positional([s.positional for s in shapes], operation=label)
        if name == "stack":
            return stack_shape(named, axis, len(shapes), operation=label), shapes[0].positional
        return concatenate_shape(named, axis, operation=label), shapes[0].positional

    return _result(plugin, ctx, shapes[0].dtype, run)


def _split(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    shape = _operand(ctx, "x")
    if shape is None or shape.named is None or has_group(shape.named):
        return ctx.default_return_type
    read = _reader(ctx)
    try:
        axis, sections = read("axis", 1), read("sections", 2)
        parts = split_shape(
            shape.named, axis, sections, operation=f"tnp.split(x, axis={axis!r}, sections={sections!r})"
        )
    except _Unknown:
        return ctx.default_return_type
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)
        return ctx.default_return_type
    same = all(p == parts[0] for p in parts)
    named = parts[0] if same else {**parts[0], str(axis): None}
    item = plugin.types.array(shape.dtype, named, shape.positional)
    return ctx.api.named_generic_type("builtins.list", [item])


def _constructor(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    read = _reader(ctx)

    def run() -> tuple[Named, Any]:
        if name == "arange":
            step = 1 if arg_expr(ctx, "step", 3) is None else read("step", 3)
            return arange_shape(read("axis", 0), read("start", 1), read("stop", 2), step, operation="tnp.arange"), ()
        if name == "causal_mask":
            row, column = two_axes(read("row", 0), read("column", 1), operation="tnp.causal_mask")
            try:
                size = _int(read("size", 2))
            except _Unknown:  # a size from a variable: the axes are known, their size is not
                size = None
            return {row: size, column: size}, ()
        return dict(axis_sizes(read("shape", 0), operation=f"tnp.{name}")), ()

    position = {"zeros": 1, "ones": 1, "full": 2}.get(name)  # arange: keyword-only; causal_mask: always bool
    return _result(plugin, ctx, None if name == "causal_mask" else _dtype_argument(plugin, ctx, position), run)


def _random(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    read = _reader(ctx)
    position = 2 if name == "bernoulli" else 1
    dtype = None if name == "bernoulli" else _dtype_argument(plugin, ctx, 2)
    return _result(
        plugin,
        ctx,
        dtype,
        lambda: (dict(axis_sizes(read("shape", position), operation=f"tx.random.{name}")), ()),
    )


def structure_hook(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    """The hook of a ``STRUCTURE`` or ``CONSTRUCTOR`` row of the table of operations."""
    if name in ONE_OPERAND:
        return _one_operand(plugin, name, ctx)
    if name in ("stack", "concatenate"):
        return _many(plugin, name, ctx)
    if name == "split":
        return _split(plugin, ctx)
    return _constructor(plugin, name, ctx)


def tx_hook(plugin: TypedXmapPlugin, fullname: str, ctx: FunctionContext) -> Type:
    """The hook of a ``tx`` structural function or of ``typed_xmap.random``."""
    module, name = fullname.rsplit(".", 1)
    if module == "typed_xmap.random":
        return _random(plugin, name, ctx)
    return _one_operand(plugin, name, ctx)


def method_hook(plugin: TypedXmapPlugin, name: str, ctx: MethodContext) -> Type:
    """``x.sum('batch')``, ``x.rename({...})``: the function's hook, with ``x`` as its first argument."""
    callee = ctx.context.callee if isinstance(ctx.context, CallExpr) else None
    receiver = callee.expr if isinstance(callee, MemberExpr) else None
    first = "x"
    as_function = FunctionContext(
        arg_types=[[ctx.type], *ctx.arg_types],
        arg_kinds=[[ARG_POS], *ctx.arg_kinds],
        callee_arg_names=[first, *ctx.callee_arg_names],
        arg_names=[[None], *ctx.arg_names],
        default_return_type=ctx.default_return_type,
        args=[[receiver] if receiver is not None else [], *ctx.args],
        context=ctx.context,
        api=ctx.api,
    )
    if name in _REDUCTIONS:
        return reduction_hook(plugin, name, as_function)
    return _one_operand(plugin, name, as_function)
