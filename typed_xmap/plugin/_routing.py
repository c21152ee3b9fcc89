"""Which hook serves which name: mypy asks the plugin for a hook per full name; the answer is read here.

The ``tnp`` functions are routed by their kind in the table of operations (``typed_xmap._algebra``); the ``tx``
functions, the transforms, ``functools.partial``, the operators and methods of ``NamedArray`` by their full name;
any other function or method by its signature (a module-level function with NamedArray parameters: its calls
bind axis sizes and groups, ``_hooks/_calls``). ``Routes`` holds what it learns (the signatures it looked up).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from mypy.erasetype import erase_typevars
from mypy.nodes import Decorator, FuncDef, Var
from mypy.types import CallableType, FunctionLike, Type, get_proper_type

from .._algebra import TNP_OPERATIONS, OpKind
from ._core._encoding import NAMED_ARRAY, mentions_group, open_groups
from ._core._messages import install as install_messages
from ._core._unions import per_member
from ._hooks._broadcast import OPERATOR_METHODS as OPERATOR_DUNDERS, elementwise_hook, operator_hook
from ._hooks._calls import annotated_call_hook, has_named_params, named_hook, positional_hook
from ._hooks._einsum import dot_hook, einsum_hook
from ._hooks._indexing import AT_GETITEM, AT_UPDATES, GETITEM, at_hook, at_update_hook, getitem_hook, indexing_hook
from ._hooks._isinstance import ISINSTANCE, isinstance_signature
from ._hooks._lambdas import called_lambda_signature
from ._hooks._moe_segments import MOE_AND_SEGMENTS, moe_segments_hook
from ._hooks._moves import placing_moved
from ._hooks._named_collectives import LAX_COLLECTIVES, named_collective_hook
from ._hooks._named_vmap import NAMED_VMAP, named_vmap_hook
from ._hooks._open_arguments import open_arguments_fit
from ._hooks._placement import placing
from ._hooks._placement_index import placing_index, placing_update
from ._hooks._placement_rules import rule_key
from ._hooks._placement_segments import placing_segment
from ._hooks._reductions import reduction_hook
from ._hooks._scan import SCAN, scan_hook, scan_signature
from ._hooks._scan_slices import SCANNED_READS, scanned_read_hook
from ._hooks._sharding import SHARDING_NAMES, sharding_hook
from ._hooks._star_args import unreached_defaults
from ._hooks._stored_vmap import stored_vmap_hook
from ._hooks._structure import (
    METHODS as STRUCTURE_METHODS,
    REDUCTION_METHODS,
    TX_FUNCTIONS,
    method_hook,
    structure_hook,
    tx_hook,
)
from ._hooks._symbolic import indexed, keeping, meeting
from ._hooks._transforms import TRANSFORMS, VMAP, partial_call_hook, partial_new_hook, transform_hook
from ._hooks._unknowns import POWERS, is_numpy_ufunc_call, noting_unknowns, power_hook, ufunc_hook
from ._hooks._windows import RANDOM_DRAWS, random_hook, selection_hook, window_hook
from ._hooks._xmap import XMAP_NAMES, xmap_hook

if TYPE_CHECKING:
    from mypy.plugin import FunctionContext, FunctionSigContext, MethodContext, MethodSigContext

    from ._hooks._protocols import TypedXmapPlugin

__all__ = ["DEBUG_ENV", "SKIP_ALIAS_LOOKUP", "Routes", "checked"]

SKIP_ALIAS_LOOKUP = ("builtins.", "typing.", "typing_extensions.", "collections.", "numpy.", "jax.", "typed_xmap.")
"""Full names that are never a user's function or alias: no lookup for them."""
TNP = "typed_xmap.numpy."
DEBUG_ENV = "TYPED_XMAP_PLUGIN_DEBUG"
"""Set it to make a failing hook raise (a mypy INTERNAL ERROR) instead of giving up quietly: for tests."""
CONTRACTIONS = {"einsum": einsum_hook, "dot": dot_hook}
HOOK_OF_KIND: dict[OpKind, Callable[[TypedXmapPlugin, str, Any], Type]] = {
    OpKind.ELEMENTWISE: elementwise_hook,
    OpKind.SELECT: elementwise_hook,
    OpKind.REDUCTION: reduction_hook,
    OpKind.INDEX_REDUCTION: reduction_hook,
    OpKind.SHAPE_KEEPING: reduction_hook,
    OpKind.CONTRACTION: lambda plugin, name, ctx: CONTRACTIONS[name](plugin, ctx),
    OpKind.INDEXING: indexing_hook,
    OpKind.STRUCTURE: structure_hook,
    OpKind.CONSTRUCTOR: structure_hook,
    OpKind.WINDOW: window_hook,
    OpKind.SELECTION: selection_hook,
}
"""The hook of each kind of ``tnp`` function in the table of operations (``typed_xmap._algebra``)."""
MEETING = frozenset({OpKind.ELEMENTWISE, OpKind.SELECT, OpKind.CONTRACTION})
KEEPING = frozenset({OpKind.REDUCTION, OpKind.INDEX_REDUCTION, OpKind.SHAPE_KEEPING})
"""The kinds whose operands meet by name / whose result keeps its operand's sizes: symbols follow (``_symbolic``)."""
NAMED = frozenset({"typed_xmap._convert.named", "typed_xmap._ops._convert.named", "typed_xmap.named"})
POSITIONAL = frozenset(
    {"typed_xmap._convert.positional", "typed_xmap._ops._convert.positional", "typed_xmap.positional"}
)
OPERATOR_METHODS = frozenset(f"{NAMED_ARRAY}.{dunder}" for dunder in OPERATOR_DUNDERS)


