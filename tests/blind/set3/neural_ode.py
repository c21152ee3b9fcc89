"""A neural ODE fitted to spiral trajectories: an augmented latent state (the observed coordinates plus
``cfg.augment`` zeros), a time-dependent MLP vector field, a fixed-step RK4 integrator written as a
``tx.scan`` over the named ``time`` axis, observations gathered from the trajectory at every
``cfg.obs_every``-th step, and a kinetic-energy regulariser collected along the way."""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TypedDict, TypeVar

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

from _sizes import ODE_STATE, TINY_BATCH


@dataclass(frozen=True)
class ODEConfig:
    data_dim: int = ODE_STATE
    augment: int = 2
    hidden: int = 16
    n_steps: int = 12
    obs_every: int = 3
    t_end: float = 1.5
    batch: int = TINY_BATCH
    kinetic_weight: float = 0.01
    lr: float = 0.05

    @property
    def state(self) -> int:
        return self.data_dim + self.augment

    @property
    def n_obs(self) -> int:
        return self.n_steps // self.obs_every

    @property
    def dt(self) -> float:
        return self.t_end / self.n_steps


class Field(TypedDict):
    w_in: NamedArray[f32, "state hidden"]
    w_time: NamedArray[f32, "hidden"]
    b_in: NamedArray[f32, "hidden"]
    w_out: NamedArray[f32, "hidden state"]
    decay: NamedArray[f32, "state"]


State = NamedArray[f32, "batch state"]
VectorField = Callable[[State, NamedArray[f32, ""]], State]

A = TypeVar("A", bound=tx.AnyNamedArray)


def init(cfg: ODEConfig, key: jax.Array) -> Field:
    k_in, k_time, k_out = jax.random.split(key, 3)
    return {
        "w_in": tx.random.normal(k_in, {"state": cfg.state, "hidden": cfg.hidden}) * cfg.state**-0.5,
        "w_time": tx.random.normal(k_time, {"hidden": cfg.hidden}) * 0.1,
        "b_in": tnp.zeros({"hidden": cfg.hidden}, dtype=jnp.float32),
        "w_out": tx.random.normal(k_out, {"hidden": cfg.hidden, "state": cfg.state}) * cfg.hidden**-0.5,  # plant[n1 size static]: "w_out": tx.random.normal(k_out, {"hidden": cfg.hidden, "state": cfg.data_dim}) * cfg.hidden**-0.5,
        "decay": tnp.full({"state": cfg.state}, 0.1, dtype=jnp.float32),
    }


@tx.typed
def field(p: Field, h: NamedArray[f32, "batch state"], t: NamedArray[f32, ""]) -> NamedArray[f32, "batch state"]:
    """dh/dt: an MLP of the state and the time, with a learned linear decay."""
    pre = tnp.einsum("{state},{state,hidden}->{hidden}", h, p["w_in"]) + t * p["w_time"] + p["b_in"]
    return tnp.einsum("{hidden},{hidden,state}->{state}", tnp.tanh(pre), p["w_out"]) - p["decay"] * h  # plant[n2 name static]: return tnp.einsum("{hidden},{hidden,state}->{hidden}", tnp.tanh(pre), p["w_out"]) - p["decay"] * h


@tx.typed
def integrate(
    f: VectorField, h0: NamedArray[f32, "batch state"], times: NamedArray[f32, "time"], dt: float
) -> tuple[NamedArray[f32, "time batch state"], NamedArray[f32, "time batch"]]:
    """Classic RK4 with a fixed step, one scan step per time point; returns the states after each step and
    the kinetic energy |f|^2 at the start of each step."""

    def rk4(h: State, t: NamedArray[f32, ""]) -> tuple[State, tuple[State, NamedArray[f32, "batch"]]]:
        k1 = f(h, t)
        k2 = f(h + (0.5 * dt) * k1, t + 0.5 * dt)
        k3 = f(h + (0.5 * dt) * k2, t + 0.5 * dt)
        k4 = f(h + dt * k3, t + dt)  # plant[n3 other runtime]: k4 = f(h + dt * k3, t)
        h_next = h + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        kinetic = tnp.sum(k1 * k1, "state")  # plant[n4 name static]: kinetic = tnp.sum(k1 * k1, ("batch", "state"))
        return h_next, (h_next, kinetic)  # plant[n5 dtype static]: return h_next, (h_next, kinetic.astype(jnp.bfloat16))

    _, (trajectory, kinetic) = tx.scan(rk4, h0, times, axis="time")
    return trajectory, kinetic


