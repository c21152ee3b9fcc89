"""The brace einsum spec of the original xmap: ``'n{b,k},{k,m}->n{b,m}'``.

Letters outside braces are positional dims (as in ``numpy.einsum``); names inside ``{...}`` are named
axes (order inside braces does not matter). A name mentioned by one operand and not by the output is
summed over; a name mentioned by several operands and not by the output is contracted; named axes the
spec never mentions are carried through to the result (broadcast by name).

Pure Python, shared by ``typed_xmap.numpy`` and the mypy plugin.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ._errors import ErrorKind, NamedShapeError, NamedShapeSyntaxError
from ._shapes import Size, union_named_shapes
from ._spec import is_axis_name, syntax_error

__all__ = [
    "STREAMED_CONTRACTION_MAX",
    "ContractionKernel",
    "EinsumOperand",
    "EinsumResult",
    "EinsumSpec",
    "contraction_kernel",
    "dot_operation",
    "dot_spec",
    "einsum_result",
    "parse_einsum",
    "positional_einsum",
]


@dataclass(frozen=True, slots=True)
class EinsumOperand:
    """One side of the spec: positional letters and the named axes in braces."""

    letters: str
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EinsumSpec:
    inputs: tuple[EinsumOperand, ...]
    output: EinsumOperand
    text: str

    @property
    def mentioned(self) -> frozenset[str]:
        return frozenset(n for op in self.inputs for n in op.names)

    def summed(self, index: int) -> tuple[str, ...]:
        """Names only operand ``index`` mentions and the output does not: summed before contracting."""
        others = {n for i, op in enumerate(self.inputs) if i != index for n in op.names}
        out = set(self.output.names)
        return tuple(n for n in self.inputs[index].names if n not in out and n not in others)

    @property
    def contracted(self) -> tuple[str, ...]:
        """Names several operands mention and the output does not."""
        out = set(self.output.names)
        counts: dict[str, int] = {}
        for op in self.inputs:
            for n in op.names:
                counts[n] = counts.get(n, 0) + 1
        return tuple(n for n, c in counts.items() if c > 1 and n not in out)


def _parse_operand(spec: str, start: int, text: str) -> EinsumOperand:
    letters: list[str] = []
    names: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "{":
            close = text.find("}", i)
            if close < 0:
                raise syntax_error(
                    spec, start + i, start + len(text), "unterminated named-axis brace", "close every '{' with '}'"
                )
            if names:
                raise syntax_error(
                    spec,
                    start + i,
                    start + close + 1,
                    "a second brace group in one operand",
                    "list all of an operand's named axes in one {...}",
                )
            inner_start = start + i + 1
            for match in re.finditer(r"[^,\s]+", text[i + 1 : close]):
                name = match.group()
                pos = inner_start + match.start()
                if not is_axis_name(name):
                    raise syntax_error(
                        spec,
                        pos,
                        pos + len(name),
                        f"{name!r} is not an axis name",
                        "named axes in braces are identifiers separated by commas",
                    )
                if name in names:
                    raise syntax_error(
                        spec,
                        pos,
                        pos + len(name),
                        f"axis {name!r} appears twice in one operand",
                        "list each named axis once per operand",
                    )
                names.append(name)
            i = close + 1
        elif ch in string.ascii_letters:
            if ch in letters:
                raise syntax_error(
                    spec,
                    start + i,
                    start + i + 1,
                    f"positional letter {ch!r} appears twice in one operand",
                    "repeated (diagonal) positional letters are not supported",
                )
            letters.append(ch)
            i += 1
        elif ch.isspace():
            i += 1
        else:
            raise syntax_error(
                spec,
                start + i,
                start + i + 1,
                f"unexpected character {ch!r}",
                "operands are positional letters plus one {name,...} group",
            )
    return EinsumOperand("".join(letters), tuple(names))


def parse_einsum(spec: str) -> EinsumSpec:
    """Parse a brace einsum spec; errors underline the bad part."""
    if not isinstance(spec, str):
        raise NamedShapeSyntaxError(
            f"an einsum spec must be a string, got {spec!r} of type {type(spec).__name__}. "
            f"Fix: write it as a string, e.g. '{{in}},{{in,out}}->{{out}}'"
        )
    return _parse_einsum(spec)


@functools.lru_cache(maxsize=1024)
def _parse_einsum(spec: str) -> EinsumSpec:
    """``parse_einsum`` of a string; cached, since model code parses the same few specs at every trace."""
    if spec.count("->") != 1:
        raise syntax_error(
            spec, 0, len(spec), "the spec needs exactly one '->'", "write inputs->output, e.g. '{in},{in,out}->{out}'"
        )
    lhs, rhs = spec.split("->")
    inputs = []
    # Commas also separate names inside braces: split operands only at depth 0.
    parts: list[tuple[int, str]] = []
    depth, begin = 0, 0
    for i, ch in enumerate(lhs):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append((begin, lhs[begin:i]))
            begin = i + 1
    parts.append((begin, lhs[begin:]))
    for offset, text in parts:
        inputs.append(_parse_operand(spec, offset, text))
    output = _parse_operand(spec, len(lhs) + 2, rhs)
    mentioned = {n for op in inputs for n in op.names}
    letters = {c for op in inputs for c in op.letters}
    stray_names = [n for n in output.names if n not in mentioned]
    if stray_names:
        raise NamedShapeError(
            f"einsum {spec!r}: the output names axes {', '.join(repr(n) for n in stray_names)} that no "
            f"operand mentions. Fix: mention them in an operand's braces, or drop them from the output",
            kind=ErrorKind.AXIS_MISSING,
            axes=stray_names,
        )
    stray_letters = [c for c in output.letters if c not in letters]
    if stray_letters:
        raise NamedShapeError(
            f"einsum {spec!r}: the output uses positional letters {', '.join(repr(c) for c in stray_letters)} "
            f"that no operand has. Fix: use letters of the inputs",
            kind=ErrorKind.POSITIONAL,
        )
    return EinsumSpec(tuple(inputs), output, spec)


@dataclass(frozen=True, slots=True)
class EinsumResult:
    """The result's named and positional shape, and what happened to each named axis."""

    named_shape: dict[str, Size]
    positional_shape: tuple[Size, ...]
    contracted: tuple[str, ...]
    summed: tuple[str, ...]
    carried: tuple[str, ...]


