"""typed_xmap: named-axis arrays for JAX, checked at run time and by a mypy plugin.

Names that need jax load on first use (PEP 562), so ``import typed_xmap.plugin`` (the mypy plugin)
never imports jax.
"""

from __future__ import annotations

import importlib
import types
from typing import TYPE_CHECKING, Any

from ._algebra import (
    AxisResourceConflict as AxisResourceConflict,
    NamedShapeError as NamedShapeError,
    NamedShapeSyntaxError as NamedShapeSyntaxError,
    SerialLoop as SerialLoop,
    UnboundAxisError as UnboundAxisError,
)

if TYPE_CHECKING:
    from typing import Annotated as NamedArray

    from . import random as random
    from ._checking._import_hook import ImportHook as ImportHook, install_import_hook as install_import_hook
    from ._checking._typed import typed as typed
    from ._ops._convert import named as named, positional as positional
    from ._ops._devices import fitting_mesh as fitting_mesh
    from ._ops._moe import moe_combine as moe_combine, moe_dispatch as moe_dispatch, moe_route as moe_route
    from ._ops._scan import scan as scan
    from ._ops._sharding import constrain as constrain, resources_of as resources_of, shard as shard
    from ._ops._structure import (
        broadcast_to as broadcast_to,
        merge_axes as merge_axes,
        rename as rename,
        split_axis as split_axis,
    )
    from ._ops._visualize import visualize as visualize
    from ._ops._vmap import vmap as vmap
    from ._static import (
        AnyNamedArray as AnyNamedArray,
        Float as Float,
        Int as Int,
        Num as Num,
        Shaped as Shaped,
        bf16 as bf16,
        bool_ as bool_,
        c64 as c64,
        f16 as f16,
        f32 as f32,
        f64 as f64,
        i8 as i8,
        i16 as i16,
        i32 as i32,
        i64 as i64,
        u8 as u8,
        u32 as u32,
    )
    from ._xmap import XmapFunction as XmapFunction, serial_loop as serial_loop, xmap as xmap
else:
    from ._algebra import Float, Int, Num, Shaped, bf16, bool_, c64, f16, f32, f64, i8, i16, i32, i64, u8, u32

__version__ = "0.1.0"

__all__ = [
    "AnyNamedArray",
    "AxisResourceConflict",
    "Float",
    "ImportHook",
    "Int",
    "NamedArray",
    "NamedShapeError",
    "NamedShapeSyntaxError",
    "Num",
    "SerialLoop",
    "Shaped",
    "UnboundAxisError",
    "XmapFunction",
    "bf16",
    "bool_",
    "broadcast_to",
    "c64",
    "constrain",
    "f16",
    "f32",
    "f64",
    "fitting_mesh",
    "i8",
    "i16",
    "i32",
    "i64",
    "install_import_hook",
    "merge_axes",
    "moe_combine",
    "moe_dispatch",
    "moe_route",
    "named",
    "positional",
    "random",
    "rename",
    "resources_of",
    "scan",
    "serial_loop",
    "shard",
    "split_axis",
    "typed",
    "u8",
    "u32",
    "visualize",
    "vmap",
    "xmap",
]

_LAZY = {
    "AnyNamedArray": "._value._named_array",
    "NamedArray": "._value._named_array",
    "named": "._ops._convert",
    "positional": "._ops._convert",
    "typed": "._checking._typed",
    "shard": "._ops._sharding",
    "constrain": "._ops._sharding",
    "resources_of": "._ops._sharding",
    "visualize": "._ops._visualize",
    "fitting_mesh": "._ops._devices",
    "XmapFunction": "._xmap",
    "xmap": "._xmap",
    "serial_loop": "._xmap",
    "vmap": "._ops._vmap",
    "scan": "._ops._scan",
    "install_import_hook": "._checking._import_hook",
    "ImportHook": "._checking._import_hook",
    "rename": "._ops._structure",
    "merge_axes": "._ops._structure",
    "split_axis": "._ops._structure",
    "broadcast_to": "._ops._structure",
    "moe_route": "._ops._moe",
    "moe_dispatch": "._ops._moe",
    "moe_combine": "._ops._moe",
}

_BINDERS = ("._ops._methods", "._checking._annotations")
"""The modules that bind ``NamedArray``'s methods (``x.sum``, ``x[...]``, ``x.at``) and its annotation form
(``NamedArray[...]``) onto the class once every operation exists; the first name loaded imports them."""

_SUBMODULES = frozenset({"random"})
"""Public submodules ``tx.random`` reaches without an import of its own."""

_RENAMED = {"AnyNamedArray": "NamedArray"}
"""``tx.AnyNamedArray`` is the NamedArray class at run time (``isinstance``, a TypeVar's bound); to type
checkers a runtime-checkable Protocol every ``NamedArray[...]`` type satisfies (``_static.AnyNamedArray``)."""


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'typed_xmap' has no attribute {name!r}")
    for binder in _BINDERS:
        importlib.import_module(binder, __name__)
    value = getattr(importlib.import_module(module, __name__), _RENAMED.get(name, name))
    if isinstance(value, types.FunctionType):  # a public entry point: errors below it leave our frames out
        from ._value._tracebacks import entry_point

        value = entry_point(value)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
