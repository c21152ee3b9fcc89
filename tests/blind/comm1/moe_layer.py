"""A top-2 mixture-of-experts MLP with expert parallelism: outside the experts the batch is split over every
device (`batch@(data,model)`), inside them `expert` takes `model` and the batch keeps `data`; the experts'
weights live with their experts. Routing, the dispatch and combine moves, and a top-2 gate over router
probabilities whose `expert` axis is split over `model`."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
import jax

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

MESH = {"data": 4, "model": 2}
CAPACITY = 4
TOKENS = {"batch": ("data", "model")}
EXPERTS = {"batch": "data", "expert": "model"}
PARAMS = {"expert": "model"}

Hidden = NamedArray[f32, "batch@(data,model) seq embed"]
Logits = NamedArray[f32, "batch@(data,model) seq expert"]
Table = NamedArray[f32, "batch@(data,model) seq expert slot"]
ExpertIn = NamedArray[f32, "expert@model embed mlp"]
ExpertOut = NamedArray[f32, "expert@model mlp embed"]


def router_logits(x: Hidden, router: NamedArray[f32, "embed expert"]) -> Logits:
    return tnp.einsum("{embed},{embed,expert}->{expert}", x, router)


def route(logits: Logits) -> tuple[Table, Table, NamedArray[f32, ""]]:
    return tx.moe_route(logits, 2, CAPACITY, expert="expert", tokens="seq")


def experts(
    x: Hidden, router: NamedArray[f32, "embed expert"], w_in: ExpertIn, w_out: ExpertOut
) -> tuple[Hidden, NamedArray[f32, ""]]:
    dispatch, combine, balance = tx.moe_route(router_logits(x, router), 2, CAPACITY, expert="expert", tokens="seq")
    inputs = tx.moe_dispatch(x, dispatch, tokens="seq", resources=EXPERTS, from_resources=TOKENS)
    hidden = tnp.gelu(tnp.einsum("{expert,embed},{expert,embed,mlp}->{expert,mlp}", inputs, w_in))
    outputs = tnp.einsum("{expert,mlp},{expert,mlp,embed}->{expert,embed}", hidden, w_out)
    return tx.moe_combine(outputs, combine, resources=TOKENS, from_resources=EXPERTS), balance


def top2_gates(
    probs: NamedArray[f32, "batch@data seq expert@model"],
) -> tuple[NamedArray[f32, "batch@data seq choice"], NamedArray[i32, "batch@data seq choice"]]:
    """The two likeliest experts of each token, from probabilities whose experts are split over `model`."""
    return tnp.top_k(probs, 2, axis="expert", new_axis="choice")


def example_arguments() -> dict[str, tuple[object, ...]]:
    keys = iter(jax.random.split(jax.random.key(5), 8))
    x = tx.shard(tx.random.normal(next(keys), {"batch": 8, "seq": 8, "embed": 16}), TOKENS)
    router = tx.random.normal(next(keys), {"embed": 16, "expert": 4})
    w_in = tx.shard(tx.random.normal(next(keys), {"expert": 4, "embed": 16, "mlp": 32}), PARAMS)
    w_out = tx.shard(tx.random.normal(next(keys), {"expert": 4, "mlp": 32, "embed": 16}), PARAMS)
    logits = tx.shard(tx.random.normal(next(keys), {"batch": 8, "seq": 8, "expert": 4}), TOKENS)
    probs = tx.shard(
        tnp.softmax(tx.random.normal(next(keys), {"batch": 8, "seq": 8, "expert": 8}), "expert"),
        {"batch": "data", "expert": "model"},
    )
    return {
        "router_logits": (x, router),
        "route": (logits,),
        "experts": (x, router, w_in, w_out),
        "top2_gates": (probs,),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
