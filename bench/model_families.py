"""The ViT and the top-2 MoE layer of examples/ written in Haliax: the same losses, and model code counted.

Each Haliax version below is the same model as the typed_xmap example (same parameters, same data, same
loss to ~1e-5 on one device, checked first). The model code of each is counted as ``transformer_step.py``
counts it (the functions' lines without blank lines, comments or docstrings). The MoE's typed_xmap count
leaves out ``tx.moe_route``/``moe_dispatch``/``moe_combine`` (library functions); Haliax has none, so its
version writes the routing out.

Run: ``PYTHONPATH=. python bench/model_families.py`` (Haliax: ``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).parent))

from transformer_step import model_lines

import typed_xmap as tx

ROOT = Path(__file__).resolve().parents[1]
MODEL_CODE = {
    "vit": (
        ("norm", "patches", "attention", "loss"),
        ("_hax_vit_axes", "_hax_norm", "_hax_patches", "_hax_vit_attention", "haliax_vit_loss"),
    ),
    "moe": (
        ("norm", "attention", "experts", "loss"),
        ("_hax_moe_axes", "_hax_norm", "_hax_moe_attention", "_hax_experts", "haliax_moe_loss"),
    ),
}
"""Each example's model functions: (typed_xmap's in examples/NAME.py, Haliax's in this file)."""


def _example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"{name}_example", ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# ---- Haliax: the ViT ------------------------------------------------------------------------------------------


def _hax_vit_axes(c: Any) -> dict[str, Any]:
    import haliax as hax

    sizes = {"batch": c.batch, "height": c.size, "width": c.size, "channels": c.channels, "embed": c.embed}
    sizes |= {"heads": c.heads, "head_dim": c.head_dim, "mlp": c.mlp, "label": c.labels, "patch": c.patches}
    return {name: hax.Axis(name, size) for name, size in sizes.items()}


def _hax_norm(x: Any) -> Any:
    import haliax as hax

    centred = x - hax.mean(x, "embed")
    return centred / hax.sqrt(hax.mean(centred * centred, "embed") + 1e-5)


