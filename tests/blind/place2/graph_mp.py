"""Message passing over a batch of small graphs: one GCN-style layer mapped with ``tx.xmap`` over ``graph``
(split over ``data``) and ``hidden`` (split over ``model``), then a named readout that mean-pools the nodes
and classifies each graph, with the class weights kept next to their hidden units."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

LAYOUT = (("graph", "data"), ("hidden", "model"))  # plant[p1 resource runtime]: LAYOUT = (("graph", "model"), ("hidden", "data"))
CLASSIFIER = {"hidden": "model"}


@dataclass(frozen=True)
class GraphBatch:
    graphs: int = 4  # plant[p2 size runtime]: graphs: int = 3
    nodes: int = 6
    feats: int = 5
    hidden: int = 8
    classes: int = 3


def gcn_body(adj: jax.Array, feats: jax.Array, w: jax.Array) -> jax.Array:
    """One graph, one hidden unit: mean over neighbours, then the unit's weights."""
    degree = jnp.sum(adj, axis=1, keepdims=True)
    agg = (adj @ feats) / jnp.maximum(degree, 1.0)
    return jax.nn.relu(agg @ w)


gcn_layer = tx.xmap(
    gcn_body,
    in_axes=({0: "graph"}, {0: "graph"}, {1: "hidden"}),
    out_axes={0: "graph", 2: "hidden"},
    axis_resources={"graph": "data", "hidden": "model"},  # plant[p3 resource static]: axis_resources={"graph": "data", "hidden": "data"},
)


@tx.typed
def readout(h: NamedArray[f32, "graph@data node hidden@model"], w: NamedArray[f32, "hidden@model cls"]) -> NamedArray[f32, "graph@data cls"]:
    pooled = tnp.mean(h, "node")
    return tnp.einsum("{hidden},{hidden,cls}->{cls}", pooled, w)


def classify(cfg: GraphBatch, adj: jax.Array, x: jax.Array, w_gcn: jax.Array, w_cls: NamedArray[f32, "hidden cls"]) -> NamedArray[f32, "graph cls"]:
    h = tx.named(gcn_layer(adj, x, w_gcn), ["graph", "node", "hidden"])
    h = tx.constrain(h, dict(LAYOUT))
    w_placed = tx.constrain(w_cls, CLASSIFIER)  # plant[p4 resource static]: w_placed = tx.constrain(w_cls, {"cls": "data"})
    logits = readout(h, w_placed)
    return tnp.log_softmax(logits, "cls")  # plant[p5 name static]: return tnp.log_softmax(logits, "class")


def main() -> None:
    cfg = GraphBatch()
    jax.set_mesh(tx.fitting_mesh((2, 4), ("data", "model")))
    k_adj, k_x, k_w, k_c = jax.random.split(jax.random.key(11), 4)
    adj = (jax.random.uniform(k_adj, (cfg.graphs, cfg.nodes, cfg.nodes)) > 0.5).astype(jnp.float32)
    adj = jnp.maximum(adj, jnp.swapaxes(adj, 1, 2))
    x = jax.random.normal(k_x, (cfg.graphs, cfg.nodes, cfg.feats))
    w_gcn = jax.random.normal(k_w, (cfg.feats, cfg.hidden)) / cfg.feats**0.5
    w_cls = tx.random.normal(k_c, {"hidden": cfg.hidden, "cls": cfg.classes})
    logp = jax.jit(classify, static_argnums=0)(cfg, adj, x, w_gcn, w_cls)
    assert logp.named_shape == {"graph": cfg.graphs, "cls": cfg.classes}
    total = tx.positional(tnp.sum(tnp.exp(logp), "cls"), ["graph"])
    assert bool(jnp.allclose(total, 1.0, atol=1e-5)), total
    print("graph_mp ok", tx.resources_of(logp))


if __name__ == "__main__":
    main()
