"""``typed-xmap demo``: a short tour of typed_xmap on the devices at hand, in under a minute.

The compute sections run on JAX's default backend (an accelerator when there is one); the sharding
section runs on a mesh fitted to the devices (``tx.fitting_mesh``): 4x2 when there are 8, on the emulated
CPU devices when the accelerator has fewer, 1x1 on a one-device machine. It prints what ran where.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from ._timing import interleaved


def run_demo() -> int:
    console = Console(highlight=False)

    def say(text: str) -> None:
        console.print(escape(text))  # values print with [ ], which rich would read as markup

    with console.status("importing jax..."):
        import jax
        import jax.numpy as jnp
        import numpy as np

        import typed_xmap as tx
        import typed_xmap.numpy as tnp
        from typed_xmap._ops._devices import describe_mesh
        from typed_xmap._value._printing import shape_repr

        tour = _example("tour")  # the user code of steps 1 and 2

    console.print(
        Panel.fit(
            f"typed_xmap {tx.__version__} on jax {jax.__version__}, "
            f"{jax.device_count()} {jax.default_backend()} devices"
        )
    )

    console.rule("1. Values carry named shapes and broadcast by name")
    x, w = tour.inputs(), tour.weights()
    say(f"x = tx.named(np.arange(32.0, dtype=np.float32).reshape(8, 4), ['batch', 'in_features'])  ->  {shape_repr(x)}")
    say(f"w = tx.named(np.ones((4, 3), np.float32), ['in_features', 'out_features'])  ->  {shape_repr(w)}")
    say(f"x * w  ->  {shape_repr(tour.broadcast(x, w))}   (the union of the named axes; order never matters)")
    try:
        tour.add_batch_of_six(x)
    except tx.NamedShapeError as error:
        say(f"x + tx.named(np.ones(6, np.float32), ['batch'])  ->  NamedShapeError: {error}")

    console.rule("2. @tx.typed checks NamedArray annotations on every call, binding sizes")

    affine = tour.affine
    bias = tx.named(jnp.ones(3), ["out_features"])
    say(
        '@tx.typed def affine(x: NamedArray[f32, "batch in_features"], w: NamedArray[f32, '
        '"in_features out_features"], b: NamedArray[f32, "out_features"]) -> NamedArray[f32, "batch out_features"]'
    )
    say(f"affine(x, w, bias)  ->  {shape_repr(affine(x, w, bias))}")
    try:
        affine(x, w, tx.named(jnp.ones(5), ["out_features"]))
    except tx.NamedShapeError as error:
        say(f"affine(x, w, <out_features=5>)  ->  NamedShapeError: {error}")

    console.rule("3. xmap: the seed examples")
    left = np.arange(8.0 * 4, dtype=np.float32).reshape(8, 4)
    right = np.arange(4.0 * 6, dtype=np.float32).reshape(4, 6)
    matmul = tx.xmap(jnp.vdot, in_axes=({0: "left"}, {1: "right"}), out_axes=["left", "right", ...])
    with console.status("compiling xmap(jnp.vdot)..."):
        product = matmul(left, right)
    say("tx.xmap(jnp.vdot, in_axes=({0: 'left'}, {1: 'right'}), out_axes=['left', 'right', ...])(a, b)")
    checks = {"xmap(jnp.vdot) equals a @ b": bool(np.allclose(product, left @ right))}
    say(f"  equals a @ b: {checks['xmap(jnp.vdot) equals a @ b']}, shape {product.shape}")

    mesh = tx.fitting_mesh((4, 2), ("x", "y"), emulate=True)
    shape = "x".join(str(size) for size in mesh.shape.values())
    say(f"the sharding below runs on {describe_mesh(mesh)}{_where_note(mesh, jax)}")
    with jax.set_mesh(mesh), jax.default_device(mesh.devices.flat[0]):
        sharded = tx.xmap(
            jnp.vdot,
            in_axes=({0: "left"}, {1: "right"}),
            out_axes=["left", "right", ...],
            axis_resources={"left": "x", "right": "y"},
        )
        with console.status("compiling the sharded xmap..."):
            sharded_product = sharded(left, right)
        checks["the sharded xmap equals a @ b"] = bool(np.allclose(sharded_product, left @ right))
        say(
            f"the same with axis_resources={{'left': 'x', 'right': 'y'}} on a {shape} mesh: "
            f"equal: {checks['the sharded xmap equals a @ b']}; "
            f"result sharding {sharded_product.sharding.spec}"
        )
        tx.visualize(tx.named(sharded_product, ["left", "right"]), console=console)

        regression_loss = _example("regression").regression_loss

        ys = tx.named(jnp.ones((8, 3)), ["batch", "out_features"])
        with console.status("compiling the typed regression loss..."):
            loss = jax.jit(regression_loss)(
                tx.shard(x, {"batch": "x", "in_features": "y"}),
                tx.shard(w, {"in_features": "y"}),
                tx.shard(ys, {"batch": "x"}),
            )
        say(f"typed regression loss on values sharded by name (batch -> x, in_features -> y): {float(loss.data):.1f}")
        try:
            tx.xmap(
                jnp.vdot,
                in_axes=({0: "left"}, {1: "right"}),
                out_axes=["left", "right", ...],
                axis_resources={"left": "x", "right": "x"},
            )(left, np.ones((4, 8), np.float32))
        except tx.AxisResourceConflict as error:
            say(f"left and right both on mesh axis x  ->  AxisResourceConflict: {error}")

        console.rule("4. Against hand-written JAX, measured now (median of interleaved rounds)")
        with console.status("measuring..."):
            table = _ratio_table(jax, jnp, np, tx, tnp, mesh)
        console.print(table)

    console.rule("5. The mypy plugin finds the same kind of bug before anything runs")
    status = _static_check(console, say)
    failed = [name for name, ok in checks.items() if not ok] + (["the static check"] if status else [])
    console.print(f"[red]demo: failed: {', '.join(failed)}[/red]" if failed else "[green]demo finished[/green]")
    return 1 if failed else 0


def _where_note(mesh: Any, jax: Any) -> str:
    """Why the sharding section runs where it does, when that is not simply the default backend's 8 devices."""
    platform = mesh.devices.flat[0].platform
    if platform != jax.default_backend():
        return (
            f" (emulated: the default backend {jax.default_backend()} has {jax.device_count()} device(s), "
            "fewer than the 4x2 mesh this section is written for)"
        )
    if mesh.devices.size < 8:
        return (
            f" (fitted to the {jax.device_count()} device(s) at hand; "
            "XLA_FLAGS=--xla_force_host_platform_device_count=8 emulates a 4x2 mesh of CPU devices)"
        )
    return ""


