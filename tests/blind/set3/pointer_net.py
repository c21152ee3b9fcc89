"""A pointer network that learns to visit 2-D points in order of their x coordinate: an RNN encoder over
the input positions, an RNN decoder whose attention over the positions is the output distribution
(additive attention, visited positions masked), trained with teacher forcing and decoded greedily by
argmax, the next decoder input gathered by name from the encoded points."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from functools import partial
from typing import NamedTuple, TypedDict, TypeVar

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, bool_, f32, i32

from _sizes import N_POINTS, TINY_BATCH


@dataclass(frozen=True)
class PointerConfig:
    batch: int = TINY_BATCH
    n: int = N_POINTS
    coord: int = 2
    embed: int = 16
    hidden: int = 16
    lr: float = 0.05

    @property
    def attn(self) -> int:
        return self.hidden // 2


class Rnn(TypedDict):
    w_x: NamedArray[f32, "embed hidden"]
    w_h: NamedArray[f32, "hid_in hidden"]
    b: NamedArray[f32, "hidden"]


class Params(TypedDict):
    w_emb: NamedArray[f32, "coord embed"]
    b_emb: NamedArray[f32, "embed"]
    start: NamedArray[f32, "embed"]
    encoder: Rnn
    decoder: Rnn
    w_ref: NamedArray[f32, "hidden attn"]
    w_q: NamedArray[f32, "hidden attn"]
    v: NamedArray[f32, "attn"]


class Decoding(NamedTuple):
    h: NamedArray[f32, "batch hidden"]
    inp: NamedArray[f32, "batch embed"]
    visited: NamedArray[bool_, "batch pos"]


A = TypeVar("A", bound=tx.AnyNamedArray)


def init_rnn(cfg: PointerConfig, key: jax.Array) -> Rnn:
    k_x, k_h = jax.random.split(key)
    return {
        "w_x": tx.random.normal(k_x, {"embed": cfg.embed, "hidden": cfg.hidden}) * cfg.embed**-0.5,
        "w_h": tx.random.normal(k_h, {"hid_in": cfg.hidden, "hidden": cfg.hidden}) * cfg.hidden**-0.5,
        "b": tnp.zeros({"hidden": cfg.hidden}, dtype=jnp.float32),
    }


def init(cfg: PointerConfig, key: jax.Array) -> Params:
    keys = jax.random.split(key, 7)
    return {
        "w_emb": tx.random.normal(keys[0], {"coord": cfg.coord, "embed": cfg.embed}),
        "b_emb": tnp.zeros({"embed": cfg.embed}, dtype=jnp.float32),
        "start": tx.random.normal(keys[1], {"embed": cfg.embed}) * 0.1,
        "encoder": init_rnn(cfg, keys[2]),
        "decoder": init_rnn(cfg, keys[3]),
        "w_ref": tx.random.normal(keys[4], {"hidden": cfg.hidden, "attn": cfg.attn}) * cfg.hidden**-0.5,
        "w_q": tx.random.normal(keys[5], {"hidden": cfg.hidden, "attn": cfg.attn}) * cfg.hidden**-0.5,  # plant[q1 size static]: "w_q": tx.random.normal(keys[5], {"hidden": cfg.hidden, "attn": cfg.hidden}) * cfg.hidden**-0.5,
        "v": tx.random.normal(keys[6], {"attn": cfg.attn}) * cfg.attn**-0.5,
    }


@tx.typed
def rnn_cell(p: Rnn, h: NamedArray[f32, "batch hidden"], x: NamedArray[f32, "batch embed"]) -> NamedArray[
    f32, "batch hidden"
]:
    previous = h.rename({"hidden": "hid_in"})  # plant[q2 name static]: previous = h
    pre = tnp.einsum("{embed},{embed,hidden}->{hidden}", x, p["w_x"])
    pre = pre + tnp.einsum("{hid_in},{hid_in,hidden}->{hidden}", previous, p["w_h"])
    return tnp.tanh(pre + p["b"])


@tx.typed
def encode(
    params: Params, points: NamedArray[f32, "batch pos coord"]
) -> tuple[NamedArray[f32, "batch pos embed"], NamedArray[f32, "batch pos hidden"], NamedArray[f32, "batch hidden"]]:
    emb = tnp.einsum("{coord},{coord,embed}->{embed}", points, params["w_emb"]) + params["b_emb"]
    h0 = tnp.zeros_like(emb[{"pos": 0, "embed": 0}]) * tnp.zeros_like(params["encoder"]["b"])

    def step(h: NamedArray[f32, "batch hidden"], x: NamedArray[f32, "batch embed"]) -> tuple[
        NamedArray[f32, "batch hidden"], NamedArray[f32, "batch hidden"]
    ]:
        h = rnn_cell(params["encoder"], h, x)
        return h, h

    last, states = tx.scan(step, h0, emb, axis="pos")
    return emb, states, last


@tx.typed
def pointer_logits(
    params: Params,
    ref: NamedArray[f32, "batch pos attn"],
    h: NamedArray[f32, "batch hidden"],
    visited: NamedArray[bool_, "batch pos"],
) -> NamedArray[f32, "batch pos"]:
    """Additive attention over the positions; a visited position gets a large negative logit."""
    query = tnp.einsum("{hidden},{hidden,attn}->{attn}", h, params["w_q"])
    scores = tnp.einsum("{attn},{attn}->{}", tnp.tanh(ref + query), params["v"])
    return tnp.where(visited, -1e9, scores)


def start_state(params: Params, emb: NamedArray[f32, "batch pos embed"], last: NamedArray[f32, "batch hidden"]) -> Decoding:
    first_input = tnp.zeros_like(emb[{"pos": 0}]) + params["start"]
    visited = tnp.zeros_like(emb[{"embed": 0}], dtype=jnp.bool_)
    return Decoding(h=last, inp=first_input, visited=visited)


@tx.typed
def teacher_forced_logp(
    params: Params, points: NamedArray[f32, "batch pos coord"], order: NamedArray[i32, "batch step"]
) -> NamedArray[f32, "batch step"]:
    """log p(order[t] | order[:t]) for each step t, feeding the true previous point."""
    emb, states, last = encode(params, points)
    ref = tnp.einsum("{hidden},{hidden,attn}->{attn}", states, params["w_ref"])
    positions = tnp.arange("pos", points.named_shape["pos"])

    def step(carry: Decoding, target: NamedArray[i32, "batch"]) -> tuple[Decoding, NamedArray[f32, "batch"]]:
        h = rnn_cell(params["decoder"], carry.h, carry.inp)
        logp = tnp.log_softmax(pointer_logits(params, ref, h, carry.visited), "pos")
        picked = logp[{"pos": target}]  # pointwise: each example its own target
        following = emb[{"pos": target}]  # plant[q3 name static]: following = emb[{"batch": target}]
        visited = tnp.logical_or(carry.visited, positions == target)  # plant[q4 dtype static]: visited = tnp.maximum(carry.visited.astype(jnp.float32), (positions == target).astype(jnp.float32))
        return Decoding(h, following, visited), picked  # plant[q5 return static]: return Decoding(h, following, visited), logp

    _, picked = tx.scan(step, start_state(params, emb, last), order, axis="step")
    return picked


@tx.typed
def greedy_decode(params: Params, points: NamedArray[f32, "batch pos coord"]) -> NamedArray[i32, "batch step"]:
    emb, states, last = encode(params, points)
    ref = tnp.einsum("{hidden},{hidden,attn}->{attn}", states, params["w_ref"])
    n = points.named_shape["pos"]
    positions = tnp.arange("pos", n)

    def step(carry: Decoding, _t: NamedArray[i32, ""]) -> tuple[Decoding, NamedArray[i32, "batch"]]:
        h = rnn_cell(params["decoder"], carry.h, carry.inp)
        choice = tnp.argmax(pointer_logits(params, ref, h, carry.visited), "pos").astype(jnp.int32)  # plant[q6 name static]: choice = tnp.argmax(pointer_logits(params, ref, h, carry.visited), "batch").astype(jnp.int32)
        visited = tnp.logical_or(carry.visited, positions == choice)
        return Decoding(h, emb[{"pos": choice}], visited), choice

    _, tour = tx.scan(step, start_state(params, emb, last), tnp.arange("step", n), axis="step")
    return tour


def target_order(points: NamedArray[f32, "batch pos coord"]) -> NamedArray[i32, "batch step"]:
    return tnp.argsort(points[{"coord": 0}], "pos").rename({"pos": "step"})


def loss(params: Params, points: NamedArray[f32, "batch pos coord"], order: NamedArray[i32, "batch step"]) -> jax.Array:
    logp = teacher_forced_logp(params, points, order)
    return tx.positional(-tnp.mean(tnp.sum(logp, "step"), "batch"), [])  # plant[q7 name static]: return tx.positional(-tnp.mean(tnp.sum(logp, "pos"), "batch"), [])


def sgd(p: A, g: A, lr: float) -> A:
    return p - lr * g


@partial(jax.jit, static_argnames=("lr",))
def train_step(
    params: Params, points: NamedArray[f32, "batch pos coord"], order: NamedArray[i32, "batch step"], lr: float
) -> tuple[Params, jax.Array]:
    value, grads = jax.value_and_grad(loss)(params, points, order)
    new = jax.tree.map(lambda w, g: sgd(w, g, lr), params, grads, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray))
    return new, value


@jax.jit
def sorted_accuracy(params: Params, points: NamedArray[f32, "batch pos coord"]) -> jax.Array:
    """How often the t-th point of the greedy tour is the t-th smallest x."""
    tour = greedy_decode(params, points)
    xs = points[{"coord": 0}]
    visited_x = xs[{"pos": tour}]
    expected_x = tnp.sort(xs, "pos").rename({"pos": "step"})
    hits = (visited_x == expected_x).astype(jnp.float32)
    return tx.positional(tnp.mean(hits, ("batch", "step")), [])


def random_points(cfg: PointerConfig, key: jax.Array, n: int) -> NamedArray[f32, "batch pos coord"]:
    return tx.random.uniform(key, {"batch": cfg.batch, "pos": n, "coord": cfg.coord})


if __name__ == "__main__":
    cfg = PointerConfig()
    k_init, k_data, k_eval = jax.random.split(jax.random.key(0), 3)
    params = init(cfg, k_init)
    points = random_points(cfg, k_data, cfg.n)
    order = target_order(points)  # plant[q8 size runtime]: order = target_order(points)[{"batch": slice(0, cfg.batch // 2)}]
    for _ in range(3):
        params, value = train_step(params, points, order, cfg.lr)
        print("nll", float(value))
    tour = greedy_decode(params, random_points(cfg, k_eval, cfg.n))
    assert tour.named_shape == {"batch": cfg.batch, "step": cfg.n}
    print("accuracy", float(sorted_accuracy(params, points)))
