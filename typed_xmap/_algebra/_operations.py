"""The one table of operations: every ``typed_xmap.numpy`` function and every ``NamedArray`` operator,
with how it changes named shapes.

The runtime builds ``tnp``'s elementwise functions, its ``__all__`` and ``NamedArray``'s operators from
these tables; the mypy plugin registers its hooks from them (a ``tnp`` name not here gets no hook, so
mypy types it as the stub says); tests hold the stubs (``stubs/typed_xmap/numpy/__init__.pyi``, ``_static.py``)
to them. Adding an operation means adding a row here, then its implementation and its stub.

Pure Python.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "OPERATORS",
    "TNP_OPERATIONS",
    "OpKind",
    "Operation",
    "Operator",
    "OperatorKind",
    "ResultDType",
    "operations_of",
]


class OpKind(enum.Enum):
    """How a ``tnp`` function changes named shapes."""

    ELEMENTWISE = "NamedArray operands broadcast by name (union of named axes); positional dims as in numpy"
    SELECT = "elementwise over several arrays (where, clip): broadcast by name; the dtype is the values'"
    REDUCTION = "removes the named axes ``axis`` names (ints: positional dims); ``axis=None``: positional only"
    INDEX_REDUCTION = "a reduction over one axis giving indices (argmax, argmin)"
    SHAPE_KEEPING = "checks ``axis`` like a reduction but keeps the operand's shape (softmax)"
    CONTRACTION = "contracts named axes by a brace spec (einsum, dot): one dot_general"
    INDEXING = "reads or writes elements by axis name (take, dynamic_slice, dynamic_update_slice): _indexing's rules"
    STRUCTURE = "rearranges named axes (stack, concatenate, split, roll, pad, cumsum): _algebra/_structure.py"
    CONSTRUCTOR = "builds a value from a named shape or names (zeros, arange, one_hot, causal_mask)"
    WINDOW = "slides a window along named axes (conv, conv_transpose, max_pool, avg_pool): _algebra/_windows.py"
    SELECTION = "orders or selects along one named axis (sort, argsort, top_k): _algebra/_selection.py"


class ResultDType(enum.Enum):
    """The result's dtype."""

    SAME = "the operands' (promoted) dtype"
    BOOL = "bool"
    INDEX = "int32 indices"


@dataclass(frozen=True, slots=True)
class Operation:
    """One ``tnp`` function: ``source`` is the jax function it applies (``module.name``)."""

    name: str
    kind: OpKind
    source: str
    arrays: int | None = None
    """How many array arguments an elementwise function takes; ``None``: not fixed."""
    dtype: ResultDType = ResultDType.SAME


class OperatorKind(enum.Enum):
    BINARY = "x OP y and y OP x (reflected): broadcast by name"
    COMPARISON = "x OP y: broadcast by name, bool result (Python reflects comparisons itself)"
    UNARY = "OP x: the same named shape"


@dataclass(frozen=True, slots=True)
class Operator:
    """One ``NamedArray`` operator: ``__{name}__`` (and ``__r{name}__`` for a binary one)."""

    name: str
    symbol: str
    kind: OperatorKind

    @property
    def dunders(self) -> tuple[str, ...]:
        if self.kind is OperatorKind.BINARY:
            return (f"__{self.name}__", f"__r{self.name}__")
        return (f"__{self.name}__",)

    @property
    def dtype(self) -> ResultDType:
        return ResultDType.BOOL if self.kind is OperatorKind.COMPARISON else ResultDType.SAME


def _rows(
    module: str,
    kind: OpKind,
    arrays: int | None,
    names: str,
    dtype: ResultDType = ResultDType.SAME,
) -> list[Operation]:
    return [Operation(n, kind, f"{module}.{n}", arrays, dtype) for n in names.split()]


_JNP = "jax.numpy"
_E = OpKind.ELEMENTWISE
_BOOL = ResultDType.BOOL

