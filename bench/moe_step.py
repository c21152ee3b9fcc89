"""The top-2 mixture-of-experts layer's train step (fwd + bwd + AdamW under one ``jax.jit``), on one device.

The model is ``examples/moe.py``'s (token embedding, causal attention, top-2 routing with a capacity, a
load-balancing loss; ``bench/_moe_models.py`` runs the example's own loss and writes the same program in plain
``jnp``). The table is ``transformer_step``'s: step, trace, lower + compile and HLO instructions, each with its
ratio to plain jnp; the two losses from the same params are checked to agree first. Goals (issue 21): step <=
1.02x, compile and trace <= 1.0x jnp. ``--dump DIR`` writes each version's optimized HLO and an opcode histogram.
``--name-order`` adds a third row: the ``jnp`` program reading its parameters stored in name order, as a
NamedArray made outside a trace stores them (the storage order's share of the compiled program, issue 27).

Run: ``PYTHONPATH=. python bench/moe_step.py [--dump DIR] [--name-order]`` or ``typed-xmap bench moe_step``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _moe_models as moe
from transformer_step import compare


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    dump = Path(argv[argv.index("--dump") + 1]) if "--dump" in argv else None
    print(f"top-2 MoE layer train step (fwd+bwd+adamw, one jit): {moe.example().Config()}")
    return compare(moe.versions(name_order="--name-order" in argv), dump, family="MoE layer")


if __name__ == "__main__":
    raise SystemExit(main())
