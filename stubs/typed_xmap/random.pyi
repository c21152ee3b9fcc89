"""Stubs of ``typed_xmap.random``: random NamedArrays by named shape."""

from collections.abc import Mapping
from typing import Any

import numpy as np

from ._static import NamedArray_

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
