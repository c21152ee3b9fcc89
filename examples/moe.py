"""A transformer layer with a top-2 mixture-of-experts MLP and real expert parallelism, written by name.

Token embeddings and learned positions, causal multi-head attention, then a mixture of experts: a router
picks each token's two likeliest experts (``tnp.top_k``), each expert takes at most ``capacity`` tokens of a
sequence (``tx.moe_route``), and a load-balancing loss keeps the experts evenly used. Expert parallelism is
placement by name: outside the experts the batch is split over every device (``TOKENS``); the dispatched
tokens are placed with ``expert`` on the ``model`` mesh axis (``EXPERTS``), so JAX sends each token to its
expert's devices (an all-to-all) and back. The same program trains on one device and on a 2x4 mesh.

    python examples/moe.py
    typed-xmap check --strict examples/moe.py
    typed-xmap check --comm examples/moe.py  # the collectives each model function needs
"""

from __future__ import annotations

import os

if "jax" not in __import__("sys").modules:
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypedDict

import jax
import numpy as np
import optax  # type: ignore[import-untyped]  # optax ships no type information

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

Tokens = NamedArray[i32, "batch@(data,model) seq"]
Hidden = NamedArray[f32, "batch@(data,model) seq embed"]
Projection = NamedArray[f32, "embed heads head_dim"]

TOKENS = {"batch": ("data", "model")}
"""Activations outside the experts: the batch split over every device (data parallel)."""
EXPERTS = {"batch": "data", "expert": "model"}
"""Inside the experts: each device holds its experts' slots (the batch gives ``model`` up to ``expert``)."""
PARAMS = {"expert": "model"}
"""The experts' weights live with their experts; the other weights are replicated."""
ROUTER = {"expert": None}
"""The router's weight stays whole (it is small): its logits keep the batch's split, and no device gathers it."""


class Params(TypedDict):
    embed: NamedArray[f32, "vocab embed"]
    positions: NamedArray[f32, "seq embed"]
    query: Projection
    key: Projection
    value: Projection
    out: Projection
    router: NamedArray[f32, "embed expert@()"]
    expert_in: NamedArray[f32, "expert@model embed mlp"]
    expert_out: NamedArray[f32, "expert@model mlp embed"]


# ---- the model ----------------------------------------------------------------------------------------------


def norm(x: Hidden) -> Hidden:
    centred = x - x.mean("embed")
    return centred / tnp.sqrt((centred * centred).mean("embed") + 1e-5)


def attention(x: Hidden, p: Params) -> Hidden:
    keys = x.rename({"seq": "kv"})
    q = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", x, p["query"])
    k = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", keys, p["key"])
    v = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", keys, p["value"])
    scores = tnp.einsum("{seq,head_dim},{kv,head_dim}->{seq,kv}", q, k) / math.sqrt(q.named_shape["head_dim"])
    causal = tnp.causal_mask("seq", "kv", x.named_shape["seq"])
    weights = tnp.softmax(tnp.where(causal, scores, -1e9), "kv")
    mixed = tnp.einsum("{seq,kv},{kv,head_dim}->{seq,head_dim}", weights, v)
    return tnp.einsum("{heads,head_dim},{embed,heads,head_dim}->{embed}", mixed, p["out"])


def experts(x: Hidden, p: Params, capacity: int) -> tuple[Hidden, NamedArray[f32, ""]]:
    """Top-2 routing; each expert's MLP on its own slots, on its own devices."""
    logits = tnp.einsum("{embed},{embed,expert}->{expert}", x, p["router"])
    dispatch, combine, balance = tx.moe_route(logits, 2, capacity, expert="expert", tokens="seq")
    inputs = tx.moe_dispatch(x, dispatch, tokens="seq", resources=EXPERTS, from_resources=TOKENS)
    hidden = tnp.gelu(tnp.einsum("{expert,embed},{expert,embed,mlp}->{expert,mlp}", inputs, p["expert_in"]))
    outputs = tnp.einsum("{expert,mlp},{expert,mlp,embed}->{expert,embed}", hidden, p["expert_out"])
    return tx.moe_combine(outputs, combine, resources=TOKENS, from_resources=EXPERTS), balance


def loss(params: Params, tokens: Tokens, targets: Tokens, capacity: int) -> jax.Array:
    x = params["embed"][{"vocab": tokens}] + params["positions"]
    x = x + attention(norm(x), params)
    mixed, balance = experts(norm(x), params, capacity)
    logits = tnp.einsum("{embed},{vocab,embed}->{vocab}", norm(x + mixed), params["embed"])
    token_losses = -tnp.log_softmax(logits, "vocab")[{"vocab": targets}]
    total: jax.Array = (token_losses.mean(("batch", "seq")) + 0.01 * balance).data
    return total


