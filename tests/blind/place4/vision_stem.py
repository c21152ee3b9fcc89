"""A small image classifier's stem: two convolutions with a max pool between them, a global average pool
and a linear head. The batch is split over ``data`` and the conv channels over ``model`` (tensor-parallel
channels); the second conv contracts the split channels (an all-reduce) and is placed back by name."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from functools import partial
from typing import Final, NamedTuple

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

IMAGES: Final = {"batch": "data"}
CHANNELS: Final = {"c1": "model"}
STAGE: Final = {"batch": "data", "c1": "model"}


class StemConfig(NamedTuple):
    batch: int = 8
    size: int = 12
    in_ch: int = 3
    width: int = 8
    classes: int = 10
    kernel: int = 3
    pool: int = 2
    lr: float = 0.1

    @property
    def c2(self) -> int:
        return 2 * self.width


class StemParams(NamedTuple):
    k1: NamedArray[f32, "kh kw rgb c1@model"]
    b1: NamedArray[f32, "c1@model"]
    k2: NamedArray[f32, "kh kw c1@model c2"]
    w_cls: NamedArray[f32, "c2 cls"]


def init(cfg: StemConfig, key: jax.Array) -> StemParams:
    k1, k2, k3 = jax.random.split(key, 3)
    window = {"kh": cfg.kernel, "kw": cfg.kernel}
    fan1 = cfg.kernel * cfg.kernel * cfg.in_ch
    fan2 = cfg.kernel * cfg.kernel * cfg.width
    return StemParams(
        k1=tx.shard(tx.random.normal(k1, {**window, "rgb": cfg.in_ch, "c1": cfg.width}) * fan1**-0.5, CHANNELS),
        b1=tx.shard(tnp.zeros({"c1": cfg.width}), CHANNELS),
        k2=tx.shard(tx.random.normal(k2, {**window, "c1": cfg.width, "c2": cfg.c2}) * fan2**-0.5, CHANNELS),  # plant[r1 resource static]: k2=tx.shard(tx.random.normal(k2, {**window, "c1": cfg.width, "c2": cfg.c2}) * fan2**-0.5, {"c2": "model"}),
        w_cls=tx.random.normal(k3, {"c2": cfg.c2, "cls": cfg.classes}) * cfg.c2**-0.5,
    )


@tx.typed
def first_stage(
    p: StemParams, images: NamedArray[f32, "batch@data height width rgb"], pool: int
) -> NamedArray[f32, "batch@data height width c1@model"]:
    h = tnp.conv(images, p.k1, {"height": "kh", "width": "kw"}, "rgb", padding="SAME")
    h = tnp.relu(h + p.b1)
    return tx.constrain(h, STAGE)  # plant[r3 resource static]: return tx.constrain(h, {"batch": "data", "height": "model"})


@tx.typed
def second_stage(
    p: StemParams, h: NamedArray[f32, "batch@data height width c1@model"], pool: int
) -> NamedArray[f32, "batch@data c2"]:
    pooled = tnp.max_pool(h, {"height": pool, "width": pool}, strides=pool)  # plant[r2 name static]: pooled = tnp.max_pool(h, {"height": pool, "kw": pool}, strides=pool)
    z = tnp.conv(pooled, p.k2, {"height": "kh", "width": "kw"}, "c1", padding="SAME")
    return tnp.mean(tnp.relu(z), ("height", "width"))


@tx.typed
def logits(p: StemParams, images: NamedArray[f32, "batch@data height width rgb"], pool: int) -> NamedArray[f32, "batch@data cls"]:
    feats = second_stage(p, first_stage(p, images, pool), pool)
    w_cls = tx.constrain(p.w_cls, {})  # plant[r4 resource static]: w_cls = tx.constrain(p.w_cls, {"cls": "data"})
    return tnp.einsum("{batch,c2},{c2,cls}->{batch,cls}", feats, w_cls)


def loss(p: StemParams, images: NamedArray[f32, "batch@data height width rgb"], labels: NamedArray[i32, "batch@data"], pool: int) -> jax.Array:
    logp = tnp.log_softmax(logits(p, images, pool), "cls")
    return tx.positional(-tnp.mean(logp[{"cls": labels}], "batch"), [])


@partial(jax.jit, static_argnames=("cfg",))
def train_step(
    p: StemParams, images: NamedArray[f32, "batch@data height width rgb"], labels: NamedArray[i32, "batch@data"], cfg: StemConfig
) -> tuple[StemParams, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, images, labels, cfg.pool)
    new = jax.tree.map(lambda w, g: w - cfg.lr * g, p, grads)
    return new, value


def main() -> None:
    cfg = StemConfig()
    jax.set_mesh(jax.make_mesh((4, 2), ("data", "model")))
    k_p, k_x, k_y = jax.random.split(jax.random.key(1), 3)
    params = init(cfg, k_p)
    raw = tx.random.normal(k_x, {"batch": cfg.batch, "height": cfg.size, "width": cfg.size, "rgb": cfg.in_ch})
    images = tx.shard(raw, IMAGES)  # plant[r5 resource static]: images = tx.shard(raw, {"batch": "model"})
    labels = tx.shard(tx.random.randint(k_y, {"batch": cfg.batch}, 0, cfg.classes), IMAGES)
    print("logits", logits(params, images, cfg.pool).named_shape)
    for step in range(2):
        params, value = train_step(params, images, labels, cfg)
        print("step", step, float(value))


if __name__ == "__main__":
    main()
