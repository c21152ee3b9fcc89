"""``tx.xmap`` and ``tx.serial_loop``: the original ``jax.experimental.maps.xmap`` on modern JAX.

``xmap(fun, in_axes, out_axes, axis_sizes=, axis_resources=)`` maps ``fun`` over named axes. Each call
is one ``jax.jit`` of nested ``vmap(axis_name=...)`` levels, with the named axes placed on the current
mesh's axes by ``axis_resources`` (``_xmap_lowering``). Specs and sizes are checked by name
(``_xmap_specs``), resource conflicts always (``_xmap_checks``).

Per call, the Python work is one dict lookup of the cached ``jit`` for the current mesh; all spec
matching and checking happens while tracing, which ``jit`` caches per argument structure and shapes.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import typing
from typing import Any, Callable, Iterator, Mapping, Sequence

import jax

from ._algebra import ErrorKind, NamedShapeError
from ._mesh import concrete_mesh, mesh_platform, same_mesh, trace_mesh
from ._algebra import SerialLoop, normalize_axis_resources
from ._xmap_frames import active_frames
from ._xmap_lowering import Config, trace_xmap
from ._xmap_specs import parse_spec_tree

__all__ = ["SerialLoop", "serial_loop", "xmap"]

_OMITTED: Any = object()


def _on_other_devices(error: ValueError, name: str, args: tuple[Any, ...]) -> Exception:
    """jit's "incompatible devices" (which names our internal function) in xmap's words."""
    if "incompatible devices" not in str(error):
        return error
    mesh = concrete_mesh()
    devices = set(mesh.devices.flat) if mesh is not None else None
    for path, leaf in jax.tree_util.tree_flatten_with_path(args)[0]:
        sharding = getattr(leaf, "sharding", None)
        if sharding is None or getattr(leaf, "committed", getattr(leaf, "_committed", True)) is False:
            continue
        if devices is not None and set(sharding.device_set) != devices:
            ids = sorted(d.id for d in sharding.device_set)
            return NamedShapeError(
                f"xmap of {name}: args{jax.tree_util.keystr(path)} is a jax.Array placed on devices {ids}, but the call runs "
                f"on the current mesh's {len(devices)} devices; xmap does not move committed arrays between "
                f"devices implicitly. Fix: create it under the same mesh, or move it first: "
                f"jax.device_put(x, jax.sharding.NamedSharding(mesh, jax.P()))",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
    return error


class _Loops(threading.local):
    def __init__(self) -> None:
        self.active: dict[str, SerialLoop] = {}


_loops = _Loops()


@contextlib.contextmanager
def serial_loop(name: str, length: int) -> Iterator[SerialLoop]:
    """A named loop resource: inside, ``axis_resources={'i': name}`` runs axis ``i`` in ``length`` chunks."""
    loop = SerialLoop(length, name)
    previous = _loops.active.get(name)
    _loops.active[name] = loop
    try:
        yield loop
    finally:
        if previous is None:
            del _loops.active[name]
        else:
            _loops.active[name] = previous


def _named_parameters(fun: Callable[..., Any]) -> tuple[bool, ...] | None:
    """Per positional parameter of ``fun``: is it annotated with ``NamedArray[...]``? ``None`` if none is.

    A ``*args`` parameter's answer is repeated for every further argument (the last entry).
    """
    from ._annotations import mentions_named_array

    try:
        hints = typing.get_type_hints(fun, include_extras=True)
        parameters = list(inspect.signature(fun).parameters.values())
    except Exception:  # unresolvable annotations, builtins, partials: treat as untyped
        return None
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    flags = tuple(mentions_named_array(hints[p.name]) if p.name in hints else False for p in positional)
    return flags if any(flags) else None


def _function_name(fun: Callable[..., Any]) -> str:
    return getattr(fun, "__name__", None) or repr(fun)


class XmapFunction:
    """The result of ``xmap(...)``: call it with positional arguments, or ``.lower(*args)``."""

    def __init__(self, config: Config, donate_argnums: Sequence[int], backend: str | None) -> None:
        self._config = config
        self._donate = tuple(donate_argnums)
        self._backend = backend
        # Resource names that are not mesh axes may name serial_loop contexts, which jit's cache key
        # does not see: such xmaps keep one jit per set of active loops.
        self._loop_names = frozenset(r for rs in config.resources.values() for r in rs if isinstance(r, str))
        self._jit = self._build(config.resources)
        self._loop_jits: dict[Any, Any] = {}
        functools.update_wrapper(self, config.fun, updated=())

    def _resources(self) -> Mapping[str, tuple[Any, ...]]:
        """``axis_resources`` with names of active ``serial_loop`` contexts replaced by their loops."""
        active = _loops.active
        return {
            axis: tuple(active.get(r, r) if isinstance(r, str) else r for r in assigned)
            for axis, assigned in self._config.resources.items()
        }

    def _select(self) -> Any:
        if not self._loop_names or not _loops.active.keys() & self._loop_names:
            return self._jit
        key = tuple(sorted((n, _loops.active[n].length) for n in self._loop_names if n in _loops.active))
        jitted = self._loop_jits.get(key)
        if jitted is None:
            jitted = self._loop_jits[key] = self._build(self._resources())
        return jitted

    def _build(self, resources: Mapping[str, tuple[Any, ...]]) -> Any:
        config = self._config
        backend = self._backend

        def traced(*args: Any) -> Any:
            mesh = trace_mesh()
            if backend is not None and mesh is not None and mesh_platform(mesh) not in (None, backend):
                raise NamedShapeError(
                    f"xmap of {config.name}: backend={backend!r}, but the current mesh's devices are "
                    f"{mesh_platform(mesh)!r}. Fix: drop backend=, or set a mesh of {backend!r} devices",
                    kind=ErrorKind.INVALID_ARGUMENT,
                )
            return trace_xmap(config, mesh, resources, args)

        traced.__name__ = f"xmap({config.name})"
        jitted: Any = jax.jit(traced, donate_argnums=self._donate)
        if backend is not None:
            jitted = _OnDevice(jitted, jax.devices(backend)[0])
        return jitted

    # -- calls -------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(
                f"xmapped function {self._config.name} takes positional arguments only, got keyword "
                f"{next(iter(kwargs))!r}. Fix: pass it positionally (in_axes follow the argument order)"
            )
        if active_frames():  # inside another xmap's body: trace inline, on the enclosing mesh
            frame = active_frames()[-1]
            mesh = trace_mesh()
            if mesh is not None and not same_mesh(mesh, frame.mesh):
                raise NamedShapeError(
                    f"xmap of {self._config.name} runs inside another xmap but sees a different mesh; changing "
                    f"the physical mesh is not allowed inside xmap. Fix: set the mesh once, around the outer call",
                    kind=ErrorKind.INVALID_ARGUMENT,
                )
            return trace_xmap(self._config, frame.mesh, self._resources(), args, inline=True)
        if _multi_process():
            args = self._globalize(args)
        try:
            return self._select()(*args)
        except ValueError as error:
            raise _on_other_devices(error, self._config.name, args) from error

    def lower(self, *args: Any) -> Any:
        """``jax.stages.Lowered`` for these arguments: ``.compile()``, ``.as_text()``, ``.cost_analysis()``."""
        if _multi_process():
            args = self._globalize(args)
        return self._select().lower(*args)

    def _globalize(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        from ._xmap_global import globalize

        return globalize(self._config.in_spec, concrete_mesh(), self._resources(), args)

    def __repr__(self) -> str:
        return f"<xmap of {self._config.name}>"


class _OnDevice:
    """``backend=``: run (and lower) with uncommitted inputs placed on that backend's first device."""

    def __init__(self, jitted: Any, device: Any) -> None:
        self._jitted = jitted
        self._device = device

    def __call__(self, *args: Any) -> Any:
        with jax.default_device(self._device):
            return self._jitted(*args)

    def lower(self, *args: Any) -> Any:
        with jax.default_device(self._device):
            return self._jitted.lower(*args)


