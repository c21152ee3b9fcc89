"""Selection along a named axis: ``tnp.top_k``, ``sort``, ``argsort``, ``tx.random.categorical`` and
``permutation``, and the ``*_like`` constructors with new axes.

Each function takes the operand's named shape (an unknown size is ``None``) and returns the result's,
raising ``NamedShapeError`` with the axis, the operand and a ``Fix:``. The runtime and the mypy plugin
call the same functions.

Pure Python.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._errors import ErrorKind, NamedShapeError
from ._shapes import Size, is_size
from ._structure import axis_sizes, new_axis, require_axis

__all__ = ["float_logits", "integer_dtype", "like_shape", "sampled_shape", "sorted_shape", "top_k_shape"]

Shape = Mapping[str, Size]


def sorted_shape(named: Shape, axis: object, *, operation: str) -> dict[str, Size]:
    """``sort``/``argsort``/``permutation`` along ``axis``: the axis must be there; the shape is kept."""
    require_axis(named, axis, operation=operation, operand="x")
    return dict(named)


def sampled_shape(named: Shape, axis: object, *, operation: str) -> dict[str, Size]:
    """``categorical(key, logits, axis)``: one draw per element of the other axes (``axis`` is gone); there
    is at least one category to draw."""
    name = require_axis(named, axis, operation=operation, operand="logits")
    if named[name] == 0:
        raise NamedShapeError(
            f"{operation}: axis {name!r} of logits has size 0, so there is no category to draw. Fix: draw along "
            f"an axis with at least one category",
            kind=ErrorKind.AXIS_SIZE,
        )
    return {a: s for a, s in named.items() if a != name}


def float_logits(dtype: str, *, operation: str) -> None:
    """Logits are floats: a categorical draw adds Gumbel noise to them (JAX's own error names no argument)."""
    if not dtype.startswith(("float", "bfloat")):
        raise NamedShapeError(
            f"{operation}: logits have dtype {dtype}; logits are unnormalised log-probabilities, floats. Fix: "
            f"logits.astype(jnp.float32) (or pass log-probabilities, tnp.log(probs))",
            kind=ErrorKind.DTYPE,
        )


def integer_dtype(dtype: str, *, operation: str) -> None:
    """``randint``'s dtype is an integer dtype."""
    if not dtype.startswith(("int", "uint")):
        raise NamedShapeError(
            f"{operation}: dtype={dtype} is not an integer dtype; randint draws integers. Fix: dtype=jnp.int32, "
            f"or tx.random.uniform(key, shape, minval=..., maxval=...) for floats",
            kind=ErrorKind.DTYPE,
        )


def top_k_shape(named: Shape, k: object, axis: object, new: object, *, operation: str) -> dict[str, Size]:
    """``top_k(x, k, axis, new_axis)``: ``axis`` is replaced by ``new_axis`` of size ``k`` (at most ``axis``'s)."""
    name = require_axis(named, axis, operation=operation, operand="x")
    if not is_size(k) or k == 0:
        raise NamedShapeError(
            f"{operation}: k is {k!r}; it must be a positive int. Fix: pass how many to keep, e.g. k=2",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    size = named[name]
    if size is not None and k > size:
        raise NamedShapeError(
            f"{operation}: k={k} is larger than axis {name!r} (size {size}). Fix: keep at most {size}",
            kind=ErrorKind.AXIS_SIZE,
        )
    rest = {a: s for a, s in named.items() if a != name}
    return {**rest, new_axis(rest, new, operation=operation, operand="x"): k}


def like_shape(named: Shape, new_axes: object, *, operation: str) -> dict[str, Size]:
    """``zeros_like(x, new_axes={'layers': 4})``: ``x``'s axes and the new ones (each a name ``x`` lacks)."""
    if new_axes is None:
        return dict(named)
    sizes = axis_sizes(new_axes, operation=operation)
    for name in sizes:
        new_axis(named, name, operation=operation, operand="x")
    return {**named, **sizes}
