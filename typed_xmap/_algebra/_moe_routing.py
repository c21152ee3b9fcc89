"""Mixture-of-experts routing by name: what ``tx.moe_route`` and ``tx.moe_dispatch`` accept.

``route_axes`` checks ``moe_route``'s arguments against the logits' named shape (every message names
``tx.moe_route`` and the argument, never the tnp call the routing is built from) and returns the token axes
and the name of the internal choice axis; ``dispatch_axes`` checks that the value dispatched does not carry
the ``expert`` or ``slot`` axis the dispatch table brings. An unknown size (``None``) agrees with every bound.

Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ._errors import ErrorKind, NamedShapeError
from ._shapes import Size, describe_named_shape, is_size
from ._structure import carried_axis, new_axis

__all__ = ["dispatch_axes", "route_axes"]

Shape = Mapping[str, Size]
ROUTE = "tx.moe_route"


def route_axes(
    named: Shape, k: object, capacity: object, *, expert: object, tokens: object, slot: object
) -> tuple[tuple[str, ...], str]:
    """``moe_route(logits, k, capacity, expert=, tokens=, slot=)``: the token axes and a choice axis name the
    logits lack. ``k`` is at most the experts; ``capacity`` at least 1 and at most a group's tokens (an
    expert never takes more, so a larger capacity is slots no token fills)."""
    names = (tokens,) if isinstance(tokens, str) else tuple(tokens) if isinstance(tokens, (tuple, list)) else None
    if not names:
        raise NamedShapeError(
            f"{ROUTE}: tokens={tokens!r}; tokens names the axes whose tokens share an expert's capacity (at least "
            f"one). Fix: tokens='seq', or tokens=('seq', 'patch')",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    experts = named[carried_axis(named, _axis(expert, "expert"), operation=ROUTE, operand="logits")]
    for name in names:
        carried_axis(named, _axis(name, "tokens"), operation=ROUTE, operand="logits")
    if len(set(names)) != len(names) or expert in names:
        raise NamedShapeError(
            f"{ROUTE}: tokens={tokens!r} with expert={expert!r} names an axis twice. Fix: list each token axis "
            f"once, and never the expert axis",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    new_axis(named, _axis(slot, "slot"), operation=ROUTE, operand="logits")
    if not is_size(k) or k == 0 or (experts is not None and k > experts):
        raise NamedShapeError(
            f"{ROUTE}: k={k!r}; each token picks k of the {_count(experts)} experts, so k is an int from 1 to "
            f"{_count(experts)}. Fix: k=1 (Switch) or k=2 (GShard)",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    sizes = [named[n] for n in names]
    group = None if None in sizes else math.prod(s for s in sizes if s is not None)
    if not is_size(capacity) or capacity == 0 or (group is not None and capacity > group):
        raise NamedShapeError(
            f"{ROUTE}: capacity={capacity!r}; an expert takes from 1 to {_count(group)} tokens of a group (the "
            f"tokens {names}), so capacity is an int in that range (a larger one is slots no token fills). Fix: "
            f"capacity = k * tokens / experts, times a capacity factor such as 1.25, at most {_count(group)}",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    choice = f"{expert}_choice"
    while choice in named or choice == slot:
        choice += "_"
    return names, choice


def _axis(value: object, argument: str) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise NamedShapeError(
            f"{ROUTE}: {argument}={value!r} is not an axis name. Fix: pass a name such as {argument}='{argument}'",
            kind=ErrorKind.INVALID_ARGUMENT,
        )
    return value


def _count(size: Size) -> str:
    return "the axis's size" if size is None else str(size)


def dispatch_axes(x: Shape, dispatch: Shape, tokens: tuple[str, ...], *, expert: str, slot: str) -> None:
    """``moe_dispatch(x, dispatch, tokens=, expert=, slot=)``: ``x`` has the token axes and neither the
    ``expert`` nor the ``slot`` axis the table brings (the einsum would pair them and take a diagonal)."""
    operation = "tx.moe_dispatch"
    for name in tokens:
        carried_axis(x, name, operation=operation, operand="x")
        carried_axis(dispatch, name, operation=operation, operand="dispatch")
    for name in (expert, slot):
        carried_axis(dispatch, name, operation=operation, operand="dispatch")
        if name in x:
            raise NamedShapeError(
                f"{operation}: x has an axis {name!r}, which the dispatch table brings (x "
                f"{describe_named_shape(x)}); the einsum would pair the two and take their diagonal. Fix: rename "
                f"x's axis (tx.rename(x, {{{name!r}: ...}})), or route with expert=/slot= names x lacks",
                kind=ErrorKind.AXIS_MISSING,
                axes=[name],
            )
