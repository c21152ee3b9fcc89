"""mypy's own messages about NamedArrays in the user's notation.

mypy words ``return-value``, ``arg-type`` and ``assignment`` errors with the encoding
(``NamedArray_[floating[_32Bit], TypedDict({'batch'=: Any, 'seq'=: Any}), tuple[Any, ...]]``); users read
``NamedArray[f32, 'batch seq']``. mypy has no hook for the wording of its messages, so this module, and only
this one, uses a private mypy API: the error store ``mypy.errors.Errors.error_info_map`` (a dict of file ->
list of ``ErrorInfo``) is wrapped in a dict whose ``__getitem__`` rewrites the messages of a file when mypy
reads them to report that file (``Errors.file_messages``). ``readable`` itself is pure text.

Fallback: when mypy's ``Errors`` no longer has that shape, ``install`` does nothing and messages keep the
encoding (still correct, just harder to read); ``tests/test_plugin_messages.py`` fails loudly then.
Errors and notes (``reveal_type``) are rewritten. A symbolic size (``mlp=cfg.mlp // 2``) shows in mypy's errors,
which print the encoded shape's fallback (``_encoding.SHAPE_FALLBACK``; ``messages.format_type_inner`` prints a
TypedDict that is not anonymous as its fallback). ``reveal_type`` shows the axis name alone: mypy formats the
revealed type with ``TypeStrVisitor`` (``MessageBuilder.reveal_type``), which prints a TypedDict's items, where a
symbol is ``Any`` (gradual), and only the class name of its fallback (``visit_typeddict_type``); and
``ExpressionChecker.visit_reveal_expr`` calls no plugin hook between the type and the note. A symbol in a
printed place (an item) would change what the type means. ``typed-xmap inspect`` shows the symbols
(``dmypy inspect`` prints with ``format_type``).

A placement (``batch@data``) lives where a symbol does, so ``reveal_type`` would not show it either, nor the group
of a type whose group stands for any other axes (``"*rest embed"``, open: the group is no item). Once a
module is type-checked (the plugin's ``get_additional_indirect_deps``), while its types are still held,
``show_placements`` rewords each ``reveal_type`` note of a type that carries a placement or such a group as mypy's
errors print that type (``format_type_bare``: the fallback's text). It needs the module's type checker, which the
hooks hand to ``install`` (a module where no hook of the plugin ran holds no placement a hook made, but a
parameter annotated with one shows it only if some hook ran there).
"""

from __future__ import annotations

import re
from typing import Any

from mypy.messages import format_type_bare
from mypy.nodes import REVEAL_TYPE, CallExpr, MypyFile, RevealExpr

from ..._algebra import shown_spec
from ._tree import expressions

__all__ = ["dtype_marker", "install", "installed", "readable", "show_placements"]

ENCODED = "NamedArray_["
DTYPES = {
    "floating[_16Bit]": "f16",
    "bfloat16": "bf16",
    "floating[_32Bit]": "f32",
    "floating[_64Bit]": "f64",
    "signedinteger[_8Bit]": "i8",
    "signedinteger[_16Bit]": "i16",
    "signedinteger[_32Bit]": "i32",
    "signedinteger[_64Bit]": "i64",
    "unsignedinteger[_8Bit]": "u8",
    "unsignedinteger[_32Bit]": "u32",
    "bool[bool]": "bool_",
    "bool": "bool_",
    "bool_": "bool_",
    "complexfloating[_32Bit, _32Bit]": "c64",
    "floating[Any]": "Float",
    "integer[Any]": "Int",
    "number[Any]": "Num",
}
"""numpy's scalar types as mypy prints them -> the dtype markers users write."""
_QUALIFIED = re.compile(r"\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_])")
_ITEM = re.compile(r"'([^']*)'([=?]*):\s*(?:Literal\[(\d+)\]|[^,}]+)")
_SIZE = re.compile(r"Literal\[(\d+)\]")


def _split_arguments(text: str, start: int) -> tuple[list[str], int] | None:
    """The top-level comma-separated arguments of the brackets opened just before ``start``, and the index
    after the closing bracket; ``None`` if unbalanced."""
    depth, parts, begin = 0, [], start
    for index in range(start, len(text)):
        char = text[index]
        if char in "[({":
            depth += 1
        elif char in "])}":
            if depth == 0:
                parts.append(text[begin:index].strip())
                return parts, index + 1
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[begin:index].strip())
            begin = index + 1
    return None


def _dtype(text: str) -> str:
    bare = _QUALIFIED.sub("", text)
    return DTYPES.get(bare, bare)


def dtype_marker(text: str) -> str | None:
    """The marker (``f32``, ``bf16``, ``Float``) of a dtype as mypy prints it, ``None`` for another type."""
    return DTYPES.get(_QUALIFIED.sub("", text))


_SPEC = re.compile(r"(?:typed_xmap\._static\.)?Shape_\[Literal\[(['\"])(.*)\1\]\]")


