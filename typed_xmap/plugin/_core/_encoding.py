"""The encoding of a named shape as a mypy type, and back.

``NamedArray[f32, "batch=32 in", "n 3"]`` is ``NamedArray_[float32, NS, PS]`` where

- ``NS`` is an anonymous, closed TypedDict whose keys are all Required and ReadOnly:
  ``{'batch': Literal[32], 'in': Any}``. A known size is a ``Literal``; an unknown one is ``Any``, so it
  agrees with every size (gradual: only two known, different sizes clash). Closed + Required make the key
  set exact; ReadOnly makes the items covariant, so ``"batch=32"`` fits a declared ``"batch"``.
- ``PS`` is ``tuple[Literal[3], Any]`` for positional dims, or ``tuple[Any, ...]`` (unknown rank).

An ``Any`` NS or PS means "unknown": the plugin never reports on unknown shapes.

A variadic group (``"*rest embed"``) is the key ``'*rest'`` of NS, a symbolic axis: inside the function
that declares it, operations carry it like an axis, and a value without it (or without ``embed``) does not
fit the declared return. At a call the plugin opens the parameter (``open_groups``: ``embed`` and any other
axes) and gives the return the argument's axes in place of the group (``_calls``).

A placement (``"batch@data seq"``: ``batch`` split over the mesh axis ``data``) rides in the same fallback
text, beside the sizes (``Shape_[Literal["batch@data=8 seq"]]``): mypy never compares it (gradual: a value
whose placement the checker lost fits any), the hooks read it (``Shape.placement``) and mypy prints it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from mypy.nodes import TypeAlias, TypeInfo
from mypy.types import (
    AnyType,
    Instance,
    LiteralType,
    ProperType,
    TupleType,
    Type,
    TypedDictType,
    TypeOfAny,
    UnionType,
    UnpackType,
    get_proper_type,
)

from ..._algebra import (
    GROUP_PREFIX,
    SymbolicSize,
    describe_named_shape,
    parse_placed_text,
    parse_symbolic_spec,
    symbolic_spec,
)

if TYPE_CHECKING:
    from mypy.plugin import Plugin

__all__ = [
    "NAMED_ARRAY",
    "Shape",
    "TypeFactory",
    "carries_placement",
    "carries_symbols",
    "decode",
    "describe",
    "has_group",
    "is_named_array",
    "items_of",
    "map_items",
    "mentions_group",
    "open_groups",
]

NAMED_ARRAY = "typed_xmap._static.NamedArray_"
SHAPE_FALLBACK = "typed_xmap._static.Shape_"
"""The class an encoded named shape (NS) names as its TypedDict fallback,
``Shape_[Literal["batch=8 mlp=cfg.mlp // 2"]]``: the shape in the user's notation, symbolic sizes included.
mypy ignores a TypedDict's fallback when it compares TypedDicts, so it carries what an item cannot (a symbol
is ``Any`` in the items: gradual), and mypy prints it in its errors (``_messages`` turns it into
``NamedArray[f32, "batch=8 mlp=cfg.mlp // 2"]``)."""
SCALARS = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.complex"})

Size = int | None


@dataclass(frozen=True)
class Shape:
    """A value's dtype type and shape; ``named``/``positional`` are ``None`` when unknown."""

    dtype: Type
    named: dict[str, Size] | None
    positional: tuple[Size, ...] | None
    scalar: bool = False
    symbols: Mapping[str, SymbolicSize] = field(default_factory=dict)
    """The symbolic sizes of the axes whose size ``named`` has as ``None`` (``cfg.mlp``)."""
    placement: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The mesh axes the axes whose placement is known are split over (``"batch@data"``)."""

    @property
    def known(self) -> bool:
        return self.named is not None


def describe(named: Mapping[str, Size]) -> str:
    """``{'batch': 32, 'in': None}`` -> ``"'batch=32 in'"`` (the user's notation, quoted)."""
    return describe_named_shape(named)


def has_group(named: Mapping[str, object]) -> bool:
    """Whether a named shape holds a variadic group's key (``'*rest'``)."""
    return any(name.startswith(GROUP_PREFIX) for name in named)


def items_of(typ: Type) -> list[Type] | None:
    """The items of a tuple or union type (a signature's ``tuple[...]`` or ``X | None``); ``None``: neither."""
    proper = get_proper_type(typ)
    return list(proper.items) if isinstance(proper, (TupleType, UnionType)) else None


def map_items(typ: Type, function: Callable[[Type], Type]) -> Type | None:
    """``typ`` with ``function`` applied to each item of it, a tuple or a union; ``None``: neither."""
    proper = get_proper_type(typ)
    if isinstance(proper, TupleType):
        return proper.copy_modified(items=[function(item) for item in proper.items])
    if isinstance(proper, UnionType):
        return UnionType([function(item) for item in proper.items], proper.line, proper.column)
    return None


def mentions_group(typ: Type) -> bool:
    """Whether ``typ`` is a NamedArray with a variadic group, or a tuple or union holding one (a signature's
    ``tuple[NamedArray[f32, "*rest chan"], ...]``, ``NamedArray[f32, "*rest chan"] | None``)."""
    items = items_of(typ)
    if items is not None:
        return any(mentions_group(item) for item in items)
    shape = decode(typ)
    return shape is not None and shape.named is not None and has_group(shape.named)


def open_groups(typ: Type) -> Type:
    """``NamedArray_[DT, {'*rest', 'embed'}, PS]`` -> ``NamedArray_[DT, open {'embed'}, PS]``: what a
    parameter with a group accepts at a call (its listed axes and any others), the items of a tuple or a
    union alike; other types unchanged."""
    mapped = map_items(typ, open_groups)
    if mapped is not None:
        return mapped
    proper = get_proper_type(typ)
    if not (isinstance(proper, Instance) and proper.type.fullname == NAMED_ARRAY and len(proper.args) == 3):
        return typ
    named = get_proper_type(proper.args[1])
    if not isinstance(named, TypedDictType) or not has_group(named.items):
        return typ
    items = {k: v for k, v in named.items.items() if not k.startswith(GROUP_PREFIX)}
    # the shown shape (the fallback's text) keeps the group: messages print "*rest embed", as it was written
    opened = TypedDictType(items, set(items), set(items), named.fallback, is_closed=False)
    return proper.copy_modified(args=[proper.args[0], opened, proper.args[2]])


def is_named_array(typ: Type) -> bool:
    shape = decode(typ)
    return shape is not None and not shape.scalar


def _size(typ: Type) -> Size:
    proper = get_proper_type(typ)
    if isinstance(proper, LiteralType) and isinstance(proper.value, int) and not isinstance(proper.value, bool):
        return proper.value
    if isinstance(proper, Instance) and proper.last_known_value is not None:
        return _size(proper.last_known_value)
    return None


Placement = Mapping[str, tuple[str, ...]]
_NAMED_UNKNOWN: tuple[None, Mapping[str, SymbolicSize], Placement] = (None, {}, {})


def _decode_named(typ: Type) -> tuple[dict[str, Size] | None, Mapping[str, SymbolicSize], Placement]:
    proper = get_proper_type(typ)
    if not isinstance(proper, TypedDictType) or proper.required_keys != set(proper.items) or not proper.is_closed:
        return _NAMED_UNKNOWN  # Any, a join with optional keys, or an open parameter (open_groups): unknown
    named = {name: _size(item) for name, item in proper.items.items()}
    fallback = proper.fallback
    if fallback.type.fullname != SHAPE_FALLBACK or not fallback.args:
        return named, {}, {}
    text = get_proper_type(fallback.args[0])
    if not isinstance(text, LiteralType) or not isinstance(text.value, str):
        return named, {}, {}
    placement = _placement_of(text.value, frozenset(named)) if "@" in text.value else {}
    if not has_symbol(text.value):
        return named, {}, placement
    return named, _symbols_of(text.value, frozenset(n for n, s in named.items() if s is None)), placement


@lru_cache(maxsize=4096)
def _placement_of(text: str, names: frozenset[str]) -> Placement:
    """The placements a fallback's text gives the axes the items hold (a join may have dropped others)."""
    return {n: m for n, m in parse_placed_text(text).items() if n in names}


_SYMBOL = re.compile(r"=(?:[^\d]|\d+ [-+*/]{1,2} )")
"""A symbolic size in a shown shape: ``=cfg.n``, ``=2 * n`` (an operator between spaces; ``batch=4 *rest`` is a
size and a group)."""


def _shown_text(typ: Type) -> str | None:
    """The named shape a NamedArray type shows (its fallback's text), without decoding the type."""
    proper = get_proper_type(typ)
    if not isinstance(proper, Instance) or len(proper.args) != 3:
        return None
    named = get_proper_type(proper.args[1])
    if not isinstance(named, TypedDictType) or not named.fallback.args:
        return None
    text = get_proper_type(named.fallback.args[0])
    return text.value if isinstance(text, LiteralType) and isinstance(text.value, str) else None


def carries_symbols(typ: Type) -> bool:
    """Whether ``typ`` is a NamedArray whose named shape holds a symbolic size: the hooks' fast test."""
    text = _shown_text(typ)
    return text is not None and has_symbol(text)


def carries_placement(typ: Type) -> bool:
    """Whether ``typ`` is a NamedArray whose named shape holds a known placement (``batch@data``)."""
    text = _shown_text(typ)
    return text is not None and "@" in text


@lru_cache(maxsize=4096)
def has_symbol(text: str) -> bool:
    """Whether a shape in the user's notation holds a symbolic size (``mlp=cfg.mlp``, ``a=2 * n``)."""
    return _SYMBOL.search(text) is not None


@lru_cache(maxsize=4096)
def _symbols_of(text: str, unknown: frozenset[str]) -> Mapping[str, SymbolicSize]:
    """The symbols a fallback's text gives the axes whose item is ``Any`` (a join may have widened others)."""
    if not unknown:
        return {}
    return {n: s for n, s in parse_symbolic_spec(text).items() if n in unknown and isinstance(s, SymbolicSize)}


def _decode_positional(typ: Type) -> tuple[Size, ...] | None:
    proper = get_proper_type(typ)
    if not isinstance(proper, TupleType):
        return None  # tuple[Any, ...] or Any: unknown rank
    if any(isinstance(item, UnpackType) for item in proper.items):
        return None
    return tuple(_size(item) for item in proper.items)


def decode(typ: Type) -> Shape | None:
    """The shape a type carries: a NamedArray_, a Python scalar (no axes), or ``None`` (not an array)."""
    proper = get_proper_type(typ)
    if isinstance(proper, LiteralType):
        proper = proper.fallback
    if not isinstance(proper, Instance):
        return None
    fullname = proper.type.fullname
    if fullname == NAMED_ARRAY and len(proper.args) == 3:
        dtype, named, positional = proper.args
        sizes, symbols, placement = _decode_named(named)
        return Shape(dtype, sizes, _decode_positional(positional), symbols=symbols, placement=placement)
    if fullname in SCALARS:
        return Shape(AnyType(TypeOfAny.special_form), {}, (), scalar=True)
    return None


class TypeFactory:
    """Builds the encoded types; TypeInfo lookups are memoized per build (dmypy reloads modules)."""

    def __init__(self, plugin: Plugin) -> None:
        self._plugin = plugin
        self._infos: dict[str, TypeInfo] = {}
        self._fallbacks: dict[str, Instance] = {}
        self._modules: object = None

    def info(self, fullname: str) -> TypeInfo | None:
        modules = getattr(self._plugin, "_modules", None)
        if modules is not self._modules:
            self._infos = {}
            self._fallbacks = {}
            self._modules = modules
        found = self._infos.get(fullname)
        if found is None:
            symbol = self._plugin.lookup_fully_qualified(fullname)
            node = symbol.node if symbol is not None else None
            if not isinstance(node, TypeInfo):
                return None
            found = self._infos[fullname] = node
        return found

    def marker_dtype(self, marker: str) -> Type:
        """The dtype ``NamedArray[<marker>, ...]`` carries (``f32``: ``numpy.float32``), read from the
        marker's alias in ``typed_xmap._static``; Any when it is not loaded."""
        symbol = self._plugin.lookup_fully_qualified(f"typed_xmap._static.{marker}")
        node = symbol.node if symbol is not None else None
        target = get_proper_type(node.target) if isinstance(node, TypeAlias) else None
        if isinstance(target, Instance) and target.type.fullname == NAMED_ARRAY and target.args:
            return target.args[0]
        return self.any()

    def instance(self, fullname: str, args: Sequence[Type] = ()) -> Instance | None:
        info = self.info(fullname)
        return Instance(info, list(args)) if info is not None else None

    @staticmethod
    def any() -> AnyType:
        return AnyType(TypeOfAny.special_form)

    def size(self, size: Size) -> Type:
        if size is None:
            return self.any()
        fallback = self.instance("builtins.int")
        return LiteralType(size, fallback) if fallback is not None else self.any()

    def named_shape(
        self,
        named: Mapping[str, Size] | None,
        symbols: Mapping[str, SymbolicSize] | None = None,
        placement: Placement | None = None,
    ) -> ProperType:
        if named is None:
            return self.any()
        shown = named if not symbols else {n: s if s is not None else symbols.get(n) for n, s in named.items()}
        fallback = self._fallback(symbolic_spec(shown, placement))
        if fallback is None:
            return self.any()
        keys = set(named)
        return TypedDictType(
            {name: self.size(size) for name, size in named.items()},
            set(keys),
            set(keys),
            fallback,
            is_closed=True,
        )

    def _fallback(self, text: str) -> Instance | None:
        """``Shape_[Literal[text]]`` (``typing._TypedDict`` when ``_static`` is not loaded), memoized per build."""
        self.info(SHAPE_FALLBACK)  # a new build (dmypy) forgets the memo
        found = self._fallbacks.get(text)
        if found is None:
            text_type = self.instance("builtins.str")
            found = self.instance(SHAPE_FALLBACK, [LiteralType(text, text_type)]) if text_type is not None else None
            if found is None:
                return self.instance("typing._TypedDict")
            self._fallbacks[text] = found
        return found

    def positional_shape(self, positional: Sequence[Size] | None) -> ProperType:
        fallback = self.instance("builtins.tuple", [self.any()])
        if fallback is None:
            return self.any()
        if positional is None:
            return fallback
        return TupleType([self.size(size) for size in positional], fallback)

    def array(
        self,
        dtype: Type,
        named: Mapping[str, Size] | None,
        positional: Sequence[Size] | None,
        symbols: Mapping[str, SymbolicSize] | None = None,
        placement: Placement | None = None,
    ) -> Type:
        """``NamedArray_[dtype, NS, PS]``; Any when typed_xmap's static module is not loaded."""
        ns = self.named_shape(named, symbols, placement)
        result = self.instance(NAMED_ARRAY, [dtype, ns, self.positional_shape(positional)])
        return result if result is not None else self.any()

    def encode(self, shape: Shape) -> Type:
        return self.array(shape.dtype, shape.named, shape.positional, shape.symbols, shape.placement)
