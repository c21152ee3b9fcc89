"""The typed_xmap mypy plugin: ``plugins = typed_xmap.plugin`` in a mypy config.

It reads ``NamedArray[f32, "batch=32 in", "n 3"]`` as a named shape (``_annotated``, ``_encoding``), infers
named shapes through operators and ``typed_xmap.numpy`` (``_broadcast``, ``_reductions``, ``_einsum``),
indexing by name (``_indexing``), calls (``_calls``) and ``xmap`` (``_xmap``), and reports with its own
error codes (``_codes``). All rules come from typed_xmap's pure named-shape algebra, shared with the
runtime checker. Importing it never imports jax.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mypy.erasetype import erase_typevars
from mypy.nodes import Decorator, FuncDef, MypyFile, TypeAlias
from mypy.plugin import Plugin
from mypy.types import CallableType, FunctionLike, Type, get_proper_type

from .._algebra import MARKERS, TNP_OPERATIONS, OpKind
from ._core._codes import ALL_CODES
from ._core._config import load_config
from ._core._encoding import NAMED_ARRAY, TypeFactory, decode, has_group, open_groups
from ._core._messages import install as install_messages
from ._core._unions import per_member
from ._hooks._annotated import analyze_annotated, analyze_dtype_marker, repair_alias
from ._hooks._broadcast import OPERATOR_METHODS as OPERATOR_DUNDERS, elementwise_hook, operator_hook
from ._hooks._calls import annotated_call_hook, has_named_params, named_hook, positional_hook
from ._hooks._containers import ContainerChecks
from ._hooks._einsum import dot_hook, einsum_hook
from ._hooks._gradual import analyze_named_array
from ._hooks._indexing import AT_GETITEM, AT_UPDATES, GETITEM, at_hook, at_update_hook, getitem_hook, indexing_hook
from ._hooks._isinstance import ISINSTANCE, isinstance_signature
from ._hooks._named_vmap import NAMED_VMAP, named_vmap_hook
from ._hooks._placement import RULES as PLACED, placing, placing_index
from ._hooks._reductions import reduction_hook
from ._hooks._scan import SCAN, scan_hook, scan_signature
from ._hooks._sharding import SHARDING_NAMES, sharding_hook
from ._hooks._star_args import unreached_defaults
from ._hooks._structure import (
    METHODS as STRUCTURE_METHODS,
    REDUCTION_METHODS,
    TX_FUNCTIONS,
    method_hook,
    structure_hook,
    tx_hook,
)
from ._hooks._symbolic import indexed, keeping, meeting
from ._hooks._transforms import TRANSFORMS, partial_call_hook, partial_new_hook, transform_hook
from ._hooks._unknowns import POWERS, noting_unknowns, power_hook
from ._hooks._windows import RANDOM_DRAWS, random_hook, selection_hook, window_hook
from ._hooks._xmap import XMAP_NAMES, Resources, xmap_hook

if TYPE_CHECKING:
    from mypy.options import Options
    from mypy.plugin import (
        AnalyzeTypeContext,
        FunctionContext,
        FunctionSigContext,
        MethodContext,
        MethodSigContext,
        ReportConfigContext,
    )
    from mypy.typeanal import TypeAnalyser

__all__ = ["ALL_CODES", "TypedXmapPlugin", "plugin"]


def _source_digest() -> str:
    """A digest of the plugin's and the algebra's sources: any change invalidates mypy's cache."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted([*package.glob("plugin/**/*.py"), *package.glob("_algebra/*.py"), package / "_static.py"]):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


SOURCE_DIGEST = _source_digest()

ANNOTATED = frozenset({"typing.Annotated", "typing_extensions.Annotated"})
DTYPE_MARKERS = frozenset(f"typed_xmap._static.{name}" for name in MARKERS)
SKIP_ALIAS_LOOKUP = ("builtins.", "typing.", "typing_extensions.", "collections.", "numpy.", "jax.", "typed_xmap.")
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


def _checked(hook: Callable[[Any], Type]) -> Callable[[Any], Type]:
    """A checker hook that can never crash mypy: an unexpected failure means "no inference"."""

    def guarded(ctx: Any) -> Type:
        try:
            install_messages(getattr(getattr(getattr(ctx, "api", None), "msg", None), "errors", None))
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


def _has_group(typ: Type) -> bool:
    shape = decode(typ)
    return shape is not None and shape.named is not None and has_group(shape.named)


