"""A small DDPM on feature vectors: an MLP denoiser with a sinusoidal time embedding, a training step on the
noise-prediction loss, and an ancestral sampler that runs the reverse steps with tx.scan."""

from __future__ import annotations

import math
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from _sizes import BATCH, HIDDEN, LEARNING_RATE
from typed_xmap import NamedArray, f32, i32


class Config(NamedTuple):
    batch: int = BATCH
    feat: int = 6
    hidden: int = HIDDEN
    temb: int = 8  # even: sin and cos halves
    steps: int = 10
    beta_min: float = 1e-3
    beta_max: float = 0.2


class Params(NamedTuple):
    w_in: NamedArray[f32, "feat hidden"]
    w_t: NamedArray[f32, "temb hidden"]
    b: NamedArray[f32, "hidden"]
    w_out: NamedArray[f32, "hidden feat"]


class Schedule(NamedTuple):
    betas: NamedArray[f32, "step"]
    alpha_bars: NamedArray[f32, "step"]


def init(cfg: Config, key: jax.Array) -> Params:
    k1, k2, k3 = jax.random.split(key, 3)
    return Params(
        w_in=tx.random.normal(k1, {"feat": cfg.feat, "hidden": cfg.hidden}) / math.sqrt(cfg.feat),
        w_t=tx.random.normal(k2, {"temb": cfg.temb, "hidden": cfg.hidden}) / math.sqrt(cfg.temb),  # plant[d1 size static]: w_t=tx.random.normal(k2, {"temb": cfg.temb, "hidden": cfg.hidden // 2}) / math.sqrt(cfg.temb),
        b=tnp.zeros({"hidden": cfg.hidden}, jnp.float32),
        w_out=tx.random.normal(k3, {"hidden": cfg.hidden, "feat": cfg.feat}) / math.sqrt(cfg.hidden),
    )


def schedule(cfg: Config) -> Schedule:
    ramp = tnp.arange("step", 0, cfg.steps, dtype=jnp.float32) / (cfg.steps - 1)
    betas = cfg.beta_min + (cfg.beta_max - cfg.beta_min) * ramp
    return Schedule(betas, tnp.cumprod(1.0 - betas, "step"))


@tx.typed
def time_embedding(t: NamedArray[i32, "batch"], cfg: Config) -> NamedArray[f32, "batch temb"]:
    half = cfg.temb // 2
    freqs = tnp.exp(tnp.arange("freq", 0, half, dtype=jnp.float32) * (-math.log(10000.0) / half))
    angles = t.astype(jnp.float32) * freqs
    return tnp.concatenate([tnp.sin(angles), tnp.cos(angles)], axis="freq").rename({"freq": "temb"})  # plant[d2 name static]: return tnp.concatenate([tnp.sin(angles), tnp.cos(angles)], axis="freq")


@tx.typed
def denoise(
    p: Params, x: NamedArray[f32, "batch feat"], t: NamedArray[i32, "batch"], cfg: Config
) -> NamedArray[f32, "batch feat"]:
    h = tnp.einsum("{feat},{feat,hidden}->{hidden}", x, p.w_in)
    h = h + tnp.einsum("{temb},{temb,hidden}->{hidden}", time_embedding(t, cfg), p.w_t) + p.b
    return tnp.einsum("{hidden},{hidden,feat}->{feat}", tnp.silu(h), p.w_out)  # plant[d3 name static]: return tnp.einsum("{hidden},{hidden,feat}->{hidden}", tnp.silu(h), p.w_out)


@tx.typed
def loss(p: Params, x0: NamedArray[f32, "batch feat"], key: jax.Array, cfg: Config) -> jax.Array:
    kt, kn = jax.random.split(key)
    t = tx.random.randint(kt, {"batch": cfg.batch}, 0, cfg.steps)  # plant[d4 dtype static]: t = tx.random.uniform(kt, {"batch": cfg.batch}, jnp.float32, 0, cfg.steps)
    noise = tx.random.normal(kn, {"batch": cfg.batch, "feat": cfg.feat})
    ab = schedule(cfg).alpha_bars[{"step": t}]
    xt = tnp.sqrt(ab) * x0 + tnp.sqrt(1.0 - ab) * noise
    err = denoise(p, xt, t, cfg) - noise
    return tx.positional(tnp.mean(err * err, ("batch", "feat")), [])


@partial(jax.jit, static_argnames="cfg")
def train_step(p: Params, x0: NamedArray[f32, "batch feat"], key: jax.Array, cfg: Config) -> tuple[Params, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, x0, key, cfg)
    return jax.tree.map(lambda w, g: w - LEARNING_RATE * g, p, grads), value


@partial(jax.jit, static_argnames="cfg")
def sample(p: Params, key: jax.Array, cfg: Config) -> NamedArray[f32, "batch feat"]:
    sched = schedule(cfg)
    x_init = tx.random.normal(key, {"batch": cfg.batch, "feat": cfg.feat})

    def step(x: NamedArray[f32, "batch feat"], t: NamedArray[i32, ""]) -> tuple[NamedArray[f32, "batch feat"], None]:
        beta = sched.betas[{"step": t}]  # plant[d5 other static]: beta = sched.betas
        ab = sched.alpha_bars[{"step": t}]
        eps = denoise(p, x, tx.broadcast_to(t, {"batch": cfg.batch}), cfg)
        mean = (x - beta / tnp.sqrt(1.0 - ab) * eps) / tnp.sqrt(1.0 - beta)
        z = tx.random.normal(jax.random.fold_in(key, tx.positional(t, [])), {"batch": cfg.batch, "feat": cfg.feat})
        noise_scale = tnp.where(t > 0, tnp.sqrt(beta), 0.0)
        return mean + noise_scale * z, None

    steps = tnp.arange("step", 0, cfg.steps, dtype=jnp.int32)
    x, _ = tx.scan(step, x_init, steps, axis="step", reverse=True)  # plant[d6 name static]: x, _ = tx.scan(step, x_init, steps, axis="steps", reverse=True)
    return x


if __name__ == "__main__":
    cfg = Config()
    params = init(cfg, jax.random.key(0))
    data = tx.random.normal(jax.random.key(1), {"batch": cfg.batch, "feat": cfg.feat}) * 0.5 + 1.0
    for i in range(3):
        params, value = train_step(params, data, jax.random.key(10 + i), cfg)
        print("loss", float(value))
    out = sample(params, jax.random.key(2), cfg)
    print("sample", out.named_shape, float(tx.positional(tnp.mean(out, ("batch", "feat")), [])))
