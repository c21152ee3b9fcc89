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
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mypy.nodes import MypyFile, TypeAlias
from mypy.plugin import Plugin

from .._algebra import MARKERS
from ._core._codes import ALL_CODES
from ._core._config import load_config
from ._core._encoding import NAMED_ARRAY, TypeFactory
from ._core._messages import install as install_messages, show_placements
from ._hooks._annotated import analyze_annotated, analyze_dtype_marker, analyze_group_alias, repair_alias
from ._hooks._backward import BackwardSteps
from ._hooks._containers import ContainerChecks
from ._hooks._gradual import analyze_named_array
from ._hooks._group_scope import groups_of
from ._hooks._lambdas import forget_typed_lambdas
from ._hooks._xmap import Resources
from ._routing import DEBUG_ENV, SKIP_ALIAS_LOOKUP, Routes

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
    from mypy.types import FunctionLike, Type

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


class TypedXmapPlugin(Plugin):
    def __init__(self, options: Options) -> None:
        super().__init__(options)
        forget_typed_lambdas()
        self.config = load_config(options.config_file)
        self.types = TypeFactory(self)
        self.resources = Resources(self)
        self.containers = ContainerChecks()
        self.backward = BackwardSteps()
        self.in_annotated = 0
        self.routes = Routes(self)
        self._skip_next_hook = False
        self._plain_names: set[str] = set()
        self._plain_names_build: object = None
        # mypy asks for a type-analysis hook for every name it analyses (~45 per line of a typical file)
        self._type_hooks = {name: self._analysed(analyze_annotated) for name in ANNOTATED}
        self._type_hooks |= {name: self._analysed(analyze_dtype_marker) for name in DTYPE_MARKERS}
        self._type_hooks[NAMED_ARRAY] = self._analysed(analyze_named_array)
        self._group_alias_hook = self._analysed(analyze_group_alias)

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
                if groups_of(symbol.node.target):  # its group binds or is open where it is used
                    return self._group_alias_hook
            else:
                self._plain_names.add(fullname)  # a class or a type variable: never an alias to repair
        return None

    # -- type checking: which hook serves which name (``_routing``) ------------------------------
    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        return self.routes.function(fullname)

    def get_function_signature_hook(self, fullname: str) -> Callable[[FunctionSigContext], FunctionLike] | None:
        return self.routes.function_signature(fullname)

    def get_method_signature_hook(self, fullname: str) -> Callable[[MethodSigContext], FunctionLike] | None:
        return self.routes.call_signature(fullname)

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return self.routes.method(fullname)

    def get_additional_indirect_deps(self, file: MypyFile) -> set[str]:
        """Called once ``file`` is type-checked: check the containers of NamedArrays it builds (``_containers``);
        ``reveal_type`` notes show placements (``_messages.show_placements``)."""
        try:
            self.containers.check_module(file)
            show_placements(file)
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
