"""Containers of NamedArrays bind sizes where they are built, as ``@tx.typed`` binds them at a call.

``{"w_in": normal(k, {"feat": f, "hidden": cfg.hidden}), "w_t": normal(k, {"temb": t, "hidden": cfg.hidden //
2})}`` (a dict literal, in a ``TypedDict`` context or not), ``Params(w_in=..., w_t=...)`` (a ``NamedTuple``, a
dataclass, a ``TypedDict`` call) and the containers nested in them: every leaf's axis name has one size across
the container, a variadic group is each leaf's own (the algebra's ``meet_fields``, the runtime's rule). Sizes that
differ whatever the config are ``named-axis-size`` where the container is built, naming the two fields; the
fields' declared types carry names only, so this is where the sizes still are.

mypy has no hook for a dict literal, so the check runs once a module is type-checked
(``get_additional_indirect_deps``, called then), over the types the checker inferred for its expressions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mypy.nodes import CallExpr, DictExpr, Expression, StrExpr
from mypy.types import CallableType, Instance, TupleType, Type, TypedDictType, get_proper_type

from ..._algebra import NamedShapeError, StaticSize, meet_fields
from .._core._encoding import decode
from .._core._sizes import with_symbols
from .._core._support import report
from .._core._tree import expressions
from ._declared import check_declared_placements

if TYPE_CHECKING:
    from mypy.nodes import MypyFile

__all__ = ["ContainerChecks", "leaves"]

Leaf = tuple[str, dict[str, StaticSize]]


class ContainerChecks:
    """The checker of each module being type-checked (recorded by the hooks), and the check run after it."""

    def __init__(self) -> None:
        self._checkers: dict[str, Any] = {}

    def record(self, api: Any) -> None:
        tree = getattr(api, "tree", None)
        if tree is not None and tree.fullname not in self._checkers:
            self._checkers[tree.fullname] = api

    def check_module(self, tree: MypyFile) -> None:
        """Check every container built in ``tree`` (a module just type-checked), and its declared placements
        (``_declared``); the checker is let go."""
        api = self._checkers.pop(tree.fullname, None)
        if api is None or getattr(api, "tree", None) is not tree:
            return
        api.errors.set_file(api.path, tree.fullname, scope=api.tscope, options=api.options)
        with api.tscope.module_scope(tree.fullname):
            self._check(api, tree)
            check_declared_placements(api, tree)  # the other check run once a module is type-checked

    @staticmethod
    def _check(api: Any, tree: MypyFile) -> None:
        inner: set[int] = set()
        for expr in expressions(tree.defs):
            if id(expr) in inner or not isinstance(expr, (DictExpr, CallExpr)):
                continue
            built = _container(api, expr)
            if built is None:
                continue
            leaves: list[Leaf] = []
            _leaves(api, expr, "", leaves, inner)
            if len(leaves) < 2:
                continue
            try:
                meet_fields(leaves, container=built)
            except NamedShapeError as error:
                report(api, error, expr)


def _container(api: Any, expr: DictExpr | CallExpr) -> str | None:
    """What ``expr`` builds, as messages name it (``Params``, ``dict``), or ``None`` when it builds no container."""
    typ = get_proper_type(api.lookup_type_or_none(expr))
    if isinstance(typ, TypedDictType):
        return typ.fallback.type.name if typ.fallback.type.fullname != "typing._TypedDict" else "dict"
    if isinstance(typ, TupleType):  # a NamedTuple's type
        typ = typ.partial_fallback
    if not isinstance(typ, Instance):
        return None
    if isinstance(expr, DictExpr):
        return "dict"
    info = typ.type
    if info.is_named_tuple or "dataclass" in info.metadata:
        return info.name
    return None


def _fields(api: Any, expr: DictExpr | CallExpr) -> Iterator[tuple[str, Expression]]:
    """(path step, value) of each field a container expression builds: ``['w_in']`` or ``.w_in``."""
    if isinstance(expr, DictExpr):
        for key, value in expr.items:
            yield (f"[{key.value!r}]" if isinstance(key, StrExpr) else "[...]"), value
        return
    callee = get_proper_type(api.lookup_type_or_none(expr.callee))
    names = callee.arg_names if isinstance(callee, CallableType) else []
    typed_dict = isinstance(get_proper_type(api.lookup_type_or_none(expr)), TypedDictType)
    for position, (value, name) in enumerate(zip(expr.args, expr.arg_names, strict=True)):
        field = name or (names[position] if position < len(names) else None) or str(position)
        yield (f"[{field!r}]" if typed_dict else f".{field}"), value


def leaves(api: Any, expr: DictExpr | CallExpr) -> list[Leaf]:
    """The NamedArray leaves of the container ``expr`` builds, with their paths (``['cross']['query']``)."""
    found: list[Leaf] = []
    _leaves(api, expr, "", found, set())
    return found


def _leaves(api: Any, expr: Expression, path: str, found: list[Leaf], inner: set[int]) -> None:
    """The NamedArray leaves of the container ``expr`` builds (nested containers flattened), with their paths."""
    for step, value in _fields(api, expr):  # type: ignore[arg-type]
        if isinstance(value, (DictExpr, CallExpr)) and _container(api, value) is not None:
            inner.add(id(value))
            _leaves(api, value, path + step, found, inner)
            continue
        typ = _type(api, value)
        shape = decode(typ) if typ is not None else None
        if shape is not None and not shape.scalar and shape.named is not None:
            found.append((path + step, with_symbols(shape)))


def _type(api: Any, expr: Expression) -> Type | None:
    typ: Type | None = api.lookup_type_or_none(expr)
    return typ
