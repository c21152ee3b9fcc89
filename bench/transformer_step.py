"""A transformer train step (fwd + bwd + AdamW under one ``jax.jit``) in plain ``jnp``, Haliax and typed_xmap.

The model is ``bench/_transformer_models.py`` (the same program three ways; 12 layers, vocab 256, batch 8,
seq 64, embed 128, 4 heads of 32, mlp 512). For each version the table prints: step time (median of
interleaved rounds), trace time (``jit(...).trace``, CPU time of the tracing thread), lower + compile time
(CPU time of the process: XLA compiles on its own threads), and the number of instructions in the compiled HLO
(``compiled.as_text()``), each with its ratio to plain jnp and to Haliax. The three losses from the same
initial params are checked to agree first. Haliax is optional (``pip install -e ".[bench]"``);
without it its rows are skipped with a line saying so. Goals (issues 10, 11): step <= 1.0x Haliax and jnp,
compile <= 1.0x Haliax and jnp (DESIGN.md). ``--dump DIR`` writes each version's optimized HLO and an opcode
histogram; the findings are in ``bench/README.md``.

Run: ``PYTHONPATH=. python bench/transformer_step.py [--dump DIR]`` or ``typed-xmap bench transformer_step``.
"""

import ast
import collections
import gc
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _transformer_models as models
import jax
import numpy as np
import optax