# ---- parameters, data, placement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    vocab: int = 32
    batch: int = 8
    seq: int = 16
    embed: int = 32
    heads: int = 4
    head_dim: int = 8
    experts: int = 4
    mlp: int = 32
    capacity: int = 10  # slots per expert per sequence: 16 tokens x 2 choices / 4 experts, and some slack


def init(c: Config, key: jax.Array) -> Params:
    k = iter(jax.random.split(key, 9))
    scale = 1 / math.sqrt(c.embed)
    projection = {"embed": c.embed, "heads": c.heads, "head_dim": c.head_dim}
    return {
        "embed": tx.random.normal(next(k), {"vocab": c.vocab, "embed": c.embed}) * scale,
        "positions": tx.random.normal(next(k), {"seq": c.seq, "embed": c.embed}) * scale,
        "query": tx.random.normal(next(k), projection) * scale,
        "key": tx.random.normal(next(k), projection) * scale,
        "value": tx.random.normal(next(k), projection) * scale,
        "out": tx.random.normal(next(k), projection) / math.sqrt(c.heads * c.head_dim),
        "router": tx.random.normal(next(k), {"embed": c.embed, "expert": c.experts}) * scale,
        "expert_in": tx.random.normal(next(k), {"expert": c.experts, "embed": c.embed, "mlp": c.mlp}) * scale,
        "expert_out": tx.random.normal(next(k), {"expert": c.experts, "mlp": c.mlp, "embed": c.embed})
        / math.sqrt(c.mlp),
    }


def place(params: Params) -> Params:
    """The weights on the current mesh: the experts' split over ``model`` (``PARAMS``), the router whole."""
    placed = tx.shard(params, PARAMS)
    placed["router"] = tx.shard(params["router"], ROUTER)
    return placed


def batches(c: Config, seed: int = 0) -> Iterator[tuple[Tokens, Tokens]]:
    """Counting sequences (each token the last plus a stride) from random starts: inputs and next tokens."""
    rng = np.random.default_rng(seed)
    positions = tnp.arange("seq", c.seq + 1)
    while True:
        start = tx.named(rng.integers(0, c.vocab, c.batch).astype(np.int32), ["batch"])
        stride = tx.named(rng.integers(1, 4, c.batch).astype(np.int32), ["batch"])
        run = (start + stride * positions) % c.vocab
        yield run[{"seq": slice(0, c.seq)}], run[{"seq": slice(1, c.seq + 1)}]


# ---- training -------------------------------------------------------------------------------------------------

OPTIMIZER = optax.adam(1e-2)


@jax.jit(static_argnames="capacity")
def train_step(
    params: Params, opt_state: Any, tokens: Tokens, targets: Tokens, capacity: int
) -> tuple[Params, Any, jax.Array]:
    value, grads = jax.value_and_grad(loss)(params, tokens, targets, capacity)
    updates, opt_state = OPTIMIZER.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, value


def train(c: Config, steps: int, mesh: jax.sharding.Mesh | None = None) -> tuple[Params, list[float]]:
    """Train from the same initial values and data whatever the placement; return the params and losses."""
    with jax.set_mesh(mesh) if mesh is not None else contextlib.nullcontext():
        params = init(c, jax.random.key(0))
        if mesh is not None:
            params = place(params)
        opt_state = OPTIMIZER.init(params)
        losses = []
        for _, data in zip(range(steps), batches(c), strict=False):
            tokens, targets = tx.shard(data, TOKENS) if mesh is not None else data
            params, opt_state, value = train_step(params, opt_state, tokens, targets, c.capacity)
            losses.append(float(value))
    return params, losses


def meshes() -> dict[str, jax.sharding.Mesh | None]:
    """One device, and a (data, model) mesh with Explicit axes: 2x4 where there are 8 devices, else smaller."""
    count = len(jax.devices())
    shape = (2, 4) if count >= 8 else (1, 2) if count >= 2 else (1, 1)
    return {"one device": None, f"{shape[0]}x{shape[1]}": jax.make_mesh(shape, ("data", "model"))}


def main(steps: int = 20) -> None:
    c = Config()
    results = {name: train(c, steps, mesh) for name, mesh in meshes().items()}
    for name, (params, losses) in results.items():
        placed = tx.resources_of(params["expert_in"])
        print(f"{name:>13}: loss {losses[0]:.4f} -> {losses[-1]:.4f}   experts placed {placed}")
    first = results["one device"][1]
    for name, (_, losses) in results.items():
        np.testing.assert_allclose(losses, first, rtol=2e-4, err_msg=name)


if __name__ == "__main__":
    main()
