"""``tx.xmap``: validate the arguments into a ``Config``, and the ``XmapFunction`` that runs the program.

A call of an ``XmapFunction`` is one call of its cached ``jax.jit`` program (``_cache``); inside another
xmap's body it is traced inline instead, on the enclosing mesh. All spec matching and checking happens
while tracing, which ``jit`` caches per argument structure and shapes.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax

from .._algebra import ErrorKind, NamedShapeError, normalize_axis_resources
from .._value._frames import active_frames, thread_frames
from ._cache import program
from ._checks import different_mesh_error
from ._config import (
    Config,
    body_of,
    check_donated,
    donated_arguments,
    function_name,
    named_parameters,
    validated_sizes,
)
from ._jax_errors import invalid_argument_error, on_other_devices_error
from ._loops import active_loop_key, resolve_loops, thread_loops
from ._mesh import concrete_mesh, same_mesh, trace_mesh
from ._specs import parse_spec_tree
from ._trace import trace_xmap

__all__ = ["XmapFunction", "xmap"]

_OMITTED: Any = object()


class XmapFunction:
    """The result of ``xmap(...)``: call it with positional arguments, or ``.lower(*args)``."""

    def __init__(self, fun: Callable[..., Any], config: Config) -> None:
        self._fun = fun
        self._config = config
        self._body = body_of(fun, config.typed)
        # Resource names that are not mesh axes may name serial_loop contexts, which jit's cache key
        # does not see: such xmaps use one program per set of active loops.
        self._loop_names = frozenset(r for _, rs in config.resources for r in rs if isinstance(r, str))
        self._program = program(fun, config, config.resource_map)
        self._needs_preparing: bool | None = None  # calls check donations or globalize; None: not settled yet
        functools.update_wrapper(self, fun, updated=())

    def _select(self) -> Any:
        loops = active_loop_key(self._loop_names) if self._loop_names else ()
        if not loops:
            return self._program
        return program(self._fun, self._config, resolve_loops(self._config.resource_map), loops)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        program = self._program
        # The common call is one jit dispatch behind four attribute tests and no Python call: on a busy host
        # every microsecond here costs several before the devices start. (The first call settles whether
        # calls need donation checks or globalizing, this process being one of several.)
        if (
            kwargs
            or self._needs_preparing is not False
            or thread_frames.stack
            or (self._loop_names and thread_loops.active)
        ):
            if not kwargs and active_frames():
                return self._inline(args)
            program, args = self._prepared(args, kwargs)
        try:
            return program(*args)
        except (ValueError, TypeError) as error:
            translated = self._translated(error, args)
            if translated is error:
                raise
            raise translated from translated.__cause__

    def _prepared(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, tuple[Any, ...]]:
        """The program for this call (of the active serial loops) and its arguments, checked and globalized."""
        if kwargs:
            raise TypeError(
                f"xmapped function {self._config.name} takes positional arguments only, got keyword "
                f"{next(iter(kwargs))!r}. Fix: pass it positionally (in_axes follow the argument order)"
            )
        self._needs_preparing = bool(self._config.donate) or _multi_process()
        if self._config.donate:
            check_donated(self._config.donate, args, self._config.name)
        if _multi_process():
            args = self._globalize(args)
        return self._select(), args

    def _translated(self, error: Exception, args: tuple[Any, ...]) -> Exception:
        """jit's error for these arguments in xmap's terms where we know them better (its ``__cause__``: the
        device error behind a placement message; none for a wrong argument, whose jit error names our
        internals), else ``error`` itself."""
        if isinstance(error, ValueError):
            translated = on_other_devices_error(error, self._config.name, args, concrete_mesh())
            if translated is not error:
                translated.__cause__ = error
            return translated
        return invalid_argument_error(typing.cast(TypeError, error), self._config.name, args)

    def _inline(self, args: tuple[Any, ...]) -> Any:
        """Inside another xmap's body: trace inline, on the enclosing mesh."""
        frame = active_frames()[-1]
        mesh = trace_mesh()
        if mesh is not None and not same_mesh(mesh, frame.mesh):
            raise different_mesh_error(self._config.name)
        resources = resolve_loops(self._config.resource_map)
        return trace_xmap(self._body, self._config, frame.mesh, resources, args, inline=True)

    def lower(self, *args: Any) -> Any:
        """``jax.stages.Lowered`` for these arguments: ``.compile()``, ``.as_text()``, ``.cost_analysis()``."""
        check_donated(self._config.donate, args, self._config.name)
        if _multi_process():
            args = self._globalize(args)
        return self._select().lower(*args)

    def _globalize(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        from ._global import globalize

        resources = resolve_loops(self._config.resource_map)
        return globalize(self._config.in_spec, concrete_mesh(), resources, args)

    def __repr__(self) -> str:
        return f"<xmap of {self._config.name}>"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle as the function and its validated arguments (cloudpickle for a lambda or a local function);
        the program is rebuilt, from the cache, where it is loaded."""
        return XmapFunction, (self._fun, self._config)


@functools.cache
def _process_count() -> int:
    return int(jax.process_count())


def _multi_process() -> bool:
    return _process_count() > 1


def xmap(
    fun: Callable[..., Any],
    in_axes: Any = _OMITTED,
    out_axes: Any = _OMITTED,
    *,
    axis_sizes: Mapping[str, int] | None = None,
    axis_resources: Mapping[str, Any] | None = None,
    donate_argnums: int | Sequence[int] = (),
    backend: str | None = None,
) -> XmapFunction:
    """Map ``fun`` over named axes: the original ``jax.experimental.maps.xmap``, lowered to sharded ``jit``.

    - ``in_axes``: a tree prefix of the argument tuple; leaves are ``['batch', ...]`` (names for the
      leading dims; without ``...`` the rank is asserted), ``{0: 'batch'}`` or ``{}`` (no named axes).
      May be omitted when every argument is a ``NamedArray``.
    - ``out_axes``: a tree prefix of the return value, same leaves. An output must list every named
      axis it carries; a listed axis it lacks is broadcast.
    - ``axis_sizes``: sizes of axes no argument maps (or pins the sizes of those that do).
    - ``axis_resources``: ``{'batch': 'x', 'feat': ('y', 'z'), 'i': SerialLoop(4)}``, mesh axes of the
      mesh set by ``jax.set_mesh`` (Explicit or Auto axes), serial loops, or tuples of them.

    ``fun`` gets per-element positional arrays, or ``NamedArray`` values whose named axes are mapped
    when its parameters are annotated ``NamedArray[...]``; it can use collectives by axis name.

    Args:
        fun: the function to map; it sees per-element values (the named axes are enclosing map levels).
        in_axes: names for the arguments' dims, a tree prefix of them (see above).
        out_axes: names for the results' dims, a tree prefix of them (see above).
        axis_sizes: sizes of axes no argument carries.
        axis_resources: mesh axes (or ``serial_loop`` names) each named axis runs over.
        donate_argnums: arguments whose buffers may be reused, as ``jax.jit``'s.
        backend: the backend to run on, when there is no mesh.

    Returns:
        An ``XmapFunction``: call it with the arguments, or ``.lower(...)`` them.

    Raises:
        NamedShapeError: at the call, a spec that does not fit an argument, an axis of two sizes, or an output
            axis not defined.
        AxisResourceConflict: two named axes of one value on the same mesh axis.

    Examples:
        >>> matmul = tx.xmap(jnp.vdot, in_axes=({0: "left"}, {1: "right"}), out_axes=["left", "right", ...])
        >>> matmul(jnp.ones((8, 4)), jnp.ones((4, 6))).shape
        (8, 6)
    """
    if not callable(fun):
        raise TypeError(
            f"xmap expects a function, got {type(fun).__name__}: {fun!r}. Fix: pass the function to map, "
            f"e.g. xmap(jnp.vdot, in_axes=..., out_axes=...)"
        )
    if out_axes is _OMITTED:
        raise NamedShapeError(
            "xmap needs out_axes: which named axes each output carries, and where. "
            "Fix: xmap(f, in_axes=..., out_axes=['batch', ...])",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    name = function_name(fun)
    in_spec = None if in_axes is _OMITTED else parse_spec_tree(in_axes, "in_axes")
    if out_axes == ():
        raise NamedShapeError(
            f"out_axes=() for {name}: an xmapped function must return something. Fix: give one spec per output",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    out_spec = parse_spec_tree(out_axes, "out_axes")
    sizes = validated_sizes(axis_sizes)
    resources = tuple(normalize_axis_resources(axis_resources).items())
    donate = donated_arguments(donate_argnums, fun, name)
    config = Config(name, named_parameters(fun), in_spec, out_spec, sizes, resources, donate, backend)
    return XmapFunction(fun, config)