def _named(text: str) -> str | None:
    if spec := _SPEC.fullmatch(text):  # mypy's errors print the fallback: the shape in the user's notation
        return shown_spec(spec.group(2))  # a known-whole axis ("seq@()") as its plain name
    if not text.startswith("TypedDict("):
        return None  # Any: a shape the checker does not know
    names = []
    for match in _ITEM.finditer(text):
        name, flags, size = match.group(1), match.group(2), match.group(3)
        optional = "?" if "?" in flags else ""  # an axis a tx.vmap-ed parameter may or may not carry
        names.append(f"{name}{optional}" if size is None else f"{name}={size}{optional}")
    return " ".join(names)


def _positional(text: str) -> str | None:
    bare = _QUALIFIED.sub("", text)
    if not bare.startswith("tuple[") or bare.endswith(", ...]"):
        return None  # any rank
    split = _split_arguments(bare, len("tuple["))
    if split is None:
        return None
    items = [item for item in split[0] if item != "()"]
    return " ".join(m.group(1) if (m := _SIZE.fullmatch(item)) else "_" for item in items)


def readable(message: str) -> str:
    """Every ``NamedArray_[DT, NS, PS]`` in ``message`` as ``NamedArray[f32, "batch seq"]`` (``"n 3"``
    added for known positional dims; ``Any`` for an unknown named shape)."""
    if ENCODED not in message:
        return message
    out, position = [], 0
    while (found := message.find(ENCODED, position)) >= 0:
        split = _split_arguments(message, found + len(ENCODED))
        if split is None or len(split[0]) != 3:
            break
        (dtype, named, positional), end = split
        names = _named(named if _SPEC.fullmatch(named) else _QUALIFIED.sub("", named))
        dims = _positional(positional)
        spec = "Any" if names is None else f'"{names}"'
        if dims and names is not None:
            spec += f', "{dims}"'
        before = message[position:found].removesuffix("typed_xmap._static.")  # reveal_type's qualified name
        out.append(before + f"NamedArray[{_dtype(readable(dtype))}, {spec}]")
        position = end
    out.append(message[position:])
    return "".join(out)


class _ReadableErrors(dict):  # type: ignore[type-arg]
    """mypy's error store; a file's errors are reworded when mypy reads them to report the file."""

    checker: Any = None
    """The type checker of the module being checked (the last one a hook ran in)."""

    def __getitem__(self, path: Any) -> Any:
        infos = super().__getitem__(path)
        for info in infos:
            if ENCODED in info.message:
                info.message = readable(info.message)
        return infos


_STORE: list[_ReadableErrors] = []
"""The error store ``install`` wrapped last (one per build)."""


def install(errors: Any, checker: Any = None) -> None:
    """Wrap ``errors.error_info_map`` (mypy's ``Errors``) once; nothing if mypy's shape changed. ``checker``:
    the type checker a hook runs in, for ``show_placements``."""
    try:
        current = errors.error_info_map
        if type(current) is dict:
            current = errors.error_info_map = _ReadableErrors(current)
    except (AttributeError, TypeError):
        return
    if isinstance(current, _ReadableErrors):
        if not _STORE or _STORE[0] is not current:
            _STORE[:] = [current]
        if checker is not None:
            current.checker = checker


REVEALED = 'Revealed type is "'


def show_placements(file: MypyFile) -> None:
    """Reword the ``reveal_type`` notes of ``file`` (just type-checked) whose type carries a placement or a group
    mypy's note leaves out."""
    store = _STORE[0] if _STORE else None
    checker = store.checker if store is not None else None
    if store is None or checker is None or getattr(checker, "tree", None) is not file:
        return
    notes = {
        (info.line, info.column): info
        for info in dict.get(store, file.path) or ()
        if info.severity == "note" and info.message.startswith(REVEALED) and "NamedArray" in info.message
    }
    if not notes:
        return
    for call in expressions(file.defs):
        expr = call.analyzed if isinstance(call, CallExpr) else None  # reveal_type(...) as semantic analysis left it
        if not (isinstance(expr, RevealExpr) and expr.kind == REVEAL_TYPE and expr.expr is not None):
            continue
        info = notes.get((expr.expr.line, expr.expr.column))
        typ = checker.lookup_type_or_none(expr.expr) if info is not None else None
        if info is not None and typ is not None:
            shown = format_type_bare(typ, checker.options)
            if "@" in shown or _hides_group(shown, info.message):
                info.message = readable(f'{REVEALED}{shown}"')


_GROUP = re.compile(r"(?<=['\s])\*[A-Za-z_]\w*")
"""A variadic group's token in a shown shape (``'*rest embed'``)."""


def _hides_group(shown: str, note: str) -> bool:
    """Whether mypy's ``reveal_type`` note of a NamedArray leaves out a group its type shows (``shown``: its
    fallback's text): a type whose group stands for any other axes (``_encoding.open_groups``) has the group in
    its text alone, not among the TypedDict's items mypy prints."""
    return shown.startswith(ENCODED) and any(f"'{group}'" not in note for group in _GROUP.findall(shown))


def installed(errors: Any) -> bool:
    """Whether ``errors`` rewords its messages (the test that fails loudly when mypy changes asks this)."""
    return isinstance(getattr(errors, "error_info_map", None), _ReadableErrors)
