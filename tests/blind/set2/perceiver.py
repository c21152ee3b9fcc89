"""A Perceiver classifier for long sequences, trained data-parallel on a device mesh.

A long input (patches of a raw signal, with learned positions) is read by a small learned latent array through
one cross-attention; the latents then run a stack of self-attention blocks (``tx.scan`` over ``layers``). The
batch is split over the mesh's ``data`` axis, heads and the MLP over ``model``; the classifier head of the
evaluation path is an ``xmap`` with ``axis_resources``.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import math
from dataclasses import dataclass
from functools import partial
from typing import TypedDict

import jax
import jax.numpy as jnp
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

from _sizes import DATA_PARALLEL, LEARNING_RATE, MESH_AXES, MODEL_PARALLEL, TINY_BATCH, TINY_HIDDEN

Signal = NamedArray[f32, "batch time"]
Inputs = NamedArray[f32, "batch index embed"]
Latents = NamedArray[f32, "batch latent embed"]
Projection = NamedArray[f32, "embed heads head_dim"]


@dataclass(frozen=True)
class PerceiverConfig:
    batch: int = TINY_BATCH
    time: int = 64
    patch: int = 4
    latent: int = 8
    embed: int = TINY_HIDDEN
    heads: int = 2
    mlp_ratio: int = 2
    layers: int = 2
    classes: int = 4

    @property
    def index(self) -> int:
        return self.time // self.patch

    @property
    def head_dim(self) -> int:
        return self.embed // self.heads


class CrossAttention(TypedDict):
    latent_norm: NamedArray[f32, "embed"]
    input_norm: NamedArray[f32, "embed"]
    query: Projection
    key: Projection
    value: Projection
    out: Projection


class Layer(TypedDict):
    """One self-attention block's weights (``tx.scan`` hands one layer of the stack, without ``layers``)."""

    attention_norm: NamedArray[f32, "embed"]
    query: Projection
    key: Projection
    value: Projection
    out: Projection
    mlp_norm: NamedArray[f32, "embed"]
    mlp_in: NamedArray[f32, "embed mlp"]
    mlp_out: NamedArray[f32, "mlp embed"]


class StackedLayers(TypedDict):
    """``Layer``'s weights stacked along ``layers``."""

    attention_norm: NamedArray[f32, "layers embed"]
    query: NamedArray[f32, "layers embed heads head_dim"]
    key: NamedArray[f32, "layers embed heads head_dim"]
    value: NamedArray[f32, "layers embed heads head_dim"]
    out: NamedArray[f32, "layers embed heads head_dim"]
    mlp_norm: NamedArray[f32, "layers embed"]
    mlp_in: NamedArray[f32, "layers embed mlp"]
    mlp_out: NamedArray[f32, "layers mlp embed"]


class PerceiverParams(TypedDict):
    patch_embed: NamedArray[f32, "in_feat embed"]
    positions: NamedArray[f32, "index embed"]
    latents: NamedArray[f32, "latent embed"]
    cross: CrossAttention
    layers: StackedLayers
    final_norm: NamedArray[f32, "embed"]
    classifier: NamedArray[f32, "embed classes"]


RESOURCES = {"batch": "data", "heads": "model", "mlp": "model"}  # plant[p5 resource static]: RESOURCES = {"batch": "data", "heads": "model", "mlp": "data"}


