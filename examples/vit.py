"""A vision transformer classifier written by name: a convolution stem, a class token, attention, a pooled head.

The stem is a strided convolution (``tnp.conv``: the image's ``height`` and ``width`` slide the kernel's
``kh`` and ``kw``, ``channels`` is summed, ``embed`` is new) and a max pool; its grid of patches becomes one
``patch`` axis, a learned class token is put in front, and pre-norm attention and MLP blocks follow. The
head classifies the class token's output together with the mean of the patches. No positional array, no
positional index: the same program trains on one device and on a 2x4 mesh.

    python examples/vit.py
    typed-xmap check --strict examples/vit.py
    typed-xmap check --comm examples/vit.py  # the collectives each model function needs
"""

from __future__ import annotations

import os

if "jax" not in __import__("sys").modules:
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypedDict

import jax
import numpy as np
import optax  # type: ignore[import-untyped]  # optax ships no type information

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

Images = NamedArray[f32, "batch@data height width channels"]
Labels = NamedArray[i32, "batch@data"]
Patches = NamedArray[f32, "batch@data patch embed"]
Projection = NamedArray[f32, "embed heads@model head_dim"]


class Params(TypedDict):
    stem: NamedArray[f32, "kh kw channels embed"]
    cls: NamedArray[f32, "embed"]
    positions: NamedArray[f32, "patch embed"]
    query: Projection
    key: Projection
    value: Projection
    out: Projection
    mlp_in: NamedArray[f32, "embed mlp@model"]
    mlp_out: NamedArray[f32, "mlp@model embed"]
    head: NamedArray[f32, "embed label"]


# ---- the model ----------------------------------------------------------------------------------------------


def norm(x: Patches) -> Patches:
    centred = x - x.mean("embed")
    return centred / tnp.sqrt((centred * centred).mean("embed") + 1e-5)


def patches(images: Images, p: Params) -> Patches:
    """Conv stem (stride 2) and a 2x2 max pool; the grid flattened to ``patch``, the class token first."""
    grid = tnp.conv(images, p["stem"], {"height": "kh", "width": "kw"}, "channels", strides=2, padding="SAME")
    grid = tnp.max_pool(tnp.gelu(grid), {"height": 2, "width": 2})
    tokens = tx.merge_axes(grid, ("height", "width"), "patch")
    cls = tnp.zeros_like(p["cls"], new_axes={"batch": images.named_shape["batch"], "patch": 1}) + p["cls"]
    return tnp.concatenate([cls, tokens], axis="patch") + p["positions"]


def attention(x: Patches, p: Params) -> Patches:
    keys = x.rename({"patch": "kv"})
    q = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", x, p["query"])
    k = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", keys, p["key"])
    v = tnp.einsum("{embed},{embed,heads,head_dim}->{heads,head_dim}", keys, p["value"])
    scores = tnp.einsum("{patch,head_dim},{kv,head_dim}->{patch,kv}", q, k) / math.sqrt(q.named_shape["head_dim"])
    mixed = tnp.einsum("{patch,kv},{kv,head_dim}->{patch,head_dim}", tnp.softmax(scores, "kv"), v)
    return tnp.einsum("{heads,head_dim},{embed,heads,head_dim}->{embed}", mixed, p["out"])


def mlp(x: Patches, p: Params) -> Patches:
    return tnp.dot(tnp.gelu(tnp.dot(x, p["mlp_in"], axis="embed")), p["mlp_out"], axis="mlp")


def loss(params: Params, images: Images, labels: Labels) -> jax.Array:
    x = patches(images, params)
    x = x + attention(norm(x), params)
    x = x + mlp(norm(x), params)
    pooled = norm(x)[{"patch": 0}] + norm(x).mean("patch")  # the class token and the mean of all tokens
    log_probs = tnp.log_softmax(tnp.dot(pooled, params["head"], axis="embed"), "label")
    mean: jax.Array = -log_probs[{"label": labels}].mean("batch").data
    return mean


