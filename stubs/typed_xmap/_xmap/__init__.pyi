from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Generic, ParamSpec

from .. import SerialLoop

_P = ParamSpec("_P")

class XmapFunction(Generic[_P]):
    """An xmapped function. The plugin fills in ``fun``'s parameters; without it any arguments go."""

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> Any: ...
    def lower(self, *args: _P.args, **kwargs: _P.kwargs) -> Any: ...

def xmap(
    fun: Callable[..., Any],
    in_axes: Any = ...,
    out_axes: Any = ...,
    *,
    axis_sizes: Mapping[str, int] | None = None,
    axis_resources: Mapping[str, Any] | None = None,
    donate_argnums: int | Sequence[int] = (),
    backend: str | None = None,
) -> XmapFunction[...]: ...
def serial_loop(name: str, length: int) -> AbstractContextManager[SerialLoop]: ...
