"""The top-2 mixture-of-experts layer of ``examples/moe.py``, on one device: the example's own typed_xmap loss and
the same program in plain ``jnp``.

The typed_xmap version is ``examples/moe.py``'s ``loss`` (loaded from the file, not copied). The ``jnp`` version
writes out what ``tx.moe_route``/``moe_dispatch``/``moe_combine`` do (GShard top-2 routing with a capacity per
sequence and a load-balancing loss), with the positional layout a ``jnp`` user picks: ``[batch, seq, embed]``
activations, ``[batch, seq, expert, slot]`` routing tables. Both read the parameters the example's ``init``
draws (the ``jnp`` ones are their positional data), so they give the same loss.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

import typed_xmap as tx

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "moe.py"
AXES = {
    "embed": ("vocab", "embed"),
    "positions": ("seq", "embed"),
    "query": ("embed", "heads", "head_dim"),
    "key": ("embed", "heads", "head_dim"),
    "value": ("embed", "heads", "head_dim"),
    "out": ("embed", "heads", "head_dim"),
    "router": ("embed", "expert"),
    "expert_in": ("expert", "embed", "mlp"),
    "expert_out": ("expert", "mlp", "embed"),
}
"""Each parameter's positional layout in the ``jnp`` version."""


def example() -> Any:
    """``examples/moe.py`` as a module (its ``Config``, ``init``, ``batches`` and ``loss``)."""
    name = "moe_example"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def versions(name_order: bool = False) -> dict[str, tuple[Any, Any, Any, Any]]:
    """name -> (loss_fn(params, tokens, targets), params, tokens, targets), from the example's init and data.
    ``name_order``: also the ``jnp`` version reading its parameters stored as a NamedArray stores them, in name
    order (``jnp_name_order``), to tell the storage order's share of the compiled program from the rest."""
    moe = example()
    c = moe.Config()
    params = moe.init(c, jax.random.key(0))
    tokens, targets = next(moe.batches(c))
    plain = {k: tx.positional(v, list(AXES[k])) for k, v in params.items()}
    flat = [tx.positional(v, ["batch", "seq"]) for v in (tokens, targets)]
    out = {"jnp": (functools.partial(jnp_loss, capacity=c.capacity), plain, *flat)}
    if name_order:
        stored = {k: tx.positional(v, sorted(AXES[k])) for k, v in params.items()}
        out["jnp, name order"] = (functools.partial(jnp_name_order, capacity=c.capacity), stored, *flat)
    return out | {
        "typed_xmap": (functools.partial(moe.loss, capacity=c.capacity), dict(params), tokens, targets),
    }


def _norm(x: Any) -> Any:
    centred = x - jnp.mean(x, axis=-1, keepdims=True)
    return centred / jnp.sqrt(jnp.mean(centred * centred, axis=-1, keepdims=True) + 1e-5)


def _attention(x: Any, p: dict[str, Any]) -> Any:
    q = jnp.einsum("bse,ehd->bshd", x, p["query"])
    k = jnp.einsum("bse,ehd->bshd", x, p["key"])
    v = jnp.einsum("bse,ehd->bshd", x, p["value"])
    scores = jnp.einsum("bshd,bkhd->bhsk", q, k) / math.sqrt(q.shape[-1])
    index = jnp.arange(x.shape[1])
    weights = jax.nn.softmax(jnp.where(index[None, :] <= index[:, None], scores, -1e9), axis=-1)
    mixed = jnp.einsum("bhsk,bkhd->bshd", weights, v)
    return jnp.einsum("bshd,ehd->bse", mixed, p["out"])


def _experts(x: Any, p: dict[str, Any], capacity: int) -> tuple[Any, Any]:
    probs = jax.nn.softmax(jnp.einsum("bse,ex->bsx", x, p["router"]), axis=-1)
    experts = probs.shape[-1]
    gates, chosen = jax.lax.top_k(probs, 2)  # [batch, seq, choice]
    picked = jax.nn.one_hot(chosen, experts)  # [batch, seq, choice, expert]
    per_choice = jnp.sum(picked, axis=1)
    earlier = jnp.cumsum(per_choice, axis=1) - per_choice  # tokens each expert took at earlier choices
    position = jnp.cumsum(picked, axis=1) + earlier[:, None] - 1
    slots = jax.nn.one_hot(position.astype(jnp.int32), capacity) * picked[..., None]  # zero past the capacity
    dispatch, combine = jnp.sum(slots, axis=2), jnp.sum(slots * gates[..., None, None], axis=2)
    load = jnp.mean(jnp.sum(picked, axis=2), axis=1) / 2
    balance = jnp.mean(jnp.sum(load * jnp.mean(probs, axis=1), axis=-1) * experts)
    inputs = jnp.einsum("bse,bsxc->bxce", x, dispatch)
    hidden = jax.nn.gelu(jnp.einsum("bxce,xem->bxcm", inputs, p["expert_in"]))
    outputs = jnp.einsum("bxcm,xme->bxce", hidden, p["expert_out"])
    return jnp.einsum("bxce,bsxc->bse", outputs, combine), balance


def jnp_loss(params: dict[str, Any], tokens: Any, targets: Any, capacity: int) -> Any:
    x = params["embed"][tokens] + params["positions"]
    x = x + _attention(_norm(x), params)
    mixed, balance = _experts(_norm(x), params, capacity)
    logits = jnp.einsum("bse,ve->bsv", _norm(x + mixed), params["embed"])
    logp = jax.nn.log_softmax(logits, axis=-1)
    token_losses = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
    return jnp.mean(token_losses) + 0.01 * balance


def jnp_name_order(params: dict[str, Any], tokens: Any, targets: Any, capacity: int) -> Any:
    """``jnp_loss`` reading parameters stored in name order (their named dims sorted by name, as a NamedArray
    made outside a trace stores them, ``[embed, expert, mlp]`` for ``[expert, embed, mlp]``): each laid out in
    ``AXES`` order by a transpose, which XLA folds into the uses where it can."""
    moved = {k: jnp.transpose(v, [sorted(AXES[k]).index(a) for a in AXES[k]]) for k, v in params.items()}
    return jnp_loss(moved, tokens, targets, capacity)