def time_grid(cfg: ODEConfig) -> NamedArray[f32, "time"]:
    """The start time of each step."""
    return tnp.arange("time", cfg.n_steps).astype(jnp.float32) * cfg.dt


@tx.typed
def augment(cfg: ODEConfig, x0: NamedArray[f32, "batch coord"]) -> NamedArray[f32, "batch state"]:
    zeros = tnp.zeros({"batch": x0.named_shape["batch"], "state": cfg.augment}, dtype=jnp.float32)
    return tnp.concatenate([x0.rename({"coord": "state"}), zeros], axis="state")


@tx.typed
def observe(
    cfg: ODEConfig, trajectory: NamedArray[f32, "time batch state"]
) -> NamedArray[f32, "obs batch coord"]:
    obs_index = tnp.arange("obs", cfg.n_obs) * cfg.obs_every + (cfg.obs_every - 1)  # plant[n6 size runtime]: obs_index = tnp.arange("obs", cfg.n_obs + 1) * cfg.obs_every + (cfg.obs_every - 1)
    observed = trajectory[{"time": obs_index}]  # plant[n7 name static]: observed = trajectory[{"step": obs_index}]
    return observed[{"state": slice(0, cfg.data_dim)}].rename({"state": "coord"})


def loss(
    p: Field, x0: NamedArray[f32, "batch coord"], targets: NamedArray[f32, "obs batch coord"], cfg: ODEConfig
) -> jax.Array:
    trajectory, kinetic = integrate(partial(field, p), augment(cfg, x0), time_grid(cfg), cfg.dt)
    error = observe(cfg, trajectory) - targets
    mse = tnp.mean(error * error, ("obs", "batch", "coord"))  # plant[n8 name static]: mse = tnp.mean(error * error, ("obs", "batch"))
    return tx.positional(mse + cfg.kinetic_weight * tnp.mean(kinetic, ("time", "batch")), [])


@tx.typed
def example_error(pred: NamedArray[f32, "obs coord"], target: NamedArray[f32, "obs coord"]) -> jax.Array:
    return tx.positional(tnp.sqrt(tnp.mean((pred - target) ** 2, ("obs", "coord"))), [])


def sgd(p: A, g: A, lr: float) -> A:
    return p - lr * g


@partial(jax.jit, static_argnames=("cfg",))
def train_step(
    p: Field, x0: NamedArray[f32, "batch coord"], targets: NamedArray[f32, "obs batch coord"], cfg: ODEConfig
) -> tuple[Field, jax.Array]:
    value, grads = jax.value_and_grad(loss)(p, x0, targets, cfg)
    return jax.tree.map(lambda w, g: sgd(w, g, cfg.lr), p, grads, is_leaf=lambda v: isinstance(v, tx.AnyNamedArray)), value


def spiral_data(cfg: ODEConfig, key: jax.Array) -> tuple[NamedArray[f32, "batch coord"], NamedArray[f32, "obs batch coord"]]:
    """Trajectories of a damped rotation in the first two coordinates (the others decay), integrated with
    the same RK4 at the same steps."""
    x0 = tx.random.normal(key, {"batch": cfg.batch, "coord": cfg.data_dim})
    rotation = tx.named(
        jnp.array([[-0.1, 1.0, 0.0], [-1.0, -0.1, 0.0], [0.0, 0.0, -0.3]], jnp.float32), ["state", "out"]
    )

    def true_field(h: State, t: NamedArray[f32, ""]) -> State:
        return tnp.einsum("{state},{state,out}->{out}", h, rotation).rename({"out": "state"})

    trajectory, _ = integrate(true_field, x0.rename({"coord": "state"}), time_grid(cfg), cfg.dt)
    obs_index = tnp.arange("obs", cfg.n_obs) * cfg.obs_every + (cfg.obs_every - 1)
    return x0, trajectory[{"time": obs_index}].rename({"state": "coord"})


if __name__ == "__main__":
    cfg = ODEConfig()
    k_init, k_data = jax.random.split(jax.random.key(0))
    p = init(cfg, k_init)
    x0, targets = spiral_data(cfg, k_data)
    for _ in range(3):
        p, value = train_step(p, x0, targets, cfg)
        print("loss", float(value))
    trajectory, _ = integrate(partial(field, p), augment(cfg, x0), time_grid(cfg), cfg.dt)
    predicted = observe(cfg, trajectory)
    per_example = tx.vmap(example_error, axis="batch")(predicted, targets)
    assert per_example.named_shape == {"batch": cfg.batch}
    print("per-trajectory rmse", tx.positional(per_example, ["batch"]))
