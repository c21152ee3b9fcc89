"""Elementwise functions for ``typed_xmap.numpy``, generated from tables of ``jax.numpy``/``jax.nn`` functions.

Each takes arrays or NamedArrays: NamedArray arguments broadcast by name (the union of their named axes,
``_named_array.apply_elementwise``), positional dims broadcast as in numpy, and plain arrays pass straight
to ``jax.numpy`` (per element inside ``xmap``). Keyword options (``approximate=``, ``decimals=``) pass through.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Callable

import jax.numpy as jnp

from ._named_array import apply_elementwise

__all__ = ["UFUNCS", "clip", "where"]

# (module, number of array arguments, names): each name becomes tnp.<name>
TABLES: tuple[tuple[str, int, str], ...] = (
    ("jax.numpy", 1, "exp exp2 log log1p log2 log10 expm1 sin cos tan tanh sinh cosh arcsin arccos arctan arcsinh "
                     "arccosh arctanh sqrt cbrt square abs absolute fabs sign negative positive reciprocal floor ceil "
                     "round rint trunc isnan isfinite isinf logical_not conj conjugate real imag angle deg2rad "
                     "rad2deg signbit"),
    ("jax.nn", 1, "sigmoid relu relu6 gelu silu softplus log_sigmoid"),
    ("jax.scipy.special", 1, "erf"),
    ("jax.numpy", 2, "add subtract multiply divide true_divide floor_divide power float_power mod remainder fmod "
                     "maximum minimum fmax fmin logical_and logical_or logical_xor arctan2 hypot copysign logaddexp "
                     "equal not_equal less less_equal greater greater_equal"),
)
_LABELS = {1: ("x",), 2: ("x1", "x2"), 3: ("condition", "x", "y")}


def _ufunc(name: str, module: str, nin: int) -> Callable[..., Any]:
    fn = getattr(importlib.import_module(module), name)
    operation = f"tnp.{name}"

    def ufunc(*args: Any, **kwargs: Any) -> Any:
        if len(args) != nin:
            raise TypeError(f"{operation} takes {nin} array argument{'s' * (nin > 1)}, got {len(args)}")
        call = functools.partial(fn, **kwargs) if kwargs else fn
        return apply_elementwise(call, args, operation=operation, operands=_LABELS[nin])

    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = (
        f"Elementwise ``{module}.{name}``: NamedArrays broadcast by name, "
        f"positional dims as in numpy."
    )
    return ufunc


UFUNCS: dict[str, Callable[..., Any]] = {
    name: _ufunc(name, module, nin) for module, nin, names in TABLES for name in names.split()
}


def where(condition: Any, x: Any, y: Any) -> Any:
    """``x`` where ``condition`` holds, else ``y``; all three broadcast by name."""
    return apply_elementwise(jnp.where, (condition, x, y), operation="tnp.where", operands=_LABELS[3])


def clip(x: Any, min: Any = None, max: Any = None) -> Any:
    """``x`` limited to ``[min, max]`` (either may be ``None``); the bounds broadcast by name."""
    bounds = {k: v for k, v in (("min", min), ("max", max)) if v is not None}

    def call(data: Any, *limits: Any) -> Any:
        return jnp.clip(data, **dict(zip(bounds, limits)))

    return apply_elementwise(call, (x, *bounds.values()), operation="tnp.clip",
                             operands=("x", *bounds))
