"""A union applies each rule per member: ``tnp.sum(u, "batch")`` where ``u`` is ``A | B`` (the two branches of
``x if c else y``) is ``tnp.sum(A, "batch") | tnp.sum(B, "batch")``, as mypy itself does for a method or an
operator on a union. An error in one member is an error of the call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mypy.types import Type, UnionType, get_proper_type

from ._encoding import decode

__all__ = ["per_member"]

MAX_MEMBERS = 8
"""The most calls a union argument splits into (the members of all union arguments multiplied)."""

Hook = Callable[[Any], Type]


def _union_argument(ctx: Any) -> tuple[int, int, list[Type]] | None:
    """The first argument whose type is a union of NamedArrays (and scalars): its position and members."""
    for group, types in enumerate(ctx.arg_types):
        for index, typ in enumerate(types):
            proper = get_proper_type(typ)
            if isinstance(proper, UnionType) and len(proper.items) <= MAX_MEMBERS:
                members = list(proper.items)
                shapes = [decode(m) for m in members]
                if all(s is not None for s in shapes) and any(s is not None and not s.scalar for s in shapes):
                    return group, index, members
    return None


def per_member(hook: Hook) -> Hook:
    """``hook`` called once per member of a union argument, the results joined in a union."""

    def split(ctx: Any, budget: int = MAX_MEMBERS) -> Type:
        found = _union_argument(ctx)
        if found is None or budget < 2:
            return hook(ctx)
        group, index, members = found
        results = []
        for member in members:
            types = [list(t) for t in ctx.arg_types]
            types[group][index] = member
            results.append(split(ctx._replace(arg_types=types), budget // len(members)))
        distinct: list[Type] = []
        for result in results:
            if not any(result == seen for seen in distinct):
                distinct.append(result)
        return UnionType.make_union(distinct)

    return split
