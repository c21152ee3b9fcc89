"""The ``axis=`` argument of reductions (``tnp.sum(x, axis=...)``, ``tnp.argmax``, ``tnp.softmax``) and
what a reduction does to the positional dims.

``axis`` is a name, an int (a positional dim) or a tuple/list mixing both; ``None`` reduces the positional
dims only, so named axes survive (the original xmap's rule). The named part is ``reduce_named_shape``'s.
The runtime (``typed_xmap._reductions``) calls these with the values it is given, the mypy plugin with
the literal values it reads from the source: one rule, one wording.

Pure Python.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

from ._errors import ErrorKind, NamedShapeError
from ._shapes import Size

__all__ = [
    "AxisArgument",
    "positional_dims",
    "reduced_positional",
    "reduction_operation",
    "single_axis",
    "split_axis",
]

AxisArgument = tuple[tuple[str, ...], tuple[int, ...] | None]
"""``axis`` split into (names, positional ints); the ints are ``None`` for ``axis=None`` (every positional dim)."""


def reduction_operation(function: str, axis: object, operand: str = "x") -> str:
    """How messages name a reduction call: ``tnp.sum(x, axis='batch')``."""
    return f"tnp.{function}({operand}, axis={axis!r})"


def split_axis(axis: object, *, operation: str) -> AxisArgument:
    """``axis`` -> (names, ints); raises on an item that is neither a name nor an int, or a repeated name."""
    if axis is None:
        return (), None
    items: list[object] = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    names: list[str] = []
    ints: list[int] = []
    for item in items:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, bool):
            raise NamedShapeError(
                f"{operation}: an axis is a name or an int, got {item!r}. Fix: pass a name, an int, or a tuple of them",
                kind=ErrorKind.SYNTAX,
            )
        else:
            try:
                ints.append(operator.index(item))  # type: ignore[arg-type]  # anything with __index__; TypeError otherwise
            except TypeError:
                raise NamedShapeError(
                    f"{operation}: an axis is a name (str) or a positional dim (int), got {item!r}. "
                    f"Fix: pass a name, an int, or a tuple of them",
                    kind=ErrorKind.SYNTAX,
                ) from None
    if len(set(names)) != len(names):
        raise NamedShapeError(
            f"{operation}: an axis name is listed twice in {axis!r}. Fix: list each axis once", kind=ErrorKind.SYNTAX
        )
    return tuple(names), tuple(ints)


def single_axis(axis: object, *, function: str, operation: str) -> object:
    """``argmax``/``argmin`` reduce over one axis: a one-item tuple is that item; more is an error."""
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            raise NamedShapeError(
                f"{operation}: {function} reduces over one axis, got {len(axis)}. Fix: pass a single name or int",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        return axis[0]
    return axis


def _shape_text(shape: Sequence[Size]) -> str:
    items = ["?" if s is None else str(s) for s in shape]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def positional_dims(ints: Sequence[int] | None, shape: Sequence[Size], *, operation: str) -> tuple[int, ...]:
    """The positional dims ``ints`` reduce, each in ``[0, rank)``; every dim for ``None``."""
    ndim = len(shape)
    if ints is None:
        return tuple(range(ndim))
    dims = []
    for i in ints:
        if not -ndim <= i < ndim:
            raise NamedShapeError(
                f"{operation}: positional axis {i} is out of range for a value with {ndim} positional dims "
                f"(shape {_shape_text(shape)}); named axes are reduced by name, not by position. "
                f"Fix: use an int in [{-ndim}, {ndim}) or the axis name",
                kind=ErrorKind.POSITIONAL,
            )
        dims.append(i % ndim)
    if len(set(dims)) != len(dims):
        raise NamedShapeError(
            f"{operation}: positional axis {list(ints)} repeats a dim. Fix: list each dim once",
            kind=ErrorKind.POSITIONAL,
        )
    return tuple(dims)


def reduced_positional(shape: Sequence[Size], dims: Sequence[int], *, keepdims: bool) -> tuple[Size, ...]:
    """The positional dims left after reducing ``dims``: gone, or size 1 with ``keepdims``."""
    dropped = set(dims)
    if keepdims:
        return tuple(1 if i in dropped else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dropped)
