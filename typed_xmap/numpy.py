"""``typed_xmap.numpy`` (``tnp``): numpy-like functions that take axis names wherever numpy takes an axis.

```python
import typed_xmap.numpy as tnp

loss = tnp.mean(tnp.sum((tnp.einsum("{in},{in,out}->{out}", x, w) - y) ** 2, "out"), "batch")
```

Every function takes two kinds of values:

- ``NamedArray`` values, anywhere (eager, ``jit``, ``grad``, ``vmap``, inside ``xmap``): named axes
  broadcast by name and are reduced or contracted by name; a name the value lacks is an error.
- plain arrays, per element inside ``xmap`` (or ``jax.vmap(..., axis_name=...)`` levels): a named axis is an
  enclosing level, so a reduction over it is a collective (a value constant along it counts ``size`` times,
  as ``psum`` does), and a brace einsum operand has the named axes its braces list.

Reductions (``sum mean max min var std prod logsumexp all any argmax argmin``) take ``axis`` = a name, an
int (positional dim) or a tuple mixing both; ``axis=None`` reduces positional dims only, so named axes
survive. ``einsum`` (brace syntax) and ``dot(axis=name)`` compile a named contraction to one ``dot_general``.
Elementwise functions (``exp``, ``add``, ``where``, ``clip``, ``sigmoid``, ...) come from the tables in
``typed_xmap._ufuncs``; ``tnp.UFUNC_NAMES`` lists them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ._contract import dot, einsum
from ._algebra import UnboundAxisError
from ._reductions import (
    all,
    any,
    argmax,
    argmin,
    log_softmax,
    logsumexp,
    max,
    mean,
    min,
    prod,
    softmax,
    std,
    sum,
    var,
)
from ._ufuncs import UFUNCS as _UFUNCS
from ._ufuncs import clip, where

UFUNC_NAMES: tuple[str, ...] = tuple(_UFUNCS)
globals().update(_UFUNCS)

if TYPE_CHECKING:  # the generated elementwise functions, spelled out for type checkers (a test keeps them in sync)
    Ufunc = Callable[..., Any]
    exp: Ufunc; exp2: Ufunc; log: Ufunc; log1p: Ufunc; log2: Ufunc; log10: Ufunc; expm1: Ufunc  # noqa: E702
    sin: Ufunc; cos: Ufunc; tan: Ufunc; tanh: Ufunc; sinh: Ufunc; cosh: Ufunc; arcsin: Ufunc  # noqa: E702
    arccos: Ufunc; arctan: Ufunc; arcsinh: Ufunc; arccosh: Ufunc; arctanh: Ufunc; sqrt: Ufunc  # noqa: E702
    cbrt: Ufunc; square: Ufunc; abs: Ufunc; absolute: Ufunc; fabs: Ufunc; sign: Ufunc; negative: Ufunc  # noqa: E702
    positive: Ufunc; reciprocal: Ufunc; floor: Ufunc; ceil: Ufunc; round: Ufunc; rint: Ufunc  # noqa: E702
    trunc: Ufunc; isnan: Ufunc; isfinite: Ufunc; isinf: Ufunc; logical_not: Ufunc; conj: Ufunc  # noqa: E702
    conjugate: Ufunc; real: Ufunc; imag: Ufunc; angle: Ufunc; deg2rad: Ufunc; rad2deg: Ufunc  # noqa: E702
    signbit: Ufunc; sigmoid: Ufunc; relu: Ufunc; relu6: Ufunc; gelu: Ufunc; silu: Ufunc  # noqa: E702
    softplus: Ufunc; log_sigmoid: Ufunc; erf: Ufunc; add: Ufunc; subtract: Ufunc; multiply: Ufunc  # noqa: E702
    divide: Ufunc; true_divide: Ufunc; floor_divide: Ufunc; power: Ufunc; float_power: Ufunc  # noqa: E702
    mod: Ufunc; remainder: Ufunc; fmod: Ufunc; maximum: Ufunc; minimum: Ufunc; fmax: Ufunc  # noqa: E702
    fmin: Ufunc; logical_and: Ufunc; logical_or: Ufunc; logical_xor: Ufunc; arctan2: Ufunc  # noqa: E702
    hypot: Ufunc; copysign: Ufunc; logaddexp: Ufunc; equal: Ufunc; not_equal: Ufunc; less: Ufunc  # noqa: E702
    less_equal: Ufunc; greater: Ufunc; greater_equal: Ufunc  # noqa: E702

__all__ = [
    "UFUNC_NAMES",
    "UnboundAxisError",
    "all",
    "any",
    "argmax",
    "argmin",
    "clip",
    "dot",
    "einsum",
    "log_softmax",
    "logsumexp",
    "max",
    "mean",
    "min",
    "prod",
    "softmax",
    "std",
    "sum",
    "var",
    "where",
    *UFUNC_NAMES,
]

for _name in __all__:  # document (and pickle) the public functions under their public module
    if callable(_function := globals()[_name]) and not isinstance(_function, type):
        _function.__module__ = __name__
del _name, _function
