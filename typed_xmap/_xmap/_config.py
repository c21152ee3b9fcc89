"""What ``xmap(...)`` was given, validated once into a hashable ``Config`` (everything but the function).

The function itself is kept apart, so that a ``Config`` can key the program cache (``_cache``) without
keeping the function alive.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._algebra import ErrorKind, NamedShapeError, Resource, check_axis_name, is_size
from ._specs import SpecTree

__all__ = [
    "Config",
    "body_of",
    "check_donated",
    "donated_arguments",
    "function_name",
    "named_parameters",
    "validated_sizes",
]


@dataclass(frozen=True)
class Config:
    """``xmap``'s arguments, validated; hashable, so one program serves every equal ``Config``."""

    name: str
    typed: tuple[bool, ...] | None  # per positional parameter: annotated NamedArray[...]? (None: untyped body)
    in_spec: SpecTree | None
    out_spec: SpecTree
    axis_sizes: tuple[tuple[str, int], ...]
    resources: tuple[tuple[str, tuple[Resource, ...]], ...]  # strings may still name serial_loop contexts
    donate: tuple[int, ...] = ()
    backend: str | None = None

    @property
    def sizes(self) -> dict[str, int]:
        return dict(self.axis_sizes)

    @property
    def resource_map(self) -> dict[str, tuple[Resource, ...]]:
        return dict(self.resources)


def function_name(fun: Callable[..., Any]) -> str:
    return getattr(fun, "__name__", None) or repr(fun)


def named_parameters(fun: Callable[..., Any]) -> tuple[bool, ...] | None:
    """Per positional parameter of ``fun``: is it annotated with ``NamedArray[...]``? ``None`` if none is.

    A ``*args`` parameter's answer is repeated for every further argument (the last entry).
    """
    from .._checking._annotations import mentions_named_array

    try:
        hints = typing.get_type_hints(fun, include_extras=True)
        parameters = list(inspect.signature(fun).parameters.values())
    except Exception:  # unresolvable annotations, builtins, partials: treat as untyped
        return None
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    flags = tuple(mentions_named_array(hints[p.name]) if p.name in hints else False for p in positional)
    return flags if any(flags) else None


def body_of(fun: Callable[..., Any], typed: tuple[bool, ...] | None) -> Callable[..., Any]:
    """What runs per element: ``fun``, with its NamedArray hints checked when it has any."""
    if typed is None:
        return fun
    from .._checking._typed import check_named_hints

    return check_named_hints(fun)  # other hints see tracers here: beartype would reject `c: float`


def validated_sizes(axis_sizes: object) -> tuple[tuple[str, int], ...]:
    """``axis_sizes``: a dict from axis names to non-negative ints."""
    if axis_sizes is None:
        return ()
    if not isinstance(axis_sizes, Mapping):
        raise NamedShapeError(
            f"axis_sizes must be a dict from axis names to sizes, got {type(axis_sizes).__name__} "
            f"{axis_sizes!r}. Fix: write axis_sizes={{'batch': 8}}",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    for axis, size in axis_sizes.items():
        check_axis_name(axis, f"axis_sizes[{axis!r}]")
        if not is_size(size):
            raise NamedShapeError(
                f"axis_sizes[{axis!r}] = {size!r}: sizes are non-negative ints. Fix: give the axis's length, "
                f"e.g. axis_sizes={{{axis!r}: 8}}",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
    return tuple(axis_sizes.items())


def _positional_count(fun: Callable[..., Any]) -> int | None:
    """How many positional arguments ``fun`` takes, or ``None`` when it takes any number (or cannot tell)."""
    try:
        parameters = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def donated_arguments(donate_argnums: object, fun: Callable[..., Any], name: str) -> tuple[int, ...]:
    """``donate_argnums`` as non-negative argument indices, checked against ``fun``'s signature when known."""
    indices = (donate_argnums,) if isinstance(donate_argnums, int) else donate_argnums
    if (
        not isinstance(indices, Sequence)
        or isinstance(indices, str)
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in indices)
    ):
        raise NamedShapeError(
            f"donate_argnums={donate_argnums!r} for {name}: donate_argnums is an argument index or a tuple of "
            f"them. Fix: write donate_argnums=0 or donate_argnums=(0, 2)",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    count = _positional_count(fun)
    for index in indices:
        if (count is not None and not -count <= index < count) or (count is None and index < 0):
            takes = "any number of" if count is None else str(count)
            valid = (
                "non-negative index"
                if count is None
                else ("index 0" if count == 1 else f"index 0 to {count - 1} (or -{count} to -1)")
            )
            raise NamedShapeError(
                f"donate_argnums={donate_argnums!r} for {name}, which takes {takes} positional argument(s): "
                f"there is no argument {index}. Fix: donate existing arguments, by {valid}",
                kind=ErrorKind.INVALID_ARGUMENT,
            )
    return tuple(sorted({i % count if count else i for i in indices}))


def check_donated(donate: tuple[int, ...], args: tuple[Any, ...], name: str) -> None:
    """At call time: every donated index names an argument of this call."""
    if donate and donate[-1] >= len(args):
        raise NamedShapeError(
            f"donate_argnums={donate!r} for {name}, but it was called with {len(args)} argument(s): there is no "
            f"argument {donate[-1]}. Fix: pass that argument, or donate only the arguments given",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
