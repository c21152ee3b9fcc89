"""Trace time of a transformer layer stack written with NamedArrays and ``tnp`` against the same in ``jnp``.

Each layer: layer norm (mean, var, scale and shift broadcast by name), single-head attention (projections
by einsum, scores, softmax over the key axis, mixing, output projection, residual), and an MLP (einsum,
gelu, einsum, residual). Time is ``jax.make_jaxpr`` of a fresh function object over the whole stack at 6,
24 and 96 layers (tracing only: no lowering or compile), the two alternating round by round; the table prints
ms per layer and the median of the per-round ratios (goal <= 1.0x), after each layer's jaxpr equation count.

Run: ``PYTHONPATH=. python bench/trace_time.py``.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import jax
import jax.numpy as jnp
import numpy as np

import typed_xmap as tx
import typed_xmap.numpy as tnp

B, S, E, H = 4, 16, 32, 64


def named_layer(x, p):
    """x: {batch, seq, embed}; keys run over ``kv`` (the same tokens under another name)."""
    mu = tnp.mean(x, "embed")
    xc = x - mu
    h = xc / tnp.sqrt(tnp.mean(xc * xc, "embed") + 1e-5) * p["g"] + p["b"]
    hk = tx.named(tx.positional(h, ["batch", "seq", "embed"]), ["batch", "kv", "embed"])
    q = tnp.einsum("{embed},{embed,head}->{head}", h, p["wq"])
    k = tnp.einsum("{embed},{embed,head}->{head}", hk, p["wk"])
    v = tnp.einsum("{embed},{embed,head}->{head}", hk, p["wv"])
    scores = tnp.einsum("{seq,head},{kv,head}->{seq,kv}", q, k) * 0.125
    w = tnp.softmax(scores, "kv")
    mixed = tnp.einsum("{seq,kv},{kv,head}->{seq,head}", w, v)
    x = x + tnp.einsum("{head},{head,embed}->{embed}", mixed, p["wo"])
    m = tnp.gelu(tnp.einsum("{embed},{embed,hidden}->{hidden}", x, p["w1"]) + p["b1"])
    return x + tnp.einsum("{hidden},{hidden,embed}->{embed}", m, p["w2"])


def jnp_layer(x, p):
    """The same layer on positional arrays x[batch, seq, embed]."""
    mu = jnp.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    h = xc / jnp.sqrt(jnp.mean(xc * xc, axis=-1, keepdims=True) + 1e-5) * p["g"] + p["b"]
    q = jnp.einsum("bse,eh->bsh", h, p["wq"])
    k = jnp.einsum("bse,eh->bsh", h, p["wk"])
    v = jnp.einsum("bse,eh->bsh", h, p["wv"])
    scores = jnp.einsum("bsh,bkh->bsk", q, k) * 0.125
    w = jax.nn.softmax(scores, axis=-1)
    mixed = jnp.einsum("bsk,bkh->bsh", w, v)
    x = x + jnp.einsum("bsh,he->bse", mixed, p["wo"])
    m = jax.nn.gelu(jnp.einsum("bse,ef->bsf", x, p["w1"]) + p["b1"])
    return x + jnp.einsum("bsf,fe->bse", m, p["w2"])


def params():
    rng = np.random.default_rng(0)
    shapes = {"g": (E,), "b": (E,), "wq": (E, H), "wk": (E, H), "wv": (E, H), "wo": (H, E), "w1": (E, 2 * H)}
    shapes |= {"b1": (2 * H,), "w2": (2 * H, E)}
    plain = {k: jnp.asarray(rng.normal(size=s), jnp.float32) for k, s in shapes.items()}
    names = {"g": ["embed"], "b": ["embed"], "wq": ["embed", "head"], "wk": ["embed", "head"]}
    names |= {"wv": ["embed", "head"], "wo": ["head", "embed"], "w1": ["embed", "hidden"]}
    names |= {"b1": ["hidden"], "w2": ["hidden", "embed"]}
    return plain, {k: tx.named(v, names[k]) for k, v in plain.items()}


def stack(layer, depth):
    def run(x, p):
        for _ in range(depth):
            x = layer(x, p)
        return x

    return run


def fresh(f):
    """A new function object each time, so JAX's trace caches never answer for it."""

    def traced(x, p):
        return f(x, p)

    return traced


def paired(cases, rounds):
    """Median seconds of each case and the median of the per-round ratios named/jnp (the order alternates)."""
    samples = {name: [] for name in cases}
    for fn in cases.values():
        fn()
    for r in range(rounds):
        for name in list(cases)[:: 1 if r % 2 else -1]:
            start = time.perf_counter()
            cases[name]()
            samples[name].append(time.perf_counter() - start)
    ratios = [n / j for n, j in zip(samples["named"], samples["jnp"], strict=True)]
    return {k: statistics.median(v) for k, v in samples.items()}, statistics.median(ratios)


def main() -> int:
    plain_p, named_p = params()
    x = jnp.ones((B, S, E), jnp.float32)
    nx = tx.named(x, ["batch", "seq", "embed"])
    one_plain = jax.make_jaxpr(jnp_layer)(x, plain_p).jaxpr
    one_named = jax.make_jaxpr(named_layer)(nx, named_p).jaxpr
    print("trace time (jax.make_jaxpr) per transformer layer, NamedArray+tnp vs jnp  (goal: <= 1.0x)")
    print(f"  equations per layer: jnp {len(one_plain.eqns)}, named {len(one_named.eqns)}")
    for depth in (6, 24, 96):
        plain_f, named_f = stack(jnp_layer, depth), stack(named_layer, depth)
        times, ratio = paired(
            {
                "jnp": lambda plain_f=plain_f: jax.make_jaxpr(fresh(plain_f))(x, plain_p),
                "named": lambda named_f=named_f: jax.make_jaxpr(fresh(named_f))(nx, named_p),
            },
            rounds=max(5, 240 // depth),
        )
        base, own = times["jnp"] / depth, times["named"] / depth
        print(f"  {depth:3d} layers   jnp {base * 1e3:7.3f} ms/layer   named {own * 1e3:7.3f} ms/layer", end="")
        print(f"   {ratio:5.2f}x (median of per-round ratios)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
