"""The NamedArray pytree node: the flatten (an attribute read of ``_flat``), the unflatten, key paths that name
the axes, and ``jax.export`` serialization of the node."""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable
from typing import Any

import jax
import jax.export
from jax.core import Tracer
from jax.tree_util import GetAttrKey, register_pytree_with_keys

from ._flat import CACHE_SIZE, ArrayImpl, Aux, SharedAux
from ._named_array import NamedArray, holds_array, wrap

__all__: list[str] = []

_FLATTEN = operator.attrgetter("_flat")
_new = object.__new__


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


def _unflatten(aux: Aux, children: Iterable[Any]) -> Any:
    """The value around its leaf. The fast path (a jit call's results, a ``jax.tree.map`` in a trace or not): the
    shared aux of sorted axes with nothing mapped (``SharedAux``), and data with all their dims (a leaf reduced
    below them takes the checked path). A concrete array is tested first: it is every leaf of a call's results."""
    (data,) = children
    if type(data) is ArrayImpl:
        if type(aux) is not SharedAux or len(data.aval.shape) < len(aux[0]):
            return _unflatten_checked(data, aux)
    elif type(aux) is not SharedAux or not isinstance(data, Tracer) or len(data.shape) < len(aux[0]):
        return _unflatten_checked(data, aux)
    x = _new(NamedArray)
    x.data = data
    x.axes = aux[0]
    x.mapped = ()
    x._flat = (children if type(children) is tuple else (data,), aux)
    return x


def _unflatten_checked(data: Any, aux: Aux) -> Any:
    axes, mapped = aux
    if axes and len(getattr(data, "shape", ())) < len(axes) and holds_array(data):
        if data.ndim == 0:  # a leaf reduced to a scalar (jax.tree.map(jnp.sum, params),
            return data  # optax's norms): no axis is left to name, so it stays a plain scalar
        NamedArray(data, *aux)  # raises the explanatory error (jax.vmap mapped a named dim away)
    if mapped and holds_array(data):  # new leaves (jax.lax.psum(x, 'i')): keep the axes the data still varies along
        from ._frames import varying_mapped

        mapped = varying_mapped(data, mapped)
    return wrap(data, axes, mapped)


register_pytree_with_keys(NamedArray, _flatten_with_keys, _unflatten, flatten_func=_FLATTEN)


def _serialize_aux(aux: Aux) -> bytes:
    return json.dumps([list(aux[0]), [list(m) for m in aux[1]]]).encode()


def _deserialize_aux(data: bytes) -> Aux:
    axes, mapped = json.loads(data)
    return tuple(axes), tuple((str(n), int(s)) for n, s in mapped)


# jax.export: functions taking or returning NamedArrays serialize (their in/out trees name this node)
jax.export.register_pytree_node_serialization(
    NamedArray,
    serialized_name="typed_xmap.NamedArray",
    serialize_auxdata=_serialize_aux,
    deserialize_auxdata=_deserialize_aux,
)
