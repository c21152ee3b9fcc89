"""A sequence-parallel transformer block with grouped-query attention (as in Llama 2/3) and a top-1 (Switch)
mixture-of-experts MLP. Between sublayers the activations are split by sequence over ``data`` and by position
over ``model`` (``SEQUENCE``, sequence parallelism); before attention they are RMS-normed and gathered whole
along ``seq`` with ``tx.constrain``. Attention has ``kv_heads`` key/value heads, each shared by ``group`` query
heads, split over ``model`` (each device owns whole groups), with rotary embeddings. In the MLP each sequence is
a routing group whose experts take at most ``CAPACITY`` of its tokens; the dispatched slots put the experts on
``model`` (``EXPERTS``), where each device holds its experts' weights (``WEIGHTS``), and the outputs go back to
the sequence-parallel placement. A monitoring function reports each expert's load."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import math

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

Hidden = NamedArray[f32, "batch@data seq embed"]
SeqParallel = NamedArray[f32, "batch@data seq@model embed"]
Angles = NamedArray[f32, "seq half"]
Table = NamedArray[f32, "batch@data seq@model expert slot"]
Router = NamedArray[f32, "embed expert"]


def norm_and_gather(x: SeqParallel, scale: NamedArray[f32, "embed"]) -> Hidden:
    """RMS norm on the sequence-parallel activations, then the whole sequence on every ``model`` device."""
    normed = x / tnp.sqrt(tnp.mean(x * x, "embed") + 1e-6) * scale
    return tx.constrain(normed, {"batch": "data", "seq": None})


def rotary(
    q: NamedArray[f32, "*heads seq head_dim"], cos: Angles, sin: Angles
) -> NamedArray[f32, "*heads seq head_dim"]:
    """Rotate the two halves of each head's features by the position's angles (queries or keys)."""
    half = cos.named_shape["half"]
    first = q[{"head_dim": slice(0, half)}].rename({"head_dim": "half"})
    second = q[{"head_dim": slice(half, 2 * half)}].rename({"head_dim": "half"})
    rotated = tnp.concatenate([first * cos - second * sin, second * cos + first * sin], axis="half")
    return rotated.rename({"half": "head_dim"})


def attention(
    x: Hidden,
    wq: NamedArray[f32, "embed kv_heads@model group head_dim"],
    wk: NamedArray[f32, "embed kv_heads@model head_dim"],
    wv: NamedArray[f32, "embed kv_heads@model head_dim"],
    wo: NamedArray[f32, "kv_heads@model group head_dim embed"],
    cos: Angles,
    sin: Angles,
) -> Hidden:
    """Causal grouped-query attention; the output projection contracts the split key/value heads."""
    q = rotary(tnp.einsum("{embed},{embed,kv_heads,group,head_dim}->{kv_heads,group,head_dim}", x, wq), cos, sin)
    k = rotary(tnp.einsum("{embed},{embed,kv_heads,head_dim}->{kv_heads,head_dim}", x, wk), cos, sin)
    v = tnp.einsum("{embed},{embed,kv_heads,head_dim}->{kv_heads,head_dim}", x, wv)
    keys, values = k.rename({"seq": "kv"}), v.rename({"seq": "kv"})
    scores = tnp.einsum("{seq,head_dim},{kv,head_dim}->{seq,kv}", q, keys) / math.sqrt(q.named_shape["head_dim"])
    causal = tnp.causal_mask("seq", "kv", x.named_shape["seq"])
    weights = tnp.softmax(tnp.where(causal, scores, -1e9), "kv")
    mixed = tnp.einsum("{seq,kv},{kv,head_dim}->{seq,head_dim}", weights, values)
    return tnp.einsum("{kv_heads,group,head_dim},{kv_heads,group,head_dim,embed}->{embed}", mixed, wo)


def route(x: SeqParallel, router: Router) -> tuple[Table, Table, NamedArray[f32, ""]]:
    """Each token's likeliest expert, the capacity applied per sequence, and the load-balancing loss."""
    logits = tnp.einsum("{embed},{embed,expert}->{expert}", x, router)
    return tx.moe_route(logits, 1, CAPACITY, expert="expert", tokens="seq")


def expert_layer(
    x: SeqParallel,
    router: Router,
    w_in: NamedArray[f32, "expert@model embed mlp"],
    w_out: NamedArray[f32, "expert@model mlp embed"],
) -> SeqParallel:
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
    key = iter(jax.random.split(jax.random.key(3), 16))
    batch, seq, embed, kv_heads, group, head_dim, expert, mlp = 8, 16, 32, 2, 2, 8, 4, 32
    x = tx.shard(tx.random.normal(next(key), {"batch": batch, "seq": seq, "embed": embed}), {"batch": "data"})
    x_sp = tx.shard(tx.random.normal(next(key), {"batch": batch, "seq": seq, "embed": embed}), SEQUENCE)
    scale = tx.random.normal(next(key), {"embed": embed})
    heads = {"kv_heads": "model"}
    wq = tx.shard(
        tx.random.normal(next(key), {"embed": embed, "kv_heads": kv_heads, "group": group, "head_dim": head_dim}), heads
    )
    wk = tx.shard(tx.random.normal(next(key), {"embed": embed, "kv_heads": kv_heads, "head_dim": head_dim}), heads)
    wv = tx.shard(tx.random.normal(next(key), {"embed": embed, "kv_heads": kv_heads, "head_dim": head_dim}), heads)
    wo = tx.shard(
        tx.random.normal(next(key), {"kv_heads": kv_heads, "group": group, "head_dim": head_dim, "embed": embed}), heads
    )
    angles = tx.random.uniform(next(key), {"seq": seq, "half": head_dim // 2})
    cos, sin = tnp.cos(angles), tnp.sin(angles)
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
        "norm_and_gather": (x_sp, scale),
        "attention": (x, wq, wk, wv, wo, cos, sin),
        "route": (x_sp, router),
        "expert_layer": (x_sp, router, w_in, w_out),
        "expert_load": (dispatch,),
    }


if __name__ == "__main__":
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
