"""A GRU sequence classifier trained with per-example gradient clipping (DP-SGD style), written as the typing
guide teaches: parameters are ``TypedDict``s that ``@tx.typed`` checks field by field, the recurrent state is a
``NamedTuple`` carried through ``tx.scan``, the per-example loss is written for one example and mapped with
``tx.vmap``, and values are placed by the module-level ``RESOURCES`` mapping.

    typed-xmap check --strict examples/gru.py     # clean; tests/test_gru_example.py seeds mistakes
    python examples/gru.py                         # trains a few steps on one device and on a 2x4 mesh
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import NamedTuple, TypedDict, TypeVar

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32


@dataclass(frozen=True)
class Config:
    vocab: int = 32
    embed: int = 16
    hidden: int = 24
    classes: int = 4
    time: int = 12
    batch: int = 8
    clip: float = 1.0
    learning_rate: float = 0.1


class Gate(TypedDict):
    """One gate: ``x @ w + h @ u + b``, its output on ``next`` (renamed back to ``hidden``)."""

    w: NamedArray[f32, "embed next"]
    u: NamedArray[f32, "hidden next"]
    b: NamedArray[f32, "next"]


class Params(TypedDict):
    embed: NamedArray[f32, "vocab embed"]
    update: Gate
    reset: Gate
    candidate: Gate
    head: NamedArray[f32, "hidden classes"]


class State(NamedTuple):
    h: NamedArray[f32, "hidden"]


RESOURCES = {"batch": "data", "vocab": "model", "next": "model"}
"""Where each axis lives on a (data, model) mesh: one mapping for the parameters and the batch alike."""

A = TypeVar("A", bound=tx.AnyNamedArray)


def rms_norm(x: A) -> A:
    """Scale each embedding to unit root-mean-square: a helper generic over the whole NamedArray type."""
    return x / tnp.sqrt(tnp.mean(x * x, "embed") + 1e-6)


# ---- the model, for one example ----------------------------------------------------------------------------


@tx.typed
def gate(p: Gate, x: NamedArray[f32, "embed"], h: NamedArray[f32, "hidden"]) -> NamedArray[f32, "hidden"]:
    pre = tnp.einsum("{embed},{embed,next}->{next}", x, p["w"]) + tnp.einsum(
        "{hidden},{hidden,next}->{next}", h, p["u"]
    )
    return (pre + p["b"]).rename({"next": "hidden"})


@tx.typed
def cell(params: Params, state: State, x: NamedArray[f32, "embed"]) -> State:
    z = tnp.sigmoid(gate(params["update"], x, state.h))
    r = tnp.sigmoid(gate(params["reset"], x, state.h))
    n = tnp.tanh(gate(params["candidate"], x, r * state.h))
    return State((1.0 - z) * n + z * state.h)


@tx.typed
def example_loss(
    params: Params, tokens: NamedArray[i32, "time"], label: NamedArray[i32, ""], length: NamedArray[i32, ""]
) -> jax.Array:
    """One example's loss: the state after its last real token (``length`` of them) classifies it."""
    embedded = rms_norm(params["embed"][{"vocab": tokens}])
    # zeros made from this example's input: inside tx.vmap the carry must carry the mapped batch from the start
    init = State(tnp.zeros_like(gate(params["update"], embedded[{"time": 0}], params["head"].sum("classes"))))

    def step(state: State, x: NamedArray[f32, "embed"]) -> tuple[State, NamedArray[f32, "hidden"]]:
        state = cell(params, state, x)
        return state, state.h

    states: NamedArray[f32, "time hidden"]
    _, states = tx.scan(step, init, embedded, axis="time")
    last: jax.Array = tx.positional(length, []) - 1  # a traced scalar index
    final: NamedArray[f32, "hidden"] = states[{"time": last}]
    logits = tnp.einsum("{hidden},{hidden,classes}->{classes}", final, params["head"])
    return tx.positional(-tnp.log_softmax(logits, "classes")[{"classes": label}], [])


# ---- per-example gradients, clipped ------------------------------------------------------------------------


