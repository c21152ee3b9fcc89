"""An FSDP-style regression MLP: every weight is stored split along the axis it is contracted over (over
``data``) and all-gathered to its compute placement (``mlp`` over ``model``) just before use; the batch is
split over ``data``. The gradients come back placed as the stored weights, as the ``Params`` type says."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from functools import partial
from typing import Final, TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

STORED_IN: Final = {"embed": "data", "mlp": "model"}
STORED_OUT: Final = {"mlp": ("model", "data")}
GATHERED: Final = {"mlp": "model"}
BATCH: Final = {"batch": "data"}


@dataclass(frozen=True)
class Config:
    batch: int = 8
    embed: int = 16
    mlp_mult: int = 4
    out: int = 4
    lr: float = 0.05

    @property
    def mlp(self) -> int:
        return self.mlp_mult * self.embed


class Params(TypedDict):
    w_in: NamedArray[f32, "embed@data mlp@model"]
    b_in: NamedArray[f32, "mlp@model"]
    w_out: NamedArray[f32, "mlp@(model,data) out"]
    scale: NamedArray[f32, "embed"]


def init(cfg: Config, key: jax.Array) -> Params:
    k_in, k_out = jax.random.split(key)
    w_in = tx.random.normal(k_in, {"embed": cfg.embed, "mlp": cfg.mlp}) * cfg.embed**-0.5
    w_out = tx.random.normal(k_out, {"mlp": cfg.mlp, "out": cfg.out}) * cfg.mlp**-0.5
    return {
        "w_in": tx.shard(w_in, STORED_IN),
        "b_in": tx.shard(tnp.zeros({"mlp": cfg.mlp}), GATHERED),
        "w_out": tx.shard(w_out, STORED_OUT),  # plant[p1 resource static]: "w_out": tx.shard(w_out, {"mlp": "model"}),
        "scale": tnp.ones({"embed": cfg.embed}),
    }


@tx.typed
def gather_weights(
    p: Params,
) -> tuple[NamedArray[f32, "embed@() mlp@model"], NamedArray[f32, "mlp@model out@()"]]:
    """The FSDP all-gather: each weight leaves ``data`` and keeps its ``mlp`` split."""
    w_in = tx.constrain(p["w_in"], GATHERED)  # plant[p2 resource static]: w_in = tx.constrain(p["w_in"], {"embed": "model", "mlp": "model"})
    w_out = tx.constrain(p["w_out"], GATHERED)  # plant[p3 resource static]: w_out = tx.constrain(p["w_out"], {"mlp": "model", "out": "data"})
    return w_in, w_out


@tx.typed
def layer_norm(x: NamedArray[f32, "batch@data embed"], scale: NamedArray[f32, "embed"]) -> NamedArray[f32, "batch@data embed"]:
    mean = tnp.mean(x, "embed")
    var = tnp.var(x, "embed")
    return (x - mean) * tnp.reciprocal(tnp.sqrt(var + 1e-5)) * scale


@tx.typed
def mlp(p: Params, x: NamedArray[f32, "batch@data embed"]) -> NamedArray[f32, "batch@data out"]:
    w_in, w_out = gather_weights(p)
    xn = layer_norm(x, p["scale"])  # plant[p6 resource runtime]: xn = layer_norm(x, tx.constrain(p["scale"], {"embed": "data"}))
    h = tnp.gelu(tnp.einsum("{batch,embed},{embed,mlp}->{batch,mlp}", xn, w_in) + p["b_in"])
    y = tnp.einsum("{batch,mlp},{mlp,out}->{batch,out}", h, w_out)
    return y  # plant[p4 resource static]: return tx.constrain(y, {"out": "model"})


def loss(p: Params, x: NamedArray[f32, "batch@data embed"], y: NamedArray[f32, "batch@data out"]) -> jax.Array:
    err = mlp(p, x) - y
    return tx.positional(tnp.mean(err * err, ("batch", "out")), [])


@partial(jax.jit, static_argnames=("cfg",))
@tx.typed
def train_step(
    p: Params, x: NamedArray[f32, "batch@data embed"], y: NamedArray[f32, "batch@data out"], cfg: Config
) -> tuple[Params, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, x, y)
    g: Params = grads
    new: Params = {
        "w_in": p["w_in"] - cfg.lr * g["w_in"],
        "b_in": p["b_in"] - cfg.lr * g["b_in"],
        "w_out": p["w_out"] - cfg.lr * g["w_out"],
        "scale": p["scale"] - cfg.lr * g["scale"],
    }
    return new, value


def main() -> None:
    cfg = Config()
    mesh = jax.make_mesh((4, 2), ("data", "model"))
    jax.set_mesh(mesh)
    k_p, k_x, k_y = jax.random.split(jax.random.key(0), 3)
    params = init(cfg, k_p)
    x_raw = tx.random.normal(k_x, {"batch": cfg.batch, "embed": cfg.embed})
    y_raw = tx.random.normal(k_y, {"batch": cfg.batch, "out": cfg.out})
    x = tx.shard(x_raw, BATCH)  # plant[p5 resource static]: x = tx.shard(x_raw, {"bacth": "data"})
    y = tx.shard(y_raw, BATCH)
    print("forward", mlp(params, x).named_shape)
    for step in range(2):
        params, value = train_step(params, x, y, cfg)
        print("step", step, float(value))
    assert tx.resources_of(params["w_in"]) == {"embed": "data", "mlp": "model"}


if __name__ == "__main__":
    main()
