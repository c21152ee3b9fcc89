"""Structure by name: ``tx.rename merge_axes split_axis broadcast_to``, the ``STRUCTURE`` and ``CONSTRUCTOR``
rows of the table of operations (``tnp.stack concatenate split roll pad cumsum cumprod zeros ... one_hot
causal_mask``), ``typed_xmap.random``, and the NamedArray methods that are these functions.

Literal axis names, dict keys and sizes are read from the call and given to the algebra's rules
(``_algebra/_structure.py``), the runtime's own: the result's named shape is theirs, their errors are
reported with the code of their kind (``named-axis-missing``, ``named-axis-size``, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from mypy.nodes import (
    ARG_POS,
    CallExpr,
    GeneratorExpr,
    ListComprehension,
    ListExpr,
    MemberExpr,
    NameExpr,
    StrExpr,
    TupleExpr,
)
from mypy.plugin import FunctionContext
from mypy.types import Instance, TupleType, Type, get_proper_type

from ..._algebra import (
    MARKER_OF_DTYPE,
    NamedShapeError,
    Size,
    StaticSize,
    SymbolicSize,
    arange_shape,
    axis_sizes,
    broadcast_to_shape,
    concatenate_shape,
    like_shape,
    meet_sizes,
    merge_axes_shape,
    new_axis,
    pad_shape,
    rename_shape,
    require_axis,
    same_positional,
    size_add,
    size_floordiv,
    size_mul,
    split_axis_shape,
    split_shape,
    stack_shape,
    two_axes,
)
from .._core._constants import resolved
from .._core._encoding import Shape, decode
from .._core._names_first import NAME_KINDS, Arguments, Unreadable, rerun, run
from .._core._sizes import erased, read_sizes, static_size, symbols_of, with_symbols
from .._core._support import arg, arg_expr, certain_error, label as operand_label, report, result_dtype
from ._constructor_sharding import sharding_placed
from ._reductions import reduction_hook

if TYPE_CHECKING:
    from mypy.plugin import MethodContext

    from ._protocols import TypedXmapPlugin

__all__ = [
    "METHODS",
    "ONE_OPERAND",
    "REDUCTION_METHODS",
    "TX_FUNCTIONS",
    "dtype_argument",
    "method_hook",
    "random_shape",
    "structure_hook",
    "tx_hook",
    "with_preferred_dtype",
]

Read = Callable[[str, int], object]
"""Reads an argument by name and position, names first (``_names_first.Arguments.read``)."""
Sizes = Callable[[str, int], dict[str, StaticSize]]
"""Reads a shape argument ``{"batch": n, "embed": cfg.embed}`` by name and position: names first, each size an
int, a symbol or unknown (``_Unknown`` when its keys are not literals)."""

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
    "astype": "x.astype",
}
"""Functions of one NamedArray (the first argument), and how messages name them."""


def _checked_sizes(sizes: Mapping[str, StaticSize], operation: str) -> dict[str, StaticSize]:
    """The algebra's check of a shape argument's names and int sizes; a symbol or unknown size passes."""
    if list(sizes) == [""]:  # a literal that is not a dict (_sizes_reader)
        axis_sizes(sizes[""], operation=operation)
    axis_sizes({n: 0 if s is None or isinstance(s, SymbolicSize) else s for n, s in sizes.items()}, operation=operation)
    return dict(sizes)


def _one_operand_rule(
    name: str, shape: Shape, read: Read, sizes: Sizes, size: Callable[[str, int], StaticSize], operation: str
) -> dict[str, StaticSize]:
    """The algebra's rule for ``name`` on the operand's named shape, with the symbols the operation keeps
    or makes (a renamed axis keeps its symbol, a merged one is the product, ``one_hot``'s is its size)."""
    named: Mapping[str, Size] = shape.named or {}
    static = with_symbols(shape)
    if name == "rename":
        renames = read("renames", 1)
        result = rename_shape(named, renames, operation=operation)
        moved = {renames.get(n, n): s for n, s in static.items()} if isinstance(renames, Mapping) else {}
        return {n: s if s is not None else moved.get(n) for n, s in result.items()}
    if name == "merge_axes":
        axes, into = read("axes", 1), read("into", 2)
        result = merge_axes_shape(named, axes, into, operation=operation)
        product: StaticSize = 1
        for axis in axes if isinstance(axes, (list, tuple)) else ():
            product = size_mul(product, static.get(axis))
        return {**_kept(result, static), str(into): result[str(into)] if result[str(into)] is not None else product}
    if name == "split_axis":
        parts = _checked_sizes(sizes("parts", 2), operation)
        axis = read("axis", 1)
        ints = {n: s for n, s in parts.items() if isinstance(s, int)}
        if len(ints) == len(parts):
            return _kept(split_axis_shape(named, axis, ints, operation=operation), static)
        unsized = {**named, axis: None} if isinstance(axis, str) and axis in named else named
        split_axis_shape(unsized, axis, dict.fromkeys(parts, 1), operation=operation)  # names only
        whole: StaticSize = 1  # the parts' product meets the axis' own size (4 * (cfg.hidden // 2) vs cfg.fused)
        for part in parts.values():
            whole = size_mul(whole, part)
        split = str(axis)
        meet_sizes([{split: static.get(split)}, {split: whole}], operation=operation, operands=["x", "the parts"])
        return {**_kept({n: s for n, s in named.items() if n != axis}, static), **parts}
    if name == "broadcast_to":
        target = _checked_sizes(sizes("shape", 1), operation)
        result = broadcast_to_shape(named, erased(target), operation=operation)
        meet_sizes([static, target], operation=operation, operands=["x", "the target shape"])
        return {n: target[n] if target[n] is not None else static.get(n) for n in result}
    if name == "astype":
        return static
    if name in ("roll", "cumsum", "cumprod"):
        require_axis(named, read("axis", 2 if name == "roll" else 1), operation=operation)
        return static
    if name == "pad":
        widths = read("pad_width", 1)
        result = pad_shape(named, widths, operation=operation)
        pairs = widths.items() if isinstance(widths, Mapping) else ()
        grown = {n: size_add(static[n], sum(w) if isinstance(w, (tuple, list)) else None) for n, w in pairs}
        return {n: s if s is not None else grown.get(n, static.get(n)) for n, s in result.items()}
    if name == "one_hot":
        axis = new_axis(named, read("axis", 1), operation=operation, operand="tokens")
        return {**static, axis: size("size", 2)}
    new = sizes("new_axes", -1)  # zeros_like, ones_like, full_like; {} without new_axes
    placeholders = {n: s if isinstance(s, int) else 1 for n, s in _checked_sizes(new, operation).items()}
    result = like_shape(named, placeholders or None, operation=operation)  # the names' check; the sizes: new's
    return {n: new[n] if n in new else static.get(n) for n in result}


def _kept(result: Mapping[str, Size], static: Mapping[str, StaticSize]) -> dict[str, StaticSize]:
    """The algebra's result, an unknown size of an axis the operand had replaced by the operand's symbol."""
    return {n: s if s is not None else static.get(n) for n, s in result.items()}


TX_FUNCTIONS = frozenset(
    f"{module}.{name}"
    for module in ("typed_xmap", "typed_xmap._ops._structure")
    for name in ("rename", "merge_axes", "split_axis", "broadcast_to")
) | frozenset(f"typed_xmap.random.{name}" for name in ("normal", "uniform", "bernoulli"))
"""The ``tx`` functions typed here, by full name (the stubs' and the runtime module's)."""

_REDUCTIONS = ("sum", "mean", "max", "min", "prod", "var", "std", "logsumexp", "all", "any", "argmax", "argmin")
REDUCTION_METHODS = frozenset(_REDUCTIONS)
METHODS = {
    f"typed_xmap._static.NamedArray_.{name}": name
    for name in (*_REDUCTIONS, "cumsum", "cumprod", "rename", "merge_axes", "split_axis", "broadcast_to", "astype")
}
"""NamedArray methods that are these functions (or reductions), by full name -> the function's name."""


def _size_reader(ctx: FunctionContext) -> Callable[[str, int], StaticSize]:
    def size(name: str, position: int) -> StaticSize:
        return static_size(ctx.api, arg_expr(ctx, name, position))

    return size


def _sizes_reader(ctx: FunctionContext, read: Read) -> Sizes:
    def sizes(name: str, position: int) -> dict[str, StaticSize]:
        expr = arg_expr(ctx, name, position)
        if expr is None:
            return {}  # not passed: no axes (zeros_like's new_axes)
        found = read_sizes(ctx.api, resolved(ctx.api, expr), lambda name: resolved(ctx.api, name))
        if found is not None:
            return found
        value = read(name, position)  # a literal that is not a dict of names: _checked_sizes words the error
        return cast("dict[str, StaticSize]", value if isinstance(value, dict) else {"": value})

    return sizes


def _operand(ctx: FunctionContext, name: str) -> Shape | None:
    types = arg(ctx, name, 0)
    shape = decode(types[0]) if len(types) == 1 else None
    return None if shape is None or shape.scalar else shape


_DTYPE_MODULES = ("jax.numpy.", "numpy.", "ml_dtypes.")


def dtype_argument(
    plugin: TypedXmapPlugin, ctx: FunctionContext, position: int | None, name: str = "dtype"
) -> Type | None:
    """The dtype a ``dtype=`` argument names, as annotations carry it (``jnp.float32``, ``np.float32`` or
    ``"float32"``: ``f32``'s; a name bound once to one of those too); ``None`` when no ``dtype`` is passed, Any
    when it is not one of those."""
    given = arg_expr(ctx, name, position)
    if given is None:
        return None
    expr = resolved(ctx.api, given)
    dtype = None
    if isinstance(expr, StrExpr):
        dtype = expr.value
    elif isinstance(expr, (NameExpr, MemberExpr)) and expr.fullname.startswith(_DTYPE_MODULES):
        dtype = expr.fullname.rsplit(".", 1)[-1]
    marker = MARKER_OF_DTYPE.get(dtype) if dtype is not None else None
    return plugin.types.marker_dtype(marker) if marker is not None else plugin.types.any()


def with_preferred_dtype(plugin: TypedXmapPlugin, ctx: FunctionContext, result: Type) -> Type:
    """``result`` with the dtype ``preferred_element_type=`` names (einsum, dot, conv), when it names one."""
    dtype = dtype_argument(plugin, ctx, None, "preferred_element_type")
    shape = decode(result)
    if dtype is None or shape is None or shape.scalar:
        return result
    return plugin.types.encode(replace(shape, dtype=dtype))


def _is_bool(dtype: Type) -> bool:
    proper = get_proper_type(dtype)
    return isinstance(proper, Instance) and proper.type.fullname in ("numpy.bool", "numpy.bool_")


def _result(
    plugin: TypedXmapPlugin,
    ctx: FunctionContext,
    dtype: Type | None,
    rule: Callable[..., Any],
    args: Arguments,
    operands: Sequence[Shape] = (),
) -> Type:
    """``rule(*operands)``'s named shape as a NamedArray type, names first (``_names_first``: where a probe stood
    in for a number, the axes the call names have unknown sizes); unknown on unreadable names, reported on an
    error (unknown, unreported, where the operands' ``*rest`` groups may hold what the call needs:
    ``certain_error``)."""
    declared = decode(ctx.default_return_type)
    if dtype is None:
        dtype = declared.dtype if declared is not None else plugin.types.any()
    try:
        static, positional = rule(*operands)
    except Unreadable:
        return plugin.types.array(dtype, None, None)
    except NamedShapeError as error:
        again = rerun(lambda *named: rule(*(replace(o, named=n) for o, n in zip(operands, named, strict=True))))
        certain = certain_error(error, [o.named for o in operands], again)
        if certain is not None and (not args.probed or certain.kind in NAME_KINDS):
            report(ctx.api, certain, ctx.context)
        return plugin.types.array(dtype, None, None)
    if args.probed:
        static = {n: None if n in args.touched else s for n, s in static.items()}
    return plugin.types.array(dtype, erased(static), positional, symbols_of(static))


def _one_operand(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    shape = _operand(ctx, "tokens" if name == "one_hot" else "x")
    if shape is None:
        return ctx.default_return_type
    dtype: Type | None = shape.dtype
    if name in ("one_hot", "zeros_like", "ones_like", "full_like", "cumsum", "cumprod", "astype"):  # dtype=, else x's
        given = dtype_argument(plugin, ctx, {"zeros_like": 1, "ones_like": 1, "full_like": 2, "astype": 1}.get(name))
        if given is not None:
            dtype = given
        elif name == "one_hot" or (name in ("cumsum", "cumprod") and _is_bool(shape.dtype)):
            dtype = None  # one_hot: float32, or float64 under jax_enable_x64; a bool scan counts in int32
    if shape.named is None:
        return plugin.types.array(dtype if dtype is not None else plugin.types.any(), None, shape.positional)
    args = Arguments(ctx)
    read = args.read
    sizes, size = _sizes_reader(ctx, read), _size_reader(ctx)
    positional = shape.positional
    return _result(
        plugin,
        ctx,
        dtype,
        lambda x: (_one_operand_rule(name, x, read, sizes, size, ONE_OPERAND[name]), positional),
        args,
        [shape],
    )


def _operands(ctx: FunctionContext) -> tuple[list[Shape], int | None] | None:
    """The shapes of ``xs`` and how many there are: a literal list/tuple of NamedArrays (each read from its
    expression), a tuple bound to a name (its items' types), or a comprehension or sequence of one named shape
    (``list[NamedArray[f32, "batch"]]``, built by ``append``): one shape, of unknown count, its symbols dropped
    (mypy compares no symbol, so the items may differ in them)."""
    expr = arg_expr(ctx, "xs", 0)
    types = arg(ctx, "xs", 0)
    proper = get_proper_type(types[0]) if len(types) == 1 else None
    if isinstance(expr, (ListExpr, TupleExpr)):
        items = [ctx.api.get_expression_type(item) for item in expr.items]
    elif isinstance(expr, (ListComprehension, GeneratorExpr)):  # typed item by item, as the call checked them
        generator = expr.generator if isinstance(expr, ListComprehension) else expr
        lookup = getattr(ctx.api, "lookup_type_or_none", None)  # the type checker's, not in the plugin interface
        found = lookup(generator.left_expr) if lookup is not None else None
        shape = _stackable(found) if found is not None else None
        return ([replace(shape, symbols={})], None) if shape is not None else None
    elif isinstance(proper, TupleType):
        items = list(proper.items)
    elif isinstance(proper, Instance) and proper.type.fullname in SEQUENCES and len(proper.args) == 1:
        shape = _stackable(proper.args[0])
        return ([replace(shape, symbols={})], None) if shape is not None else None
    else:
        return None
    shapes = [_stackable(item) for item in items]
    known = [shape for shape in shapes if shape is not None]
    return (known, len(known)) if len(known) == len(shapes) else None


def _stackable(typ: Type) -> Shape | None:
    """A NamedArray's shape, when its named shape is known (a ``*rest`` group an axis of its own)."""
    shape = decode(typ)
    if shape is None or shape.scalar or shape.named is None:
        return None
    return shape


def _many(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    operands = _operands(ctx)
    if not operands or not operands[0]:
        _known_items_meet(name, ctx)
        return ctx.default_return_type
    shapes, count = operands
    args = Arguments(ctx)
    read = args.read
    operation = f"tnp.{name}(xs, axis={{axis!r}})"

    def rule(*shapes: Shape) -> tuple[dict[str, StaticSize], Any]:
        axis = read("axis", 1)
        label = operation.format(axis=axis)
        named = [s.named or {} for s in shapes]
        same_positional([s.positional for s in shapes], operation=label)
        static = [with_symbols(s) for s in shapes]
        items = getattr(arg_expr(ctx, "xs", 0), "items", [None] * len(shapes))  # a name: xs[0], xs[1], ...
        names = [operand_label(e, f"xs[{i}]") for i, e in enumerate(items)]
        if name == "stack":
            met = meet_sizes(static, operation=label, operands=names)
            return _kept(stack_shape(named, axis, count, operation=label), met), shapes[0].positional
        result = concatenate_shape(named, axis, operation=label)
        met = meet_sizes(static, operation=label, operands=names, skip={str(axis)})
        total: StaticSize = 0
        for one in static:
            total = size_add(total, one.get(str(axis)))
        if count is None:  # a sequence of unknown length: the joined axis's size too
            return {**_kept(result, met), str(axis): None}, shapes[0].positional
        return {**_kept(result, met), str(axis): result[str(axis)] or total}, shapes[0].positional

    return _result(plugin, ctx, result_dtype(shapes), rule, args, shapes)  # int with float concatenated: float


def _known_items_meet(name: str, ctx: FunctionContext) -> None:
    """A literal list of ``xs`` with an item the plugin cannot read (``Any``, a plain array): the result is
    unknown, but the items it reads still meet by name (all their axes for ``tnp.stack``, all but ``axis`` for
    ``tnp.concatenate``): sizes that certainly differ are reported (an unread item never reconciles them; nor does
    a ``*rest`` group, whose axes' sizes are unknown)."""
    expr, axis = arg_expr(ctx, "xs", 0), arg_expr(ctx, "axis", 1)
    if not isinstance(expr, (ListExpr, TupleExpr)) or not isinstance(axis, StrExpr):
        return
    shapes = [_stackable(ctx.api.get_expression_type(item)) for item in expr.items]
    known = [(s, operand_label(e, f"xs[{i}]")) for i, (s, e) in enumerate(zip(shapes, expr.items, strict=True)) if s]
    if len(known) < 2:  # an item's ``*rest`` group: its listed axes meet all the same (``known_clash``)
        return
    try:
        meet_sizes(
            [with_symbols(s) for s, _ in known],
            operation=f"tnp.{name}(xs, axis={axis.value!r})",
            operands=[label for _, label in known],
            skip=() if name == "stack" else {axis.value},
        )
    except NamedShapeError as error:
        report(ctx.api, error, ctx.context)


SEQUENCES = frozenset({"builtins.list", "builtins.tuple", "typing.Sequence", "collections.abc.Sequence"})
"""The sequence types whose one item type ``tnp.stack``/``tnp.concatenate`` read (``tuple[T, ...]`` included)."""


def _split(plugin: TypedXmapPlugin, ctx: FunctionContext) -> Type:
    shape = _operand(ctx, "x")
    if shape is None or shape.named is None:
        return ctx.default_return_type
    args = Arguments(ctx)
    read = args.read
    axis, sections = None, None

    def rule(named: Mapping[str, Size]) -> dict[str, Size]:
        nonlocal axis, sections
        axis, sections = read("axis", 1), read("sections", 2)
        shown = "sections" if args.probed else repr(sections)
        parts = split_shape(named, axis, sections, operation=f"tnp.split(x, axis={axis!r}, sections={shown})")
        return parts[0] if all(p == parts[0] for p in parts) else {**parts[0], str(axis): None}

    named = run(ctx, args, [shape.named], rule)
    if named is None:
        return ctx.default_return_type
    static = _kept(named, with_symbols(shape))
    if not args.probed and isinstance(sections, int) and named[str(axis)] is None:
        static[str(axis)] = size_floordiv(shape.symbols.get(str(axis)), sections)
    elif args.probed:
        static[str(axis)] = None
    item = plugin.types.array(shape.dtype, erased(static), shape.positional, symbols_of(static))
    return ctx.api.named_generic_type("builtins.list", [item])


def _arange(ctx: FunctionContext, read: Read) -> dict[str, StaticSize]:
    """``tnp.arange(axis, n)``: one axis, as long as the range; a symbol for ``arange(axis, n)`` and
    ``arange(axis, 0, n)`` (unit step), else unknown when a bound is not a literal."""
    size = _size_reader(ctx)
    start, stop, step = size("start", 1), size("stop", 2), 1 if arg_expr(ctx, "step", 3) is None else size("step", 3)
    axis = read("axis", 0)
    if stop is None and arg_expr(ctx, "stop", 2) is None:
        start, stop = 0, start
    if isinstance(start, int) and isinstance(stop, int) and isinstance(step, int):
        return dict(arange_shape(axis, start, stop, step, operation="tnp.arange"))
    (name,) = arange_shape(axis, 0, None, 1, operation="tnp.arange")  # the axis name's check
    return {name: stop if start == 0 and step == 1 else None}


def _constructor(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    args = Arguments(ctx)
    read = args.read
    sizes = _sizes_reader(ctx, read)

    def rule() -> tuple[dict[str, StaticSize], Any]:
        if name == "arange":
            return _arange(ctx, read), ()
        if name == "causal_mask":
            row, column = two_axes(read("row", 0), read("column", 1), operation="tnp.causal_mask")
            size = _size_reader(ctx)("size", 2)
            return {row: size, column: size}, ()
        return _checked_sizes(sizes("shape", 0), f"tnp.{name}"), ()

    position = {"zeros": 1, "ones": 1, "full": 2}.get(name)  # arange: keyword-only; causal_mask: always bool
    dtype = None if name == "causal_mask" else dtype_argument(plugin, ctx, position)
    return sharding_placed(plugin, ctx, f"tnp.{name}", _result(plugin, ctx, dtype, rule, args))


def random_shape(
    plugin: TypedXmapPlugin, ctx: FunctionContext, dtype: Type | None, operation: str, position: int = 1
) -> Type:
    """A draw of ``tx.random`` whose ``shape`` argument (at ``position``) is its named shape."""
    args = Arguments(ctx)
    sizes = _sizes_reader(ctx, args.read)
    result = _result(plugin, ctx, dtype, lambda: (_checked_sizes(sizes("shape", position), operation), ()), args)
    return sharding_placed(plugin, ctx, operation, result)


def _random(plugin: TypedXmapPlugin, name: str, ctx: FunctionContext) -> Type:
    dtype = None if name == "bernoulli" else dtype_argument(plugin, ctx, 2)
    return random_shape(plugin, ctx, dtype, f"tx.random.{name}", 2 if name == "bernoulli" else 1)


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
