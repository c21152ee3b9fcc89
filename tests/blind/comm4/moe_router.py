"""A sparse mixture-of-experts feed-forward layer with a hand-written top-2 router and the Switch load-balancing
loss, on tokens split by batch over ``data`` and by sequence over ``model`` (sequence parallel). The expert
layer itself uses ``tx.moe_route``/``moe_dispatch``/``moe_combine``: inside the experts the batch stays on
``data`` and the experts take ``model`` (the sequence gives it up), the expert weights split by expert over
``model``. A diagnostic computes each token's position in its expert's buffer with a cumulative sum along the
split sequence. Trained by SGD on a regression target plus the balance loss."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

from typing import Final, TypedDict

import jax
import jax.numpy as jnp

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}

BATCH: Final = 8
SEQ: Final = 16
EMBED: Final = 16
MLP: Final = 32
EXPERTS: Final = 4
TOP: Final = 2
CAPACITY: Final = 8
BALANCE_WEIGHT: Final = 0.01

TOKENS: Final = {"batch": "data", "seq": "model"}
EXPERT_PLACEMENT: Final = {"batch": "data", "expert": "model"}
PARAMS: Final = {"expert": "model"}

Hidden = NamedArray[f32, "batch@data seq@model embed"]


class Layer(TypedDict):
    router: NamedArray[f32, "embed expert"]
    expert_in: NamedArray[f32, "expert@model embed mlp"]
    expert_out: NamedArray[f32, "expert@model mlp embed"]


def route(
    x: Hidden, router: NamedArray[f32, "embed expert"]
) -> tuple[
    NamedArray[f32, "batch@data seq@model choice"], NamedArray[i32, "batch@data seq@model choice"], NamedArray[f32, ""]
]:
    """Top-2 gates (renormalised), the chosen experts and the Switch balance loss E * sum_e f_e * P_e."""
    probs = tnp.softmax(tnp.einsum("{embed},{embed,expert}->{expert}", x, router), "expert")
    gates, chosen = tnp.top_k(probs, TOP, axis="expert", new_axis="choice")
    gates = gates / tnp.sum(gates, "choice")
    first = tnp.one_hot(chosen[{"choice": 0}], "expert", EXPERTS)
    fraction = tnp.mean(first, ("batch", "seq"))
    mean_prob = tnp.mean(probs, ("batch", "seq"))
    balance = EXPERTS * tnp.sum(fraction * mean_prob, "expert")
    return gates, chosen, balance


def buffer_positions(
    x: Hidden, router: NamedArray[f32, "embed expert"]
) -> tuple[NamedArray[i32, "batch@data seq@model"], NamedArray[f32, "batch@data seq@model"]]:
    """Each token's first choice, and whether it fits its expert's capacity (its rank among the expert's
    tokens of its sequence, a cumulative sum along ``seq``)."""
    logits = tnp.einsum("{embed},{embed,expert}->{expert}", x, router)
    choice = tnp.argmax(logits, "expert")
    mask = tnp.one_hot(choice, "expert", EXPERTS)
    rank = tnp.sum(tnp.cumsum(mask, "seq") * mask, "expert")
    return choice, (rank <= CAPACITY).astype(jnp.float32)


def experts(x: Hidden, p: Layer) -> tuple[Hidden, NamedArray[f32, ""]]:
    logits = tnp.einsum("{embed},{embed,expert}->{expert}", x, p["router"])
    dispatch, combine, balance = tx.moe_route(logits, TOP, CAPACITY, expert="expert", tokens="seq")
    inputs = tx.moe_dispatch(x, dispatch, tokens="seq", resources=EXPERT_PLACEMENT, from_resources=TOKENS)
    hidden = tnp.gelu(tnp.einsum("{expert,embed},{expert,embed,mlp}->{expert,mlp}", inputs, p["expert_in"]))
    outputs = tnp.einsum("{expert,mlp},{expert,mlp,embed}->{expert,embed}", hidden, p["expert_out"])
    return tx.moe_combine(outputs, combine, resources=TOKENS, from_resources=EXPERT_PLACEMENT), balance


def loss(p: Layer, x: Hidden, target: Hidden) -> jax.Array:
    y, balance = experts(x, p)
    _, _, router_balance = route(x, p["router"])
    err = tnp.mean(tnp.square(x + y - target), ("batch", "seq", "embed"))
    return tx.positional(err + BALANCE_WEIGHT * (balance + router_balance), [])


def train_step(p: Layer, x: Hidden, target: Hidden) -> tuple[jax.Array, Layer]:
    value, grads = jax.value_and_grad(loss)(p, x, target)
    return value, jax.tree.map(lambda w, g: w - 0.1 * g, p, grads)


def init(key: jax.Array) -> Layer:
    k = jax.random.split(key, 3)
    return {
        "router": tx.random.normal(k[0], {"embed": EMBED, "expert": EXPERTS}) / 4,
        "expert_in": tx.random.normal(k[1], {"expert": EXPERTS, "embed": EMBED, "mlp": MLP}) / 4,
        "expert_out": tx.random.normal(k[2], {"expert": EXPERTS, "mlp": MLP, "embed": EMBED}) / 6,
    }


def example_arguments() -> dict[str, tuple[object, ...]]:
    p = init(jax.random.key(0))
    p = {
        "router": tx.shard(p["router"], {}),
        "expert_in": tx.shard(p["expert_in"], PARAMS),
        "expert_out": tx.shard(p["expert_out"], PARAMS),
    }
    x = tx.shard(tx.random.normal(jax.random.key(1), {"batch": BATCH, "seq": SEQ, "embed": EMBED}), TOKENS)
    target = tx.shard(tx.random.normal(jax.random.key(2), {"batch": BATCH, "seq": SEQ, "embed": EMBED}), TOKENS)
    return {
        "route": (x, p["router"]),
        "buffer_positions": (x, p["router"]),
        "experts": (x, p),
        "loss": (p, x, target),
        "train_step": (p, x, target),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
