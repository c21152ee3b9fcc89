"""Sharding by name in a jitted MLP step, with the mappings checked statically.

One model-wide mapping serves every value: ``tx.shard`` places the parameters (a dict, a pytree) and
``tx.constrain`` pins the hidden activations inside ``jax.jit``. The plugin checks each literal mapping with
the rule ``xmap`` uses: two axes of one value on one mesh axis would be ``axis-resource-conflict`` at the call.

typed-xmap check examples/typed/sharding.py
"""

from __future__ import annotations

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

Inputs = NamedArray[f32, "batch embed"]
Hidden = NamedArray[f32, "batch ffn"]
Params = dict[str, NamedArray[f32, "embed ffn"]]

RESOURCES = {"batch": "data", "ffn": "model"}


def place(params: Params, x: Inputs) -> tuple[Params, Inputs]:
    """Parameters split over ``model`` by ``ffn``, inputs over ``data`` by ``batch`` (call under a mesh):
    one mapping for both, each value taking the keys it carries."""
    return tx.shard(params, RESOURCES), tx.shard(x, RESOURCES)


@jax.jit
def hidden(params: Params, x: Inputs) -> Hidden:
    h = tnp.relu(tnp.einsum("{embed},{embed,ffn}->{ffn}", x, params["w"]))
    return tx.constrain(h, {"batch": "data", "ffn": "model"})
