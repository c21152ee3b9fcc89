"""Full checks of container hints holding ``NamedArray[...]``: every element, on every call.

beartype checks one random element of a list or dict per call (its O(1) strategy), so a container with one
wrongly named element often passes. ``@tx.typed`` checks hints that contain ``NamedArray[...]`` (``list``,
``tuple`` fixed or variadic, ``dict``/``Mapping``, ``Sequence``, ``Optional``/``Union``, nested, and the
fields of a dataclass, ``TypedDict`` or ``NamedTuple``) here instead, element by element, binding sizes in
the call's memo like any parameter. A failure is a ``Failure``: the path inside the value (``['b']``,
``[3]``, ``.h``), the annotation class and value that failed.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from beartype.door import is_bearable

from .._algebra import ErrorKind, Mismatch, leaf_bindings, without_groups
from ._annotations import NamedArrayHint, call_state

__all__ = ["Failure", "container_check", "holds_named_arrays"]


@dataclass(frozen=True)
class Failure:
    """Where a container check failed: the path inside the value, and the hint and element there."""

    path: str
    hint: Any
    value: Any
    why: Mismatch | None = None
    """Why a NamedArray element failed its annotation (``None``: it is not a NamedArray, or not a container)."""


Check = Callable[[Any, str], Failure | None]

_SEQUENCES = {list: list, abc.Sequence: abc.Sequence, abc.MutableSequence: abc.MutableSequence, set: set}
_MAPPINGS = {dict: dict, abc.Mapping: abc.Mapping, abc.MutableMapping: abc.MutableMapping}


def holds_named_arrays(hint: Any) -> bool:
    """Whether ``hint`` is or holds ``NamedArray[...]``: in its arguments, or a dataclass's field hints."""
    if isinstance(hint, type) and issubclass(hint, NamedArrayHint):
        return True
    if _named_fields(hint):
        return True
    return any(holds_named_arrays(arg) for arg in typing.get_args(hint))


def _named_fields(hint: Any) -> dict[str, Any]:
    """The fields whose hints hold NamedArrays of a dataclass (a pytree's, e.g. a flax/equinox module's), a
    ``TypedDict`` or a ``NamedTuple``."""
    if not (
        isinstance(hint, type) and (dataclasses.is_dataclass(hint) or _is_typed_dict(hint) or _is_named_tuple(hint))
    ):
        return {}
    try:
        hints = typing.get_type_hints(hint, include_extras=True)
    except (NameError, TypeError):  # a forward reference it cannot resolve: beartype's isinstance only
        return {}
    names = {f.name for f in dataclasses.fields(hint)} if dataclasses.is_dataclass(hint) else set(hints)
    fields = {n: _required_or_not(h) for n, h in hints.items() if n in names}
    return {n: h for n, h in fields.items() if h is not hint and holds_named_arrays(h)}


def _is_typed_dict(hint: type) -> bool:
    """A ``TypedDict`` class (typing's or typing_extensions')."""
    return issubclass(hint, dict) and hasattr(hint, "__required_keys__")


def _is_named_tuple(hint: type) -> bool:
    return issubclass(hint, tuple) and hasattr(hint, "_fields")


def _required_or_not(hint: Any) -> Any:
    """A TypedDict field's hint without its ``Required``/``NotRequired`` wrapper (``__required_keys__`` says which)."""
    if typing.get_origin(hint) in (typing.Required, typing.NotRequired):
        return typing.get_args(hint)[0]
    return hint


def container_check(hint: Any) -> Check:
    """A checker of ``hint`` that visits every element (hints without NamedArrays: beartype's check)."""
    if isinstance(hint, type) and issubclass(hint, NamedArrayHint):
        return functools.partial(_named, hint)
    fields = _named_fields(hint)
    if fields:
        return _fields(hint, {name: container_check(h) for name, h in fields.items()})
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return container_check(args[0])
    if origin is typing.Union or origin is types.UnionType:
        return _union([container_check(a) for a in args], hint)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return _sequence(tuple, container_check(args[0]), hint)
        return _fixed_tuple([container_check(a) for a in args], hint)
    if origin in _SEQUENCES and args:
        return _sequence(_SEQUENCES[origin], container_check(args[0]), hint)
    if origin in _MAPPINGS and len(args) == 2:
        return _mapping(_MAPPINGS[origin], container_check(args[0]), container_check(args[1]), hint)
    return lambda value, path: None if is_bearable(value, hint) else Failure(path, hint, value)