# ---- parameters, data, placement ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    batch: int = 8
    size: int = 16  # height and width
    channels: int = 3
    window: int = 4
    embed: int = 32
    heads: int = 4
    head_dim: int = 8
    mlp: int = 64
    labels: int = 4

    @property
    def patches(self) -> int:
        """The class token and the (size / 2 / 2) ** 2 patches of the stem."""
        return 1 + (self.size // 4) ** 2


RESOURCES = {"batch": "data", "heads": "model", "mlp": "model"}
"""Batch data-parallel; heads and the MLP split over ``model``."""


def init(c: Config, key: jax.Array) -> Params:
    k = iter(jax.random.split(key, 9))
    scale = 1 / math.sqrt(c.embed)
    projection = {"embed": c.embed, "heads": c.heads, "head_dim": c.head_dim}
    stem = {"kh": c.window, "kw": c.window, "channels": c.channels, "embed": c.embed}
    return {
        "stem": tx.random.normal(next(k), stem) / math.sqrt(c.window * c.window * c.channels),
        "cls": tx.random.normal(next(k), {"embed": c.embed}) * scale,
        "positions": tx.random.normal(next(k), {"patch": c.patches, "embed": c.embed}) * scale,
        "query": tx.random.normal(next(k), projection) * scale,
        "key": tx.random.normal(next(k), projection) * scale,
        "value": tx.random.normal(next(k), projection) * scale,
        "out": tx.random.normal(next(k), projection) / math.sqrt(c.heads * c.head_dim),
        "mlp_in": tx.random.normal(next(k), {"embed": c.embed, "mlp": c.mlp}) * scale,
        "mlp_out": tx.random.normal(next(k), {"mlp": c.mlp, "embed": c.embed}) / math.sqrt(c.mlp),
        "head": tnp.zeros({"embed": c.embed, "label": c.labels}),
    }


def batches(c: Config, seed: int = 0) -> Iterator[tuple[Images, Labels]]:
    """Noisy images whose label is the quadrant holding a bright square."""
    rng = np.random.default_rng(seed)
    half = c.size // 2
    while True:
        labels = rng.integers(0, c.labels, c.batch)
        images = rng.normal(0, 0.5, (c.batch, c.size, c.size, c.channels)).astype(np.float32)
        for i, label in enumerate(labels):
            top, left = half * (label // 2), half * (label % 2)
            images[i, top : top + half, left : left + half] += 1.0
        yield (
            tx.named(images, ["batch", "height", "width", "channels"]),
            tx.named(labels.astype(np.int32), ["batch"]),
        )


# ---- training -------------------------------------------------------------------------------------------------

OPTIMIZER = optax.adam(1e-2)


@jax.jit
def train_step(params: Params, opt_state: Any, images: Images, labels: Labels) -> tuple[Params, Any, jax.Array]:
    value, grads = jax.value_and_grad(loss)(params, images, labels)
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
            images, labels = tx.shard(data, RESOURCES) if mesh is not None else data
            params, opt_state, value = train_step(params, opt_state, images, labels)
            losses.append(float(value))
    return params, losses


def meshes() -> dict[str, jax.sharding.Mesh | None]:
    """One device, and a (data, model) mesh: 2x4 where there are 8 devices, else smaller."""
    count = len(jax.devices())
    shape = (2, 4) if count >= 8 else (1, 2) if count >= 2 else (1, 1)
    return {"one device": None, f"{shape[0]}x{shape[1]}": jax.make_mesh(shape, ("data", "model"))}


def main(steps: int = 30) -> None:
    c = Config()
    results = {name: train(c, steps, mesh) for name, mesh in meshes().items()}
    for name, (params, losses) in results.items():
        print(f"{name:>11}: loss {losses[0]:.4f} -> {losses[-1]:.4f}   query placed {tx.resources_of(params['query'])}")
    first = results["one device"][1]
    for name, (_, losses) in results.items():
        np.testing.assert_allclose(losses, first, rtol=2e-4, err_msg=name)


if __name__ == "__main__":
    main()