TNP_OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in [
        *_rows(_JNP, OpKind.REDUCTION, None, "sum mean max min prod var std"),
        *_rows("jax.scipy.special", OpKind.REDUCTION, None, "logsumexp"),
        *_rows(_JNP, OpKind.REDUCTION, None, "all any", _BOOL),
        *_rows(_JNP, OpKind.INDEX_REDUCTION, None, "argmax argmin", ResultDType.INDEX),
        *_rows("jax.nn", OpKind.SHAPE_KEEPING, None, "softmax log_softmax"),
        *_rows(_JNP, OpKind.CONTRACTION, None, "einsum dot"),
        *_rows(_JNP, OpKind.INDEXING, None, "take"),
        *_rows("jax.lax", OpKind.INDEXING, None, "dynamic_slice dynamic_update_slice"),
        *_rows(_JNP, OpKind.STRUCTURE, None, "stack concatenate split roll pad cumsum cumprod"),
        *_rows(_JNP, OpKind.CONSTRUCTOR, None, "zeros ones full zeros_like ones_like full_like arange"),
        Operation("conv", OpKind.WINDOW, "jax.lax.conv_general_dilated"),
        Operation("conv_transpose", OpKind.WINDOW, "jax.lax.conv_transpose"),
        Operation("max_pool", OpKind.WINDOW, "jax.lax.reduce_window"),
        Operation("avg_pool", OpKind.WINDOW, "jax.lax.reduce_window"),
        *_rows(_JNP, OpKind.SELECTION, None, "sort"),
        Operation("argsort", OpKind.SELECTION, f"{_JNP}.argsort", dtype=ResultDType.INDEX),
        Operation("top_k", OpKind.SELECTION, "jax.lax.top_k"),
        Operation("one_hot", OpKind.CONSTRUCTOR, "jax.nn.one_hot"),
        Operation("causal_mask", OpKind.CONSTRUCTOR, f"{_JNP}.tril", dtype=_BOOL),
        Operation("where", OpKind.SELECT, f"{_JNP}.where", 3),
        Operation("clip", OpKind.SELECT, f"{_JNP}.clip", None),
        *_rows(
            _JNP,
            _E,
            1,
            "exp exp2 log log1p log2 log10 expm1 sin cos tan tanh sinh cosh arcsin arccos arctan "
            "arcsinh arccosh arctanh sqrt cbrt square abs absolute fabs sign negative positive "
            "reciprocal floor ceil round rint trunc",
        ),
        *_rows(_JNP, _E, 1, "isnan isfinite isinf logical_not", _BOOL),
        *_rows(_JNP, _E, 1, "conj conjugate real imag angle deg2rad rad2deg"),
        *_rows(_JNP, _E, 1, "signbit", _BOOL),
        *_rows("jax.nn", _E, 1, "sigmoid relu relu6 gelu silu softplus log_sigmoid"),
        *_rows("jax.scipy.special", _E, 1, "erf"),
        *_rows(
            _JNP,
            _E,
            2,
            "add subtract multiply divide true_divide floor_divide power float_power mod "
            "remainder fmod maximum minimum fmax fmin",
        ),
        *_rows(_JNP, _E, 2, "logical_and logical_or logical_xor", _BOOL),
        *_rows(_JNP, _E, 2, "arctan2 hypot copysign logaddexp"),
        *_rows(_JNP, _E, 2, "equal not_equal less less_equal greater greater_equal", _BOOL),
    ]
}
"""Every ``typed_xmap.numpy`` function, by name."""


def operations_of(*kinds: OpKind) -> tuple[Operation, ...]:
    """The ``tnp`` operations of these kinds, in table order."""
    return tuple(op for op in TNP_OPERATIONS.values() if op.kind in kinds)


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in [
        *(
            Operator(n, s, OperatorKind.BINARY)
            for n, s in [
                ("add", "+"),
                ("sub", "-"),
                ("mul", "*"),
                ("truediv", "/"),
                ("floordiv", "//"),
                ("mod", "%"),
                ("pow", "**"),
                ("and", "&"),
                ("or", "|"),
                ("xor", "^"),
                ("lshift", "<<"),
                ("rshift", ">>"),
            ]
        ),
        *(
            Operator(n, s, OperatorKind.COMPARISON)
            for n, s in [
                ("lt", "<"),
                ("le", "<="),
                ("gt", ">"),
                ("ge", ">="),
                ("eq", "=="),
                ("ne", "!="),
            ]
        ),
        *(Operator(n, s, OperatorKind.UNARY) for n, s in [("neg", "-"), ("pos", "+"), ("abs", "abs"), ("invert", "~")]),
    ]
}
"""Every ``NamedArray`` operator, by the name in its dunder (``add`` -> ``__add__``, ``__radd__``)."""
