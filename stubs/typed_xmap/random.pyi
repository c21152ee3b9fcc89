"""Stubs of ``typed_xmap.random``: random NamedArrays by named shape."""

from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np

from ._static import NamedArray_

_PS = TypeVar("_PS")
_A = TypeVar("_A", bound=NamedArray_[Any, Any, Any])

def normal(
    key: Any, shape: Mapping[str, int], dtype: Any = ..., *, sharding: Mapping[str, Any] | None = None
) -> NamedArray_[Any, Any, Any]: ...
def uniform(
    key: Any,
    shape: Mapping[str, int],
    dtype: Any = ...,
    minval: Any = 0.0,
    maxval: Any = 1.0,
    *,
    sharding: Mapping[str, Any] | None = None,
) -> NamedArray_[Any, Any, Any]: ...
def bernoulli(
    key: Any, p: Any, shape: Mapping[str, int], *, sharding: Mapping[str, Any] | None = None
) -> NamedArray_[np.bool_, Any, Any]: ...
def randint(
    key: Any,
    shape: Mapping[str, int],
    minval: Any,
    maxval: Any,
    dtype: Any = ...,
    *,
    sharding: Mapping[str, Any] | None = None,
) -> NamedArray_[Any, Any, Any]: ...
def categorical(key: Any, logits: NamedArray_[Any, Any, _PS], axis: str) -> NamedArray_[np.int32, Any, _PS]: ...
def permutation(key: Any, x: _A, axis: str) -> _A: ...
