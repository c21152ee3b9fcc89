"""Compiled programs shared by every ``xmap`` object of one function: build ``tx.xmap(f, ...)`` twice, trace once.

A program is one ``jax.jit`` of the traced call; ``jit`` itself keys it further by the mesh in context and
the arguments' structure, shapes and dtypes. Here programs are keyed by the function and the ``Config``
(specs, sizes, resources, ``donate_argnums``, ``backend``) and the active ``serial_loop`` contexts, weakly on
the function where it can be weakly referenced: the program holds only a weak reference to it, so the entry
goes when the function does.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any

import jax

from .._algebra import ErrorKind, NamedShapeError, Resource
from ._config import Config, body_of
from ._mesh import mesh_platform, trace_mesh
from ._trace import trace_xmap

__all__ = ["program"]

Key = tuple[Config, tuple[tuple[str, int], ...]]
Reference = Callable[[], Callable[..., Any] | None]

# Keyed by identity, not equality: two equal callables (bound methods of one object, equal dataclass
# instances) are different functions to a program, which must call the very object it was built for.
_weak: dict[int, tuple[Reference, dict[Key, Any]]] = {}
_strong: dict[int, tuple[Callable[..., Any], dict[Key, Any]]] = {}  # not weakly referenceable (builtins)


def program(
    fun: Callable[..., Any],
    config: Config,
    resources: Mapping[str, tuple[Resource, ...]],
    loops: tuple[tuple[str, int], ...] = (),
) -> Any:
    """The jitted program for ``fun`` under ``config`` (and these active loops), built on first use."""
    key: Key = (config, loops)
    reference, table = _programs_of(fun)
    found = table.get(key)
    if found is None:
        found = table[key] = _build(reference, config, resources)
    return found


def _programs_of(fun: Callable[..., Any]) -> tuple[Reference, dict[Key, Any]]:
    """This very function's table of programs, and how a program reaches the function."""
    identity = id(fun)
    entry = _weak.get(identity)
    if entry is not None and entry[0]() is fun:
        return entry
    kept = _strong.get(identity)
    if kept is not None and kept[0] is fun:
        return (lambda: fun), kept[1]
    try:
        reference: Reference = weakref.ref(fun, lambda dead: _forget(identity, dead))
    except TypeError:  # not weakly referenceable: kept alive here, as jax.jit keeps such functions
        _strong[identity] = (fun, {})
        return (lambda: fun), _strong[identity][1]
    _weak[identity] = (reference, {})
    return _weak[identity]


def _forget(identity: int, dead: Reference) -> None:
    """The function is gone: drop its programs (unless its id was already reused by a newer function)."""
    entry = _weak.get(identity)
    if entry is not None and entry[0] is dead:
        del _weak[identity]


def _build(reference: Reference, config: Config, resources: Mapping[str, tuple[Resource, ...]]) -> Any:
    backend = config.backend

    def traced(*args: Any) -> Any:
        fun = reference()
        assert fun is not None, "an xmap program outlived its function"
        mesh = trace_mesh()
        if backend is not None and mesh is not None and mesh_platform(mesh) not in (None, backend):
            raise NamedShapeError(
                f"xmap of {config.name}: backend={backend!r}, but the current mesh's devices are "
                f"{mesh_platform(mesh)!r}. Fix: drop backend=, or set a mesh of {backend!r} devices",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
        return trace_xmap(body_of(fun, config.typed), config, mesh, resources, args)

    traced.__name__ = f"xmap({config.name})"
    jitted: Any = jax.jit(traced, donate_argnums=config.donate)
    if backend is not None:
        jitted = _OnDevice(jitted, jax.devices(backend)[0])
    return jitted


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
