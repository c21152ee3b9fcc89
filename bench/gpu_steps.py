"""The transformer, ViT and MoE train steps against plain ``jnp`` on an accelerator, at tiny and real sizes.

Issue 27 item 6: the same three programs as ``transformer_step.py``, ``vit_step.py`` and ``moe_step.py`` (fwd +
bwd + AdamW under one ``jax.jit``), each at the benches' tiny configuration and at a real one (GPT-2-small-like
transformer, ViT-B/16-like, an 8-expert MoE layer at 512 tokens), on JAX's default backend. For each: the losses
from the same initial parameters are checked to agree, then lower + compile wall time and the step's median
wall time over interleaved rounds (each round runs ``STEPS`` steps of one version, then of the other, the order
alternating), with typed_xmap's ratio to jnp. A physical reference: the step's model FLOPs (XLA's cost
analysis of the jnp step) over the step time, in TFLOP/s.

Run: ``PYTHONPATH=. python bench/gpu_steps.py [--tiny-only] [--only TITLE_PREFIX...]`` (a CPU runs it too, slowly
at real sizes).
"""

import dataclasses
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _moe_models as moe_models
import _transformer_models as transformer_models
import _vit_models as vit_models
import jax
import numpy as np
import transformer_step
import vit_step

ROUNDS = 7
STEPS = 10

TRANSFORMER_REAL = transformer_models.Config(
    vocab=32768, batch=16, seq=512, embed=768, heads=12, head_dim=64, mlp=3072, layers=12
)
VIT_REAL = vit_models.Config(
    batch=64, height=224, width=224, patch=16, embed=768, heads=12, head_dim=64, mlp=3072, layers=12, classes=1000
)
MOE_REAL = {"vocab": 8192, "batch": 16, "seq": 512, "embed": 512, "heads": 8, "head_dim": 64, "experts": 8,
            "mlp": 2048, "capacity": 160}  # fmt: skip


def transformer_versions(cfg):
    transformer_step.CFG = cfg
    cases = transformer_step.versions()
    cases.pop("haliax", None)
    return cases


def vit_versions(cfg):
    vit_step.CFG = cfg
    return vit_step.versions()


def moe_versions(overrides):
    example = moe_models.example()
    original = example.Config
    example.Config = dataclasses.make_dataclass(
        "Config", [(k, type(v), v) for k, v in overrides.items()], bases=(original,), frozen=True
    ) if overrides else original  # fmt: skip
    try:
        return moe_models.versions()
    finally:
        example.Config = original


def measure(title, cases):
    losses = {name: float(fn(p, t, y)) for name, (fn, p, t, y) in cases.items()}
    agree = np.allclose(losses["typed_xmap"], losses["jnp"], rtol=2e-3, atol=2e-3)
    built = {}
    compile_s = {}
    for name, (loss_fn, params, tokens, targets) in cases.items():
        opt, step = transformer_step.make_step(loss_fn)
        args = (params, opt.init(params), tokens, targets)
        start = time.perf_counter()
        compiled = jax.jit(step).lower(*args).compile()
        compile_s[name] = time.perf_counter() - start
        built[name] = (compiled, args)
    cost = built["jnp"][0].cost_analysis() or {}
    flops = (cost[0] if isinstance(cost, list) else cost).get("flops", 0.0)  # a list of one dict on older JAX
    for compiled, args in built.values():
        jax.block_until_ready(compiled(*args))
    times = {name: [] for name in built}
    for r in range(ROUNDS):
        for name in list(built)[:: 1 if r % 2 else -1]:
            compiled, args = built[name]
            start = time.perf_counter()
            for _ in range(STEPS):
                out = compiled(*args)
            jax.block_until_ready(out)
            times[name].append((time.perf_counter() - start) / STEPS)
    step = {name: statistics.median(t) for name, t in times.items()}
    spread = {name: (min(t), max(t)) for name, t in times.items()}
    verdict = "agree" if agree else "DISAGREE"
    print(f"{title}: losses jnp {losses['jnp']:.5f} typed_xmap {losses['typed_xmap']:.5f} ({verdict})")
    for name in built:
        tflops = flops / step[name] / 1e12 if flops else float("nan")
        print(
            f"  {name:<11} step {step[name] * 1e3:9.3f} ms"
            f" (range {spread[name][0] * 1e3:.3f}-{spread[name][1] * 1e3:.3f})"
            f"  {tflops:8.3f} TFLOP/s   compile {compile_s[name]:6.2f} s"
        )
    print(
        f"  typed_xmap / jnp: step {step['typed_xmap'] / step['jnp']:.3f}x, "
        f"compile {compile_s['typed_xmap'] / compile_s['jnp']:.3f}x"
    )
    sys.stdout.flush()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    print(f"devices: {jax.devices()}  jax {jax.__version__}  python {sys.version.split()[0]}")
    plans = [
        ("transformer tiny", lambda: transformer_versions(transformer_models.Config())),
        ("ViT tiny", lambda: vit_versions(vit_models.Config())),
        ("MoE tiny", lambda: moe_versions({})),
    ]
    if "--tiny-only" not in argv:
        plans += [
            (f"transformer real {TRANSFORMER_REAL}", lambda: transformer_versions(TRANSFORMER_REAL)),
            (f"ViT real {VIT_REAL}", lambda: vit_versions(VIT_REAL)),
            (f"MoE real {MOE_REAL}", lambda: moe_versions(MOE_REAL)),
        ]
    only = argv[argv.index("--only") + 1 :] if "--only" in argv else None  # e.g. --only "ViT real" "MoE real"
    for title, make in plans:
        if only and not any(title.startswith(prefix) for prefix in only):
            continue
        measure(title, make())
        jax.clear_caches()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
