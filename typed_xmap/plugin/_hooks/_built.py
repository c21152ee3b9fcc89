"""Sizes followed from ``init`` to ``forward``: a container's fields read with the sizes they were built with.

``init(cfg: Config, key)`` builds a ``Params`` (a ``TypedDict``, ``NamedTuple`` or dataclass) with
``{"fused": cfg.fused}`` and ``{"mlp": cfg.mlp // 2}``; ``forward(p: Params, x, cfg: Config)`` reads ``p["w_in"]``,
whose declared type carries axis names only. Where every place the module builds a ``Params`` gives a field's
axis one size over the builder's config parameter (``Config.fused``, an int, or arithmetic on them), the field
read in a function with one parameter of that config class has that size over it (``cfg.fused``): the sizes
``@tx.typed`` binds at run time, known statically. A size over anything else (a local, a second config, an
argument of another type), or two builders that disagree, leaves the axis as it was (unknown: never an error).

Builders are read from the module's types as far as it is checked (``init`` above ``forward``, as models are
written); a builder below its reader, or in another module, adds nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from mypy.nodes import CallExpr, ClassDef, Decorator, DictExpr, Expression, FuncDef, IndexExpr, MemberExpr, StrExpr
from mypy.types import CallableType, Instance, TupleType, TypedDictType, get_proper_type

from ..._algebra import StaticSize, SymbolicSize
from .._core._encoding import NAMED_ARRAY
from .._core._sizes import local_names
from .._core._tree import checked_function, expressions
from ._containers import leaves

__all__ = ["built_sizes", "reads_field"]

_PLACEHOLDER = "\x00{}\x00"
_ROOT = re.compile(r"(?<![\w.'\x00])([A-Za-z_]\w*)(\.[A-Za-z_]\w*)?")
_HELD = re.compile("\x00([^\x00]+)\x00")
Table = dict[str, dict[str, StaticSize]]
_TABLES: dict[tuple[int, str, int], tuple[object, object, Table]] = {}
"""Memoized tables, with the module and function they were read for (ids are reused once these are freed)."""


def reads_field(expr: Expression | None) -> bool:
    """The cheap test: ``expr`` reads a field by a literal key or an attribute (``p["w_in"]``, ``state.h``)."""
    return isinstance(expr, MemberExpr) or (isinstance(expr, IndexExpr) and isinstance(expr.index, StrExpr))


def built_sizes(api: Any, expr: Expression | None) -> dict[str, StaticSize]:
    """The sizes the field ``expr`` reads was built with, over this function's config parameter; ``{}`` when
    the checker knows none."""
    path = ""
    while reads_field(expr):
        assert isinstance(expr, (MemberExpr, IndexExpr))
        step = f".{expr.name}" if isinstance(expr, MemberExpr) else f"[{expr.index.value!r}]"  # type: ignore[attr-defined]
        path = step + path
        expr = expr.expr if isinstance(expr, MemberExpr) else expr.base
        container = _container_class(api, expr)
        if container is None:
            continue
        sizes = _table(api, container).get(path)
        if sizes is not None:
            return _over_this_function(api, sizes)
    return {}


def _container_class(api: Any, expr: Expression) -> str | None:
    """The fullname of the TypedDict, NamedTuple or dataclass ``expr``'s type is, else ``None``."""
    try:
        typ = get_proper_type(api.lookup_type_or_none(expr))
    except Exception:
        return None
    if isinstance(typ, TypedDictType):
        name: str = typ.fallback.type.fullname
        return None if name == "typing._TypedDict" else name
    if isinstance(typ, TupleType):
        typ = typ.partial_fallback
    if isinstance(typ, Instance) and (typ.type.is_named_tuple or "dataclass" in typ.type.metadata):
        return typ.type.fullname
    return None


def _config_parameters(function: FuncDef) -> dict[str, str]:
    """A function's parameters whose type is a class (not an array, not a builtin), by name: their class."""
    signature = function.type
    if not isinstance(signature, CallableType):
        return {}
    found: dict[str, str] = {}
    for name, typ in zip(signature.arg_names, signature.arg_types, strict=True):
        proper = get_proper_type(typ)
        if name is None or not isinstance(proper, Instance):
            continue
        fullname = proper.type.fullname
        if fullname != NAMED_ARRAY and not fullname.startswith(("builtins.", "jax", "numpy")):
            found[name] = fullname
    return found


