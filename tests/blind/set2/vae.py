"""A convolutional variational autoencoder on tiny images.

Encoder: two strided convolutions (bf16 compute), flattened by name, to a Gaussian posterior (mean, log-variance).
Sampling by the reparameterisation trick with ``tx.random``. Decoder: a dense layer split back into a feature map,
two strided transposed convolutions back to the image. Loss: Bernoulli reconstruction plus the KL term.
"""

from __future__ import annotations

import math
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, bf16, f32

from _sizes import DATA_PARALLEL, LEARNING_RATE, MESH_AXES, MODEL_PARALLEL, TINY_BATCH

Images = NamedArray[f32, "batch height width channels"]
Latent = NamedArray[f32, "batch latent"]


@dataclass(frozen=True)
class VAEConfig:
    batch: int = TINY_BATCH
    size: int = 8
    channels: int = 1
    c1: int = 4
    c2: int = 8
    kernel: int = 3
    stride: int = 2
    latent: int = 4
    iwae_samples: int = 3

    @property
    def reduced(self) -> int:
        """The side of the encoder's last feature map: two strided convolutions."""
        return self.size // (self.stride * self.stride)

    @property
    def flat(self) -> int:
        return self.c2 * self.reduced * self.reduced  # plant[v2 size runtime]: return self.c2 * self.reduced


class Encoder(NamedTuple):
    conv1: NamedArray[f32, "kh kw channels c1"]
    conv2: NamedArray[f32, "kh kw c1 c2"]
    to_mean: NamedArray[f32, "flat latent"]
    to_logvar: NamedArray[f32, "flat latent"]


class Decoder(NamedTuple):
    from_latent: NamedArray[f32, "latent flat"]
    bias: NamedArray[f32, "flat"]
    deconv1: NamedArray[f32, "kh kw c2 c1"]
    deconv2: NamedArray[f32, "kh kw c1 channels"]


class VAEParams(NamedTuple):
    encoder: Encoder
    decoder: Decoder


def init(cfg: VAEConfig, key: jax.Array) -> VAEParams:
    k = iter(jax.random.split(key, 6))
    window = {"kh": cfg.kernel, "kw": cfg.kernel}
    fan1, fan2 = cfg.kernel * cfg.kernel * cfg.channels, cfg.kernel * cfg.kernel * cfg.c1
    encoder = Encoder(
        conv1=tx.random.normal(next(k), {**window, "channels": cfg.channels, "c1": cfg.c1}) / np.sqrt(fan1),
        conv2=tx.random.normal(next(k), {**window, "c1": cfg.c1, "c2": cfg.c2}) / np.sqrt(fan2),
        to_mean=tx.random.normal(next(k), {"flat": cfg.flat, "latent": cfg.latent}) / np.sqrt(cfg.flat),
        to_logvar=tnp.zeros({"flat": cfg.flat, "latent": cfg.latent}, dtype=jnp.float32),  # plant[v1 size static]: to_logvar=tnp.zeros({"flat": cfg.flat // 2, "latent": cfg.latent}, dtype=jnp.float32),
    )
    decoder = Decoder(
        from_latent=tx.random.normal(next(k), {"latent": cfg.latent, "flat": cfg.flat}) / np.sqrt(cfg.latent),
        bias=tnp.zeros({"flat": cfg.flat}, dtype=jnp.float32),
        deconv1=tx.random.normal(next(k), {**window, "c2": cfg.c2, "c1": cfg.c1}) / np.sqrt(cfg.c2),
        deconv2=tx.random.normal(next(k), {**window, "c1": cfg.c1, "channels": cfg.channels}) / np.sqrt(cfg.c1),
    )
    return VAEParams(encoder, decoder)


SPATIAL = {"height": "kh", "width": "kw"}


@tx.typed
def encode(cfg: VAEConfig, p: Encoder, x: Images) -> tuple[Latent, Latent]:
    h = tnp.conv(
        x.astype(jnp.bfloat16), p.conv1.astype(jnp.bfloat16), SPATIAL, "channels", strides=cfg.stride, padding="SAME"
    )
    h = tnp.relu(h)
    h2: NamedArray[bf16, "batch height width c2"] = tnp.conv(
        h, p.conv2.astype(jnp.bfloat16), SPATIAL, "c1", strides=cfg.stride, padding="SAME"  # plant[v8 size runtime]: h, p.conv2.astype(jnp.bfloat16), SPATIAL, "c1", strides=1, padding="SAME"
    )
    flat = tx.merge_axes(tnp.relu(h2).astype(jnp.float32), ("c2", "height", "width"), "flat")  # plant[v3 name static]: flat = tx.merge_axes(tnp.relu(h2).astype(jnp.float32), ("c1", "height", "width"), "flat")
    mean = tnp.einsum("{flat},{flat,latent}->{latent}", flat, p.to_mean)
    logvar = tnp.einsum("{flat},{flat,latent}->{latent}", flat, p.to_logvar)
    return mean, tnp.clip(logvar, -8.0, 8.0)


@tx.typed
def sample(key: jax.Array, mean: Latent, logvar: Latent) -> Latent:
    eps = tx.random.normal(key, mean.named_shape)  # plant[v9 other runtime]: eps = tx.random.normal(key, {"latent": mean.named_shape["latent"]})
    return mean + tnp.exp(0.5 * logvar) * eps