def _static_check(console: Console, say: Callable[[str], None]) -> int:
    """Type-check the bundled example with a planted bug, then its fixed version, in a folder removed after."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="typed-xmap-demo-") as folder:
        return _check_planted_then_fixed(console, say, Path(folder))


def _check_planted_then_fixed(console: Console, say: Callable[[str], None], folder: Path) -> int:
    import contextlib
    import io
    from importlib.resources import files

    from ._check import config_ini, run_check

    source = files("typed_xmap.examples").joinpath("regression.py").read_text()
    planted = source.replace('tnp.sum(squared, "out_features")', 'tnp.sum(squared, "out_feature")')
    line = next(i for i, text in enumerate(planted.splitlines(), 1) if '"out_feature")' in text)
    (folder / "mypy.ini").write_text(config_ini())
    program = folder / "regression.py"

    def check() -> tuple[int, str]:
        output = io.StringIO()
        with contextlib.redirect_stdout(output), console.status("running mypy with the typed_xmap plugin..."):
            code = run_check(
                [str(program)], ["--config-file", str(folder / "mypy.ini"), "--cache-dir", str(folder / "cache")]
            )
        return code, output.getvalue().replace(str(folder) + "/", "")

    program.write_text(planted)
    say(
        f"a copy of typed_xmap/examples/regression.py with a bug planted on line {line}: "
        f'tnp.sum(squared, "out_feature")\n$ typed-xmap check regression.py'
    )
    code, report = check()
    say(report.strip())
    if code != 1 or "[named-axis-missing]" not in report:
        return 1
    program.write_text(source)
    say('after the fix, tnp.sum(squared, "out_features"):')
    code, report = check()
    say(report.strip())
    return code


def _example(name: str) -> Any:
    """A program of typed_xmap/examples/, run as the user code it is.

    The examples are typed as users see them (the public stubs and the plugin; tests/test_self_checks.py
    checks them so), not as the package sources see ``NamedArray``: here they are opaque modules.
    """
    import importlib

    return importlib.import_module(f"typed_xmap.examples.{name}")


def _blocking(run: Callable[[], Any]) -> Callable[[], Any]:
    """``run`` then wait for its result, so the time measured is the computation's."""
    return lambda: run().block_until_ready()


def _ratio_table(jax: Any, jnp: Any, np: Any, tx: Any, tnp: Any, mesh: Any) -> Table:
    """A few small ratios against the hand-written equivalent, measured in this run."""
    from jax.sharding import NamedSharding, PartitionSpec as P

    rng = np.random.default_rng(0)
    xs = jax.device_put(rng.standard_normal((256, 128), dtype=np.float32), NamedSharding(mesh, P("x")))
    ws = jax.device_put(rng.standard_normal((128, 64), dtype=np.float32), NamedSharding(mesh, P(None, "y")))
    x, w = tx.named(xs, ["batch", "in"]), tx.named(ws, ["in", "out"])
    named_matmul = jax.jit(lambda x, w: tnp.einsum("{in},{in,out}->{out}", x, w))
    reference = jax.jit(lambda x, w: jnp.einsum("bi,io->bo", x, w, out_sharding=P("x", "y")))
    per_element = tx.xmap(
        lambda x, w: tnp.einsum("{in},{in,out}->{out}", x, w),
        in_axes=(["batch", "in", ...], ["in", "out", ...]),
        out_axes=["batch", "out", ...],
        axis_resources={"batch": "x", "out": "y"},
    )
    rows: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("named matmul, tnp.einsum on NamedArrays (jit)", lambda: named_matmul(x, w).data, lambda: reference(xs, ws)),
        ("named matmul, cached tx.xmap call", lambda: per_element(xs, ws), lambda: reference(xs, ws)),
    ]
    table = Table("what", "typed_xmap us", "hand-written us", "ratio")
    for name, ours, theirs in rows:
        times = interleaved(
            {"ours": _blocking(ours), "theirs": _blocking(theirs)},
            rounds=25,
            calls=5,
        )
        ours_us, theirs_us = times["ours"] * 1e6, times["theirs"] * 1e6
        table.add_row(name, f"{ours_us:.0f}", f"{theirs_us:.0f}", f"{ours_us / theirs_us:.2f}x")
    return table
