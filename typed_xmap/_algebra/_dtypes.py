"""The dtypes and dtype kinds of ``NamedArray[...]`` annotations: ``f32``, ``i64``, ``Float``, ...

Each is a small marker that matches dtype names, so this module stays free of jax and numpy and the
mypy plugin can share it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "DTYPES",
    "KINDS",
    "MARKERS",
    "MARKER_OF_DTYPE",
    "DTypeSpec",
    "Float",
    "Int",
    "Num",
    "Shaped",
    "bf16",
    "bool_",
    "c64",
    "f16",
    "f32",
    "f64",
    "i8",
    "i16",
    "i32",
    "i64",
    "promote_dtypes",
    "u8",
    "u32",
]


@dataclass(frozen=True, slots=True)
class DTypeSpec:
    """Accepts values whose dtype name is in ``names``; ``name`` is how annotations print it."""

    name: str
    names: frozenset[str]

    def accepts(self, dtype_name: str) -> bool:
        return not self.names or dtype_name in self.names

    def __repr__(self) -> str:
        return self.name


def _exact(name: str) -> DTypeSpec:
    return DTypeSpec(name, frozenset({name}))


f16, bf16, f32, f64 = (_exact(n) for n in ("float16", "bfloat16", "float32", "float64"))
i8, i16, i32, i64 = (_exact(n) for n in ("int8", "int16", "int32", "int64"))
u8, u32 = _exact("uint8"), _exact("uint32")
bool_ = _exact("bool")
c64 = _exact("complex64")

_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})
_INTS = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
_COMPLEX = frozenset({"complex64", "complex128"})

Float = DTypeSpec("Float", _FLOATS)
Int = DTypeSpec("Int", _INTS)
Num = DTypeSpec("Num", _FLOATS | _INTS | _COMPLEX)
Shaped = DTypeSpec("Shaped", frozenset())

DTYPES = {d.name: d for d in (f16, bf16, f32, f64, i8, i16, i32, i64, u8, u32, bool_, c64)}
"""Exact dtypes by dtype name."""
KINDS = {d.name: d for d in (Float, Int, Num, Shaped)}
"""Dtype kinds by name."""
MARKERS = {
    "f16": f16,
    "bf16": bf16,
    "f32": f32,
    "f64": f64,
    "i8": i8,
    "i16": i16,
    "i32": i32,
    "i64": i64,
    "u8": u8,
    "u32": u32,
    "bool_": bool_,
    "c64": c64,
    "Float": Float,
    "Int": Int,
    "Num": Num,
    "Shaped": Shaped,
}
"""The public dtype markers by the name annotations use (``NamedArray[f32, ...]``): the one list that
``typed_xmap``'s exports, ``_static.py``'s aliases and the mypy plugin's hooks are held to."""

MARKER_OF_DTYPE = {
    **{next(iter(spec.names)): marker for marker, spec in MARKERS.items() if len(spec.names) == 1},
    "bool_": "bool_",  # NumPy's and jax.numpy's name for bool
}
"""The exact marker of a dtype by its name (``"float32"`` -> ``"f32"``): how the plugin reads ``dtype=``."""


_FLOAT_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}
_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


def _promote_pair(a: str, b: str) -> str | None:
    """JAX's promotion of two dtype names where it is one dtype whatever the flags, else ``None``."""
    if b in (a, "bool"):
        return a
    if a == "bool":
        return b
    for x, y in ((a, b), (b, a)):
        if x in _FLOAT_BITS and (y in _INT_BITS or y in _UINT_BITS):
            return x  # every int sits below every float in JAX's lattice: int32 with float16 is float16
        if x == "complex64" and (y in _INT_BITS or y in _UINT_BITS or _FLOAT_BITS.get(y, 64) < 64):
            return x
        if x in _INT_BITS and y in _UINT_BITS and _INT_BITS[x] > _UINT_BITS[y]:
            return x  # a wider signed int holds the unsigned one
    for bits in (_FLOAT_BITS, _INT_BITS, _UINT_BITS):
        if a in bits and b in bits:
            if bits[a] == bits[b]:
                return "float32" if bits is _FLOAT_BITS and bits[a] == 16 else None  # float16 with bfloat16
            return a if bits[a] > bits[b] else b
    return None  # int64 with uint64, float64 with complex64, ...: left to run time


def promote_dtypes(names: Iterable[str]) -> str | None:
    """The dtype name arrays of dtypes ``names`` combine to (an operator, ``concatenate``, ``einsum``): JAX's
    type promotion, where it gives one dtype whatever ``jax_enable_x64`` is (``int32`` and ``float32`` give
    ``float32``; ``bool`` and ``x`` give ``x``); ``None`` where it does not, or for an unknown name."""
    result: str | None = None
    for name in names:
        if result is None:
            result = name
        else:
            result = _promote_pair(result, name)
            if result is None:
                return None
    known = _FLOAT_BITS.keys() | _INT_BITS.keys() | _UINT_BITS.keys() | {"bool", "complex64"}
    return result if result in known else None
