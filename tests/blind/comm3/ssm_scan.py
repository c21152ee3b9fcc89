"""A Mamba-like selective state-space layer. The input projection widens ``embed`` into ``inner`` channels
split over ``model`` (each device owns a slice of the channels and their states, as tensor-parallel Mamba
does); the recurrence is a ``tx.scan`` along ``seq`` whose carry, ``batch inner state``, stays split like the
channels; the read-out sums each channel's states (whole on every device) and the output projection contracts
the split channels. A second function computes the discretisation's cumulative decay with a ``cumsum`` along a
sequence that is split over ``model`` (sequence parallelism)."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}

Hidden = NamedArray[f32, "batch@data seq embed"]
Inner = NamedArray[f32, "batch@data seq inner@model"]
Select = NamedArray[f32, "batch@data seq state"]
State = NamedArray[f32, "batch@data inner@model state"]
Step = tuple[
    NamedArray[f32, "batch@data inner@model"],
    NamedArray[f32, "batch@data inner@model"],
    NamedArray[f32, "batch@data state"],
    NamedArray[f32, "batch@data state"],
]


def in_proj(
    x: Hidden, w: NamedArray[f32, "embed inner@model"], w_gate: NamedArray[f32, "embed inner@model"]
) -> tuple[Inner, Inner]:
    """The layer's input and its gate, both widened to the split channels."""
    u = tnp.einsum("{embed},{embed,inner}->{inner}", x, w)
    gate = tnp.silu(tnp.einsum("{embed},{embed,inner}->{inner}", x, w_gate))
    return u, gate


def selective_scan(u: Inner, dt: Inner, b: Select, c: Select, log_a: NamedArray[f32, "inner@model state"]) -> Inner:
    """h_t = exp(dt_t * A) h_{t-1} + dt_t u_t B_t, y_t = sum over states of h_t C_t, along ``seq``."""
    a = -tnp.exp(log_a)

    def step(h: State, inputs: Step) -> tuple[State, NamedArray[f32, "batch@data inner@model"]]:
        u_t, dt_t, b_t, c_t = inputs
        h = tnp.exp(dt_t * a) * h + (dt_t * u_t) * b_t
        return h, (h * c_t).sum("state")

    h0 = tnp.zeros_like(u[{"seq": 0}]) * tnp.zeros_like(b[{"seq": 0}])
    _, ys = tx.scan(step, h0, (u, tnp.softplus(dt), b, c), axis="seq")
    return ys


def out_proj(y: Inner, gate: Inner, w_out: NamedArray[f32, "inner@model embed"]) -> Hidden:
    """Gate the scan's output and project back: the contraction over the split channels."""
    return tnp.einsum("{inner},{inner,embed}->{embed}", y * gate, w_out)


def cumulative_decay(
    dt: NamedArray[f32, "batch@data seq@model inner"],
) -> NamedArray[f32, "batch@data seq@model inner"]:
    """exp(-sum of dt up to each position) along a sequence split over ``model``: a running sum across blocks."""
    return tnp.exp(-tnp.cumsum(tnp.softplus(dt), "seq"))


def example_arguments() -> dict[str, tuple[object, ...]]:
    key = iter(jax.random.split(jax.random.key(2), 12))
    batch, seq, embed, inner, state = 8, 8, 16, 16, 8
    split = {"batch": "data", "inner": "model"}
    x = tx.shard(tx.random.normal(next(key), {"batch": batch, "seq": seq, "embed": embed}), {"batch": "data"})
    w = tx.shard(tx.random.normal(next(key), {"embed": embed, "inner": inner}), {"inner": "model"})
    w_gate = tx.shard(tx.random.normal(next(key), {"embed": embed, "inner": inner}), {"inner": "model"})
    inner_shape = {"batch": batch, "seq": seq, "inner": inner}
    u = tx.shard(tx.random.normal(next(key), inner_shape), split)
    dt = tx.shard(tx.random.normal(next(key), inner_shape), split)
    gate = tx.shard(tx.random.normal(next(key), inner_shape), split)
    b = tx.shard(tx.random.normal(next(key), {"batch": batch, "seq": seq, "state": state}), {"batch": "data"})
    c = tx.shard(tx.random.normal(next(key), {"batch": batch, "seq": seq, "state": state}), {"batch": "data"})
    log_a = tx.shard(tx.random.normal(next(key), {"inner": inner, "state": state}), {"inner": "model"})
    w_out = tx.shard(tx.random.normal(next(key), {"inner": inner, "embed": embed}), {"inner": "model"})
    dt_seq = tx.shard(tx.random.normal(next(key), inner_shape), {"batch": "data", "seq": "model"})
    return {
        "in_proj": (x, w, w_gate),
        "selective_scan": (u, dt, b, c, log_a),
        "out_proj": (u, gate, w_out),
        "cumulative_decay": (dt_seq,),
    }


if __name__ == "__main__":
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
