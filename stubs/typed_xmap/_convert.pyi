from collections.abc import Mapping, Sequence
from types import EllipsisType
from typing import Any

import jax

from ._static import NamedArray_

_AxisLeaf = Sequence[str | EllipsisType | None] | Mapping[int, str]

def named(array: Any, axes: _AxisLeaf) -> NamedArray_[Any, Any, Any]:
    """Name the dims of ``array``; with the plugin the result's named shape comes from ``axes``."""

def positional(x: NamedArray_[Any, Any, Any], axes: _AxisLeaf) -> jax.Array:
    """A positional array with ``x``'s named axes at the dims ``axes`` gives."""
