"""A two-layer graph network for node classification on one graph whose nodes are split over ``data`` (the node
features and labels) and whose edges are split over ``data`` too (source and destination ids). Each layer
gathers its messages from the source nodes by index, transforms them with a weight whose hidden units are split
over ``model``, and sums them into the destination nodes with a segment sum; a degree normalisation divides by
each node's in-degree (a segment sum of ones). The readout takes a segment max per graph of a batch of graphs."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import TypedDict

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}

NODES, EDGES, FEAT, HIDDEN, CLASSES, GRAPHS = 16, 32, 8, 16, 8, 8

Nodes = NamedArray[f32, "node@data feat"]
EdgeIds = NamedArray[i32, "edge@data"]


class GNN(TypedDict):
    w_in: NamedArray[f32, "feat hidden@model"]
    w_self: NamedArray[f32, "feat hidden@model"]
    w_out: NamedArray[f32, "hidden@model klass"]


RESOURCES = {"node": "data", "edge": "data", "hidden": "model"}


def propagate(h: NamedArray[f32, "node@data *f"], src: EdgeIds, dst: EdgeIds) -> NamedArray[f32, "node *f"]:
    """Mean of the incoming messages: gather at the sources, segment-sum at the destinations."""
    messages = h[{"node": src}]
    summed = tnp.segment_sum(messages, dst, NODES, axis="edge", new_axis="node")
    degree = tnp.segment_sum(tnp.ones_like(dst.astype(float)), dst, NODES, axis="edge", new_axis="node")
    return summed / tnp.maximum(degree, 1.0)


def layer(h: Nodes, src: EdgeIds, dst: EdgeIds, p: GNN) -> NamedArray[f32, "node@data hidden@model"]:
    neighbours = propagate(h, src, dst)
    mixed = tnp.einsum("{node,feat},{feat,hidden}->{node,hidden}", neighbours, p["w_in"])
    own = tnp.einsum("{node,feat},{feat,hidden}->{node,hidden}", h, p["w_self"])
    return tx.constrain(tnp.relu(mixed + own), {"node": "data", "hidden": "model"})


def node_logits(h: Nodes, src: EdgeIds, dst: EdgeIds, p: GNN) -> NamedArray[f32, "node@data klass"]:
    hidden = layer(h, src, dst, p)
    return tnp.einsum("{node,hidden},{hidden,klass}->{node,klass}", hidden, p["w_out"])


def graph_readout(
    logits: NamedArray[f32, "node@data klass"], graph_of: NamedArray[i32, "node@data"]
) -> NamedArray[f32, "graph klass"]:
    """The largest logit of each class per graph (nodes grouped by graph id)."""
    return tnp.segment_max(logits, graph_of, GRAPHS, axis="node", new_axis="graph")


def loss(p: GNN, h: Nodes, src: EdgeIds, dst: EdgeIds, labels: NamedArray[i32, "node@data"]) -> jax.Array:
    log_probs = tnp.log_softmax(node_logits(h, src, dst, p), "klass")
    correct = tnp.sum(log_probs * tnp.one_hot(labels, "klass", CLASSES), "klass")
    return tx.positional(-tnp.mean(correct, "node"), [])


def train_step(
    p: GNN, h: Nodes, src: EdgeIds, dst: EdgeIds, labels: NamedArray[i32, "node@data"]
) -> tuple[jax.Array, GNN]:
    value, grads = jax.value_and_grad(loss)(p, h, src, dst, labels)
    return value, jax.tree.map(lambda w, g: w - 0.1 * g, p, grads)


def init(key: jax.Array) -> GNN:
    k = jax.random.split(key, 3)
    return {
        "w_in": tx.random.normal(k[0], {"feat": FEAT, "hidden": HIDDEN}) / 3,
        "w_self": tx.random.normal(k[1], {"feat": FEAT, "hidden": HIDDEN}) / 3,
        "w_out": tx.random.normal(k[2], {"hidden": HIDDEN, "klass": CLASSES}) / 4,
    }


def example_arguments() -> dict[str, tuple[object, ...]]:
    p = tx.shard(init(jax.random.key(0)), RESOURCES)
    h = tx.shard(tx.random.normal(jax.random.key(1), {"node": NODES, "feat": FEAT}), RESOURCES)
    src = tx.shard(tx.random.randint(jax.random.key(2), {"edge": EDGES}, 0, NODES), RESOURCES)
    dst = tx.shard(tx.random.randint(jax.random.key(3), {"edge": EDGES}, 0, NODES), RESOURCES)
    labels = tx.shard(tx.random.randint(jax.random.key(4), {"node": NODES}, 0, CLASSES), RESOURCES)
    graph_of = tx.shard(tnp.arange("node", NODES) // (NODES // GRAPHS), RESOURCES)
    logits = tx.shard(tx.random.normal(jax.random.key(5), {"node": NODES, "klass": CLASSES}), RESOURCES)
    return {
        "layer": (h, src, dst, p),
        "node_logits": (h, src, dst, p),
        "graph_readout": (logits, graph_of),
        "train_step": (p, h, src, dst, labels),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
