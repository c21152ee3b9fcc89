"""A decoder-only transformer written by name from end to end, trained with optax, checkpointed with orbax.

Token embeddings (a gather by name), learned positions, pre-layer-norm blocks (causal multi-head attention,
a gelu MLP) scanned over a stacked ``layers`` axis, a final layer norm, an output tied to the embeddings and
a cross-entropy loss. No positional array, no positional index and no ``PartitionSpec``: placement is one
mapping from axis names to mesh axes (``RESOURCES``; the model's annotations declare the same, ``batch@data``,
``heads@model``, so the checker lists where the model communicates), and the same program trains on one
device, on a (data, model) mesh with Explicit axes (JAX's default) and on one with Auto axes. The meshes are
2x4 where there are 8 devices and fitted to the devices at hand elsewhere (``tx.fitting_mesh``: 2x1 on two
GPUs, 1x1 on one), on JAX's default backend; the program prints which.

    python examples/transformer.py                  # the three placements (8 emulated CPU devices on a CPU)
    python examples/transformer.py 8                # the same, 8 steps instead of 30
    typed-xmap check --strict examples/transformer.py
    typed-xmap check --comm examples/transformer.py  # the collectives each model function needs
"""

from __future__ import annotations

import os

if "jax" not in __import__("sys").modules:
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import contextlib
import math
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypedDict

import jax
import numpy as np
import optax  # type: ignore[import-untyped]  # optax and orbax ship no type information
import orbax.checkpoint as ocp  # type: ignore[import-untyped]
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

Tokens = NamedArray[i32, "batch@data seq"]
Hidden = NamedArray[f32, "batch@data seq embed"]
Norm = NamedArray[f32, "embed"]
Projection = NamedArray[f32, "embed heads@model head_dim"]


class Layer(TypedDict):
    """One layer's weights (``tx.scan`` hands ``block`` one layer of the stack, without ``layers``)."""

    attention_norm: Norm
    query: Projection
    key: Projection
    value: Projection
    out: Projection
    mlp_norm: Norm
    mlp_in: NamedArray[f32, "embed mlp@model"]
    mlp_out: NamedArray[f32, "mlp@model embed"]


class Params(TypedDict):
    embed: NamedArray[f32, "vocab@model embed"]
    positions: NamedArray[f32, "seq embed"]
    final_norm: Norm
    layers: dict[str, NamedArray[f32, "layers *weight"]]  # Layer's weights, stacked along layers


# ---- the model ----------------------------------------------------------------------------------------------


def layer_norm(x: NamedArray[f32, "*rest embed"], scale: NamedArray[f32, "embed"]) -> NamedArray[f32, "*rest embed"]:
    centred = x - x.mean("embed")
    return centred / tnp.sqrt((centred * centred).mean("embed") + 1e-5) * scale


def attention(x: Hidden, p: Layer) -> Hidden:
    keys = x.rename({"seq": "kv"})  # the same tokens, seen as keys
    q = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", x, p["query"])
    k = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", keys, p["key"])
    v = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", keys, p["value"])
    scores = tnp.einsum("{seq,head_dim},{kv,head_dim}->{seq,kv}", q, k) / math.sqrt(q.named_shape["head_dim"])
    causal = tnp.causal_mask("seq", "kv", x.named_shape["seq"])  # query seq sees keys kv <= seq
    weights = tnp.softmax(tnp.where(causal, scores, -1e9), "kv")
    mixed = tnp.einsum("{seq,kv},{kv,head_dim}->{seq,head_dim}", weights, v)
    return tnp.einsum("{heads,head_dim},{embed,heads,head_dim}->{embed}", mixed, p["out"])


def mlp(x: Hidden, p: Layer) -> Hidden:
    h = tnp.gelu(tnp.einsum("{embed},{embed,mlp}->{mlp}", x, p["mlp_in"]))
    return tnp.einsum("{mlp},{mlp,embed}->{embed}", h, p["mlp_out"])


def block(x: Hidden, p: Layer) -> tuple[Hidden, None]:
    x = x + attention(layer_norm(x, p["attention_norm"]), p)
    return x + mlp(layer_norm(x, p["mlp_norm"]), p), None


def logits(params: Params, tokens: Tokens) -> NamedArray[f32, "batch@data seq vocab@model"]:
    x = params["embed"][{"vocab": tokens}] + params["positions"]  # a gather: tokens' axes + embed
    x, _ = tx.scan(block, x, params["layers"], axis="layers")
    return tnp.einsum("{embed},{vocab,embed}->{vocab}", layer_norm(x, params["final_norm"]), params["embed"])


def token_losses(params: Params, tokens: Tokens, targets: Tokens) -> NamedArray[f32, "batch@data seq"]:
    log_probs = tnp.log_softmax(logits(params, tokens), "vocab")
    return -log_probs[{"vocab": targets}]  # each position's own target: a gather, batch seq


def loss(params: Params, tokens: Tokens, targets: Tokens) -> jax.Array:
    mean: jax.Array = token_losses(params, tokens, targets).mean(("batch", "seq")).data  # no axes: a scalar
    return mean


def example_loss(params: Params, tokens: Tokens, targets: Tokens) -> jax.Array:
    """One example's loss: under ``tx.vmap(..., axis="batch")`` each call sees one example."""
    mean: jax.Array = token_losses(params, tokens, targets).mean("seq").data
    return mean


