"""Containers of NamedArrays: one axis name, one size across the leaves; each leaf's group its own.

A dict, ``TypedDict``, ``NamedTuple`` or dataclass of NamedArrays (nested ones included) binds sizes as the
arguments of one call do: ``{"w_in": "feat hidden=64", "w_t": "temb hidden=32"}`` gives ``hidden`` two sizes,
which ``@tx.typed`` rejects where the container is a parameter and the plugin reports where it is built. A
variadic group in a leaf's annotation (``dict[str, NamedArray[f32, "layers *weight"]]``) stands for that leaf's
other axes only: the stacked weights of a model differ in them, so a group is never bound across leaves
(its axes still are, by name).

The runtime checks leaves one at a time against the call's bindings (``leaf_bindings``); the plugin meets
the leaves' shapes at once, with symbolic sizes (``meet_fields``). Pure Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from ._shapes import Binding
from ._spec import GROUP_PREFIX
from ._symbols import StaticSize, meet_sizes

__all__ = ["leaf_bindings", "meet_fields", "without_groups"]

V = TypeVar("V")


def without_groups(bindings: Mapping[str, V]) -> dict[str, V]:
    """``bindings`` less its groups' keys (``'*rest'``): what a container's leaf binds across the container."""
    return {name: size for name, size in bindings.items() if not name.startswith(GROUP_PREFIX)}


def leaf_bindings(before: Mapping[str, Binding], after: Mapping[str, Binding]) -> dict[str, Binding]:
    """A call's bindings after a container's leaf was matched (``after``, the leaf's group bound by the match)
    as the container rule has them: the leaf's axes bound by name, the groups as they were ``before``."""
    return {**without_groups(after), **{n: s for n, s in before.items() if n.startswith(GROUP_PREFIX)}}


def meet_fields(
    fields: Sequence[tuple[str, Mapping[str, StaticSize]]],
    *,
    container: str,
    shown: Sequence[Mapping[str, StaticSize]] | None = None,
) -> dict[str, StaticSize]:
    """Where a container is built: its leaves (``(path, named shape)``, paths such as ``['w_in']`` or
    ``.layers['query']``) meet by name, groups aside; sizes that certainly differ raise ``NamedShapeError``
    naming the two fields (``meet_sizes``' rule)."""
    shapes = [without_groups(shape) for _, shape in fields]
    labels = [f"field {path}" for path, _ in fields]
    return meet_sizes(
        shapes,
        operation=f"the {container} built here (@tx.typed binds one size per axis name across a container's fields)",
        operands=labels,
        shown=shown,
    )
