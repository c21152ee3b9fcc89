"""A ViT-like classifier's train step (fwd + bwd + AdamW under one ``jax.jit``) in plain ``jnp`` and typed_xmap.

The model is ``bench/_vit_models.py`` (patch embedding, class token, 6 bidirectional layers, pooling of the
class token and the mean of the patches, a linear head; batch 8 of 32x32x3 images, patches of 4x4, embed 128).
The table is ``transformer_step``'s: step time (median of interleaved rounds), trace time, lower + compile
time and the instructions of the compiled HLO, each with its ratio to plain jnp; the two losses from the same
params are checked to agree first. Goals (issue 21): step <= 1.02x, compile and trace <= 1.0x jnp.
``--dump DIR`` writes each version's optimized HLO and an opcode histogram.

Run: ``PYTHONPATH=. python bench/vit_step.py [--dump DIR]`` or ``typed-xmap bench vit_step``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _vit_models as vit
import jax.numpy as jnp
from transformer_step import compare

CFG = vit.Config()


def versions():
    """name -> (loss_fn, params, images, labels)."""
    raw = vit.init_params(CFG)
    images, labels = vit.batch(CFG)
    return {
        "jnp": (vit.jnp_loss, vit.jnp_params(raw), jnp.asarray(images), jnp.asarray(labels)),
        "typed_xmap": (vit.named_loss, vit.named_params(raw), *vit.named_batch(images, labels)),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    dump = Path(argv[argv.index("--dump") + 1]) if "--dump" in argv else None
    print(f"ViT-like train step (fwd+bwd+adamw, one jit): {CFG}")
    return compare(versions(), dump)


if __name__ == "__main__":
    raise SystemExit(main())
