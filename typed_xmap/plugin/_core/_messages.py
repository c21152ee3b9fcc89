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
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["dtype_marker", "install", "installed", "readable"]

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
        return spec.group(2)
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

    def __getitem__(self, path: Any) -> Any:
        infos = super().__getitem__(path)
        for info in infos:
            if ENCODED in info.message:
                info.message = readable(info.message)
        return infos


def install(errors: Any) -> None:
    """Wrap ``errors.error_info_map`` (mypy's ``Errors``) once; nothing if mypy's shape changed."""
    try:
        current = errors.error_info_map
        if type(current) is dict:
            errors.error_info_map = _ReadableErrors(current)
    except (AttributeError, TypeError):
        return


def installed(errors: Any) -> bool:
    """Whether ``errors`` rewords its messages (the test that fails loudly when mypy changes asks this)."""
    return isinstance(getattr(errors, "error_info_map", None), _ReadableErrors)
