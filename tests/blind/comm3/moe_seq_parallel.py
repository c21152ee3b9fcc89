"""A top-1 (Switch) mixture-of-experts layer inside a sequence-parallel transformer: outside the experts the
activations are split by sequence over ``data`` and by position over ``model`` (``SEQUENCE``); each sequence
is a routing group whose experts take at most ``CAPACITY`` of its tokens. The dispatched slots put the
experts on ``model`` instead (``EXPERTS``), where each device holds its experts' weights (``WEIGHTS``), and
the outputs go back to the sequence-parallel placement. A monitoring function reports each expert's load."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax
from jax.sharding import AxisType

import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32

MESH = {"data": 4, "model": 2}
SEQUENCE = {"batch": "data", "seq": "model"}
EXPERTS = {"batch": "data", "expert": "model"}
WEIGHTS = {"expert": "model"}
CAPACITY = 4

Hidden = NamedArray[f32, "batch@data seq@model embed"]
Table = NamedArray[f32, "batch@data seq@model expert slot"]
Router = NamedArray[f32, "embed expert"]


def route(x: Hidden, router: Router) -> tuple[Table, Table, NamedArray[f32, ""]]:
    """Each token's likeliest expert, the capacity applied per sequence, and the load-balancing loss."""
    logits = tnp.einsum("{embed},{embed,expert}->{expert}", x, router)
    return tx.moe_route(logits, 1, CAPACITY, expert="expert", tokens="seq")


def expert_layer(
    x: Hidden,
    router: Router,
    w_in: NamedArray[f32, "expert@model embed mlp"],
    w_out: NamedArray[f32, "expert@model mlp embed"],
) -> Hidden:
    """Tokens to their expert's devices, each expert's MLP on its own slots, and the weighted outputs back."""
    dispatch, combine, _ = route(x, router)
    slots = tx.moe_dispatch(x, dispatch, tokens="seq", resources=EXPERTS, from_resources=SEQUENCE)
    hidden = tnp.relu(tnp.einsum("{expert,embed},{expert,embed,mlp}->{expert,mlp}", slots, w_in))
    out = tnp.einsum("{expert,mlp},{expert,mlp,embed}->{expert,embed}", hidden, w_out)
    return x + tx.moe_combine(out, combine, resources=SEQUENCE, from_resources=EXPERTS)


def expert_load(dispatch: Table) -> NamedArray[f32, "expert"]:
    """The share of each expert's slots filled, over the whole batch."""
    used = dispatch.sum(("batch", "seq", "slot"))
    return used / (dispatch.named_shape["batch"] * CAPACITY)


def example_arguments() -> dict[str, tuple[object, ...]]:
    key = iter(jax.random.split(jax.random.key(11), 6))
    batch, seq, embed, expert, mlp = 8, 16, 16, 4, 32
    x = tx.shard(tx.random.normal(next(key), {"batch": batch, "seq": seq, "embed": embed}), SEQUENCE)
    router = tx.random.normal(next(key), {"embed": embed, "expert": expert})
    w_in = tx.shard(tx.random.normal(next(key), {"expert": expert, "embed": embed, "mlp": mlp}), WEIGHTS)
    w_out = tx.shard(tx.random.normal(next(key), {"expert": expert, "mlp": mlp, "embed": embed}), WEIGHTS)
    dispatch = tx.shard(
        tx.random.bernoulli(next(key), 0.2, {"batch": batch, "seq": seq, "expert": expert, "slot": CAPACITY}).astype(
            "float32"
        ),
        SEQUENCE,
    )
    return {
        "route": (x, router),
        "expert_layer": (x, router, w_in, w_out),
        "expert_load": (dispatch,),
    }


if __name__ == "__main__":
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
