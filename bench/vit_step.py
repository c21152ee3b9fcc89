"""A ViT-like classifier's train step (fwd + bwd + AdamW under one ``jax.jit``) in plain ``jnp`` and typed_xmap.

The model is ``bench/_vit_models.py`` (patch embedding, class token, 6 bidirectional layers, pooling of the
class token and the mean of the patches, a linear head; batch 8 of 32x32x3 images, patches of 4x4, embed 128).
The table is ``transformer_step``'s: step time (median of interleaved rounds), trace time, lower + compile
time and the instructions of the compiled HLO, each with its ratio to plain jnp; the two losses from the same
params are checked to agree first. The table is printed for each patch stem (``STEMS``): tiles and an einsum,
and ``tnp.conv`` against ``lax.conv_general_dilated``. Goals (issue 21): step <= 1.02x, compile and trace <= 1.0x
jnp.
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


STEMS = {
    "tiles + einsum": (vit.jnp_loss, vit.named_loss),
    "conv": (vit.jnp_conv_loss, vit.named_conv_loss),
}
"""The patch stem two ways: ``split_axis`` + ``einsum`` (jnp: reshape + einsum), and ``tnp.conv`` (jnp:
``lax.conv_general_dilated``, NHWC)."""


def versions(stem: str = "tiles + einsum"):
    """name -> (loss_fn, params, images, labels)."""
    jnp_loss, named_loss = STEMS[stem]
    raw = vit.init_params(CFG)
    images, labels = vit.batch(CFG)
    return {
        "jnp": (jnp_loss, vit.jnp_params(raw), jnp.asarray(images), jnp.asarray(labels)),
        "typed_xmap": (named_loss, vit.named_params(raw), *vit.named_batch(images, labels)),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    dump = Path(argv[argv.index("--dump") + 1]) if "--dump" in argv else None
    print(f"ViT-like train step (fwd+bwd+adamw, one jit): {CFG}")
    status = 0
    for stem in STEMS:
        print(f" patch stem: {stem}")
        folder = dump / stem.replace(" + ", "_") if dump else None
        status = max(status, compare(versions(stem), folder, family=f"ViT, {stem} stem"))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
