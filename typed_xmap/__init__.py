"""typed_xmap: named-axis arrays for JAX, checked at run time and by a mypy plugin.

Names that need jax load on first use (PEP 562), so ``import typed_xmap.plugin`` (the mypy plugin)
never imports jax.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._algebra import AxisResourceConflict as AxisResourceConflict
from ._algebra import NamedShapeError as NamedShapeError
from ._algebra import NamedShapeSyntaxError as NamedShapeSyntaxError
from ._algebra import UnboundAxisError as UnboundAxisError
from ._algebra import SerialLoop as SerialLoop

if TYPE_CHECKING:
    from typing import Annotated as NamedArray

    from ._convert import named as named
    from ._convert import positional as positional
    from ._sharding import constrain as constrain
    from ._sharding import resources_of as resources_of
    from ._sharding import shard as shard
    from ._static import Float as Float
    from ._static import Int as Int
    from ._static import Num as Num
    from ._static import Shaped as Shaped
    from ._static import bf16 as bf16
    from ._static import bool_ as bool_
    from ._static import c64 as c64
    from ._static import f16 as f16
    from ._static import f32 as f32
    from ._static import f64 as f64
    from ._static import i8 as i8
    from ._static import i16 as i16
    from ._static import i32 as i32
    from ._static import i64 as i64
    from ._static import u8 as u8
    from ._static import u32 as u32
    from ._typed import typed as typed
    from ._visualize import visualize as visualize
    from ._xmap import serial_loop as serial_loop
    from ._xmap import xmap as xmap
else:
    from ._algebra import Float, Int, Num, Shaped, bf16, bool_, c64, f16, f32, f64, i8, i16, i32, i64, u8, u32

__version__ = "0.1.0"

__all__ = [
    "AxisResourceConflict",
    "Float",
    "Int",
    "NamedArray",
    "NamedShapeError",
    "NamedShapeSyntaxError",
    "Num",
    "SerialLoop",
    "UnboundAxisError",
    "Shaped",
    "bf16",
    "bool_",
    "c64",
    "constrain",
    "f16",
    "f32",
    "f64",
    "i8",
    "i16",
    "i32",
    "i64",
    "named",
    "positional",
    "resources_of",
    "serial_loop",
    "shard",
    "typed",
    "u8",
    "u32",
    "visualize",
    "xmap",
]

_LAZY = {
    "NamedArray": "._named_array",
    "named": "._convert",
    "positional": "._convert",
    "typed": "._typed",
    "shard": "._sharding",
    "constrain": "._sharding",
    "resources_of": "._sharding",
    "visualize": "._visualize",
    "xmap": "._xmap",
    "serial_loop": "._xmap",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'typed_xmap' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