def _functions(statements: list[Any]) -> Iterator[FuncDef]:
    for statement in statements:
        function = statement.func if isinstance(statement, Decorator) else statement
        if isinstance(function, FuncDef):
            yield function
        elif isinstance(function, ClassDef):
            yield from _functions(function.defs.body)


def _table(api: Any, container: str) -> Table:
    """Each field path of ``container`` -> its axes' sizes over the config class (``\\x00Config\\x00.mlp``), as
    every builder in the module checked so far agrees; memoized per module, container and reading function."""
    tree = getattr(api, "tree", None)
    reader = checked_function(api)
    if tree is None:
        return {}
    key = (id(tree), container, id(reader))
    cached = _TABLES.get(key)
    if cached is not None and cached[0] is tree and cached[1] is reader:
        return cached[2]
    table: Table = {}
    disagree: set[tuple[str, str]] = set()
    for function in _functions(tree.defs):
        if function is reader:
            continue
        held, local = _config_parameters(function), local_names(function)
        for expr in expressions(function.body.body):
            if isinstance(expr, (DictExpr, CallExpr)) and _container_class(api, expr) == container:
                for path, sizes in leaves(api, expr):
                    _agree(table, disagree, path, {n: _held(s, held, local) for n, s in sizes.items()})
    if len(_TABLES) > 4096:
        _TABLES.clear()
    _TABLES[key] = (tree, reader, table)
    return table


def _agree(table: Table, disagree: set[tuple[str, str]], path: str, sizes: dict[str, StaticSize]) -> None:
    known = table.setdefault(path, {})
    for axis, size in sizes.items():
        if (path, axis) in disagree:
            continue
        if axis in known and known[axis] != size:
            disagree.add((path, axis))
            known[axis] = None
        else:
            known[axis] = size


def _held(size: StaticSize, held: dict[str, str], local: set[str]) -> StaticSize:
    """``size`` with each config parameter's name as its class (``cfg.mlp`` -> ``\\x00Config\\x00.mlp``), a
    module's name (``GATES``) as it is; unknown when it names another of the builder's own names (a local, a
    parameter of another type) or a class two parameters share."""
    if not isinstance(size, SymbolicSize):
        return size
    classes = list(held.values())
    atoms = []
    for atom in size.atoms:
        roots = _ROOT.findall(atom)
        if any(root in local and (attr == "" or held.get(root) is None) for root, attr in roots):
            return None
        if any(root in held and classes.count(held[root]) > 1 for root, _ in roots):
            return None
        atoms.append(_ROOT.sub(lambda m: _held_root(m, held), atom))
    return replace(size, atoms=tuple(sorted(atoms)))


def _held_root(found: re.Match[str], held: dict[str, str]) -> str:
    root = found.group(1)
    return (_PLACEHOLDER.format(held[root]) if root in held else root) + (found.group(2) or "")


def _over_this_function(api: Any, sizes: dict[str, StaticSize]) -> dict[str, StaticSize]:
    """Built sizes with each config class read as the one parameter of the function being checked that has it;
    an axis over a class it has no parameter of (or two) is left out."""
    function = checked_function(api)
    by_class: dict[str, list[str]] = {}
    for name, cls in (_config_parameters(function) if isinstance(function, FuncDef) else {}).items():
        by_class.setdefault(cls, []).append(name)
    found: dict[str, StaticSize] = {}
    for axis, size in sizes.items():
        if not isinstance(size, SymbolicSize):
            if size is not None:
                found[axis] = size
            continue
        atoms = []
        for atom in size.atoms:
            classes = _HELD.findall(atom)
            if any(len(by_class.get(cls, [])) != 1 for cls in classes):
                break
            atoms.append(_HELD.sub(lambda m: by_class[m.group(1)][0], atom))
        else:
            found[axis] = replace(size, atoms=tuple(sorted(atoms)))
    return found