@jax.jit
def per_example_gradient_norms(params: Params, tokens: Tokens, targets: Tokens) -> NamedArray[f32, "batch"]:
    """The norm of each example's own gradient (e.g. for clipping per example, as DP-SGD does)."""
    grads = tx.vmap(jax.grad(example_loss), axis="batch")(params, tokens, targets)  # each with batch
    leaves = jax.tree.leaves(grads, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray))
    total = tnp.zeros({"batch": tokens.named_shape["batch"]})
    for g in leaves:
        total = total + (g * g).sum(tuple(a for a in g.named_shape if a != "batch"))
    return tnp.sqrt(total)


# ---- parameters, data, placement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    vocab: int = 64
    batch: int = 8
    seq: int = 16
    embed: int = 32
    heads: int = 4
    head_dim: int = 8
    mlp: int = 64
    layers: int = 2


RESOURCES = {"batch": "data", "heads": "model", "mlp": "model", "vocab": "model"}
"""Where each axis lives on a (data, model) mesh: batch data-parallel; heads, mlp and vocab split over model.
One mapping for every value: each takes the keys it carries."""


def init(c: Config, key: jax.Array) -> Params:
    """Normal weights scaled by 1/sqrt(fan-in), unit norms; the layers' weights stacked along ``layers``."""
    k = iter(jax.random.split(key, 8))
    by_embed, by_mlp = 1 / math.sqrt(c.embed), 1 / math.sqrt(c.mlp)
    projection = {"layers": c.layers, "embed": c.embed, "heads": c.heads, "head_dim": c.head_dim}
    return {
        "embed": tx.random.normal(next(k), {"vocab": c.vocab, "embed": c.embed}) * by_embed,
        "positions": tx.random.normal(next(k), {"seq": c.seq, "embed": c.embed}) * by_embed,
        "final_norm": tnp.ones({"embed": c.embed}),
        "layers": {
            "attention_norm": tnp.ones({"layers": c.layers, "embed": c.embed}),
            "query": tx.random.normal(next(k), projection) * by_embed,
            "key": tx.random.normal(next(k), projection) * by_embed,
            "value": tx.random.normal(next(k), projection) * by_embed,
            "out": tx.random.normal(next(k), projection) / math.sqrt(c.heads * c.head_dim),
            "mlp_norm": tnp.ones({"layers": c.layers, "embed": c.embed}),
            "mlp_in": tx.random.normal(next(k), {"layers": c.layers, "embed": c.embed, "mlp": c.mlp}) * by_embed,
            "mlp_out": tx.random.normal(next(k), {"layers": c.layers, "mlp": c.mlp, "embed": c.embed}) * by_mlp,
        },
    }


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

OPTIMIZER = optax.adamw(1e-2)


@jax.jit
def train_step(params: Params, opt_state: Any, tokens: Tokens, targets: Tokens) -> tuple[Params, Any, jax.Array]:
    value, grads = jax.value_and_grad(loss)(params, tokens, targets)
    updates, opt_state = OPTIMIZER.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, value


def train(c: Config, steps: int, mesh: jax.sharding.Mesh | None = None) -> tuple[Params, list[float]]:
    """Train from the same initial values and data whatever the placement; return the params and losses."""
    with jax.set_mesh(mesh) if mesh is not None else contextlib.nullcontext():
        params = init(c, jax.random.key(0))
        if mesh is not None:
            params = tx.shard(params, RESOURCES)
        opt_state = OPTIMIZER.init(params)
        losses = []
        for _, data in zip(range(steps), batches(c), strict=False):
            tokens, targets = tx.shard(data, RESOURCES) if mesh is not None else data
            params, opt_state, value = train_step(params, opt_state, tokens, targets)
            losses.append(float(value))
    return params, losses


def checkpoint_round_trip(params: Params, directory: str) -> Params:
    """Save with orbax and restore into the same named structure (and placement)."""
    path = os.path.join(directory, "params")
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(path, params)
        checkpointer.wait_until_finished()
        restored: Params = checkpointer.restore(path, jax.tree.map(ocp.utils.to_shape_dtype_struct, params))
    return restored


def meshes() -> dict[str, jax.sharding.Mesh | None]:
    """One device, then a (data, model) mesh of up to 2x4 with Explicit axes and one with Auto axes."""
    return {
        "one device": None,
        "Explicit mesh": tx.fitting_mesh((2, 4), ("data", "model")),
        "Auto mesh": tx.fitting_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto)),
    }


def main(steps: int = 30) -> None:
    c = Config()
    placements = meshes()
    for name, mesh in placements.items():
        where = f"mesh {dict(mesh.shape)}" if mesh is not None else "no mesh"
        print(f"{name:>13}: {jax.default_backend()}, {where} ({jax.device_count()} devices at hand)")
    results = {name: train(c, steps, mesh) for name, mesh in placements.items()}
    for name, (params, losses) in results.items():
        print(f"{name:>13}: loss {losses[0]:.4f} -> {losses[-1]:.4f}   embed placed {tx.resources_of(params['embed'])}")
    first = results["one device"][1]
    for name, (_, losses) in results.items():
        np.testing.assert_allclose(losses, first, rtol=2e-4, err_msg=name)
    params = results["Explicit mesh"][0]
    tokens, targets = next(batches(c, seed=1))
    norms = per_example_gradient_norms(params, tokens, targets)
    print(f"per-example gradient norms: {norms}")
    with tempfile.TemporaryDirectory() as directory:
        restored = checkpoint_round_trip(params, directory)
    same = jax.tree.all(jax.tree.map(lambda a, b: bool((a == b).all()), params, restored))  # same names too
    print(f"orbax round trip: same values and named shapes: {same}")
    if not same:
        raise SystemExit("orbax round trip: the restored params differ")


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:2]))  # python examples/transformer.py [STEPS]
