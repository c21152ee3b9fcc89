"""A recurrent language model: token embeddings gathered by name, an LSTM cell run over time with tx.scan
(its four gates fused in one matmul, split by tx.split_axis), and softmax cross-entropy over the vocabulary."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from functools import partial
from typing import Final, NamedTuple, TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from _sizes import BATCH, HIDDEN, LEARNING_RATE
from typed_xmap import NamedArray, bf16, f32, i32

GATES: Final = 4  # input, forget, cell, output


@dataclass(frozen=True)
class Config:
    batch: int = BATCH
    vocab: int = 40
    embed: int = 12
    hidden: int = HIDDEN
    time: int = 9  # tokens per sequence: time - 1 predictions

    @property
    def fused(self) -> int:
        return GATES * self.hidden


class Params(TypedDict):
    embed: NamedArray[f32, "vocab embed"]
    w_x: NamedArray[f32, "embed fused"]
    w_h: NamedArray[f32, "hidden fused"]
    b: NamedArray[f32, "fused"]
    head: NamedArray[bf16, "hidden vocab"]


class State(NamedTuple):
    h: NamedArray[f32, "batch hidden"]
    c: NamedArray[f32, "batch hidden"]


def init(cfg: Config, key: jax.Array) -> Params:
    k1, k2, k3, k4 = jax.random.split(key, 4)
    forget_bias = tnp.zeros({"gate": GATES, "hidden": cfg.hidden}, jnp.float32).at[{"gate": 1}].set(1.0)
    return {
        "embed": tx.random.normal(k1, {"vocab": cfg.vocab, "embed": cfg.embed}) * 0.5,
        "w_x": tx.random.normal(k2, {"embed": cfg.embed, "fused": cfg.fused}) * cfg.embed**-0.5,
        "w_h": tx.random.normal(k3, {"hidden": cfg.hidden, "fused": cfg.fused}) * cfg.hidden**-0.5,  # plant[l1 size runtime]: "w_h": tx.random.normal(k3, {"hidden": cfg.hidden, "fused": GATES * cfg.embed}) * cfg.hidden**-0.5,
        "b": tx.merge_axes(forget_bias, ("gate", "hidden"), "fused"),
        "head": (tx.random.normal(k4, {"hidden": cfg.hidden, "vocab": cfg.vocab}) * cfg.hidden**-0.5).astype(jnp.bfloat16),
    }


@tx.typed
def cell(p: Params, state: State, x: NamedArray[f32, "batch embed"], cfg: Config) -> State:
    pre = tnp.einsum("{embed},{embed,fused}->{fused}", x, p["w_x"]) + tnp.einsum("{hidden},{hidden,fused}->{fused}", state.h, p["w_h"]) + p["b"]
    gates = tx.split_axis(pre, "fused", {"gate": GATES, "hidden": cfg.hidden})  # plant[l2 size static]: gates = tx.split_axis(pre, "fused", {"gate": GATES, "hidden": cfg.hidden // 2})
    i, f = tnp.sigmoid(gates[{"gate": 0}]), tnp.sigmoid(gates[{"gate": 1}])
    g, o = tnp.tanh(gates[{"gate": 2}]), tnp.sigmoid(gates[{"gate": 3}])
    c = f * state.c + i * g
    return State(o * tnp.tanh(c), c)  # plant[l3 return static]: return State(o * tnp.tanh(c), gates)


@tx.typed
def forward(p: Params, tokens: NamedArray[i32, "batch time"], cfg: Config) -> NamedArray[f32, "batch time vocab"]:
    emb = p["embed"][{"vocab": tokens}]  # plant[l4 name static]: emb = p["embed"][{"embed": tokens}]
    zeros = tnp.zeros({"batch": cfg.batch, "hidden": cfg.hidden}, jnp.float32)

    def step(state: State, x: NamedArray[f32, "batch embed"]) -> tuple[State, NamedArray[f32, "batch hidden"]]:
        state = cell(p, state, x, cfg)
        return state, state.h

    hs: NamedArray[f32, "time batch hidden"]
    _, hs = tx.scan(step, State(zeros, zeros), emb, axis="time")  # plant[l5 name static]: _, hs = tx.scan(step, State(zeros, zeros), emb, axis="batch")
    logits = tnp.einsum("{hidden},{hidden,vocab}->{vocab}", hs.astype(jnp.bfloat16), p["head"])
    return logits.astype(jnp.float32)  # plant[l6 dtype static]: return logits


@tx.typed
def loss(p: Params, tokens: NamedArray[i32, "batch time"], cfg: Config) -> jax.Array:
    inputs = tokens[{"time": slice(0, cfg.time - 1)}]  # plant[l7 size static]: inputs = tokens[{"time": slice(0, cfg.time)}]
    targets = tokens[{"time": slice(1, cfg.time)}]
    logp = tnp.log_softmax(forward(p, inputs, cfg), "vocab")
    nll = -tnp.sum(logp * tnp.one_hot(targets, "vocab", cfg.vocab, dtype=jnp.float32), "vocab")
    return tx.positional(tnp.mean(nll, ("batch", "time")), [])  # plant[l8 return static]: return tx.positional(tnp.mean(nll, "time"), [])


@partial(jax.jit, static_argnames="cfg")
def train_step(p: Params, tokens: NamedArray[i32, "batch time"], cfg: Config) -> tuple[Params, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, tokens, cfg)
    new: Params = jax.tree.map(lambda w, g: (w - LEARNING_RATE * g).astype(w.dtype), p, grads)
    return new, value


if __name__ == "__main__":
    cfg = Config()
    params = init(cfg, jax.random.key(0))
    tokens = tx.random.randint(jax.random.key(1), {"batch": cfg.batch, "time": cfg.time}, 0, cfg.vocab)
    print("logits", forward(params, tokens, cfg).named_shape)
    for _ in range(3):
        params, value = train_step(params, tokens, cfg)
        print("loss", float(value))