CFG = models.Config()
# `%name = type opcode(` (a tuple type in parentheses); `/*index=5*/` comments are dropped first
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?:\([^=]*?\)|\S+)\s+([a-z][\w\-]*)\(", re.M)
_COMMENT = re.compile(r"/\*.*?\*/")


def make_step(loss_fn):
    opt = optax.adamw(1e-3)

    def step(params, opt_state, tokens, targets):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return opt, step


def versions():
    """name -> (loss_fn, params, tokens, targets)."""
    raw = models.init_params(CFG)
    tokens, targets = models.batch(CFG)
    out = {"jnp": (models.jnp_loss, models.jnp_params(raw), *map(jax.numpy.asarray, (tokens, targets)))}
    if models.haliax_available():
        out["haliax"] = (
            models.haliax_loss_fn(CFG),
            models.haliax_params(raw, CFG),
            *models.haliax_batch(tokens, targets, CFG),
        )
    else:
        print("  haliax not installed: its rows are skipped (pip install -e '.[bench]')")
    out["typed_xmap"] = (models.named_loss, models.named_params(raw), *models.named_batch(tokens, targets))
    return out


def opcodes(hlo: str) -> collections.Counter:
    """Opcode histogram of an HLO module's text (every instruction of every computation)."""
    return collections.Counter(m.group(1) for m in _INSTRUCTION.finditer(_COMMENT.sub("", hlo)))


def build(cases, rounds=3, trace_rounds=9):
    """name -> (trace s, lower+compile s, compiled step, its args): medians over fresh jits, versions interleaved
    (tracing is cheap and noisy, so it gets more rounds than compiling). Tracing is Python on one thread: its
    time is this thread's CPU time, which other processes on a shared machine do not inflate; compiling runs on
    XLA's threads, so its time is this process's CPU time (wall-clock moved 4.1-5.6 s between runs of one
    program on the shared machine, its CPU time within 3%). Each timed trace starts from a fresh
    ``gc.collect()``: a full collection costs ~80 ms here (a third of a ViT step's trace) and otherwise lands
    in whichever version's round the allocation counters happen to trip in (a 1.16x and a 0.70x trace ratio
    from one program)."""
    prepared = {}
    for name, (loss_fn, params, tokens, targets) in cases.items():
        opt, step = make_step(loss_fn)
        prepared[name] = (step, (params, opt.init(params), tokens, targets))
    times = {name: ([], []) for name in cases}
    compiled = {}
    for r in range(trace_rounds - rounds):  # extra trace-only rounds
        for name in list(prepared)[:: 1 if r % 2 else -1]:
            step, args = prepared[name]
            gc.collect()
            start = time.thread_time()
            jax.jit(lambda *a, step=step: step(*a)).trace(*args)
            times[name][0].append(time.thread_time() - start)
    for r in range(rounds):
        for name in list(prepared)[:: 1 if r % 2 else -1]:
            step, args = prepared[name]
            jitted = jax.jit(lambda *a, step=step: step(*a))  # a fresh function: no cache answers
            gc.collect()
            cpu = time.thread_time()
            traced = jitted.trace(*args)
            cpu, busy = time.thread_time() - cpu, time.process_time()
            compiled[name] = traced.lower().compile()
            times[name][0].append(cpu)
            times[name][1].append(time.process_time() - busy)
    return {
        name: (statistics.median(t), statistics.median(c), compiled[name], prepared[name][1])
        for name, (t, c) in times.items()
    }


MODEL_CODE = {
    "jnp": ("_jnp_norm", "_jnp_layer", "jnp_loss"),
    "haliax": ("_hax_axes", "_hax_norm", "_hax_layer", "haliax_loss_fn"),
    "typed_xmap": ("_named_norm", "_named_layer", "named_loss"),
}
"""The functions that are each version's model (the loss from tokens, its layers and helpers)."""


def model_lines(names: tuple[str, ...], path: Path | None = None) -> int:
    """Lines of code of these functions in ``path`` (_transformer_models.py): no blank lines, comments or
    docstrings."""
    source = (path or Path(models.__file__)).read_text()
    rows = source.splitlines()
    total = 0
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            first = node.body[0]
            docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            skip = range(first.lineno, first.end_lineno + 1) if docstring and first.end_lineno else range(0)
            for number in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                text = rows[number - 1].strip()
                total += bool(text) and not text.startswith("#") and number not in skip
    return total


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    dump = Path(argv[argv.index("--dump") + 1]) if "--dump" in argv else None
    print(f"transformer train step (fwd+bwd+adamw, one jit): {CFG}")
    cases = versions()
    print("  model code (lines): " + ", ".join(f"{k} {model_lines(MODEL_CODE[k])}" for k in MODEL_CODE))
    return compare(cases, dump, family="transformer")


GOALS = {"step": 1.02, "compile": 1.0, "trace": 1.0, "HLO instr": 1.0, "flatten+unflatten": 1.5}
"""Issue 21's goals for typed_xmap against plain jnp (flatten+unflatten: against plain arrays, per leaf)."""


def compare(cases, dump: Path | None = None, family: str | None = None) -> int:
    """Check the versions give one loss, then print step, trace, compile and HLO instructions against jnp
    (and Haliax when it is among ``cases``); ``dump``: write each version's HLO and an opcode histogram.
    ``family``: record typed_xmap's ratios to jnp (and the flatten + unflatten of its params and optimizer
    state against jnp's arrays) for ``typed-xmap bench``'s closing table."""
    losses = {name: float(fn(p, t, y)) for name, (fn, p, t, y) in cases.items()}
    print("  initial loss: " + ", ".join(f"{k} {v:.6f}" for k, v in losses.items()))
    if not np.allclose(list(losses.values()), losses["jnp"], rtol=1e-5, atol=1e-5):
        print("  the versions disagree on the loss: not the same program")
        return 1
    built = build(cases)
    counts = {}
    for name, (_, _, compiled, _) in built.items():
        text = compiled.as_text()
        counts[name] = opcodes(text)
        if dump is not None:
            dump.mkdir(parents=True, exist_ok=True)
            (dump / f"{name}.hlo.txt").write_text(text)
    if dump is not None:
        table = sorted(set().union(*counts.values()), key=lambda op: -counts["jnp"][op])
        lines = ["opcode " + " ".join(f"{n:>10}" for n in counts)]
        lines += [f"{op:<22}" + " ".join(f"{c[op]:>10}" for c in counts.values()) for op in table]
        (dump / "opcodes.txt").write_text("\n".join(lines) + "\n")
        print(f"  HLO and opcode histogram written to {dump}/")

    def run(compiled, args):
        return lambda: jax.block_until_ready(compiled(*args))

    from _timing import flatten_unflatten, interleaved, record

    once = time.perf_counter()
    run(*built["jnp"][2:])()
    calls = max(2, round(0.02 / (time.perf_counter() - once)))  # >= ~20 ms a sample: a small step is noisy
    steps = interleaved({n: run(b[2], b[3]) for n, b in built.items()}, rounds=15, calls=calls)
    bases = [b for b in ("jnp", "haliax") if b in built]
    width = max(11, *(len(n) + 1 for n in built))
    header = f"  {'':<{width}}{'step ms':>9}{'trace ms':>10}{'compile ms':>12}{'HLO instr':>11}"
    print(header + "".join(f"   vs {b}: step trace compile instr" for b in bases))
    for name, (trace, compile_, _, _) in built.items():
        row = (steps[name], trace, compile_, sum(counts[name].values()))
        line = f"  {name:<{width}}{row[0] * 1e3:9.2f}{row[1] * 1e3:10.1f}{row[2] * 1e3:12.1f}{row[3]:11d}"
        for b in bases:
            base = (steps[b], built[b][0], built[b][1], sum(counts[b].values()))
            line += "   " + " ".join(f"{r / s:5.2f}x" for r, s in zip(row, base, strict=True))
        print(line)
    print(f"  goals: typed_xmap step and compile <= 1.0x {' and '.join(bases[::-1])}")
    if family is not None:
        per_leaf = flatten_unflatten({n: built[n][3][:2] for n in ("jnp", "typed_xmap")}, rounds=11)
        both = {n: sum(per_leaf[n]) for n in per_leaf}
        print(f"  params + optimizer state flatten + unflatten: {both['typed_xmap'] / both['jnp']:.2f}x plain arrays")
        typed, base = built["typed_xmap"], built["jnp"]
        ratios = {
            "step": steps["typed_xmap"] / steps["jnp"],
            "compile": typed[1] / base[1],
            "trace": typed[0] / base[0],
            "HLO instr": sum(counts["typed_xmap"].values()) / sum(counts["jnp"].values()),
            "flatten+unflatten": both["typed_xmap"] / both["jnp"],
        }
        record(family, {c: (r, GOALS[c]) for c, r in ratios.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