def checked(hook: Callable[[Any], Type]) -> Callable[[Any], Type]:
    """A checker hook that can never crash mypy: an unexpected failure means "no inference"."""

    def guarded(ctx: Any) -> Type:
        try:
            api = getattr(ctx, "api", None)
            install_messages(getattr(getattr(api, "msg", None), "errors", None), api)
            return hook(ctx)
        except Exception:
            if os.environ.get(DEBUG_ENV):
                raise
            return ctx.default_return_type  # type: ignore[no-any-return]

    return guarded


def _without_type_variables(ctx: FunctionSigContext) -> FunctionLike:
    """tnp's stubs return their argument's type (``def sum(x: T, ...) -> T``): the right degraded type
    without the plugin. With it, the hooks compute the result, and a TypeVar would only let mypy infer it
    from the *expected* type (``return tnp.sum(...)``) and then reject the argument: erase it."""
    signature = ctx.default_signature
    if not signature.variables:
        return signature
    erased = erase_typevars(signature)
    return erased.copy_modified(variables=[]) if isinstance(erased, CallableType) else signature


def _call_signature(ctx: FunctionSigContext | MethodSigContext) -> FunctionLike:
    """An annotated function's signature at a call: a parameter ``NamedArray[f32, "*rest embed"]`` accepts
    any value with ``embed`` (its group stands for the others; the return's group is the arguments',
    ``annotated_call_hook``), and a trailing ``*weights`` of unknown length leaves the optional parameters it
    cannot fill at their defaults (``_star_args``); a value of a container with an open group fits a closed
    parameter that lists its axes (``_open_arguments``)."""
    signature = ctx.default_signature
    if any(mentions_group(t) for t in signature.arg_types):
        signature = signature.copy_modified(arg_types=[open_groups(t) for t in signature.arg_types])
    try:
        return unreached_defaults(ctx, open_arguments_fit(ctx, signature))
    except Exception:  # never crash mypy: the signature as it stands
        if os.environ.get(DEBUG_ENV):
            raise
        return signature


def _short(fullname: str) -> str:
    """``typed_xmap._ops._structure.rename`` -> ``tx.rename`` (how a note names an operation)."""
    return f"tx.{fullname.rsplit('.', 1)[1]}"


