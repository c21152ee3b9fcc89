"""The result's sharding of a contraction on a mesh with Explicit axes, checked by the algebra's contraction rule.

JAX needs an ``out_sharding`` for a ``dot_general`` whose operands are split over Explicit mesh axes. Each
output dim keeps the mesh axes an operand's same-letter dim has; two named axes of the result on one mesh axis
are the axis-resource conflict, which ``contract_placement`` (the rule the checker applies to the same call)
raises here rather than one of them being left whole in silence. The check and the sharding are cached per
(subscripts, the operands' partition specs, mesh, axes): a call whose shardings were seen pays one lookup.
On an Auto mesh no ``out_sharding`` is asked for: XLA places the result (and moves what it must).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
from jax.sharding import NamedSharding, PartitionSpec

from ..._algebra import contract_placement

__all__ = ["Named", "contraction_sharding"]

Named = tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]
"""Each operand's named axes, in the order of its data's trailing dims (after its positional dims), and the
result's named axes in the order the call's result lists them (as the checker's message does)."""


def contraction_sharding(
    subscripts: str, arrays: Sequence[Any], named: Named | None = None, operation: str = ""
) -> NamedSharding:
    """The result's sharding of ``jnp.einsum(subscripts, *arrays)``: each output dim keeps the mesh axes an
    operand's same-letter dim has. With ``named`` (the operands' and the result's named axes), the result's are
    first checked by ``contract_placement``: ``AxisResourceConflict`` when two land on one mesh axis (messages
    name the call ``operation``); without, a mesh axis a dim before has taken is left off (an intermediate step
    of a contraction checked whole)."""
    typed = [jax.typeof(a).sharding for a in arrays]
    specs = tuple(tuple(getattr(s, "spec", ())) for s in typed)
    own = [m for m in (getattr(s, "mesh", None) for s in typed) if m is not None and not m.empty]
    mesh = own[0] if own else jax.sharding.get_abstract_mesh()
    return _sharding(subscripts, specs, mesh, named, operation)


@functools.lru_cache(maxsize=4096)
def _sharding(
    subscripts: str, specs: tuple[tuple[Any, ...], ...], mesh: Any, named: Named | None, operation: str
) -> NamedSharding:
    inputs, output = subscripts.split("->")
    terms = inputs.split(",")
    if named is not None:
        _check(terms, specs, named, operation)
    spec_of: dict[str, Any] = {}
    for term, spec in zip(terms, specs, strict=True):
        for letter, entry in zip(term, spec, strict=False):
            if entry is not None:
                spec_of.setdefault(letter, entry)
    used: set[Any] = set()
    parts: list[Any] = []
    for letter in output:
        entry = spec_of.get(letter)
        mesh_axes = set(entry) if isinstance(entry, tuple) else {entry}
        if entry is None or mesh_axes & used:
            parts.append(None)
        else:
            used |= mesh_axes
            parts.append(entry)
    return NamedSharding(mesh, PartitionSpec(*parts))  # on the operands' mesh: also outside jax.set_mesh


def _check(terms: Sequence[str], specs: Sequence[tuple[Any, ...]], named: Named, operation: str) -> None:
    """The contraction rule (``contract_placement``) over the operands' named axes, placed as their dims are."""
    axes, result = named
    placements: list[dict[str, tuple[str, ...]]] = []
    for term, spec, names in zip(terms, specs, axes, strict=True):
        first = len(term) - len(names)  # the named axes are the trailing dims
        entries = [spec[d] if d < len(spec) else None for d in range(first, len(term))]
        placed = zip(names, entries, strict=True)
        placements.append({n: tuple(e) if isinstance(e, tuple) else (e,) for n, e in placed if e is not None})
    contracted = [n for n in dict.fromkeys(n for names in axes for n in names) if n not in result]
    contract_placement(list(result), contracted, placements, operation=operation)
