"""``typed-xmap demo``: a short tour of what typed_xmap does, on 8 emulated CPU devices."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel


def run_demo() -> int:
    console = Console(highlight=False)
    say = lambda text: console.print(escape(text))  # noqa: E731  (values print with [ ])
    with console.status("importing jax..."):
        import jax
        import jax.numpy as jnp

        import typed_xmap as tx
        from typed_xmap import NamedArray, f32

    console.print(Panel.fit(f"typed_xmap {tx.__version__} on jax {jax.__version__}, "
                            f"{jax.device_count()} {jax.default_backend()} devices"))

    console.rule("1. Values carry named shapes and broadcast by name")
    x = tx.named(jnp.arange(8.0 * 4).reshape(8, 4), ["batch", "in_features"])
    w = tx.named(jnp.ones((4, 3)), ["in_features", "out_features"])
    say(f"x = tx.named(jnp.arange(32.).reshape(8, 4), ['batch', 'in_features'])  ->  {x!r}")
    say(f"w = tx.named(jnp.ones((4, 3)), ['in_features', 'out_features'])        ->  {w!r}")
    say(f"x * w  ->  {x * w!r}   (the union of the named axes; order never matters)")
    bias = tx.named(jnp.ones(3), ["out_features"])
    say(f"(x * w + bias).named_shape  ->  {(x * w + bias).named_shape}")
    wrong = tx.named(jnp.ones(6), ["batch"])
    try:
        x + wrong
    except tx.NamedShapeError as error:
        say(f"x + tx.named(jnp.ones(6), ['batch'])  ->  NamedShapeError: {error}")

    console.rule("2. @tx.typed checks NamedArray annotations on every call, binding sizes")

    @tx.typed
    def affine(
        x: NamedArray[f32, "batch in_features"],
        w: NamedArray[f32, "in_features out_features"],
        b: NamedArray[f32, "out_features"],
    ) -> NamedArray[f32, "batch in_features out_features"]:
        return x * w + b

    say("@tx.typed\ndef affine(x: NamedArray[f32, \"batch in_features\"], "
                  "w: NamedArray[f32, \"in_features out_features\"], b: NamedArray[f32, \"out_features\"])")
    say(f"affine(x, w, bias)  ->  {affine(x, w, bias)!r}")
    short_bias = tx.named(jnp.ones(5), ["out_features"])
    try:
        affine(x, w, short_bias)
    except tx.NamedShapeError as error:
        say(f"affine(x, w, <out_features=5>)  ->  NamedShapeError: {error}")
    say(f"jax.jit(affine)(x, w, bias)  ->  {jax.jit(affine)(x, w, bias)!r}  (checked once, while tracing)")

    console.rule("3. Back to positional arrays, in any layout")
    y = tx.positional(x * w, ["out_features", "batch", "in_features"])
    say(f"tx.positional(x * w, ['out_features', 'batch', 'in_features']).shape  ->  {y.shape}")
    console.print("[green]demo finished[/green]")
    return 0
