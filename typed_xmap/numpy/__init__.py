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
Elementwise functions (``exp``, ``add``, ``where``, ``clip``, ``sigmoid``, ...) come from the table
of operations; ``tnp.UFUNC_NAMES`` lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._algebra import UnboundAxisError
from .._ops import _methods  # noqa: F401  # binds x.sum, x[...], x.at onto NamedArray
from .._ops._indexing import dynamic_slice, dynamic_update_slice, take
from .._ops._tnp._constructors import arange, causal_mask, full, full_like, one_hot, ones, ones_like, zeros, zeros_like
from .._ops._tnp._contract import dot, einsum
from .._ops._tnp._reductions import (
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
from .._ops._tnp._segments import segment_max, segment_sum
from .._ops._tnp._selection import argsort, sort, top_k
from .._ops._tnp._structure import concatenate, cumprod, cumsum, pad, roll, split, stack
from .._ops._tnp._ufuncs import UFUNCS as _UFUNCS, clip, where
from .._ops._tnp._windows import avg_pool, conv, conv_transpose, max_pool
from .._value._tracebacks import entry_point

UFUNC_NAMES: tuple[str, ...] = tuple(_UFUNCS)
globals().update(_UFUNCS)

if TYPE_CHECKING:  # the generated elementwise functions (users' type checkers read stubs/typed_xmap/numpy/__init__.pyi)

    def __getattr__(name: str) -> Callable[..., Any]: ...


__all__ = [  # noqa: PLE0604  (UFUNC_NAMES is a tuple of str)
    "UFUNC_NAMES",
    "UnboundAxisError",
    "all",
    "any",
    "argmax",
    "argmin",
    "clip",
    "dot",
    "dynamic_slice",
    "dynamic_update_slice",
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
    "take",
    "var",
    "where",
    # structure along named axes, and constructors by name (typed_xmap/_algebra/_structure.py)
    "arange",
    "causal_mask",
    "concatenate",
    "cumprod",
    "cumsum",
    "full",
    "one_hot",
    "ones",
    "ones_like",
    "pad",
    "roll",
    "split",
    "stack",
    "zeros",
    "zeros_like",
    "full_like",
    # windows and selection along named axes (typed_xmap/_algebra/_windows.py, _selection.py)
    "argsort",
    "avg_pool",
    "conv",
    "conv_transpose",
    "max_pool",
    "segment_max",
    "segment_sum",
    "sort",
    "top_k",
    *UFUNC_NAMES,
]
"""Every row of the table of operations (``typed_xmap._algebra``; tests/test_plugin_operations.py holds them equal),
and ``segment_sum``/``segment_max``, which wait for a plugin hook before they get a row."""


def _document_under_this_module() -> None:
    """Document (and pickle) the public functions under their public module, as entry points (an error
    raised below one leaves our frames out of the traceback)."""
    for name in __all__:
        function = globals()[name]
        if callable(function) and not isinstance(function, type):
            function.__module__ = __name__
            globals()[name] = entry_point(function)


_document_under_this_module()
