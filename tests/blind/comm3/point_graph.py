"""A message-passing network on a point cloud (as in EdgeConv/PointNet++ style models). Node features are
split by channel over ``model``; the edge list is split over ``data`` (each device builds and sends a quarter
of the messages); messages are summed into their destination nodes with ``tnp.segment_sum``. A gated linear
unit splits a doubled hidden layer into value and gate halves, and a k-nearest-neighbour query ranks every
point of the cloud for points split over ``data``. A robust pooling takes each channel's median over a set
of points split over ``model``."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}
NEIGHBOURS = 4

Nodes = NamedArray[f32, "node feat@model"]
Edges = NamedArray[i32, "edge@data"]


def messages(
    nodes: Nodes, src: Edges, dst: Edges, w: NamedArray[f32, "feat@model out"]
) -> NamedArray[f32, "edge@data out"]:
    """Each edge's message: a projection of the difference between its two ends' features."""
    diff = nodes[{"node": src}] - nodes[{"node": dst}]
    return tnp.relu(tnp.einsum("{feat},{feat,out}->{out}", diff, w))


def aggregate(msgs: NamedArray[f32, "edge@data out"], dst: Edges) -> NamedArray[f32, "node out"]:
    """Sum every message into its destination node, then normalise each node by its largest message."""
    total = tnp.segment_sum(msgs, dst, 16, axis="edge", new_axis="node")
    peak = tnp.segment_max(msgs, dst, 16, axis="edge", new_axis="node")
    return total / (tnp.abs(peak) + 1.0)


def glu(
    x: NamedArray[f32, "node@data feat"], w: NamedArray[f32, "feat hidden@model"]
) -> NamedArray[f32, "node@data hidden"]:
    """value * sigmoid(gate), both halves of one doubled projection."""
    h = tnp.einsum("{feat},{feat,hidden}->{hidden}", x, w)
    value, gate = tnp.split(h, "hidden", 2)
    return value * tnp.sigmoid(gate)


def nearest(points: NamedArray[f32, "point@data coord"]) -> NamedArray[i32, "point@data nbr"]:
    """The indices of each point's ``NEIGHBOURS`` nearest points of the whole cloud."""
    cloud = tx.constrain(points, {"point": None}).rename({"point": "other"})
    dist = ((points - cloud) ** 2).sum("coord")
    _, idx = tnp.top_k(-dist, NEIGHBOURS, axis="other", new_axis="nbr")
    return idx


def median_pool(x: NamedArray[f32, "batch@data point@model feat"]) -> NamedArray[f32, "batch@data feat"]:
    """Each channel's median over the set's points (sorted, then the middle two averaged)."""
    ordered = tnp.sort(x, "point")
    middle = x.named_shape["point"] // 2
    return (ordered[{"point": middle - 1}] + ordered[{"point": middle}]) / 2


def example_arguments() -> dict[str, tuple[object, ...]]:
    key = iter(jax.random.split(jax.random.key(12), 10))
    node, edge, feat, out, hidden = 16, 32, 8, 16, 16
    nodes = tx.shard(tx.random.normal(next(key), {"node": node, "feat": feat}), {"feat": "model"})
    src = tx.shard(tx.random.randint(next(key), {"edge": edge}, 0, node), {"edge": "data"})
    dst = tx.shard(tx.random.randint(next(key), {"edge": edge}, 0, node), {"edge": "data"})
    w = tx.shard(tx.random.normal(next(key), {"feat": feat, "out": out}), {"feat": "model"})
    msgs = tx.shard(tx.random.normal(next(key), {"edge": edge, "out": out}), {"edge": "data"})
    x = tx.shard(tx.random.normal(next(key), {"node": node, "feat": feat}), {"node": "data"})
    w_glu = tx.shard(tx.random.normal(next(key), {"feat": feat, "hidden": 2 * hidden}), {"hidden": "model"})
    points = tx.shard(tx.random.normal(next(key), {"point": 16, "coord": 8}), {"point": "data"})
    sets = tx.shard(
        tx.random.normal(next(key), {"batch": 8, "point": 16, "feat": 8}), {"batch": "data", "point": "model"}
    )
    return {
        "messages": (nodes, src, dst, w),
        "aggregate": (msgs, dst),
        "glu": (x, w_glu),
        "nearest": (points,),
        "median_pool": (sets,),
    }


if __name__ == "__main__":
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