def _hax_patches(images: Any, p: dict[str, Any], ax: dict[str, Any], c: Any) -> Any:
    import haliax as hax
    import haliax.nn as hnn

    pad = ((c.window - 2) // 2, (c.window - 1) // 2)  # SAME at stride 2
    spatial, window = (ax["height"], ax["width"]), (c.window, c.window)
    conv = hnn.Conv(spatial, ax["channels"], ax["embed"], p["stem"], None, window, (2, 2), (pad, pad), (1, 1), 1)
    grid = hnn.max_pool((hax.Axis("height", 2), hax.Axis("width", 2)), hnn.gelu(conv(images)), stride=2)
    tokens = hax.flatten_axes(grid, ("height", "width"), "patch")
    cls = hax.broadcast_to(p["cls"], (ax["batch"], hax.Axis("patch", 1), ax["embed"]))
    return hax.concatenate("patch", [cls, tokens]) + p["positions"]


def _hax_vit_attention(x: Any, p: dict[str, Any]) -> Any:
    import haliax as hax

    keys = x.rename({"patch": "kv"})
    q = hax.dot(x, p["query"], axis="embed")
    k = hax.dot(keys, p["key"], axis="embed")
    v = hax.dot(keys, p["value"], axis="embed")
    scores = hax.dot(q, k, axis="head_dim") / math.sqrt(q.resolve_axis("head_dim").size)
    mixed = hax.dot(hax.nn.softmax(scores, axis="kv"), v, axis="kv")
    return hax.dot(mixed, p["out"], axis=("heads", "head_dim"))


def haliax_vit_loss(c: Any) -> Any:
    import haliax as hax

    ax = _hax_vit_axes(c)

    def loss(params: dict[str, Any], images: Any, labels: Any) -> Any:
        x = _hax_patches(images, params, ax, c)
        x = x + _hax_vit_attention(_hax_norm(x), params)
        x = x + hax.dot(
            hax.nn.gelu(hax.dot(_hax_norm(x), params["mlp_in"], axis="embed")), params["mlp_out"], axis="mlp"
        )
        pooled = _hax_norm(x)["patch", 0] + hax.mean(_hax_norm(x), "patch")
        log_probs = hax.nn.log_softmax(hax.dot(pooled, params["head"], axis="embed"), axis="label")
        return -hax.mean(hax.take(log_probs, "label", labels)).scalar()

    return loss


# ---- Haliax: the MoE layer ------------------------------------------------------------------------------------


def _hax_moe_axes(c: Any) -> dict[str, Any]:
    import haliax as hax

    sizes = {"vocab": c.vocab, "batch": c.batch, "seq": c.seq, "kv": c.seq, "embed": c.embed, "heads": c.heads}
    sizes |= {"head_dim": c.head_dim, "expert": c.experts, "mlp": c.mlp, "slot": c.capacity}
    return {name: hax.Axis(name, size) for name, size in sizes.items()}


def _hax_moe_attention(x: Any, p: dict[str, Any], ax: dict[str, Any]) -> Any:
    import haliax as hax

    keys = x.rename({"seq": "kv"})
    q = hax.dot(x, p["query"], axis="embed")
    k = hax.dot(keys, p["key"], axis="embed")
    v = hax.dot(keys, p["value"], axis="embed")
    scores = hax.dot(q, k, axis="head_dim") / math.sqrt(ax["head_dim"].size)
    causal = hax.arange(ax["seq"]).broadcast_axis(ax["kv"]) >= hax.arange(ax["kv"])
    weights = hax.nn.softmax(hax.where(causal, scores, -1e9), axis="kv")
    mixed = hax.dot(weights, v, axis="kv")
    return hax.dot(mixed, p["out"], axis=("heads", "head_dim"))


def _hax_experts(x: Any, p: dict[str, Any], ax: dict[str, Any]) -> tuple[Any, Any]:
    import haliax as hax

    probs = hax.nn.softmax(hax.dot(x, p["router"], axis="embed"), axis="expert")
    gates, chosen = hax.top_k(probs, "expert", 2, new_axis="choice")
    picked = hax.nn.one_hot(chosen, ax["expert"])
    per_choice = hax.sum(picked, "seq")
    position = hax.cumsum(picked, "seq") + hax.cumsum(per_choice, "choice") - per_choice - 1
    slots = hax.nn.one_hot(position.astype(jnp.int32), ax["slot"]) * picked
    dispatch, combine = hax.sum(slots, "choice"), hax.sum(slots * gates, "choice")
    load = hax.mean(hax.sum(picked, "choice"), "seq") / 2
    balance = hax.mean(hax.sum(load * hax.mean(probs, "seq"), "expert")) * ax["expert"].size
    inputs = hax.shard(hax.dot(x, dispatch, axis="seq"), {"batch": "data", "expert": "model"})
    hidden = hax.nn.gelu(hax.dot(inputs, p["expert_in"], axis="embed"))
    outputs = hax.shard(hax.dot(hidden, p["expert_out"], axis="mlp"), {"batch": ("data", "model")})
    return hax.dot(outputs, combine, axis=("expert", "slot")), balance


def haliax_moe_loss(c: Any) -> Any:
    import haliax as hax

    ax = _hax_moe_axes(c)

    def loss(params: dict[str, Any], tokens: Any, targets: Any) -> Any:
        x = params["embed"].take("vocab", tokens) + params["positions"]
        x = x + _hax_moe_attention(_hax_norm(x), params, ax)
        mixed, balance = _hax_experts(_hax_norm(x), params, ax)
        logits = hax.dot(_hax_norm(x + mixed), params["embed"], axis="embed")
        token_losses = -hax.take(hax.nn.log_softmax(logits, axis="vocab"), "vocab", targets)
        return (hax.mean(token_losses) + 0.01 * balance).scalar()

    return loss


# ---- the same values in Haliax, and the figures ---------------------------------------------------------------


def to_haliax(value: Any, sizes: dict[str, Any], renames: dict[str, str] | None = None) -> Any:
    """A typed_xmap NamedArray as a Haliax one (axes renamed by ``renames``; kernel axes keep their sizes)."""
    import haliax as hax

    renames = renames or {}
    axes = tuple(value.axes)
    data = tx.positional(value, list(axes))
    return hax.named(data, tuple(hax.Axis(renames.get(a, a), value.named_shape[a]) for a in axes))


def losses() -> dict[str, tuple[float, float]]:
    """Each example's initial loss in typed_xmap and in Haliax, from the same parameters and batch."""
    out = {}
    for name in ("vit", "moe"):
        module = _example(name)
        c = module.Config()
        params = module.init(c, jax.random.key(0))
        if name == "vit":  # its head starts at zero (every loss ln 4): compare a head that reads the features
            params["head"] = tx.random.normal(jax.random.key(1), params["head"].named_shape)
        x, y = next(module.batches(c))
        ours = float(module.loss(params, x, y, c.capacity) if name == "moe" else module.loss(params, x, y))
        renames = {"kh": "height", "kw": "width"}
        hax_params = {k: to_haliax(v, {}, renames if k == "stem" else None) for k, v in params.items()}
        hax_x, hax_y = to_haliax(x, {}), to_haliax(y, {})
        theirs = (haliax_vit_loss(c) if name == "vit" else haliax_moe_loss(c))(hax_params, hax_x, hax_y)
        out[name] = (ours, float(theirs))
    return out


def main() -> int:
    try:
        import haliax  # noqa: F401
    except ImportError:
        print("haliax not installed: pip install -e '.[bench]'")
        return 0
    for name, (ours, theirs) in losses().items():
        print(f"{name}: initial loss typed_xmap {ours:.6f}, haliax {theirs:.6f}")
        assert math.isclose(ours, theirs, rel_tol=1e-4), (name, ours, theirs)
    for name, (typed, haliax_names) in MODEL_CODE.items():
        ours = model_lines(typed, ROOT / "examples" / f"{name}.py")
        theirs = model_lines(haliax_names, Path(__file__))
        print(f"{name}: model code (lines): typed_xmap {ours}, haliax {theirs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
