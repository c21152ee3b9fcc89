"""A two-layer graph attention network (GAT) over an edge list, node classification.

Gathers of node features by edge endpoints, per-edge attention logits, a softmax per destination node
(segment max and segment sum by scatter) and messages summed back onto their destination nodes.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from typing import TypedDict

import jax
import jax.numpy as jnp
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, bool_, f32, i32

from _sizes import DATA_PARALLEL, LEARNING_RATE, MESH_AXES, MODEL_PARALLEL


@dataclass(frozen=True)
class GATConfig:
    nodes: int = 16
    edges: int = 40
    feat: int = 6
    heads: int = 4
    head_dim: int = 4
    out_heads: int = 2
    classes: int = 3
    negative_slope: float = 0.2

    @property
    def hidden(self) -> int:
        return self.heads * self.head_dim


class GATLayer(TypedDict):
    w: NamedArray[f32, "feat heads head_dim"]
    att_src: NamedArray[f32, "heads head_dim"]
    att_dst: NamedArray[f32, "heads head_dim"]
    bias: NamedArray[f32, "heads head_dim"]


class OutputLayer(TypedDict):
    w: NamedArray[f32, "hidden out_heads classes"]
    att_src: NamedArray[f32, "out_heads classes"]
    att_dst: NamedArray[f32, "out_heads classes"]
    bias: NamedArray[f32, "classes"]


class GATParams(TypedDict):
    first: GATLayer
    second: OutputLayer


class Graph(TypedDict):
    x: NamedArray[f32, "node feat"]
    src: NamedArray[i32, "edge"]
    dst: NamedArray[i32, "edge"]
    labels: NamedArray[i32, "node"]
    train_mask: NamedArray[bool_, "node"]


RESOURCES = {"heads": "model", "out_heads": "model", "edge": "data"}  # plant[g4 resource static]: RESOURCES = {"heads": "model", "out_heads": "model", "edge": "model"}


def init(cfg: GATConfig, key: jax.Array) -> GATParams:
    k = iter(jax.random.split(key, 6))
    first_shape = {"heads": cfg.heads, "head_dim": cfg.head_dim}
    out_shape = {"out_heads": cfg.out_heads, "classes": cfg.classes}
    first: GATLayer = {
        "w": tx.random.normal(next(k), {"feat": cfg.feat, "heads": cfg.heads, "head_dim": cfg.head_dim})
        / np.sqrt(cfg.feat),
        "att_src": tx.random.normal(next(k), first_shape) * 0.1,
        "att_dst": tx.random.normal(next(k), first_shape) * 0.1,
        "bias": tnp.zeros(first_shape, dtype=jnp.float32),
    }
    second: OutputLayer = {
        "w": tx.random.normal(next(k), {"hidden": cfg.hidden, "out_heads": cfg.out_heads, "classes": cfg.classes})  # plant[g3 size runtime]: "w": tx.random.normal(next(k), {"hidden": cfg.heads * cfg.out_heads, "out_heads": cfg.out_heads, "classes": cfg.classes})
        / np.sqrt(cfg.hidden),
        "att_src": tx.random.normal(next(k), out_shape) * 0.1,
        "att_dst": tx.random.normal(next(k), out_shape) * 0.1,
        "bias": tnp.zeros({"classes": cfg.classes}, dtype=jnp.float32),
    }
    return {"first": first, "second": second}


def with_self_loops(src: NamedArray[i32, "edge"], dst: NamedArray[i32, "edge"], nodes: int) -> tuple[
    NamedArray[i32, "edge"], NamedArray[i32, "edge"]
]:
    loops = tnp.arange("edge", nodes, dtype=jnp.int32)  # plant[g6 dtype static]: loops = tnp.arange("edge", nodes, dtype=jnp.float32)
    return tnp.concatenate([src, loops], axis="edge"), tnp.concatenate([dst, loops], axis="edge")


def sort_by_destination(
    src: NamedArray[i32, "edge"], dst: NamedArray[i32, "edge"]
) -> tuple[NamedArray[i32, "edge"], NamedArray[i32, "edge"]]:
    """The edge list ordered by destination node, so each node's incoming edges are contiguous."""
    order = tnp.argsort(dst, "edge")  # plant[g9 name static]: order = tnp.argsort(dst, "node")
    return src[{"edge": order}], dst[{"edge": order}]


@tx.typed
def segment_softmax(
    logits: NamedArray[f32, "edge heads"], dst: NamedArray[i32, "edge"], nodes: int
) -> NamedArray[f32, "edge heads"]:
    """Softmax over the incoming edges of each destination node."""
    heads = logits.named_shape["heads"]
    floor = tnp.full({"node": nodes, "heads": heads}, -1e9, dtype=jnp.float32)
    node_max = floor.at[{"node": dst}].max(logits)  # plant[g2 name static]: node_max = floor.at[{"edge": dst}].max(logits)
    shifted = tnp.exp(logits - node_max[{"node": dst}])
    denom = tnp.zeros({"node": nodes, "heads": heads}, dtype=jnp.float32).at[{"node": dst}].add(shifted)
    return shifted / (denom[{"node": dst}] + 1e-9)


