"""A residual MLP stack run with the named transforms: `tx.scan` over a stacked `layers` axis with the hidden
`mlp` axis on `model` and the batch on `data`; a per-example function mapped with `tx.vmap` and
`axis_resources` (the batch on `data`); a data-parallel layer written as an `xmap` with `axis_resources`."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
from typing import TypedDict

import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}
XMAP_RESOURCES = {"batch": "data", "mlp": "model"}

Hidden = NamedArray[f32, "batch@data seq embed"]


class Layer(TypedDict):
    w_in: NamedArray[f32, "embed mlp@model"]
    w_out: NamedArray[f32, "mlp@model embed"]


def _block(h: Hidden, p: Layer) -> tuple[Hidden, None]:
    z = tnp.tanh(tnp.einsum("{embed},{embed,mlp}->{mlp}", h, p["w_in"]))
    return h + tnp.einsum("{mlp},{mlp,embed}->{embed}", z, p["w_out"]), None


def stack(
    x: Hidden, w_in: NamedArray[f32, "layers embed mlp@model"], w_out: NamedArray[f32, "layers mlp@model embed"]
) -> Hidden:
    h, _ = tx.scan(_block, x, {"w_in": w_in, "w_out": w_out}, axis="layers")
    return h


def _example_features(x: NamedArray[f32, "seq embed"], w: NamedArray[f32, "embed mlp"]) -> NamedArray[f32, "mlp"]:
    """One example: its positions centred, projected, and averaged."""
    centred = x - x.mean("seq")
    return tnp.einsum("{seq,embed},{embed,mlp}->{mlp}", centred, w) / x.named_shape["seq"]


_per_example = tx.vmap(_example_features, axis="batch", axis_resources={"batch": "data"})


def features(x: Hidden, w: NamedArray[f32, "embed mlp"]) -> NamedArray[f32, "batch@data mlp"]:
    return _per_example(x, w)


def _example_norm(x: NamedArray[f32, "seq embed@model"]) -> NamedArray[f32, "seq embed@model"]:
    return x / tnp.sqrt(tnp.mean(x * x, "embed") + 1e-6)


_per_example_norm = tx.vmap(_example_norm, axis="batch", axis_resources={"batch": "data"})


def normalised(x: NamedArray[f32, "batch@data seq embed@model"]) -> NamedArray[f32, "batch@data seq embed@model"]:
    """Each example's RMS norm over features split over `model`."""
    return _per_example_norm(x)


@tx.typed
def _xmap_body(x: NamedArray[f32, "batch embed"], w: NamedArray[f32, "embed mlp"]) -> NamedArray[f32, "batch mlp"]:
    return tnp.relu(tnp.einsum("{embed},{embed,mlp}->{mlp}", x, w))


_xmapped = tx.xmap(
    _xmap_body,
    in_axes=(["batch", "embed", ...], ["embed", "mlp", ...]),
    out_axes=["batch", "mlp", ...],
    axis_resources=XMAP_RESOURCES,
)


def xmap_layer(x: jax.Array, w: jax.Array) -> jax.Array:
    """Positional inputs (batch, embed) and (embed, mlp); the batch on `data`, `mlp` on `model`."""
    out: jax.Array = _xmapped(x, w)
    return out


def example_arguments() -> dict[str, tuple[object, ...]]:
    keys = iter(jax.random.split(jax.random.key(6), 8))
    x = tx.shard(tx.random.normal(next(keys), {"batch": 8, "seq": 8, "embed": 16}), {"batch": "data"})
    w_in = tx.shard(tx.random.normal(next(keys), {"layers": 3, "embed": 16, "mlp": 32}) / 4, {"mlp": "model"})
    w_out = tx.shard(tx.random.normal(next(keys), {"layers": 3, "mlp": 32, "embed": 16}) / 4, {"mlp": "model"})
    w = tx.random.normal(next(keys), {"embed": 16, "mlp": 32})
    xm = tx.shard(x, {"batch": "data", "embed": "model"})
    x_pos = tx.shard(jax.random.normal(next(keys), (8, 16)), {"batch": "data"}, axes=["batch", ...])
    w_pos = tx.shard(jax.random.normal(next(keys), (16, 32)), {"mlp": "model"}, axes=[None, "mlp"])
    return {
        "stack": (x, w_in, w_out),
        "features": (x, w),
        "normalised": (xm,),
        "xmap_layer": (x_pos, w_pos),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