def clipped_step(
    params: Params,
    tokens: NamedArray[i32, "batch time"],
    labels: NamedArray[i32, "batch"],
    lengths: NamedArray[i32, "batch"],
    config: Config,
) -> tuple[Params, NamedArray[f32, "batch"]]:
    """Each example's gradient clipped to norm ``config.clip``, then averaged: returns the new parameters and
    the per-example gradient norms."""
    grads = tx.vmap(jax.grad(example_loss), axis="batch")(params, tokens, labels, lengths)
    embed_grads: NamedArray[f32, "batch vocab embed"] = grads["embed"]  # every leaf gains batch
    total = (embed_grads * embed_grads).sum(("vocab", "embed"))
    rest = [grads["update"], grads["reset"], grads["candidate"], grads["head"]]
    for g in jax.tree.leaves(rest, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray)):
        total = total + (g * g).sum(tuple(a for a in g.named_shape if a != "batch"))
    norms = tnp.sqrt(total)
    scale = tnp.minimum(1.0, config.clip / (norms + 1e-6))
    mean_grads = jax.tree.map(
        lambda g: tnp.mean(g * scale, "batch"), grads, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray)
    )
    updated: Params = jax.tree.map(lambda p, g: p - config.learning_rate * g, params, mean_grads)
    return updated, norms


# ---- data, initialisation, training ------------------------------------------------------------------------


def init(config: Config, key: jax.Array) -> Params:
    keys = iter(jax.random.split(key, 12))
    embed, hidden = config.embed, config.hidden

    def gate_params() -> Gate:
        return {
            "w": tx.random.normal(next(keys), {"embed": embed, "next": hidden}) * embed**-0.5,
            "u": tx.random.normal(next(keys), {"hidden": hidden, "next": hidden}) * hidden**-0.5,
            "b": tnp.zeros({"next": hidden}),
        }

    return {
        "embed": tx.random.normal(next(keys), {"vocab": config.vocab, "embed": embed}),
        "update": gate_params(),
        "reset": gate_params(),
        "candidate": gate_params(),
        "head": tx.random.normal(next(keys), {"hidden": hidden, "classes": config.classes}) * hidden**-0.5,
    }


def batch(
    config: Config, key: jax.Array
) -> tuple[NamedArray[i32, "batch time"], NamedArray[i32, "batch"], NamedArray[i32, "batch"]]:
    """Random sequences of random lengths; the label is the first token's class (learnable from the state)."""
    k1, k2 = jax.random.split(key)
    tokens = jax.random.randint(k1, (config.batch, config.time), 0, config.vocab)
    lengths = jax.random.randint(k2, (config.batch,), 2, config.time + 1)
    labels = tokens[:, 0] % config.classes
    return tx.named(tokens, ["batch", "time"]), tx.named(labels, ["batch"]), tx.named(lengths, ["batch"])


def train(config: Config, steps: int, mesh: jax.sharding.Mesh | None = None) -> tuple[Params, list[float]]:
    """``steps`` clipped steps on one batch; returns the parameters and the mean loss before each step."""
    params = init(config, jax.random.key(0))
    data = batch(config, jax.random.key(1))
    step = jax.jit(clipped_step, static_argnames="config")
    losses = []
    with jax.set_mesh(mesh) if mesh is not None else contextlib.nullcontext():
        if mesh is not None:
            params, data = tx.shard(params, RESOURCES), tx.shard(data, RESOURCES)
        for _ in range(steps):
            per_example = tx.vmap(example_loss, axis="batch")(params, *data)
            losses.append(float(tx.positional(tnp.mean(per_example, "batch"), [])))
            params, _ = step(params, *data, config)
    return params, losses


if __name__ == "__main__":
    print("one device:", [round(v, 4) for v in train(Config(), 5)[1]])
    if len(jax.devices()) >= 8:
        print("2x4 mesh:  ", [round(v, 4) for v in train(Config(), 5, jax.make_mesh((2, 4), ("data", "model")))[1]])
