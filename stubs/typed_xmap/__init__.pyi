"""Stubs of typed_xmap's typed surface (PEP 561, shipped as the ``typed_xmap-stubs`` package).

``NamedArray`` is ``typing.Annotated`` to mypy, so ``NamedArray[f32, "batch in"]`` never reads as undefined
names; without the mypy plugin it means "a float32 NamedArray of unknown shape", with
``plugins = typed_xmap.plugin`` it carries the named shape. To pyright (Pylance, basedpyright), which
rejects ``isinstance`` of ``Annotated``, it is ``NamedArray_``, one class whatever its type arguments
(``_checker_view``), so ``isinstance(v, tx.NamedArray)`` narrows ``v`` to it.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from jax.sharding import Mesh

from . import random as random
from ._checker_view import MYPY
from ._convert import named as named, positional as positional
from ._static import (
    AnyNamedArray as AnyNamedArray,
    Float as Float,
    Int as Int,
    NamedArray_ as NamedArray_,
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

if MYPY:
    from typing import Annotated as NamedArray
else:
    from ._static import NamedArray_ as NamedArray

__version__: str

__all__ = [
    "AnyNamedArray",
    "AxisResourceConflict",
    "Float",
    "ImportHook",
    "Int",
    "NamedArray",
    "NamedArray_",
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

_F = TypeVar("_F", bound=Callable[..., Any])
_A = TypeVar("_A")
_C = TypeVar("_C")
_Y = TypeVar("_Y")
_D = TypeVar("_D")
_PS = TypeVar("_PS")

class NamedShapeError(TypeError, ValueError): ...
class NamedShapeSyntaxError(NamedShapeError): ...
class AxisResourceConflict(NamedShapeError): ...
class UnboundAxisError(NamedShapeError, NameError): ...

class SerialLoop:
    length: int
    name: str
    def __init__(self, length: int, name: str = "") -> None: ...

def typed(fn: _F) -> _F:
    """Check NamedArray parameters and the return value at run time; transparent to type checkers."""

def shard(x: _A, axis_resources: Mapping[str, Any], memory_kind: str | None = None, *, axes: Any = None) -> _A: ...
def constrain(x: _A, axis_resources: Mapping[str, Any], *, axes: Any = None) -> _A: ...
def resources_of(x: NamedArray_[Any, Any, Any]) -> dict[str, str | tuple[str, ...]]: ...
def visualize(x: NamedArray_[Any, Any, Any], *, console: Any = None) -> None: ...
def fitting_mesh(
    shape: Sequence[int], names: Sequence[str], *, axis_types: tuple[Any, ...] | None = None, emulate: bool = False
) -> Mesh: ...
def vmap(
    f: Callable[..., Any],
    axis: str | Sequence[str],
    *,
    axis_resources: Mapping[str, str | tuple[str, ...]] | None = None,
) -> Callable[..., Any]:
    """``f`` mapped over a named axis of its NamedArray arguments; outputs get the axis back."""

def scan(
    f: Callable[[_C, Any], tuple[_C, _Y]],
    init: _C,
    xs: Any,
    *,
    axis: str,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
) -> tuple[_C, _Y]:
    """``lax.scan`` over the named axis ``axis`` of the NamedArrays in ``xs``; ys stacked along it (the mypy
    plugin adds ``axis`` to their named shapes; to other checkers a NamedArray's shape is not in its type)."""

class ImportHook:
    def uninstall(self) -> None: ...
    def __enter__(self) -> ImportHook: ...
    def __exit__(self, kind: object, error: object, tb: object) -> None: ...

def install_import_hook(packages: str | Iterable[str]) -> ImportHook:
    """``@tx.typed`` on every NamedArray-annotated function of ``packages`` imported from now on."""

# Structure by name (typed_xmap/_algebra/_structure.py); with the plugin the results carry the named shape.
def rename(x: NamedArray_[_D, Any, _PS], renames: Mapping[str, str]) -> NamedArray_[_D, Any, _PS]: ...
def merge_axes(
    x: NamedArray_[_D, Any, _PS], axes: tuple[str, ...] | list[str], into: str
) -> NamedArray_[_D, Any, _PS]: ...
def split_axis(x: NamedArray_[_D, Any, _PS], axis: str, parts: Mapping[str, int]) -> NamedArray_[_D, Any, _PS]: ...
def broadcast_to(x: NamedArray_[_D, Any, _PS], shape: Mapping[str, int]) -> NamedArray_[_D, Any, _PS]: ...
def moe_route(
    logits: NamedArray_[Any, Any, Any],
    k: int,
    capacity: int,
    *,
    expert: str = "expert",
    tokens: str | Sequence[str] = "seq",
    slot: str = "slot",
) -> tuple[NamedArray_[Any, Any, Any], NamedArray_[Any, Any, Any], NamedArray_[Any, Any, Any]]: ...
def moe_dispatch(
    x: NamedArray_[Any, Any, Any],
    dispatch: NamedArray_[Any, Any, Any],
    *,
    tokens: str | Sequence[str] = "seq",
    expert: str = "expert",
    slot: str = "slot",
    resources: Mapping[str, Any] | None = None,
    from_resources: Mapping[str, Any] | None = None,
) -> NamedArray_[Any, Any, Any]: ...
def moe_combine(
    y: NamedArray_[Any, Any, Any],
    combine: NamedArray_[Any, Any, Any],
    *,
    expert: str = "expert",
    slot: str = "slot",
    resources: Mapping[str, Any] | None = None,
    from_resources: Mapping[str, Any] | None = None,
) -> NamedArray_[Any, Any, Any]: ...
