"""Mixture-of-experts routing by name: ``tx.moe_route``, ``tx.moe_dispatch``, ``tx.moe_combine``.

GShard's top-k routing with a capacity, written with ``tnp``: each token picks its ``k`` likeliest experts;
an expert takes at most ``capacity`` tokens of a group (first choices first, then in token order; the rest
are dropped, their output is zero). ``dispatch`` and ``combine`` are one-hot tables over
``(group..., tokens, expert, slot)``: the dispatch is one einsum over the token axes, the combine one over
``expert`` and ``slot``.

Expert parallelism is a placement: outside the experts the token groups (``batch``) are split over every
device; the dispatched value ``(batch, expert, slot, ...)`` is placed with ``expert`` on the mesh axes the
groups give up (``{'batch': 'data', 'expert': 'model'}``). Changing which mesh axis splits a value from
``batch`` to ``expert`` is an all-to-all: JAX sends each token to its expert's devices, and back in
``moe_combine``. Without a mesh ``resources`` is ignored, so one program runs on one device and on a mesh.

On an Auto mesh a sharding constraint is not a boundary: XLA's propagation carries the tokens' placement
back into the experts' einsums (it all-gathers the expert weights and the dispatched tokens to compute them
there). ``from_resources`` (the placement the value leaves) pins the value on both sides of the move, so
what XLA emits is the all-to-all and nothing gathers; on an Explicit mesh the value already sits there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from .._algebra import dispatch_axes, route_axes
from .._value._named_array import NamedArray
from ._sharding import constrain
from ._structure import as_named
from ._tnp._constructors import one_hot
from ._tnp._contract import einsum
from ._tnp._reductions import softmax
from ._tnp._selection import top_k
from ._tnp._structure import cumsum

__all__ = ["moe_combine", "moe_dispatch", "moe_route"]


def _names(axes: str | Sequence[str]) -> tuple[str, ...]:
    return (axes,) if isinstance(axes, str) else tuple(axes)


def moe_route(
    logits: NamedArray,
    k: int,
    capacity: int,
    *,
    expert: str = "expert",
    tokens: str | Sequence[str] = "seq",
    slot: str = "slot",
) -> tuple[NamedArray, NamedArray, NamedArray]:
    """Route each token to its top ``k`` experts: ``(dispatch, combine, balance_loss)``.

    ``logits`` has the router's ``expert`` axis, the ``tokens`` axes that share the experts' capacity, and
    group axes (``batch``: each group has its own ``capacity`` slots per expert). ``dispatch`` is 1 where a
    token takes a slot of an expert; ``combine`` holds its gate (the softmax probability) there; both have
    ``logits``' axes and ``slot``. ``balance_loss`` (no axes) is Switch/GShard's load-balancing loss,
    ``experts * sum over experts of (share of routed tokens) * (mean probability)``, averaged over groups:
    1 when the load is even. ``k`` is from 1 to the number of experts and ``capacity`` from 1 to the tokens of a
    group (an expert never takes more): anything else is a ``NamedShapeError`` naming the argument.

    Args:
        logits: the router's logits, with ``expert``, the ``tokens`` axes and group axes.
        k: experts per token.
        capacity: slots per expert in each group.
        expert: the experts' axis.
        tokens: the axes that share the capacity.
        slot: the name of the slots' axis.

    Returns:
        ``(dispatch, combine, balance_loss)``.

    Raises:
        NamedShapeError: ``k`` not from 1 to the number of experts, ``capacity`` not from 1 to the tokens of a
            group, or an axis ``logits`` lacks.

    Examples:
        >>> logits = tx.named(jnp.ones((2, 6, 4)), ["batch", "seq", "expert"])
        >>> dispatch, combine, loss = tx.moe_route(logits, 2, 3)
        >>> dispatch.named_shape == {'batch': 2, 'expert': 4, 'seq': 6, 'slot': 3}
        True
    """
    logits = as_named(logits, operation="tx.moe_route", argument="logits")
    names, choice = route_axes(logits.named_shape, k, capacity, expert=expert, tokens=tokens, slot=slot)
    probs: Any = softmax(logits, expert)  # Any: NamedArray's methods and operators are bound at run time
    gates, chosen = top_k(probs, k, axis=expert, new_axis=choice)
    experts = logits.named_shape[expert]
    picked: Any = one_hot(chosen, expert, experts)  # (group, tokens, choice, expert)
    per_choice = picked.sum(names)
    earlier = cumsum(per_choice, choice) - per_choice  # tokens this expert took at earlier choices
    position = _cumsum(picked, names) + earlier - 1  # this token's slot in its expert's buffer
    slots: Any = one_hot(position.astype(jnp.int32), slot, capacity) * picked  # zero past the capacity
    dispatch: NamedArray = slots.sum(choice)
    combine: NamedArray = (slots * gates).sum(choice)
    load = picked.sum(choice).mean(names) / k
    balance = (load * probs.mean(names)).sum(expert) * experts
    loss: NamedArray = balance.mean(tuple(balance.named_shape))
    return dispatch, combine, loss


def _cumsum(x: Any, axes: tuple[str, ...]) -> Any:
    """The running count over several token axes, in their order (the last fastest)."""
    total: Any = cumsum(x, axes[-1])
    for i in range(len(axes) - 2, -1, -1):
        inner = x.sum(axes[i + 1 :])
        total = total + cumsum(inner, axes[i]) - inner
    return total


def _moved(x: NamedArray, resources: Mapping[str, Any] | None, from_resources: Mapping[str, Any] | None) -> NamedArray:
    """``x`` placed by ``from_resources`` and then by ``resources`` (on a mesh; each only when given)."""
    if jax.sharding.get_abstract_mesh().empty:
        return x
    for placement in (from_resources, resources):
        if placement is not None:
            x = constrain(x, placement)
    return x


def moe_dispatch(
    x: NamedArray,
    dispatch: NamedArray,
    *,
    tokens: str | Sequence[str] = "seq",
    expert: str = "expert",
    slot: str = "slot",
    resources: Mapping[str, Any] | None = None,
    from_resources: Mapping[str, Any] | None = None,
) -> NamedArray:
    """Each expert's inputs: ``x`` (``group, tokens, features``) gathered into ``(group, expert, slot,
    features)`` by one einsum over ``tokens``, then placed by ``resources`` (on a mesh): with ``expert`` on
    the mesh axes the groups give up, the tokens travel to their expert's devices (an all-to-all).
    ``from_resources``, the tokens' placement, is where the einsum's result is pinned first (needed on Auto
    meshes, where XLA would otherwise gather the tokens to compute it in the experts' placement). ``x`` has
    neither the table's ``expert`` nor its ``slot`` axis (the einsum would take a diagonal): a named error.

    Args:
        x: the tokens' activations.
        dispatch: ``moe_route``'s first result.
        tokens: the token axes summed over.
        expert: the experts' axis in ``dispatch``.
        slot: the slots' axis in ``dispatch``.
        resources: where the experts' inputs go on a mesh.
        from_resources: the tokens' placement, pinned first.

    Returns:
        The experts' inputs, by ``expert`` and ``slot``.

    Raises:
        NamedShapeError: ``x`` and ``dispatch`` whose token axes differ, or an ``x`` that already has the
            ``expert`` or ``slot`` axis.

    Examples:
        >>> logits = tx.named(jnp.ones((2, 6, 4)), ["batch", "seq", "expert"])
        >>> dispatch, _, _ = tx.moe_route(logits, 2, 3)
        >>> x = tx.named(jnp.ones((2, 6, 5)), ["batch", "seq", "embed"])
        >>> tx.moe_dispatch(x, dispatch).named_shape == {'batch': 2, 'embed': 5, 'expert': 4, 'slot': 3}
        True
    """
    names = _names(tokens)
    x, dispatch = as_named(x, operation="tx.moe_dispatch"), as_named(dispatch, operation="tx.moe_dispatch")
    dispatch_axes(x.named_shape, dispatch.named_shape, names, expert=expert, slot=slot)
    spec = ",".join(names)
    gathered: NamedArray = einsum(f"{{{spec}}},{{{spec}}}->{{}}", x, dispatch)
    return _moved(gathered, resources, from_resources)


def moe_combine(
    y: NamedArray,
    combine: NamedArray,
    *,
    expert: str = "expert",
    slot: str = "slot",
    resources: Mapping[str, Any] | None = None,
    from_resources: Mapping[str, Any] | None = None,
) -> NamedArray:
    """The experts' outputs ``y`` (``group, expert, slot, features``) back at their tokens, weighted by their
    gates: ``y`` is placed by ``resources`` first (the tokens' placement: the all-to-all back), then one einsum
    over ``expert`` and ``slot``. ``from_resources``, the experts' placement, is where ``y`` is pinned before
    it moves (needed on Auto meshes, where XLA would otherwise gather the expert weights to compute ``y`` in
    the tokens' placement).

    Args:
        y: the experts' outputs, by ``expert`` and ``slot``.
        combine: ``moe_route``'s second result.
        expert: the experts' axis.
        slot: the slots' axis.
        resources: the tokens' placement on a mesh.
        from_resources: the experts' placement, pinned first.

    Returns:
        The outputs at their tokens, weighted by their gates.

    Raises:
        NamedShapeError: ``y`` and ``combine`` whose expert or slot axes differ.

    Examples:
        >>> logits = tx.named(jnp.ones((2, 6, 4)), ["batch", "seq", "expert"])
        >>> _, combine, _ = tx.moe_route(logits, 2, 3)
        >>> y = tx.named(jnp.ones((2, 4, 3, 5)), ["batch", "expert", "slot", "embed"])
        >>> tx.moe_combine(y, combine).named_shape == {'batch': 2, 'embed': 5, 'seq': 6}
        True
    """
    moved = _moved(y, resources, from_resources)
    combined: NamedArray = einsum(f"{{{expert},{slot}}},{{{expert},{slot}}}->{{}}", moved, combine)
    return combined
