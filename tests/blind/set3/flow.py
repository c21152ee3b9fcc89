"""A RealNVP-style normalizing flow on 2-D-ish data: affine coupling layers with alternating masks,
an actnorm in front, the log-determinant summed through a ``tx.scan`` over the stacked layers, and
sampling by running the inverse couplings in reverse order."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import math
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple, TypedDict, TypeVar

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

from _sizes import FLOW_DIM, TINY_BATCH, TOWER_EMBED


@dataclass(frozen=True)
class FlowConfig:
    dim: int = FLOW_DIM
    hidden_mult: int = 4
    n_layers: int = 4
    batch: int = TINY_BATCH
    n_samples: int = 4
    noise: float = 0.05
    lr: float = 1e-2

    @property
    def hidden(self) -> int:
        return self.hidden_mult * self.dim

    @property
    def half(self) -> int:
        return self.dim // 2


class Coupling(TypedDict):
    w_in: NamedArray[f32, "feat hidden"]
    b_in: NamedArray[f32, "hidden"]
    w_s: NamedArray[f32, "hidden feat"]
    w_t: NamedArray[f32, "hidden feat"]
    s_scale: NamedArray[f32, "feat"]


class Couplings(TypedDict):
    w_in: NamedArray[f32, "layers feat hidden"]
    b_in: NamedArray[f32, "layers hidden"]
    w_s: NamedArray[f32, "layers hidden feat"]
    w_t: NamedArray[f32, "layers hidden feat"]
    s_scale: NamedArray[f32, "layers feat"]


class FlowParams(NamedTuple):
    couplings: Couplings
    loc: NamedArray[f32, "feat"]
    log_sigma: NamedArray[f32, "feat"]


class Carry(NamedTuple):
    x: NamedArray[f32, "batch feat"]
    logdet: NamedArray[f32, "batch"]


A = TypeVar("A", bound=tx.AnyNamedArray)


def make_masks(cfg: FlowConfig) -> NamedArray[f32, "layers feat"]:
    """Alternating masks: checkerboard on even layers, first/second half on odd ones (1 = kept)."""
    index = tnp.arange("feat", cfg.dim)
    masks = []
    for layer in range(cfg.n_layers):
        if layer % 2 == 0:
            keep = (index + layer // 2) % 2 == 0
        else:
            keep = index < cfg.half if (layer // 2) % 2 == 0 else index >= cfg.half
        masks.append(keep.astype(jnp.float32))
    return tnp.stack(masks, axis="layers")


def init(cfg: FlowConfig, key: jax.Array) -> FlowParams:
    layers: list[Coupling] = []
    for layer_key in jax.random.split(key, cfg.n_layers):
        k_in, k_s, k_t = jax.random.split(layer_key, 3)
        layer: Coupling = {
            "w_in": tx.random.normal(k_in, {"feat": cfg.dim, "hidden": cfg.hidden}) * cfg.dim**-0.5,
            "b_in": tnp.zeros({"hidden": cfg.hidden}, dtype=jnp.float32),
            "w_s": tx.random.normal(k_s, {"hidden": cfg.hidden, "feat": cfg.dim}) * 0.01,
            "w_t": tx.random.normal(k_t, {"hidden": cfg.hidden, "feat": cfg.dim}) * 0.01,  # plant[p1 size static]: "w_t": tx.random.normal(k_t, {"hidden": cfg.hidden, "feat": cfg.half}) * 0.01,
            "s_scale": tnp.ones({"feat": cfg.dim}, dtype=jnp.float32),
        }
        layers.append(layer)
    couplings = Couplings(
        w_in=tnp.stack([p["w_in"] for p in layers], axis="layers"),
        b_in=tnp.stack([p["b_in"] for p in layers], axis="layers"),
        w_s=tnp.stack([p["w_s"] for p in layers], axis="layers"),
        w_t=tnp.stack([p["w_t"] for p in layers], axis="layers"),
        s_scale=tnp.stack([p["s_scale"] for p in layers], axis="layers"),
    )
    return FlowParams(
        couplings=couplings,
        loc=tnp.zeros({"feat": cfg.dim}, dtype=jnp.float32),
        log_sigma=tnp.zeros({"feat": cfg.dim}, dtype=jnp.float32),
    )


@tx.typed
def conditioner(
    p: Coupling, kept: NamedArray[f32, "*rest feat"]
) -> tuple[NamedArray[f32, "*rest feat"], NamedArray[f32, "*rest feat"]]:
    """Scale and shift from the kept coordinates; the hidden layer runs in bfloat16."""
    h = tnp.tanh(tnp.einsum("{feat},{feat,hidden}->{hidden}", kept, p["w_in"]) + p["b_in"])
    h16 = h.astype(jnp.bfloat16)
    w_s16 = p["w_s"].astype(jnp.bfloat16)
    s_raw = tnp.einsum("{hidden},{hidden,feat}->{feat}", h16, w_s16, preferred_element_type=jnp.float32)  # plant[p2 name static]: s_raw = tnp.einsum("{hidden},{hidden,feat}->{hidden}", h16, w_s16, preferred_element_type=jnp.float32)
    t = tnp.einsum("{hidden},{hidden,feat}->{feat}", h, p["w_t"])
    s = p["s_scale"] * tnp.tanh(s_raw)
    return s, t  # plant[p3 dtype static]: return s.astype(jnp.bfloat16), t


@tx.typed
def coupling_forward(
    p: Coupling, mask: NamedArray[f32, "feat"], x: NamedArray[f32, "batch feat"]
) -> tuple[NamedArray[f32, "batch feat"], NamedArray[f32, "batch"]]:
    kept = x * mask
    s, t = conditioner(p, kept)
    free = 1.0 - mask
    y = kept + free * (x * tnp.exp(s) + t)
    logdet = tnp.sum(free * s, "feat")  # plant[p4 name static]: logdet = tnp.sum(free * s, "batch")
    return y, logdet


@tx.typed
def coupling_inverse(
    p: Coupling, mask: NamedArray[f32, "feat"], y: NamedArray[f32, "sample feat"]
) -> NamedArray[f32, "sample feat"]:
    kept = y * mask
    s, t = conditioner(p, kept)
    return kept + (1.0 - mask) * (y - t) * tnp.exp(-s)


@tx.typed
def flow_forward(
    params: FlowParams, masks: NamedArray[f32, "layers feat"], x: NamedArray[f32, "batch feat"]
) -> Carry:
    z0 = (x - params.loc) * tnp.exp(-params.log_sigma)
    logdet0 = tnp.zeros_like(x[{"feat": 0}]) - tnp.sum(params.log_sigma, "feat")

    def step(carry: Carry, layer: tuple[Coupling, NamedArray[f32, "feat"]]) -> tuple[Carry, NamedArray[f32, "batch"]]:
        p, mask = layer
        y, logdet = coupling_forward(p, mask, carry.x)
        return Carry(y, carry.logdet + logdet), logdet  # plant[p5 return static]: return Carry(y, carry.logdet + logdet), y

    final, _per_layer = tx.scan(step, Carry(z0, logdet0), (params.couplings, masks), axis="layers")
    return final


@tx.typed
def log_prob(
    params: FlowParams, masks: NamedArray[f32, "layers feat"], x: NamedArray[f32, "batch feat"]
) -> NamedArray[f32, "batch"]:
    out = flow_forward(params, masks, x)
    dim = x.named_shape["feat"]
    base = -0.5 * tnp.sum(out.x * out.x, "feat") - 0.5 * dim * math.log(2 * math.pi)  # plant[p6 name static]: base = -0.5 * tnp.sum(out.x * out.x, "batch") - 0.5 * dim * math.log(2 * math.pi)
    return base + out.logdet


def nll(params: FlowParams, masks: NamedArray[f32, "layers feat"], x: NamedArray[f32, "batch feat"]) -> jax.Array:
    return tx.positional(-tnp.mean(log_prob(params, masks, x), "batch"), [])


@tx.typed
def sample(
    params: FlowParams, masks: NamedArray[f32, "layers feat"], z: NamedArray[f32, "sample feat"]
) -> NamedArray[f32, "sample feat"]:
    def step(y: NamedArray[f32, "sample feat"], layer: tuple[Coupling, NamedArray[f32, "feat"]]) -> tuple[
        NamedArray[f32, "sample feat"], None
    ]:
        p, mask = layer
        return coupling_inverse(p, mask, y), None

    y, _ = tx.scan(step, z, (params.couplings, masks), axis="layers", reverse=True)
    return y * tnp.exp(params.log_sigma) + params.loc


def sgd(p: A, g: A, lr: float) -> A:
    return p - lr * g


@partial(jax.jit, static_argnames=("cfg",))
def train_step(
    params: FlowParams, masks: NamedArray[f32, "layers feat"], x: NamedArray[f32, "batch feat"], cfg: FlowConfig
) -> tuple[FlowParams, jax.Array]:
    value, grads = jax.value_and_grad(nll)(params, masks, x)
    new_params = jax.tree.map(
        lambda p, g: sgd(p, g, cfg.lr), params, grads, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray)
    )
    return new_params, value


def toy_data(cfg: FlowConfig, key: jax.Array) -> NamedArray[f32, "batch feat"]:
    k_base, k_noise = jax.random.split(key)
    base = tx.random.normal(k_base, {"batch": cfg.batch, "feat": cfg.dim})  # plant[p7 size runtime]: base = tx.random.normal(k_base, {"batch": cfg.batch, "feat": TOWER_EMBED})
    shifted = tnp.roll(base, 1, axis="feat")
    noise = tx.random.uniform(k_noise, {"batch": cfg.batch, "feat": cfg.dim}, minval=-cfg.noise, maxval=cfg.noise)
    return base + 0.5 * tnp.tanh(shifted) + noise


if __name__ == "__main__":
    cfg = FlowConfig()
    key = jax.random.key(0)
    k_init, k_data, k_sample = jax.random.split(key, 3)
    params = init(cfg, k_init)
    masks = make_masks(cfg)
    x = toy_data(cfg, k_data)
    print("log p(x):", log_prob(params, masks, x).named_shape)
    for _ in range(2):
        params, value = train_step(params, masks, x, cfg)
        print("nll", float(value))
    z = tx.random.normal(k_sample, {"sample": cfg.n_samples, "feat": cfg.dim})
    drawn = sample(params, masks, z)
    assert drawn.named_shape == {"sample": cfg.n_samples, "feat": cfg.dim}
    # the inverse undoes the forward pass
    back = flow_forward(params, masks, drawn.rename({"sample": "batch"})).x
    assert jnp.allclose(tx.positional(back, ["batch", "feat"]), tx.positional(z, ["sample", "feat"]), atol=1e-3)
    print("ok")