def _bound_method(callee: CallableType) -> CallableType:
    """A method's signature as its calls see it: without ``self`` (a FuncDef's type still has it)."""
    definition = callee.definition
    if isinstance(definition, FuncDef) and definition.info and not definition.is_static and callee.arg_types:
        return callee.copy_modified(
            arg_types=callee.arg_types[1:], arg_kinds=callee.arg_kinds[1:], arg_names=callee.arg_names[1:]
        )
    return callee


class Routes:
    """The hook of each full name mypy asks about, and the annotated signatures looked up on the way."""

    def __init__(self, plugin: TypedXmapPlugin) -> None:
        self._plugin = plugin
        self._callees: dict[str, tuple[object, CallableType | None]] = {}

    def function(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        hook = self._function(fullname)
        return checked(per_member(hook)) if hook is not None else None

    def _function(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        plugin = self._plugin
        if fullname in MOE_AND_SEGMENTS:
            name = MOE_AND_SEGMENTS[fullname]
            moe = placing_segment(
                plugin, name, placing_moved(plugin, name, partial(moe_segments_hook, plugin, fullname))
            )
            return noting_unknowns(plugin, moe, MOE_AND_SEGMENTS[fullname])
        if fullname.startswith(TNP):
            operation = TNP_OPERATIONS.get(fullname[len(TNP) :])
            if operation is None:  # not in the table: mypy types it as the stub says
                return None
            hook: Callable[[Any], Type] = partial(HOOK_OF_KIND[operation.kind], plugin, operation.name)
            if operation.kind in MEETING:
                hook = meeting(plugin, hook)
            elif operation.kind in KEEPING:
                hook = keeping(plugin, hook)
            hook = placing(plugin, rule_key(operation.kind, operation.name), hook)
            return noting_unknowns(plugin, hook, f"tnp.{operation.name}")
        if fullname in XMAP_NAMES:
            return partial(xmap_hook, plugin)
        if fullname in LAX_COLLECTIVES:
            return partial(named_collective_hook, plugin, LAX_COLLECTIVES[fullname])
        if fullname in TX_FUNCTIONS:
            hook = placing(plugin, fullname.rsplit(".", 1)[1], partial(tx_hook, plugin, fullname))
            return noting_unknowns(plugin, hook, _short(fullname))
        if fullname in RANDOM_DRAWS:
            return noting_unknowns(plugin, partial(random_hook, plugin, fullname), _short(fullname))
        if fullname in NAMED:
            return noting_unknowns(plugin, partial(named_hook, plugin), "tx.named")
        if fullname in SHARDING_NAMES:
            return partial(sharding_hook, plugin, SHARDING_NAMES[fullname])
        if fullname in TRANSFORMS:
            return partial(transform_hook, plugin, TRANSFORMS[fullname])
        if fullname in NAMED_VMAP:
            return partial(named_vmap_hook, plugin)
        if fullname in SCAN:
            return partial(scan_hook, plugin)
        if fullname == "functools.partial":
            return partial(partial_new_hook, plugin)
        if fullname in POSITIONAL:
            return partial(positional_hook, plugin)
        if plugin.config.annotated_calls:
            callee = self._annotated_callee(fullname)
            if callee is not None:
                hook = meeting(plugin, partial(annotated_call_hook, plugin, callee))
                return noting_unknowns(plugin, hook, fullname, declared=True)
        return partial(stored_vmap_hook, plugin) if self._variable(fullname) else None

    def _variable(self, fullname: str) -> bool:
        """Whether ``fullname`` names a variable (a local's full name is its name), which may hold a stored
        ``tx.vmap`` (``_stored_vmap``)."""
        if "." not in fullname:
            return True
        if fullname.startswith(SKIP_ALIAS_LOOKUP):
            return False
        symbol = self._plugin.lookup_fully_qualified(fullname)
        return symbol is not None and isinstance(symbol.node, Var)

    def function_signature(self, fullname: str) -> Callable[[FunctionSigContext], FunctionLike] | None:
        if fullname in ISINSTANCE:
            return isinstance_signature
        if fullname in SCAN:
            return partial(scan_signature, self._plugin)
        typed_here = fullname in TX_FUNCTIONS or fullname in RANDOM_DRAWS
        if (fullname.startswith(TNP) and fullname[len(TNP) :] in TNP_OPERATIONS) or typed_here:
            return _without_type_variables
        if TRANSFORMS.get(fullname, VMAP) != VMAP:  # jax.jit(lambda v: ...)(x): the lambda typed by x
            return called_lambda_signature
        return self.call_signature(fullname)

    def call_signature(self, fullname: str) -> Callable[[Any], FunctionLike] | None:
        """The signature hook of a call of an annotated function or method (``_call_signature``)."""
        if self._plugin.config.annotated_calls and not fullname.startswith(SKIP_ALIAS_LOOKUP):
            return _call_signature if self._annotated_callee(fullname) is not None else None
        return None

    def method(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        plugin = self._plugin
        if fullname in OPERATOR_METHODS:
            dunder = fullname.rsplit(".", 1)[1]
            hook = placing(plugin, OpKind.ELEMENTWISE, meeting(plugin, partial(operator_hook, plugin, dunder)))
            return checked(noting_unknowns(plugin, hook, dunder))
        if fullname == GETITEM:
            hook = placing_index(plugin, indexed(plugin, partial(getitem_hook, plugin)))
            return checked(noting_unknowns(plugin, hook, "x[...]"))
        if fullname == AT_GETITEM:
            return checked(partial(at_hook, plugin))
        if fullname in AT_UPDATES:
            return checked(placing_update(plugin, partial(at_update_hook, plugin, fullname.rsplit(".", 1)[1])))
        if fullname in STRUCTURE_METHODS:
            method: Callable[[Any], Type] = partial(method_hook, plugin, STRUCTURE_METHODS[fullname])
            if STRUCTURE_METHODS[fullname] in REDUCTION_METHODS:
                method = placing(
                    plugin, rule_key(OpKind.REDUCTION, STRUCTURE_METHODS[fullname]), keeping(plugin, method)
                )
            else:
                method = placing(plugin, STRUCTURE_METHODS[fullname], method)
            return checked(noting_unknowns(plugin, method, _short(fullname)))
        if fullname == "functools.partial.__call__":
            return checked(partial(partial_call_hook, plugin))
        if fullname in SCANNED_READS:
            return checked(partial(scanned_read_hook, plugin))
        if fullname in POWERS:
            return checked(power_hook)
        if is_numpy_ufunc_call(fullname):
            return checked(ufunc_hook)
        if plugin.config.annotated_calls:
            callee = self._group_callee(fullname)
            if callee is not None:  # a method with a "*rest" group: bind it as a call of a function
                return checked(partial(annotated_call_hook, plugin, _bound_method(callee)))
        return None

    def _group_callee(self, fullname: str) -> CallableType | None:
        """The signature of an annotated function or method with a variadic group (``"*rest embed"``)."""
        if fullname.startswith(SKIP_ALIAS_LOOKUP):
            return None
        callee = self._annotated_callee(fullname)
        if callee is None or not any(mentions_group(t) for t in (*callee.arg_types, callee.ret_type)):
            return None
        return callee

    def _annotated_callee(self, fullname: str) -> CallableType | None:
        """The signature of a module-level function with NamedArray parameters, else ``None``."""
        symbol = self._plugin.lookup_fully_qualified(fullname)
        node = symbol.node if symbol is not None else None
        if not isinstance(node, (FuncDef, Decorator)):
            return None
        cached = self._callees.get(fullname)
        if cached is not None and cached[0] is node:
            return cached[1]
        typ = node.type if isinstance(node, FuncDef) else (node.var.type or node.func.type)
        proper = get_proper_type(typ) if typ is not None else None
        callee = proper if isinstance(proper, CallableType) and has_named_params(proper) else None
        if typ is not None:
            self._callees[fullname] = (node, callee)
        return callee
