"""A tiny language model over a stack of residual MLP layers run with ``tx.scan``: tokens split by ``batch``
over ``data``, the hidden ``mlp`` and the tied embedding's ``vocab`` split over ``model``. Between the layer
stack and the output head the activations are resharded (sequence-parallel final norm), and the head is a
per-example function mapped with ``tx.vmap`` whose mapped axis stays on ``data``."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

LAYERS, BATCH, SEQ, EMBED, MLP, VOCAB = 3, 4, 8, 8, 16, 16

ACTS = {"batch": "data"}
SEQ_PARALLEL = {"batch": "data", "seq": "model"}
WEIGHTS = {"mlp": "model", "vocab": "model"}
PER_EXAMPLE = {"batch": "data"}

Hidden = NamedArray[f32, "batch@data seq embed"]
Tokens = NamedArray[i32, "batch@data seq"]


class Layer(TypedDict):
    w_in: NamedArray[f32, "embed mlp@model"]
    w_out: NamedArray[f32, "mlp@model embed"]


class Stack(TypedDict):
    w_in: NamedArray[f32, "layers embed mlp@model"]
    w_out: NamedArray[f32, "layers mlp@model embed"]


class Model(TypedDict):
    emb: NamedArray[f32, "vocab@model embed"]
    stack: Stack


def init(key: jax.Array) -> Model:
    k0, k1, k2 = jax.random.split(key, 3)
    stack: Stack = {
        "w_in": tx.random.normal(k1, {"layers": LAYERS, "embed": EMBED, "mlp": MLP}) * 0.2,
        "w_out": tx.random.normal(k2, {"layers": LAYERS, "mlp": MLP, "embed": EMBED}) * 0.2,  # plant[p1 size static]: "w_out": tx.random.normal(k2, {"layers": LAYERS, "mlp": MLP, "embed": MLP}) * 0.2,
    }
    emb = tx.random.normal(k0, {"vocab": VOCAB, "embed": EMBED}) * 0.5
    return {"emb": tx.shard(emb, WEIGHTS), "stack": tx.shard(stack, WEIGHTS)}  # plant[p2 resource static]: return {"emb": tx.shard(emb, {"vocab": "data"}), "stack": tx.shard(stack, WEIGHTS)}


def norm(h: NamedArray[f32, "batch seq embed"]) -> NamedArray[f32, "batch seq embed"]:
    centred = h - tnp.mean(h, "embed")
    return centred / tnp.sqrt(tnp.mean(centred * centred, "embed") + 1e-5)


@tx.typed
def block(h: Hidden, p: Layer) -> tuple[Hidden, NamedArray[f32, ""]]:
    z = tnp.gelu(tnp.einsum("{batch,seq,embed},{embed,mlp}->{batch,seq,mlp}", norm(h), p["w_in"]))
    h = h + tnp.einsum("{batch,seq,mlp},{mlp,embed}->{batch,seq,embed}", z, p["w_out"])
    return h, tnp.mean(h * h, ("batch", "seq", "embed"))


@tx.typed
def head(h: NamedArray[f32, "seq embed"], emb: NamedArray[f32, "vocab@model embed"]) -> NamedArray[f32, "seq vocab@model"]:
    return tnp.einsum("{seq,embed},{vocab,embed}->{seq,vocab}", h, emb)


def loss(model: Model, tokens: Tokens, targets: Tokens) -> jax.Array:
    x = model["emb"][{"vocab": tokens}]
    h = tx.constrain(x, ACTS)  # plant[p3 resource static]: h = tx.constrain(x, {"batch": "model"})
    h, energies = tx.scan(block, h, model["stack"], axis="layers")
    h = tx.constrain(norm(tx.constrain(h, SEQ_PARALLEL)), ACTS)  # plant[p4 resource static]: h = tx.constrain(norm(tx.constrain(h, {"batch": "data", "seq": "data"})), ACTS)
    logits = tx.vmap(head, axis="batch", axis_resources=PER_EXAMPLE)(h, model["emb"])  # plant[p5 resource static]: logits = tx.vmap(head, axis="batch", axis_resources={"batch": "model"})(h, model["emb"])
    picked = tnp.log_softmax(logits, "vocab")[{"vocab": targets}]
    total: jax.Array = (-tnp.mean(picked, ("batch", "seq")) + 1e-3 * tnp.mean(energies, "layers")).data
    return total


@jax.jit
def train_step(model: Model, tokens: Tokens, targets: Tokens) -> tuple[Model, jax.Array]:
    value, grads = jax.value_and_grad(loss)(model, tokens, targets)
    return jax.tree.map(lambda w, g: w - 0.5 * g, model, grads), value


if __name__ == "__main__":
    mesh = tx.fitting_mesh((2, 4), ("data", "model"))
    jax.set_mesh(mesh)
    model = init(jax.random.key(0))
    raw = tx.named(jax.random.randint(jax.random.key(1), (BATCH, SEQ + 1), 0, VOCAB), ["batch", "seq"])
    tokens = tx.shard(raw[{"seq": slice(0, SEQ)}], ACTS)  # plant[p6 resource static]: tokens = tx.shard(raw[{"seq": slice(0, SEQ)}], {"seq": None})
    targets = tx.shard(raw[{"seq": slice(1, SEQ + 1)}], ACTS)
    model, first = train_step(model, tokens, targets)
    for _ in range(4):
        model, value = train_step(model, tokens, targets)
    print("loss", float(first), "->", float(value))
    assert float(value) < float(first)
    assert tx.resources_of(model["stack"]["w_in"]) == {"mlp": "model"}
    print("ok")