def _named(hint: type, value: Any, path: str) -> Failure | None:
    """A leaf: its axes bound by name with the call's, its group (``"*weight"``) its own (``leaf_bindings``)."""
    call_state.failure = None
    memo = call_state.memo
    before = dict(memo) if memo is not None else {}
    if memo is not None:  # the call's groups are not the leaf's: the leaf's group matches alone
        memo.clear()
        memo.update(without_groups(before))
    try:
        fits = isinstance(value, hint)
    finally:
        if memo is not None:
            after = leaf_bindings(before, memo)
            memo.clear()
            memo.update(after)
    if fits:
        return None
    failure = _recorded()
    return Failure(path, hint, value, failure[2] if failure is not None and failure[1] is value else None)


def _recorded() -> tuple[Any, Any, Mismatch] | None:
    """The failure the annotation class recorded during the last check."""
    return call_state.failure


def _sequence(kind: Any, item: Check, hint: Any) -> Check:
    def check(value: Any, path: str) -> Failure | None:
        if not isinstance(value, kind) or isinstance(value, str):
            return Failure(path, hint, value)
        for i, element in enumerate(value):
            failure = item(element, f"{path}[{i}]")
            if failure is not None:
                return failure
        return None

    return check


def _fields(cls: Any, fields: dict[str, Check]) -> Check:
    """A dataclass or ``NamedTuple`` (fields at ``.name``) or a ``TypedDict`` (keys at ``['name']``)."""
    keyed = _is_typed_dict(cls)

    def check(value: Any, path: str) -> Failure | None:
        if not isinstance(value, abc.Mapping if keyed else cls):
            return Failure(path, cls, value)
        for name, field_check in fields.items():
            if not keyed:
                failure = field_check(getattr(value, name), f"{path}.{name}")
            elif name in value:
                failure = field_check(value[name], f"{path}[{name!r}]")
            elif name in cls.__required_keys__:
                failure = Failure(path, cls, value, Mismatch(f"it has no key {name!r}", ErrorKind.INVALID_ARGUMENT))
            else:
                failure = None
            if failure is not None:
                return failure
        return None

    return check


def _fixed_tuple(items: list[Check], hint: Any) -> Check:
    def check(value: Any, path: str) -> Failure | None:
        if not isinstance(value, tuple) or len(value) != len(items):
            return Failure(path, hint, value)
        for i, (item, element) in enumerate(zip(items, value, strict=True)):
            failure = item(element, f"{path}[{i}]")
            if failure is not None:
                return failure
        return None

    return check


def _mapping(kind: Any, key: Check, item: Check, hint: Any) -> Check:
    def check(value: Any, path: str) -> Failure | None:
        if not isinstance(value, kind):
            return Failure(path, hint, value)
        for k, element in value.items():
            failure = key(k, f"{path} key {k!r}") or item(element, f"{path}[{k!r}]")
            if failure is not None:
                return failure
        return None

    return check


def _union(alternatives: list[Check], hint: Any) -> Check:
    """The first alternative that fits; sizes an alternative bound before failing are unbound again."""

    def check(value: Any, path: str) -> Failure | None:
        memo = call_state.memo
        saved = dict(memo) if memo is not None else None
        best: Failure | None = None
        for alternative in alternatives:
            failure = alternative(value, path)
            if failure is None:
                return None
            if memo is not None and saved is not None:
                memo.clear()
                memo.update(saved)
            if _deeper(failure, best, value):
                best = failure
        return best or Failure(path, hint, value)

    return check


def _deeper(failure: Failure, best: Failure | None, value: Any) -> bool:
    """Report the alternative that got furthest: one that failed inside ``value``, or on a NamedArray hint."""
    if best is None:
        return True
    inside = failure.value is not value
    named = isinstance(failure.hint, type) and issubclass(failure.hint, NamedArrayHint)
    best_named = isinstance(best.hint, type) and issubclass(best.hint, NamedArrayHint)
    return (inside and best.value is value) or (named and not best_named and best.value is value)