@tx.typed
def attend(
    cfg: GATConfig,
    z: NamedArray[f32, "node heads head_dim"],
    att_src: NamedArray[f32, "heads head_dim"],
    att_dst: NamedArray[f32, "heads head_dim"],
    src: NamedArray[i32, "edge"],
    dst: NamedArray[i32, "edge"],
) -> NamedArray[f32, "node heads head_dim"]:
    """One attention aggregation: each node sums its in-neighbours' features, weighted per head."""
    score_src = tnp.einsum("{heads,head_dim},{heads,head_dim}->{heads}", z, att_src)
    score_dst = tnp.einsum("{heads,head_dim},{heads,head_dim}->{heads}", z, att_dst)  # plant[g1 name static]: score_dst = tnp.einsum("{heads,head_dim},{heads,head_dim}->{head_dim}", z, att_dst)
    logits = score_src[{"node": src}] + score_dst[{"node": dst}]
    logits = tnp.where(logits > 0, logits, cfg.negative_slope * logits)
    alpha = segment_softmax(logits, dst, cfg.nodes)
    messages = z[{"node": src}] * alpha  # plant[g8 other runtime]: messages = z[{"node": dst}] * alpha
    messages = tx.constrain(messages, RESOURCES)
    return tnp.zeros_like(z).at[{"node": dst}].add(messages)


@tx.typed
def forward(cfg: GATConfig, params: GATParams, graph: Graph) -> NamedArray[f32, "node classes"]:
    src, dst = with_self_loops(graph["src"], graph["dst"], cfg.nodes)
    first, second = params["first"], params["second"]
    z = tnp.einsum("{feat},{feat,heads,head_dim}->{heads,head_dim}", graph["x"], first["w"])
    h = attend(cfg, z, first["att_src"], first["att_dst"], src, dst) + first["bias"]
    h = tnp.gelu(tx.merge_axes(h, ("heads", "head_dim"), "hidden"))
    z_out = tnp.einsum("{hidden},{hidden,out_heads,classes}->{out_heads,classes}", h, second["w"])
    as_heads = {"out_heads": "heads", "classes": "head_dim"}
    out = attend(
        cfg,
        z_out.rename(as_heads),
        second["att_src"].rename(as_heads),
        second["att_dst"].rename(as_heads),
        src,
        dst,
    )
    return out.mean("heads").rename({"head_dim": "classes"}) + second["bias"]  # plant[g5 return static]: return out.rename({"head_dim": "classes"}) + second["bias"]


@tx.typed
def node_losses(cfg: GATConfig, params: GATParams, graph: Graph) -> NamedArray[f32, "node"]:
    log_probs = tnp.log_softmax(forward(cfg, params, graph), "classes")
    return -log_probs[{"classes": graph["labels"]}]


def loss(params: GATParams, cfg: GATConfig, graph: Graph) -> jax.Array:
    losses = node_losses(cfg, params, graph)
    mask = graph["train_mask"].astype(jnp.float32)
    total = tnp.sum(losses * mask, "node") / tnp.maximum(tnp.sum(mask, "node"), 1.0)
    return tx.positional(total, [])


def top2_accuracy(cfg: GATConfig, params: GATParams, graph: Graph) -> jax.Array:
    _, best = tnp.top_k(forward(cfg, params, graph), 2, axis="classes", new_axis="choice")
    hit = tnp.any(best == graph["labels"], "choice")  # plant[g7 name static]: hit = tnp.any(best == graph["labels"], "classes")
    return tx.positional(tnp.mean(hit.astype(jnp.float32), "node"), [])


def train_step(cfg: GATConfig, params: GATParams, graph: Graph) -> tuple[GATParams, jax.Array]:
    value, grads = jax.value_and_grad(loss)(params, cfg, graph)
    updated: GATParams = jax.tree.map(
        lambda w, g: w - LEARNING_RATE * g, params, grads, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray)
    )
    return updated, value


def random_graph(cfg: GATConfig, seed: int = 0) -> Graph:
    rng = np.random.default_rng(seed)
    return {
        "x": tx.named(rng.normal(size=(cfg.nodes, cfg.feat)).astype(np.float32), ["node", "feat"]),
        "src": tx.named(rng.integers(0, cfg.nodes, cfg.edges).astype(np.int32), ["edge"]),
        "dst": tx.named(rng.integers(0, cfg.nodes, cfg.edges).astype(np.int32), ["edge"]),
        "labels": tx.named(rng.integers(0, cfg.classes, cfg.nodes).astype(np.int32), ["node"]),
        "train_mask": tx.named(rng.random(cfg.nodes) < 0.7, ["node"]),
    }


def main() -> None:
    cfg = GATConfig()
    mesh = jax.make_mesh((DATA_PARALLEL, MODEL_PARALLEL), MESH_AXES)
    with jax.set_mesh(mesh):
        params = tx.shard(init(cfg, jax.random.key(0)), RESOURCES)
        graph = random_graph(cfg)
        graph["src"], graph["dst"] = sort_by_destination(graph["src"], graph["dst"])
        logits = forward(cfg, params, graph)
        print("logits", logits.named_shape, "heads on", tx.resources_of(params["first"]["w"]))
        step = jax.jit(train_step, static_argnums=0)
        for i in range(3):
            params, value = step(cfg, params, graph)
            print(f"step {i}: loss {float(value):.4f}")
        print("top-2 accuracy", float(top2_accuracy(cfg, params, graph)))


if __name__ == "__main__":
    main()
