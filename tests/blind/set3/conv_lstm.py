"""A ConvLSTM next-frame predictor: per frame, the four gates come from a convolution of the frame plus a
convolution of the previous hidden map (windows and padding from the config), the cell runs inside a
``tx.scan`` over the ``frame`` axis, and a 1x1 read-out predicts the next frame. Trained on moving blobs
with a full-resolution and a pooled loss, data parallel over ``data`` and the hidden channels split over
``model`` (an Auto mesh: the constraints are hints, JAX places the rest)."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from dataclasses import dataclass
from functools import partial
from typing import Final, NamedTuple, TypedDict, TypeVar

import jax
import jax.numpy as jnp
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

from _sizes import FRAME_SIZE


@dataclass(frozen=True)
class ConvLSTMConfig:
    batch: int = 4
    frames: int = 5
    height: int = FRAME_SIZE
    width: int = FRAME_SIZE
    channels: int = 1
    hidden: int = 8
    kernel: int = 3
    pool: int = 2
    coarse_weight: float = 0.5
    lr: float = 0.1

    @property
    def pad(self) -> int:
        return self.kernel // 2

    @property
    def window(self) -> int:
        return 2 * (self.kernel // 2) + 1


N_GATES: Final = 4  # input, forget, output, candidate


class Cell(TypedDict):
    w_x: NamedArray[f32, "kh kw chan gate hidden"]
    w_h: NamedArray[f32, "rh rw hid_in gate hidden"]
    b: NamedArray[f32, "gate hidden"]
    w_out: NamedArray[f32, "hidden chan"]
    b_out: NamedArray[f32, "chan"]


class LSTMState(NamedTuple):
    h: NamedArray[f32, "batch height width hidden"]
    c: NamedArray[f32, "batch height width hidden"]


Frame = NamedArray[f32, "batch height width chan"]

RESOURCES: Final = {"batch": "data", "hidden": "model"}  # plant[r4 resource static]: RESOURCES: Final = {"batch": "data", "hidden": "model", "hid_in": "model"}

A = TypeVar("A", bound=tx.AnyNamedArray)


def init(cfg: ConvLSTMConfig, key: jax.Array) -> Cell:
    k_x, k_h, k_out = jax.random.split(key, 3)
    fan_x = cfg.window * cfg.window * cfg.channels
    fan_h = cfg.window * cfg.window * cfg.hidden
    bias = tnp.zeros({"gate": N_GATES, "hidden": cfg.hidden}, dtype=jnp.float32)
    return {
        "w_x": tx.random.normal(
            k_x, {"kh": cfg.window, "kw": cfg.window, "chan": cfg.channels, "gate": N_GATES, "hidden": cfg.hidden}
        )
        * fan_x**-0.5,
        "w_h": tx.random.normal(
            k_h, {"rh": cfg.window, "rw": cfg.window, "hid_in": cfg.hidden, "gate": N_GATES, "hidden": cfg.hidden}  # plant[c1 size static]: k_h, {"rh": cfg.window, "rw": cfg.window, "hid_in": cfg.hidden, "gate": N_GATES, "hidden": cfg.hidden // 2}
        )
        * fan_h**-0.5,
        "b": bias.at[{"gate": 1}].set(1.0),  # forget gate biased open
        "w_out": tx.random.normal(k_out, {"hidden": cfg.hidden, "chan": cfg.channels}) * cfg.hidden**-0.5,
        "b_out": tnp.zeros({"chan": cfg.channels}, dtype=jnp.float32),
    }


@tx.typed
def cell(p: Cell, state: LSTMState, frame: Frame, pad: int) -> tuple[LSTMState, Frame]:
    """One ConvLSTM step; returns the new state and the predicted next frame."""
    x_part = tnp.conv(
        frame.astype(jnp.bfloat16),
        p["w_x"].astype(jnp.bfloat16),
        {"height": "kh", "width": "kw"},
        "chan",
        padding=pad,
        preferred_element_type=jnp.float32,
    )
    h_in = state.h.rename({"hidden": "hid_in"})  # plant[c2 name static]: h_in = state.h
    h_part = tnp.conv(h_in, p["w_h"], {"height": "rh", "width": "rw"}, "hid_in", padding=pad)  # plant[c3 size static]: h_part = tnp.conv(h_in, p["w_h"], {"height": "rh", "width": "rw"}, "hid_in", padding=pad + 1)
    gates = x_part + h_part + p["b"]
    i = tnp.sigmoid(gates[{"gate": 0}])
    f = tnp.sigmoid(gates[{"gate": 1}])  # plant[c4 name static]: f = tnp.sigmoid(gates[{"gates": 1}])
    o = tnp.sigmoid(gates[{"gate": 2}])
    g = tnp.tanh(gates[{"gate": 3}])
    c = f * state.c + i * g  # plant[c5 dtype static]: c = (f * state.c + i * g).astype(jnp.bfloat16)
    h = o * tnp.tanh(c)
    new_state = tx.constrain(LSTMState(h, c), {"batch": "data", "hidden": "model"})  # plant[r5 resource static]: new_state = tx.constrain(LSTMState(h, c), {"batch": "data", "hidden": "data"})
    prediction = tnp.sigmoid(tnp.einsum("{hidden},{hidden,chan}->{chan}", new_state.h, p["w_out"]) + p["b_out"])
    return new_state, prediction  # plant[c6 return static]: return new_state, new_state.h


@tx.typed
def predict(p: Cell, video: NamedArray[f32, "batch frame height width chan"], pad: int) -> NamedArray[
    f32, "batch frame height width chan"
]:
    """The prediction of frame t+1 made after seeing frames 0..t, for every t."""
    zeros = tnp.zeros_like(video[{"frame": 0, "chan": 0}])
    per_channel = tnp.zeros_like(p["b"][{"gate": 0}])
    start = LSTMState(h=zeros * per_channel, c=zeros * per_channel)

    def step(state: LSTMState, frame: Frame) -> tuple[LSTMState, Frame]:
        return cell(p, state, frame, pad)

    _, predictions = tx.scan(step, start, video, axis="frame")
    return predictions


def loss(p: Cell, video: NamedArray[f32, "batch frame height width chan"], cfg: ConvLSTMConfig) -> jax.Array:
    predictions = predict(p, video, cfg.pad)
    guessed = predictions[{"frame": slice(0, cfg.frames - 1)}]
    target = video[{"frame": slice(1, None)}]
    fine = tnp.mean((guessed - target) ** 2, ("batch", "frame", "height", "width", "chan"))
    window = {"height": cfg.pool, "width": cfg.pool}
    coarse_error = tnp.avg_pool(guessed, window) - tnp.avg_pool(target, window)
    coarse = tnp.mean(coarse_error**2, ("batch", "frame", "height", "width", "chan"))
    return tx.positional(fine + cfg.coarse_weight * coarse, [])


def sgd(p: A, g: A, lr: float) -> A:
    return p - lr * g


@partial(jax.jit, static_argnames=("cfg",))
def train_step(
    p: Cell, video: NamedArray[f32, "batch frame height width chan"], cfg: ConvLSTMConfig
) -> tuple[Cell, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, video, cfg)
    new = jax.tree.map(lambda w, g: sgd(w, g, cfg.lr), p, grads, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray))
    return tx.constrain(new, RESOURCES), value


def moving_blobs(cfg: ConvLSTMConfig, key: jax.Array, batch: int) -> NamedArray[f32, "batch frame height width chan"]:
    """A Gaussian blob per video moving one pixel right per frame from a random start row and column."""
    k_row, k_col = jax.random.split(key)
    row0 = tx.random.randint(k_row, {"batch": batch}, 0, cfg.height)
    col0 = tx.random.randint(k_col, {"batch": batch}, 0, cfg.width)
    t = tnp.arange("frame", cfg.frames)
    rows = tnp.arange("height", cfg.height)
    cols = tnp.arange("width", cfg.width)
    d_row = (rows - row0).astype(jnp.float32)
    d_col = (cols - (col0 + t) % cfg.width).astype(jnp.float32)
    blob = tnp.exp(-(d_row * d_row + d_col * d_col) / 2.0)
    return tx.broadcast_to(blob, {"chan": cfg.channels, **blob.named_shape})


if __name__ == "__main__":
    cfg = ConvLSTMConfig()
    mesh = tx.fitting_mesh((2, 4), ("data", "model"), axis_types=(AxisType.Auto, AxisType.Auto), emulate=True)
    with jax.set_mesh(mesh):
        k_init, k_data = jax.random.split(jax.random.key(0))
        p = tx.shard(init(cfg, k_init), RESOURCES)
        video = tx.shard(moving_blobs(cfg, k_data, cfg.batch), RESOURCES)  # plant[c7 size runtime]: video = tx.shard(moving_blobs(cfg, k_data, cfg.batch + 1), RESOURCES)
        for _ in range(2):
            p, value = train_step(p, video, cfg)
            print("loss", float(value))
        print("w_h on", tx.resources_of(p["w_h"]), "video on", tx.resources_of(video))
        assert predict(p, video, cfg.pad).named_shape == video.named_shape