@functools.cache
def _process_count() -> int:
    return jax.process_count()


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
    """
    if not callable(fun):
        raise TypeError(f"xmap expects a function, got {type(fun).__name__}: {fun!r}")
    if out_axes is _OMITTED:
        raise NamedShapeError(
            "xmap needs out_axes: which named axes each output carries, and where. "
            "Fix: xmap(f, in_axes=..., out_axes=['batch', ...])",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    name = _function_name(fun)
    in_spec = None if in_axes is _OMITTED else parse_spec_tree(in_axes, "in_axes")
    if out_axes == ():
        raise NamedShapeError(
            f"out_axes=() for {name}: an xmapped function must return something. Fix: give one spec per output",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    out_spec = parse_spec_tree(out_axes, "out_axes")
    sizes = dict(axis_sizes or {})
    for axis, size in sizes.items():
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise NamedShapeError(f"axis_sizes[{axis!r}] = {size!r}: sizes are non-negative ints", kind=ErrorKind.INVALID_ARGUMENT)
    resources = normalize_axis_resources(axis_resources)
    typed = _named_parameters(fun)
    body = fun
    if typed is not None:
        from ._typed import check_named_hints

        body = check_named_hints(fun)  # other hints see tracers here: beartype would reject `c: float`
    donate = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    config = Config(fun, body, typed, name, in_spec, out_spec, sizes, resources)
    return XmapFunction(config, donate, backend)