def _labels(count: int, labels: Sequence[str] | None) -> list[str]:
    return list(labels) if labels else [f"operand {i}" for i in range(count)]


def einsum_result(
    spec: EinsumSpec,
    named_shapes: Sequence[Mapping[str, Size]],
    positional_shapes: Sequence[Sequence[Size]],
    *,
    operands: Sequence[str] | None = None,
    operation: str | None = None,
) -> EinsumResult:
    """Check operands against ``spec`` and compute the result's shape.

    ``operation`` names the call in messages when it is not an einsum (``tnp.dot``, see ``dot_spec``).
    """
    labels = _labels(len(named_shapes), operands)
    where = operation or f"einsum {spec.text!r}"
    if len(named_shapes) != len(spec.inputs):
        raise NamedShapeError(
            f"{where} has {_count(len(spec.inputs), 'operand spec')} but was given "
            f"{_count(len(named_shapes), 'operand')}. "
            f"Fix: give one comma-separated spec per operand",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    mentioned = spec.mentioned
    for index, (op, shape, pos) in enumerate(zip(spec.inputs, named_shapes, positional_shapes, strict=True)):
        missing = [n for n in op.names if n not in shape]
        if missing:
            raise NamedShapeError(
                f"{where}: {labels[index]} has named axes "
                f"{' '.join(shape)!r} and lacks {', '.join(repr(n) for n in missing)}, which its braces list. "
                f"Fix: pass a value with those axes, or drop them from its braces",
                kind=ErrorKind.AXIS_MISSING,
                axes=missing,
            )
        unlisted = [n for n in shape if n in mentioned and n not in op.names]
        if unlisted:
            raise NamedShapeError(
                f"{where}: {labels[index]} carries axis {', '.join(repr(n) for n in unlisted)}, which the spec "
                f"mentions for other operands but not in {labels[index]}'s braces. Fix: list it in its braces",
                kind=ErrorKind.AXIS_MISSING,
                axes=unlisted,
            )
        if len(pos) != len(op.letters):
            raise NamedShapeError(
                f"{where}: {labels[index]} has {_count(len(pos), 'positional dim')} {tuple(pos)} but its spec "
                f"{op.letters!r} has {_count(len(op.letters), 'letter')}. Fix: one letter per positional dim",
                kind=ErrorKind.POSITIONAL,
            )
    named = union_named_shapes(named_shapes, operation=where, operands=labels)
    letter_sizes: dict[str, Size] = {}
    letter_owner: dict[str, int] = {}
    for index, (op, pos) in enumerate(zip(spec.inputs, positional_shapes, strict=True)):
        for letter, size in zip(op.letters, pos, strict=True):
            known = letter_sizes.get(letter)
            if known is None:
                letter_sizes[letter] = size
                letter_owner[letter] = index
            elif size is not None and size != known:
                raise NamedShapeError(
                    f"{where}: positional letter {letter!r} has size {known} in {labels[letter_owner[letter]]} "
                    f"but size {size} in {labels[index]}. Fix: make the dims agree",
                    kind=ErrorKind.POSITIONAL,
                )
    out_names = spec.output.names
    carried = tuple(n for n in named if n not in mentioned)
    result_named = {n: named[n] for n in out_names}
    result_named.update((n, named[n]) for n in carried)
    summed = tuple(n for i in range(len(spec.inputs)) for n in spec.summed(i))
    return EinsumResult(
        result_named,
        tuple(letter_sizes[c] for c in spec.output.letters),
        spec.contracted,
        summed,
        carried,
    )


def positional_einsum(
    spec: EinsumSpec, axis_orders: Sequence[Sequence[str]], result: EinsumResult
) -> tuple[str, tuple[str, ...]]:
    """Translate to a plain ``numpy.einsum`` subscript string.

    Each operand's data is laid out as its positional dims followed by its named axes in
    ``axis_orders[i]``. Returns the subscripts and the result's named-axis order (its data is laid out
    as the output letters followed by those axes).
    """
    used = {c for op in spec.inputs for c in op.letters}
    free = iter(c for c in string.ascii_letters if c not in used)
    letter_of: dict[str, str] = {}
    for order in axis_orders:
        for name in order:
            if name not in letter_of:
                try:
                    letter_of[name] = next(free)
                except StopIteration:
                    raise NamedShapeError(
                        f"einsum {spec.text!r}: too many distinct axes for one einsum (at most 52 "
                        f"positional letters and names together). Fix: split the contraction into two einsums",
                        kind=ErrorKind.INVALID_ARGUMENT,
                    ) from None
    terms = [
        op.letters + "".join(letter_of[n] for n in order) for op, order in zip(spec.inputs, axis_orders, strict=True)
    ]
    out_order = tuple(result.named_shape)
    out = spec.output.letters + "".join(letter_of[n] for n in out_order)
    return ",".join(terms) + "->" + out, out_order


def dot_operation(x: str, y: str, axis: object = None) -> str:
    """How messages name a ``tnp.dot`` call: ``tnp.dot(x, w, axis='in')``."""
    return f"tnp.dot({x}, {y})" if axis is None else f"tnp.dot({x}, {y}, axis={axis!r})"


def dot_spec(x_rank: int, y_rank: int, axis: str | Sequence[str] | None) -> str | None:
    """The brace einsum ``tnp.dot(x, y, axis=axis)`` computes, for operands with these positional ranks.

    ``axis`` names: contract those named axes; the positional dims of ``x`` then ``y`` are kept (as
    ``lax.pdot`` did). ``axis=None``: numpy's ``dot`` of the positional dims, per element of the named axes
    (carried, so broadcast by name). ``None`` when ``axis`` is ``None`` and an operand has no positional
    dims: then ``dot`` is the elementwise product, broadcast by name.
    """
    xl, yl = string.ascii_letters[:x_rank], string.ascii_letters[x_rank : x_rank + y_rank]
    if axis is not None:
        names = (axis,) if isinstance(axis, str) else tuple(axis)
        braces = "{" + ",".join(names) + "}"
        return f"{xl}{braces},{yl}{braces}->{xl}{yl}"
    if x_rank == 0 or y_rank == 0:
        return None
    if y_rank == 1:
        return f"{xl},{xl[-1]}->{xl[:-1]}"
    yl = yl[:-2] + xl[-1] + yl[-1]
    return f"{xl},{yl}->{xl[:-1]}{yl[:-2]}{yl[-1]}"


ContractionKernel = Literal["streamed", "dot_general"]

# The largest contracted size (product of the contracted dims) lowered to elementwise products and sums.
# Measured on CPU (8 emulated devices on 2 shared cores, jax 0.10.2), a batched inner product of two
# (N, K) float32 arrays of 120 MB each, sharded over the 8 devices, medians of 5 interleaved rounds:
#   K            2     3     4     6     8    12    16    24    32    48    64
#   dot_general 57.8  95.9  70.3  65.3  35.7  30.5  37.2  23.4  17.0  19.4  30.4  ms
#   sum(a*b,-1) 57.7  98.1  70.4  71.5  35.4  30.0  37.3  24.7  21.6  18.6  21.7  ms  (XLA: the same kernel)
#   K mul-adds  13.1  16.2  18.9  22.6  13.7  13.4  19.1  14.0  14.3  22.6  21.1  ms
# The unrolled multiply-adds win 4.4-6.0x up to K=6, 1.7-2.6x up to K=24, 1.2x at 32 (within the noise
# of a shared machine), and lose at 48; so up to 24 they are the kernel.
STREAMED_CONTRACTION_MAX = 24


def contraction_kernel(contracted_size: int | None, *, batch_only: bool) -> ContractionKernel:
    """The kernel of a contraction: ``"streamed"`` (elementwise products summed over the contracted index,
    one fused loop reading each input once) or ``"dot_general"``.

    Streamed only when every result element reads its own inputs (``batch_only``: each kept dim is in every
    operand, so nothing is reused and a matmul kernel has nothing to tile) and the contracted size is at most
    ``STREAMED_CONTRACTION_MAX``. A contraction with reuse (``x[b,k] @ w[k,m]``), or of unknown or ordinary
    size, stays one ``dot_general``: multiply-then-reduce there builds the whole product.
    """
    if batch_only and contracted_size is not None and 0 < contracted_size <= STREAMED_CONTRACTION_MAX:
        return "streamed"
    return "dot_general"


def _count(number: int, noun: str) -> str:
    """``_count(1, "letter")`` -> ``"1 letter"``, ``_count(2, "letter")`` -> ``"2 letters"``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