def _call_signature(ctx: FunctionSigContext | MethodSigContext) -> FunctionLike:
    """An annotated function's signature at a call: a parameter ``NamedArray[f32, "*rest embed"]`` accepts
    any value with ``embed`` (its group stands for the others; the return's group is the arguments',
    ``annotated_call_hook``), and a trailing ``*weights`` of unknown length leaves the optional parameters it
    cannot fill at their defaults (``_star_args``)."""
    signature = ctx.default_signature
    if any(_has_group(t) for t in signature.arg_types):
        signature = signature.copy_modified(arg_types=[open_groups(t) for t in signature.arg_types])
    try:
        return unreached_defaults(ctx, signature)
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


class TypedXmapPlugin(Plugin):
    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.config = load_config(options.config_file)
        self.types = TypeFactory(self)
        self.resources = Resources(self)
        self.containers = ContainerChecks()
        self.in_annotated = 0
        self._skip_next_hook = False
        self._callees: dict[str, tuple[object, CallableType | None]] = {}
        self._plain_names: set[str] = set()
        self._plain_names_build: object = None
        # mypy asks for a type-analysis hook for every name it analyses (~45 per line of a typical file)
        self._type_hooks = {name: self._analysed(analyze_annotated) for name in ANNOTATED}
        self._type_hooks |= {name: self._analysed(analyze_dtype_marker) for name in DTYPE_MARKERS}
        self._type_hooks[NAMED_ARRAY] = self._analysed(analyze_named_array)

    # -- semantic analysis -------------------------------------------------------------------
    def default_analysis(self, ctx: AnalyzeTypeContext) -> Type:
        """What mypy itself makes of ``ctx.type``: analyse it again with this plugin's hook skipped once
        (the first hook lookup during that analysis is for ``ctx.type`` itself)."""
        self._skip_next_hook = True
        try:
            return cast("TypeAnalyser", ctx.api).visit_unbound_type_nonoptional(ctx.type, False)
        finally:
            self._skip_next_hook = False

    def _analysed(self, hook: Callable[[TypedXmapPlugin, AnalyzeTypeContext], Type]) -> Callable[..., Type]:
        def guarded(ctx: AnalyzeTypeContext) -> Type:
            try:
                install_messages(getattr(getattr(ctx.api, "api", None), "errors", None))
                return hook(self, ctx)
            except Exception:
                if os.environ.get(DEBUG_ENV):
                    raise
                self.in_annotated = 0
                return self.default_analysis(ctx)

        return guarded

    def get_type_analyze_hook(self, fullname: str) -> Callable[[AnalyzeTypeContext], Type] | None:
        if self._skip_next_hook:
            self._skip_next_hook = False
            return None
        hook = self._type_hooks.get(fullname)
        if hook is not None or fullname.startswith(SKIP_ALIAS_LOOKUP):  # most names: no alias of ours to repair
            return hook
        modules = getattr(self, "_modules", None)
        if modules is not self._plain_names_build:  # a new build (dmypy): forget what was learnt
            self._plain_names, self._plain_names_build = set(), modules
        if fullname in self._plain_names:
            return None
        symbol = self.lookup_fully_qualified(fullname)
        if symbol is not None and symbol.node is not None:
            if isinstance(symbol.node, TypeAlias):
                repair_alias(symbol.node)
            else:
                self._plain_names.add(fullname)  # a class or a type variable: never an alias to repair
        return None

    # -- type checking -----------------------------------------------------------------------
    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        hook = self._function_hook(fullname)
        return _checked(per_member(hook)) if hook is not None else None

    def _function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        if fullname.startswith(TNP):
            operation = TNP_OPERATIONS.get(fullname[len(TNP) :])
            if operation is None:  # not in the table: mypy types it as the stub says
                return None
            hook: Callable[[Any], Type] = partial(HOOK_OF_KIND[operation.kind], self, operation.name)
            if operation.kind in MEETING:
                hook = meeting(self, hook)
            elif operation.kind in KEEPING:
                hook = keeping(self, hook)
            hook = placing(self, operation.kind if operation.kind in PLACED else operation.name, hook)
            return noting_unknowns(self, hook, f"tnp.{operation.name}")
        if fullname in XMAP_NAMES:
            return partial(xmap_hook, self)
        if fullname in TX_FUNCTIONS:
            hook = placing(self, fullname.rsplit(".", 1)[1], partial(tx_hook, self, fullname))
            return noting_unknowns(self, hook, _short(fullname))
        if fullname in RANDOM_DRAWS:
            return noting_unknowns(self, partial(random_hook, self, fullname), _short(fullname))
        if fullname in NAMED:
            return noting_unknowns(self, partial(named_hook, self), "tx.named")
        if fullname in SHARDING_NAMES:
            return partial(sharding_hook, self, SHARDING_NAMES[fullname])
        if fullname in TRANSFORMS:
            return partial(transform_hook, self, TRANSFORMS[fullname])
        if fullname in NAMED_VMAP:
            return partial(named_vmap_hook, self)
        if fullname in SCAN:
            return partial(scan_hook, self)
        if fullname == "functools.partial":
            return partial(partial_new_hook, self)
        if fullname in POSITIONAL:
            return partial(positional_hook, self)
        if self.config.annotated_calls:
            callee = self._annotated_callee(fullname)
            if callee is not None:
                hook = meeting(self, partial(annotated_call_hook, self, callee))
                return noting_unknowns(self, hook, fullname, declared=True)
        return None

    def get_function_signature_hook(self, fullname: str) -> Callable[[FunctionSigContext], FunctionLike] | None:
        if fullname in ISINSTANCE:
            return isinstance_signature
        if fullname in SCAN:
            return partial(scan_signature, self)
        typed_here = fullname in TX_FUNCTIONS or fullname in RANDOM_DRAWS
        if (fullname.startswith(TNP) and fullname[len(TNP) :] in TNP_OPERATIONS) or typed_here:
            return _without_type_variables
        return self._call_signature_hook(fullname)

    def get_method_signature_hook(self, fullname: str) -> Callable[[MethodSigContext], FunctionLike] | None:
        return self._call_signature_hook(fullname)

    def _call_signature_hook(self, fullname: str) -> Callable[[Any], FunctionLike] | None:
        if self.config.annotated_calls and not fullname.startswith(SKIP_ALIAS_LOOKUP):
            return _call_signature if self._annotated_callee(fullname) is not None else None
        return None

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        if fullname in OPERATOR_METHODS:
            dunder = fullname.rsplit(".", 1)[1]
            hook = placing(self, OpKind.ELEMENTWISE, meeting(self, partial(operator_hook, self, dunder)))
            return _checked(noting_unknowns(self, hook, dunder))
        if fullname == GETITEM:
            hook = placing_index(self, indexed(self, partial(getitem_hook, self)))
            return _checked(noting_unknowns(self, hook, "x[...]"))
        if fullname == AT_GETITEM:
            return _checked(partial(at_hook, self))
        if fullname in AT_UPDATES:
            return _checked(partial(at_update_hook, self, fullname.rsplit(".", 1)[1]))
        if fullname in STRUCTURE_METHODS:
            method: Callable[[Any], Type] = partial(method_hook, self, STRUCTURE_METHODS[fullname])
            if STRUCTURE_METHODS[fullname] in REDUCTION_METHODS:
                method = placing(self, OpKind.REDUCTION, keeping(self, method))
            else:
                method = placing(self, STRUCTURE_METHODS[fullname], method)
            return _checked(noting_unknowns(self, method, _short(fullname)))
        if fullname == "functools.partial.__call__":
            return _checked(partial(partial_call_hook, self))
        if fullname in POWERS:
            return _checked(power_hook)
        if self.config.annotated_calls:
            callee = self._group_callee(fullname)
            if callee is not None:  # a method with a "*rest" group: bind it as a call of a function
                return _checked(partial(annotated_call_hook, self, _bound_method(callee)))
        return None

    def _group_callee(self, fullname: str) -> CallableType | None:
        """The signature of an annotated function or method with a variadic group (``"*rest embed"``)."""
        if fullname.startswith(SKIP_ALIAS_LOOKUP):
            return None
        callee = self._annotated_callee(fullname)
        if callee is None or not any(_has_group(t) for t in (*callee.arg_types, callee.ret_type)):
            return None
        return callee

    def _annotated_callee(self, fullname: str) -> CallableType | None:
        """The signature of a module-level function with NamedArray parameters, else ``None``."""
        symbol = self.lookup_fully_qualified(fullname)
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

    def get_additional_indirect_deps(self, file: MypyFile) -> set[str]:
        """Called once ``file`` is type-checked: check the containers of NamedArrays it builds (``_containers``)."""
        try:
            self.containers.check_module(file)
        except Exception:
            if os.environ.get(DEBUG_ENV):
                raise
        return set()

    # -- cache ---------------------------------------------------------------------------------
    def report_config_data(self, ctx: ReportConfigContext) -> Any:
        """A plugin upgrade or an option change invalidates mypy's cache."""
        return {"typed_xmap": _installed_version(), "source": SOURCE_DIGEST, **self.config.as_data()}


def plugin(version: str) -> type[TypedXmapPlugin]:
    """mypy's entry point."""
    return TypedXmapPlugin


@cache  # mypy asks once per module: reading the installed metadata costs ~0.7 ms each time
def _installed_version() -> str:
    """The installed typed_xmap's version (part of mypy's cache key; the plugin imports nothing outside the algebra)."""
    try:
        return importlib.metadata.version("typed-xmap")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
