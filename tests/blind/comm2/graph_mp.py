"""A graph convolution (message passing) layer. The node features are replicated along ``node`` and split along
``feat`` over ``model``; the edges (and their source and destination index arrays) are split over ``data``.
Messages are gathered from the source nodes by an index array, transformed by a weight whose contracted
``feat`` is split over ``model`` (an all-reduce), summed into their destination nodes with ``tnp.segment_sum``,
normalised by the in-degree, and read out per graph by a mean over the nodes."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}

NODES = 16
EDGES = 64
PLACEMENT = {"edge": "data", "feat": "model", "out": "model"}

NodeFeats = NamedArray[f32, "node feat@model"]
EdgeIds = NamedArray[i32, "edge@data"]


def gather_messages(nodes: NodeFeats, src: EdgeIds) -> NamedArray[f32, "edge@data feat@model"]:
    """Each edge reads its source node's features."""
    return nodes[{"node": src}]


def transform(
    messages: NamedArray[f32, "edge@data feat@model"], w: NamedArray[f32, "feat@model out"]
) -> NamedArray[f32, "edge@data out"]:
    """The shared message function: a linear map over the split ``feat``, then a ReLU."""
    return tnp.relu(tnp.einsum("{feat},{feat,out}->{out}", messages, w))


def gcn_layer(
    nodes: NodeFeats, src: EdgeIds, dst: EdgeIds, w: NamedArray[f32, "feat@model out"]
) -> NamedArray[f32, "node out"]:
    """Messages summed into their destinations, divided by each node's in-degree."""
    messages = transform(gather_messages(nodes, src), w)
    summed = tnp.segment_sum(messages, dst, NODES, axis="edge", new_axis="node")
    ones = tnp.ones_like(dst.astype(jnp.float32))
    degree = tnp.segment_sum(ones, dst, NODES, axis="edge", new_axis="node")
    return summed / tnp.maximum(degree, 1.0)


def readout(nodes: NodeFeats, mask: NamedArray[f32, "node"]) -> NamedArray[f32, "feat@model"]:
    """A masked mean and a max over the nodes, added."""
    mean = tnp.sum(nodes * mask, "node") / tnp.sum(mask, "node")
    return mean + tnp.max(tnp.where(mask > 0, nodes, -1e9), "node")


def edge_scores(nodes: NodeFeats, src: EdgeIds, dst: EdgeIds) -> NamedArray[f32, "edge@data"]:
    """Link prediction: the dot product of each edge's two endpoints, over the split ``feat``."""
    return tnp.sigmoid(tnp.sum(nodes[{"node": src}] * nodes[{"node": dst}], "feat"))


def example_arguments() -> dict[str, tuple[object, ...]]:
    """Each jitted function's arguments, placed as its annotations say."""
    k1, k2, k3, k4 = jax.random.split(jax.random.key(3), 4)
    nodes = tx.shard(tx.random.normal(k1, {"node": NODES, "feat": 16}), PLACEMENT)
    src = tx.shard(tx.random.randint(k2, {"edge": EDGES}, 0, NODES), PLACEMENT)
    dst = tx.shard(tx.random.randint(k3, {"edge": EDGES}, 0, NODES), PLACEMENT)
    w = tx.shard(tx.random.normal(k4, {"feat": 16, "out": 8}) / 4, {"feat": "model"})
    messages = gather_messages(nodes, src)
    mask = tx.named(jnp.arange(NODES) < 12, ["node"]).astype(jnp.float32)
    return {
        "gather_messages": (nodes, src),
        "transform": (messages, w),
        "gcn_layer": (nodes, src, dst, w),
        "readout": (nodes, mask),
        "edge_scores": (nodes, src, dst),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
