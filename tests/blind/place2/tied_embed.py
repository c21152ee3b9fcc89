"""A tiny language model whose embedding table is split along ``vocab`` over ``model`` and tied to the output
projection: the lookup is a gather from the split table, the logits come out split by vocab, and the
cross-entropy's log-softmax reduces over the split vocab (an all-reduce). Batches are split over ``data``."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass, field
from typing import TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

RESOURCES = {"batch": "data", "vocab": "model"}


@dataclass(frozen=True)
class LMConfig:
    vocab: int = 32
    embed: int = 8
    batch: int = 4
    seq: int = 9
    seed: int = 3
    lrs: list[float] = field(default_factory=lambda: [0.5, 0.5, 0.25])


class LMParams(TypedDict):
    emb: NamedArray[f32, "vocab@model embed"]  # plant[p1 resource static]: emb: NamedArray[f32, "vocab@data embed"]
    mix: NamedArray[f32, "embed hidden"]
    unmix: NamedArray[f32, "hidden embed"]


Tokens = NamedArray[i32, "batch@data seq"]


def body(params: LMParams, tokens: Tokens) -> NamedArray[f32, "batch@data seq embed"]:
    x = params["emb"][{"vocab": tokens}]
    x = tx.constrain(x, {"batch": "data"})
    h = tnp.tanh(tnp.einsum("{embed},{embed,hidden}->{hidden}", x, params["mix"]))
    return x + tnp.einsum("{hidden},{hidden,embed}->{embed}", h, params["unmix"])


@tx.typed
def tied_logits(h: NamedArray[f32, "batch@data seq embed"], emb: NamedArray[f32, "vocab@model embed"]) -> NamedArray[f32, "batch@data seq vocab@model"]:
    return tnp.einsum("{embed},{vocab,embed}->{vocab}", h, emb)  # plant[p2 resource static]: return tnp.einsum("{embed},{vocab,embed}->{vocab}", tx.constrain(h, {"batch": "model"}), emb)


def lm_loss(params: LMParams, tokens: Tokens) -> jax.Array:
    inputs = tokens[{"seq": slice(0, -1)}]  # plant[p3 size runtime]: inputs = tokens[{"seq": slice(0, None)}]
    targets = tokens[{"seq": slice(1, None)}]
    logits = tied_logits(body(params, inputs), params["emb"])
    logp = tnp.log_softmax(logits, "vocab")  # plant[p4 name static]: logp = tnp.log_softmax(logits, "embed")
    picked = logp[{"vocab": targets}]
    return tx.positional(-tnp.mean(picked, ("batch", "seq")), [])


@jax.jit
def step(params: LMParams, tokens: Tokens, lr: jax.Array) -> tuple[LMParams, jax.Array]:
    value, grads = jax.value_and_grad(lm_loss)(params, tokens)
    updated: LMParams = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    return updated, value


def main() -> None:
    cfg = LMConfig()
    jax.set_mesh(tx.fitting_mesh((2, 4), ("data", "model")))
    k_emb, k_mix, k_unmix, k_tok = jax.random.split(jax.random.key(cfg.seed), 4)
    params: LMParams = {
        "emb": tx.random.normal(k_emb, {"vocab": cfg.vocab, "embed": cfg.embed}),
        "mix": tx.random.normal(k_mix, {"embed": cfg.embed, "hidden": 16}) / 4.0,
        "unmix": tx.random.normal(k_unmix, {"hidden": 16, "embed": cfg.embed}) / 4.0,
    }
    params = tx.shard(params, RESOURCES)
    raw = jax.random.randint(k_tok, (cfg.batch, cfg.seq), 0, cfg.vocab)
    tokens = tx.shard(tx.named(raw, ["batch", "seq"]), RESOURCES)  # plant[p5 resource static]: tokens = tx.shard(tx.named(raw, ["batch", "seq"]), {"batch": "data", "seq": "data"})
    losses = []
    for lr in cfg.lrs:
        params, value = step(params, tokens, jnp.float32(lr))
        losses.append(float(value))
    assert tx.resources_of(params["emb"]) == {"vocab": "model"}
    assert losses[-1] < losses[0], losses
    print("tied_embed losses", [round(v, 3) for v in losses])


if __name__ == "__main__":
    main()
