"""What the hooks read of the plugin, as protocols: the hook modules import this, never the package.

``typed_xmap.plugin.TypedXmapPlugin`` (the mypy ``Plugin``) imports every hook module; were the hooks to
import it back for their annotations, the plugin's modules would form a cycle. The class satisfies these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mypy.nodes import Context, Expression, SymbolTableNode
    from mypy.plugin import AnalyzeTypeContext
    from mypy.types import Type

    from ..._algebra import Resource
    from .._core._config import PluginConfig
    from .._core._encoding import TypeFactory
    from ._backward import BackwardSteps
    from ._containers import ContainerChecks

__all__ = ["ResourceChecks", "TypedXmapPlugin"]


class ResourceChecks(Protocol):
    """``typed_xmap.plugin._hooks._xmap.Resources``: the axis resources of the xmaps being checked."""

    def record_call(self, fun: Expression | None, resources: Mapping[str, tuple[Resource, ...]]) -> None: ...

    def check_value(self, api: Any, named: Mapping[str, int | None], operation: str, context: Context) -> None: ...

    def body_placement(self, api: Any) -> Mapping[str, tuple[str, ...]]: ...


class TypedXmapPlugin(Protocol):
    """``typed_xmap.plugin.TypedXmapPlugin`` as the hooks see it."""

    in_annotated: int

    @property
    def config(self) -> PluginConfig: ...

    @property
    def types(self) -> TypeFactory: ...

    @property
    def resources(self) -> ResourceChecks: ...

    @property
    def containers(self) -> ContainerChecks: ...

    @property
    def backward(self) -> BackwardSteps: ...

    def default_analysis(self, ctx: AnalyzeTypeContext) -> Type: ...

    def lookup_fully_qualified(self, fullname: str) -> SymbolTableNode | None: ...
