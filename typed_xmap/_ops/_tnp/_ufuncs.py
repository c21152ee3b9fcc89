"""Elementwise functions for ``typed_xmap.numpy``, generated from the table of operations
(``typed_xmap._algebra._operations``: each ``ELEMENTWISE`` row names its ``jax`` function).

Each takes arrays or NamedArrays: NamedArray arguments broadcast by name (the union of their named axes,
``_named_array.apply_elementwise``), positional dims broadcast as in numpy, and plain arrays pass straight
to ``jax.numpy`` (per element inside ``xmap``). Keyword options (``approximate=``, ``decimals=``) pass through.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp

from ..._algebra import OpKind, operations_of
from ..._value._layout import apply_elementwise

__all__ = ["UFUNCS", "clip", "where"]

_LABELS = {1: ("x",), 2: ("x1", "x2"), 3: ("condition", "x", "y")}


def _ufunc(name: str, source: str, nin: int) -> Callable[..., Any]:
    module, _, attribute = source.rpartition(".")
    fn = getattr(importlib.import_module(module), attribute)
    operation = f"tnp.{name}"

    def ufunc(*args: Any, **kwargs: Any) -> Any:
        if len(args) != nin:
            raise TypeError(f"{operation} takes {nin} array argument{'s' * (nin > 1)}, got {len(args)}")
        call = functools.partial(fn, **kwargs) if kwargs else fn
        return apply_elementwise(call, args, operation=operation, operands=_LABELS[nin], fuse=not kwargs)

    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = _docstring(name, source, _LABELS[nin])
    array = "NamedArray | jax.Array"
    ufunc.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # what help() and the API page show
        [inspect.Parameter(label, inspect.Parameter.POSITIONAL_ONLY, annotation=array) for label in _LABELS[nin]]
        + [inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD, annotation="Any")],
        return_annotation=array,
    )
    return ufunc


def _docstring(name: str, source: str, labels: tuple[str, ...]) -> str:
    """An elementwise function's docstring, with the sections of every public function's."""
    arguments = "\n".join(f"    {label}: a NamedArray, or an array (per element inside ``xmap``)." for label in labels)
    return f"""Elementwise ``{source}``: NamedArrays broadcast by name, positional dims as in numpy.

Args:
{arguments}
    kwargs: passed to ``{source}`` (then the call is not fused with its neighbours).

Returns:
    The result, over the union of the arguments' named axes.

Raises:
    NamedShapeError: one axis name with two sizes among the arguments, or positional dims that do not
        broadcast.
    TypeError: another number of array arguments than {len(labels)}.

Examples:
    >>> x = tx.named(jnp.full((2, 3), 0.5), ["batch", "embed"])
    >>> tnp.{name}({", ".join("x" for _ in labels)}).named_shape == {{"batch": 2, "embed": 3}}
    True
"""


UFUNCS: dict[str, Callable[..., Any]] = {
    op.name: _ufunc(op.name, op.source, op.arrays or 1) for op in operations_of(OpKind.ELEMENTWISE)
}
"""The generated elementwise functions: every ``ELEMENTWISE`` row of the operations table."""


def where(condition: Any, x: Any, y: Any) -> Any:
    """``x`` where ``condition`` holds, else ``y``; all three broadcast by name.

    Args:
        condition: a boolean NamedArray or array.
        x: the values where ``condition`` holds.
        y: the values elsewhere.

    Returns:
        The selection, over the union of the three's named axes.

    Raises:
        NamedShapeError: one axis name with two sizes among them.

    Examples:
        >>> x = tx.named(jnp.arange(3.0), ["embed"])
        >>> tnp.where(x > 1, x, 0.0).named_shape == {"embed": 3}
        True
    """
    return apply_elementwise(jnp.where, (condition, x, y), operation="tnp.where", operands=_LABELS[3])


def clip(x: Any, min: Any = None, max: Any = None) -> Any:
    """``x`` limited to ``[min, max]`` (either may be ``None``); the bounds broadcast by name.

    Args:
        x: a NamedArray or array.
        min: the lower bound (a NamedArray, an array or a scalar), or ``None``.
        max: the upper bound, or ``None``.

    Returns:
        ``x`` limited to the bounds, over the union of the named axes.

    Raises:
        NamedShapeError: one axis name with two sizes among ``x`` and the bounds.

    Examples:
        >>> x = tx.named(jnp.arange(4.0), ["embed"])
        >>> tnp.clip(x, 1.0, 2.0).named_shape == {"embed": 4}
        True
    """
    bounds = {k: v for k, v in (("min", min), ("max", max)) if v is not None}

    def call(data: Any, *limits: Any) -> Any:
        return jnp.clip(data, **dict(zip(bounds, limits, strict=True)))

    return apply_elementwise(call, (x, *bounds.values()), operation="tnp.clip", operands=("x", *bounds), fuse=False)
