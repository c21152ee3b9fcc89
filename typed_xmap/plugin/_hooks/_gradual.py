"""``NamedArray_[Any, Any, Any]`` written by the user means what the plugin's own unknown parts mean.

The plugin writes an unknown dtype or shape as a special-form ``Any``; mypy reads a written ``Any`` as an
explicit one, and an explicit ``Any`` in a TypeVar's bound (``T = TypeVar("T", bound=NamedArray_[Any, Any,
Any])``) makes every operator call on a ``T`` "ambiguous between overloads", hence ``Any``. Analysed as
special forms, ``x * x`` with ``x: T`` is ``T`` as with ``bound=tx.AnyNamedArray``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mypy.types import AnyType, Instance, Type, TypeOfAny, get_proper_type

if TYPE_CHECKING:
    from mypy.plugin import AnalyzeTypeContext

    from ._protocols import TypedXmapPlugin

__all__ = ["analyze_named_array"]


def analyze_named_array(plugin: TypedXmapPlugin, ctx: AnalyzeTypeContext) -> Type:
    """``NamedArray_[...]`` as mypy analyses it, with its explicit ``Any`` arguments as special forms."""
    analysed = plugin.default_analysis(ctx)
    proper = get_proper_type(analysed)
    if not isinstance(proper, Instance):
        return analysed
    args = [_gradual(arg) for arg in proper.args]
    changed = any(new is not old for new, old in zip(args, proper.args, strict=True))  # every Any == every Any
    return proper.copy_modified(args=args) if changed else analysed


def _gradual(arg: Type) -> Type:
    proper = get_proper_type(arg)
    if isinstance(proper, AnyType) and proper.type_of_any == TypeOfAny.explicit:
        return AnyType(TypeOfAny.special_form)
    return arg