@tx.typed
def decode(cfg: VAEConfig, p: Decoder, z: Latent) -> Images:
    flat = tnp.relu(tnp.einsum("{latent},{latent,flat}->{flat}", z, p.from_latent) + p.bias)
    grid = tx.split_axis(flat, "flat", {"c2": cfg.c2, "height": cfg.reduced, "width": cfg.reduced})
    h = tnp.conv_transpose(grid, p.deconv1, SPATIAL, "c2", strides=cfg.stride, padding="SAME")
    h = tnp.relu(h)
    return tnp.conv_transpose(h, p.deconv2, SPATIAL, "c1", strides=cfg.stride, padding="SAME")


@tx.typed
def elbo_terms(
    cfg: VAEConfig, params: VAEParams, x: Images, key: jax.Array
) -> tuple[NamedArray[f32, "batch"], NamedArray[f32, "batch"]]:
    """Per-example reconstruction loss (Bernoulli, from logits) and KL to the unit Gaussian."""
    mean, logvar = encode(cfg, params.encoder, x)
    z = sample(key, mean, logvar)
    logits = decode(cfg, params.decoder, z)
    per_pixel = tnp.softplus(logits) - x * logits
    reconstruction = tnp.sum(per_pixel, ("height", "width", "channels"))  # plant[v5 name static]: reconstruction = tnp.sum(per_pixel, ("height", "width"))
    kl = 0.5 * tnp.sum(tnp.exp(logvar) + mean * mean - 1.0 - logvar, "latent")
    return reconstruction, kl


@tx.typed
def importance_bound(cfg: VAEConfig, params: VAEParams, x: Images, key: jax.Array, samples: int) -> NamedArray[f32, "batch"]:
    """The importance-weighted bound (IWAE) on log p(x), from ``samples`` posterior draws per image."""
    mean, logvar = encode(cfg, params.encoder, x)
    log_weights = []
    for sample_key in jax.random.split(key, samples):
        z = sample(sample_key, mean, logvar)
        logits = decode(cfg, params.decoder, z)
        log_likelihood = -tnp.sum(tnp.softplus(logits) - x * logits, ("height", "width", "channels"))
        log_prior = -0.5 * tnp.sum(z * z, "latent")  # plant[v11 name static]: log_prior = -0.5 * tnp.sum(z * z, "batch")
        log_posterior = -0.5 * tnp.sum((z - mean) * (z - mean) / tnp.exp(logvar) + logvar, "latent")
        log_weights.append(log_likelihood + log_prior - log_posterior)
    stacked = tnp.stack(log_weights, axis="sample")
    return tnp.logsumexp(stacked, "sample") - math.log(samples)  # plant[v10 name static]: return tnp.logsumexp(stacked, "batch") - math.log(samples)


def loss(params: VAEParams, cfg: VAEConfig, x: Images, key: jax.Array) -> jax.Array:
    reconstruction, kl = elbo_terms(cfg, params, x, key)
    return tx.positional(tnp.mean(reconstruction + kl, "batch"), [])  # plant[v6 return static]: return tx.positional(reconstruction + kl, [])


@partial(jax.jit, static_argnums=0)
def train_step(cfg: VAEConfig, params: VAEParams, x: Images, key: jax.Array) -> tuple[VAEParams, jax.Array]:
    value, grads = jax.value_and_grad(loss)(params, cfg, x, key)
    new_params: VAEParams = jax.tree.map(
        lambda w, g: w - LEARNING_RATE * g, params, grads, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray)
    )
    return new_params, value


def generate(cfg: VAEConfig, params: VAEParams, key: jax.Array, count: int) -> NamedArray[f32, "batch height width channels"]:
    z = tx.random.normal(key, {"batch": count, "latent": cfg.latent})  # plant[v4 dtype static]: z = tx.random.normal(key, {"batch": count, "latent": cfg.latent}, dtype=jnp.bfloat16)
    return tnp.sigmoid(decode(cfg, params.decoder, z))


def images(cfg: VAEConfig, seed: int = 0) -> Images:
    """Blobs: a bright square at a random place in each image."""
    rng = np.random.default_rng(seed)
    pixels = np.zeros((cfg.batch, cfg.size, cfg.size, cfg.channels), np.float32)
    for b, (r, c) in enumerate(rng.integers(0, cfg.size - 3, (cfg.batch, 2))):
        pixels[b, r : r + 3, c : c + 3] = 1.0
    return tx.named(pixels, ["batch", "height", "width", "channels"])


def main() -> None:
    cfg = VAEConfig()
    mesh = jax.make_mesh((DATA_PARALLEL, MODEL_PARALLEL), MESH_AXES)
    with jax.set_mesh(mesh):
        params = init(cfg, jax.random.key(0))
        x = tx.shard(images(cfg), {"batch": "data"})  # plant[v7 resource static]: x = tx.shard(images(cfg), {"batch": "data", "height": "data"})
        mean, logvar = encode(cfg, params.encoder, x)
        print("posterior", mean.named_shape, logvar.named_shape)
        key = jax.random.key(1)
        for i in range(3):
            key, step_key = jax.random.split(key)
            params, value = train_step(cfg, params, x, step_key)
            print(f"step {i}: loss {float(value):.3f}")
        bound = importance_bound(cfg, params, x, jax.random.key(3), cfg.iwae_samples)
        print("IWAE bound per image", tx.positional(bound, ["batch"]))
        samples = generate(cfg, params, jax.random.key(2), 2)
        print("samples", samples.named_shape, "batch placed", tx.resources_of(x))


if __name__ == "__main__":
    main()
