"""The NamedArray pytree node: the flatten (an attribute read of ``_flat``), the unflatten, key paths that name
the axes, and ``jax.export`` serialization of the node."""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable
from typing import Any

import jax
import jax.export
from jax.tree_util import GetAttrKey, register_pytree_with_keys

from ._flat import CACHE_SIZE, Aux, aux_of
from ._named_array import NamedArray, empty, holds_array, wrap

__all__: list[str] = []

_FLATTEN = operator.attrgetter("_flat")


def _flatten_with_keys(x: NamedArray) -> tuple[tuple[tuple[Any, Any]], Aux]:
    """The leaf's key names its axes, ``.data[batch,embed]`` (sorted, as the leaf's dims are): checkpointers
    that store leaves by key path (orbax) keep the names, and a restore into a target whose names differ
    finds no such leaf instead of reading the dims in another order."""
    children, aux = x._flat
    (data,) = children
    key = _DATA_KEYS.get(aux[0])
    if key is None:
        key = GetAttrKey(f"data[{','.join(aux[0])}]") if aux[0] else GetAttrKey("data")
        if len(_DATA_KEYS) < CACHE_SIZE:
            _DATA_KEYS[aux[0]] = key
    return ((key, data),), aux


_DATA_KEYS: dict[tuple[str, ...], Any] = {}  # sorted axes -> the GetAttrKey naming them


def _unflatten(aux: Aux, children: Any) -> Any:
    """The value around its leaf: every ``jit`` call's results, every ``jax.tree.map``. The aux was validated
    when it was made (``aux_of``), so a leaf with at least the named dims it asks for (``aux[2]``, read from its
    ``aval``: a concrete array or a tracer) is the value's data as it is: allocate, set, return. Anything else
    (a leaf a ``jax.tree.map`` reduced or replaced, mapped axes) takes the checked path, as every leaf would if a
    JAX no longer gave arrays an ``aval``: slower, never wrong. ``jax.Array.ndim`` is a Python property; ``aval``
    is read in C for a concrete array."""
    try:
        data = children[0]
        if len(data.aval.shape) >= aux[2]:
            x = empty()
            x.data = data
            x.axes = aux[0]
            x.mapped = ()
            x._flat = (children, aux)
            return x
    except (AttributeError, TypeError):  # a leaf without an aval (a shape, numpy data), or children not a sequence
        pass
    return _unflatten_checked(aux, children)


def _unflatten_checked(aux: Aux, children: Iterable[Any]) -> Any:
    (data,) = children
    axes, mapped, _ = aux
    if axes and len(getattr(data, "shape", ())) < len(axes) and holds_array(data):
        if data.ndim == 0:  # a leaf reduced to a scalar (jax.tree.map(jnp.sum, params),
            return data  # optax's norms): no axis is left to name, so it stays a plain scalar
        NamedArray(data, axes, mapped)  # raises the explanatory error (jax.vmap mapped a named dim away)
    if mapped and holds_array(data):  # new leaves (jax.lax.psum(x, 'i')): keep the axes the data still varies along
        from ._frames import varying_mapped

        mapped = varying_mapped(data, mapped)
    return wrap(data, axes, mapped)


register_pytree_with_keys(NamedArray, _flatten_with_keys, _unflatten, flatten_func=_FLATTEN)


def _serialize_aux(aux: Aux) -> bytes:
    return json.dumps([list(aux[0]), [list(m) for m in aux[1]]]).encode()


def _deserialize_aux(data: bytes) -> Aux:
    axes, mapped = json.loads(data)
    return aux_of(tuple(axes), tuple((str(n), int(s)) for n, s in mapped))


# jax.export: functions taking or returning NamedArrays serialize (their in/out trees name this node)
jax.export.register_pytree_node_serialization(
    NamedArray,
    serialized_name="typed_xmap.NamedArray",
    serialize_auxdata=_serialize_aux,
    deserialize_auxdata=_deserialize_aux,
)