def init(cfg: PerceiverConfig, key: jax.Array) -> PerceiverParams:
    k = iter(jax.random.split(key, 16))
    mlp = cfg.mlp_ratio * cfg.embed
    by_embed = 1.0 / math.sqrt(cfg.embed)
    projection = {"embed": cfg.embed, "heads": cfg.heads, "head_dim": cfg.head_dim}
    stacked = {"layers": cfg.layers, **projection}
    cross: CrossAttention = {
        "latent_norm": tnp.ones({"embed": cfg.embed}, dtype=jnp.float32),
        "input_norm": tnp.ones({"embed": cfg.embed}, dtype=jnp.float32),
        "query": tx.random.normal(next(k), projection) * by_embed,
        "key": tx.random.normal(next(k), projection) * by_embed,
        "value": tx.random.normal(next(k), projection) * by_embed,
        "out": tx.random.normal(next(k), projection) * by_embed,
    }
    return {
        "patch_embed": tx.random.normal(next(k), {"in_feat": cfg.patch, "embed": cfg.embed}) / math.sqrt(cfg.patch),
        "positions": tx.random.normal(next(k), {"index": cfg.time // cfg.patch, "embed": cfg.embed}) * 0.02,  # plant[p1 size static]: "positions": tx.random.normal(next(k), {"index": cfg.time, "embed": cfg.embed}) * 0.02,
        "latents": tx.random.normal(next(k), {"latent": cfg.latent, "embed": cfg.embed}) * 0.02,
        "cross": cross,
        "layers": {
            "attention_norm": tnp.ones({"layers": cfg.layers, "embed": cfg.embed}, dtype=jnp.float32),
            "query": tx.random.normal(next(k), stacked) * by_embed,
            "key": tx.random.normal(next(k), stacked) * by_embed,
            "value": tx.random.normal(next(k), stacked) * by_embed,
            "out": tx.random.normal(next(k), stacked) * by_embed,
            "mlp_norm": tnp.ones({"layers": cfg.layers, "embed": cfg.embed}, dtype=jnp.float32),
            "mlp_in": tx.random.normal(next(k), {"layers": cfg.layers, "embed": cfg.embed, "mlp": mlp}) * by_embed,
            "mlp_out": tx.random.normal(next(k), {"layers": cfg.layers, "mlp": mlp, "embed": cfg.embed})  # plant[p2 size static]: "mlp_out": tx.random.normal(next(k), {"layers": cfg.layers, "mlp": mlp // 2, "embed": cfg.embed})
            / math.sqrt(mlp),
        },
        "final_norm": tnp.ones({"embed": cfg.embed}, dtype=jnp.float32),
        "classifier": tnp.zeros({"embed": cfg.embed, "classes": cfg.classes}, dtype=jnp.float32),
    }


def layer_norm(x: NamedArray[f32, "*rest embed"], scale: NamedArray[f32, "embed"]) -> NamedArray[f32, "*rest embed"]:
    centred = x - tnp.mean(x, "embed")
    return centred / tnp.sqrt(tnp.mean(centred * centred, "embed") + 1e-5) * scale


@tx.typed
def embed_signal(cfg: PerceiverConfig, params: PerceiverParams, signal: Signal) -> Inputs:
    patches = tx.split_axis(signal, "time", {"index": cfg.time // cfg.patch, "in_feat": cfg.patch})
    tokens = tnp.einsum("{in_feat},{in_feat,embed}->{embed}", patches, params["patch_embed"])
    return tokens + params["positions"]


@tx.typed
def cross_attend(p: CrossAttention, latents: NamedArray[f32, "latent embed"], inputs: Inputs) -> Latents:
    """The latents (shared by every example) query the whole long input once."""
    x = layer_norm(inputs, p["input_norm"])
    q = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", layer_norm(latents, p["latent_norm"]), p["query"])
    k = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", x, p["key"])
    v = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", x, p["value"])
    scores = tnp.einsum("{latent,head_dim},{index,head_dim}->{latent,index}", q, k) / math.sqrt(q.named_shape["head_dim"])  # plant[p3 name static]: scores = tnp.einsum("{latent,head_dim},{index,head_dim}->{latent,head_dim}", q, k) / math.sqrt(q.named_shape["head_dim"])
    weights = tnp.softmax(scores, "index")
    mixed = tnp.einsum("{latent,index},{index,head_dim}->{latent,head_dim}", weights, v)
    return latents + tnp.einsum("{heads,head_dim},{embed,heads,head_dim}->{embed}", mixed, p["out"])


def self_attend(x: Latents, p: Layer) -> Latents:
    h = layer_norm(x, p["attention_norm"])
    keys = h.rename({"latent": "kv"})  # plant[p4 name static]: keys = h
    q = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", h, p["query"])
    k = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", keys, p["key"])
    v = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", keys, p["value"])
    scores = tnp.einsum("{latent,head_dim},{kv,head_dim}->{latent,kv}", q, k) / math.sqrt(q.named_shape["head_dim"])
    weights = tnp.softmax(scores, "kv")
    mixed = tnp.einsum("{latent,kv},{kv,head_dim}->{latent,head_dim}", weights, v)
    return tnp.einsum("{heads,head_dim},{embed,heads,head_dim}->{embed}", mixed, p["out"])


def latent_block(x: Latents, p: Layer) -> tuple[Latents, None]:
    x = x + self_attend(x, p)
    h = tnp.gelu(tnp.einsum("{embed},{embed,mlp}->{mlp}", layer_norm(x, p["mlp_norm"]), p["mlp_in"]))
    h = tx.constrain(h, RESOURCES)
    return x + tnp.einsum("{mlp},{mlp,embed}->{embed}", h, p["mlp_out"]), None


@tx.typed
def encode(cfg: PerceiverConfig, params: PerceiverParams, signal: Signal) -> NamedArray[f32, "batch embed"]:
    inputs = embed_signal(cfg, params, signal)
    x = cross_attend(params["cross"], params["latents"], inputs)
    x, _ = tx.scan(latent_block, x, params["layers"], axis="layers")
    return tnp.mean(layer_norm(x, params["final_norm"]), "latent")  # plant[p7 return static]: return layer_norm(x, params["final_norm"])


@tx.typed
def logits(cfg: PerceiverConfig, params: PerceiverParams, signal: Signal) -> NamedArray[f32, "batch classes"]:
    return tnp.einsum("{embed},{embed,classes}->{classes}", encode(cfg, params, signal), params["classifier"])


def loss(params: PerceiverParams, cfg: PerceiverConfig, signal: Signal, labels: NamedArray[i32, "batch"]) -> jax.Array:
    log_probs = tnp.log_softmax(logits(cfg, params, signal), "classes")
    nll = -log_probs[{"classes": labels}]
    return tx.positional(tnp.mean(nll, "batch"), [])


@partial(jax.jit, static_argnums=1)
def train_step(
    params: PerceiverParams, cfg: PerceiverConfig, signal: Signal, labels: NamedArray[i32, "batch"]
) -> tuple[PerceiverParams, jax.Array]:
    signal = tx.constrain(signal, {"batch": "data"})  # plant[p9 dtype static]: signal = tx.constrain(signal.astype(jnp.bfloat16), {"batch": "data"})
    value, grads = jax.value_and_grad(loss)(params, cfg, signal, labels)
    new_params: PerceiverParams = jax.tree.map(
        lambda w, g: w - LEARNING_RATE * g, params, grads, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray)
    )
    return new_params, value


def head_probabilities(
    pooled: NamedArray[f32, "batch embed"], classifier: NamedArray[f32, "embed classes"]
) -> NamedArray[f32, "batch classes"]:
    return tnp.softmax(tnp.einsum("{embed},{embed,classes}->{classes}", pooled, classifier), "classes")


sharded_head = tx.xmap(
    head_probabilities,
    out_axes=["batch", "classes", ...],
    axis_resources={"batch": "data", "embed": "model"},  # plant[p6 resource static]: axis_resources={"batch": "data", "embed": "model", "classes": "model"},
)


def evaluate(cfg: PerceiverConfig, params: PerceiverParams, signal: Signal, labels: NamedArray[i32, "batch"]) -> float:
    probabilities = tx.named(sharded_head(encode(cfg, params, signal), params["classifier"]), ["batch", "classes"])
    predicted = tnp.argmax(probabilities, "classes")
    return float(tx.positional(tnp.mean((predicted == labels).astype(jnp.float32), "batch"), []))


def dataset(cfg: PerceiverConfig, seed: int = 0) -> tuple[Signal, NamedArray[i32, "batch"]]:
    """Sines whose frequency band is the class, in noise."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, cfg.classes, cfg.batch)
    t = np.arange(cfg.time, dtype=np.float32)  # plant[p8 size runtime]: t = np.arange(cfg.time + cfg.patch, dtype=np.float32)
    freq = 0.05 + 0.1 * labels[:, None]
    values = np.sin(freq * t[None, :]) + 0.1 * rng.normal(size=(cfg.batch, t.size))
    return tx.named(values.astype(np.float32), ["batch", "time"]), tx.named(labels.astype(np.int32), ["batch"])


def main() -> None:
    cfg = PerceiverConfig()
    mesh = jax.make_mesh((DATA_PARALLEL, MODEL_PARALLEL), MESH_AXES)
    with jax.set_mesh(mesh):
        params = tx.shard(init(cfg, jax.random.key(0)), RESOURCES)
        signal, labels = tx.shard(dataset(cfg), RESOURCES)
        print("logits", logits(cfg, params, signal).named_shape)
        for i in range(3):
            params, value = train_step(params, cfg, signal, labels)
            print(f"step {i}: loss {float(value):.4f}")
        print("accuracy", evaluate(cfg, params, signal, labels))
        print("query placed", tx.resources_of(params["cross"]["query"]), "signal", tx.resources_of(signal))


if __name__ == "__main__":
    main()
