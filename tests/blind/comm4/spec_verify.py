"""The verifier of speculative decoding: a target model scores a block of drafted tokens in one pass, with the
batch split over ``data`` and the vocabulary split over ``model`` (its embedding and output tables split by
``vocab``). Each drafted token is accepted with probability min(1, p/q) (p the target's, q the draft's
probability of that token), the accepted prefix is a cumulative product along ``draft``, and the first rejected
position is replaced by the target's greedy token. Also: nucleus (top-p) filtering by sorting the split
vocabulary, splicing the accepted tokens onto the context, and the draft's per-position entropy computed in an
``xmap`` whose ``batch`` runs on ``data``."""

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
CONTEXT: Final = 8
DRAFT: Final = 8
VOCAB: Final = 32
EMBED: Final = 16
TOP_P: Final = 0.9

RESOURCES: Final = {"batch": "data", "vocab": "model"}

Logits = NamedArray[f32, "batch@data draft vocab@model"]
Drafted = NamedArray[i32, "batch@data draft"]


class Target(TypedDict):
    embed: NamedArray[f32, "vocab@model embed"]
    mix: NamedArray[f32, "embed hidden"]
    unembed: NamedArray[f32, "hidden vocab@model"]


def target_logits(p: Target, tokens: Drafted) -> Logits:
    """A tiny target model: embed each drafted token (lookup along the split vocab), mix, unembed."""
    h = tnp.tanh(tnp.einsum("{embed},{embed,hidden}->{hidden}", p["embed"][{"vocab": tokens}], p["mix"]))
    return tnp.einsum("{batch,draft,hidden},{hidden,vocab}->{batch,draft,vocab}", h, p["unembed"])


def verify(
    logits: Logits, draft_logits: Logits, drafted: Drafted, uniform: NamedArray[f32, "batch@data draft"]
) -> tuple[NamedArray[i32, "batch@data"], NamedArray[i32, "batch@data"]]:
    """How many drafted tokens each sequence accepts, and the target's token at the first rejection."""
    p = tnp.softmax(logits, "vocab")
    q = tnp.softmax(draft_logits, "vocab")
    ratio = tnp.minimum(1.0, p[{"vocab": drafted}] / q[{"vocab": drafted}])
    accepted = tnp.cumprod((uniform < ratio).astype(jnp.int32), "draft")
    count = tnp.sum(accepted, "draft")
    greedy = tnp.argmax(logits, "vocab")
    position = tnp.minimum(count, DRAFT - 1)
    return count, greedy[{"draft": position}]


def nucleus(logits: Logits) -> NamedArray[f32, "batch@data draft vocab@model"]:
    """Top-p filtering: keep the most likely tokens whose probabilities sum to TOP_P; the rest get -inf."""
    probs = tnp.softmax(logits, "vocab")
    descending = -tnp.sort(-probs, "vocab")
    kept = tnp.sum((tnp.cumsum(descending, "vocab") < TOP_P).astype(jnp.int32), "vocab")
    threshold = descending[{"vocab": tnp.minimum(kept, VOCAB - 1)}]
    return tnp.where(probs >= threshold, logits, -jnp.inf)


def splice(
    context: NamedArray[i32, "batch@data seq"], drafted: Drafted
) -> tuple[NamedArray[i32, "batch@data seq"], NamedArray[i32, "batch@data"]]:
    """The context followed by the drafted block (its two halves, as a drafter that proposes half a block at a
    time hands them over), and the context's last token."""
    first, second = tnp.split(drafted, "draft", 2)
    block = tnp.concatenate([tx.rename(first, {"draft": "seq"}), tx.rename(second, {"draft": "seq"})], "seq")
    joined = tnp.concatenate([context[{"seq": slice(0, CONTEXT)}], block], "seq")
    return joined, context[{"seq": -1}]


def verify_loss(p: Target, tokens: Drafted, targets: Drafted) -> jax.Array:
    """Distillation-style training signal for the target on the drafted block: next-token cross-entropy."""
    log_probs = tnp.log_softmax(target_logits(p, tokens), "vocab")
    picked = tnp.sum(log_probs * tnp.one_hot(targets, "vocab", VOCAB), "vocab")
    return tx.positional(-tnp.mean(picked, ("batch", "draft")), [])


def train_step(p: Target, tokens: Drafted, targets: Drafted) -> tuple[jax.Array, Target]:
    value, grads = jax.value_and_grad(verify_loss)(p, tokens, targets)
    return value, jax.tree.map(lambda w, g: w - 0.1 * g, p, grads)


@tx.typed
def _entropy_body(logits: NamedArray[f32, "batch draft vocab"]) -> NamedArray[f32, "batch draft"]:
    log_probs = tnp.log_softmax(logits, "vocab")
    return -tnp.sum(tnp.exp(log_probs) * log_probs, "vocab")


draft_entropy_xmapped = tx.xmap(
    _entropy_body,
    in_axes=(["batch", "draft", "vocab", ...],),
    out_axes=["batch", "draft", ...],
    axis_resources={"batch": "data"},
)


def draft_entropy(logits: jax.Array) -> jax.Array:
    """Each drafted position's entropy, computed per batch element on its ``data`` devices."""
    entropy: jax.Array = draft_entropy_xmapped(logits)
    return entropy


def init(key: jax.Array) -> Target:
    k = jax.random.split(key, 3)
    return {
        "embed": tx.random.normal(k[0], {"vocab": VOCAB, "embed": EMBED}),
        "mix": tx.random.normal(k[1], {"embed": EMBED, "hidden": EMBED}) / 4,
        "unembed": tx.random.normal(k[2], {"hidden": EMBED, "vocab": VOCAB}) / 4,
    }


def example_arguments() -> dict[str, tuple[object, ...]]:
    p = tx.shard(init(jax.random.key(0)), RESOURCES)
    shape = {"batch": BATCH, "draft": DRAFT, "vocab": VOCAB}
    logits = tx.shard(tx.random.normal(jax.random.key(1), shape), RESOURCES)
    draft_logits = tx.shard(tx.random.normal(jax.random.key(2), shape), RESOURCES)
    drafted = tx.shard(tx.random.randint(jax.random.key(3), {"batch": BATCH, "draft": DRAFT}, 0, VOCAB), RESOURCES)
    uniform = tx.shard(tx.random.uniform(jax.random.key(4), {"batch": BATCH, "draft": DRAFT}), RESOURCES)
    context = tx.shard(tx.random.randint(jax.random.key(5), {"batch": BATCH, "seq": CONTEXT}, 0, VOCAB), RESOURCES)
    positional = tx.shard(
        jax.random.normal(jax.random.key(6), (BATCH, DRAFT, VOCAB)), {"batch": "data"}, axes=["batch", ...]
    )
    return {
        "target_logits": (p, drafted),
        "verify": (logits, draft_logits, drafted, uniform),
        "nucleus": (logits,),
        "splice": (context, drafted),
        "train_step": (p, drafted, drafted),
        "draft_entropy": (positional,),
    }


if __name__ == "__main__":
    from jax.sharding import AxisType

    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
    with jax.set_mesh(mesh):
        for name, args in example_arguments().items():
            jax.jit(globals()[name])(*args)
