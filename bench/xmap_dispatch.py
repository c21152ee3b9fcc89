"""xmap dispatch and compile overhead against hand-written JAX on an 8-device mesh
(fitted to fewer devices where there are fewer: ``_timing.bench_mesh``).

1. A cached ``tx.xmap`` call vs the equivalent hand-written ``jax.jit`` call (3 small inputs,
   named axes on mesh axes; goal <= 1.05x in median call + block time, as DESIGN.md sets), beside the
   same hand-written program jitted twice (how far two identical programs measure apart here); then the
   same without a mesh, where a dispatch is ~30x cheaper and xmap's own Python per call shows.
2. Trace + compile time of a fresh ``tx.xmap`` vs a fresh hand-written ``jit(vmap(vmap(...)))``.

Rounds are interleaved; prints ratios. Run: ``PYTHONPATH=. python bench/xmap_dispatch.py``.
"""

import os
import sys
import time
import types
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
sys.path.insert(0, str(Path(__file__).parent))

import statistics

import jax
import numpy as np
from _timing import bench_mesh, interleaved, print_table
from jax import lax
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

import typed_xmap as tx


def body(x, w, b):
    return lax.psum(x * w, "feat") + b


IN_AXES = (["batch", "feat", ...], ["feat", "out", ...], ["out", ...])
RESOURCES = {"batch": "x", "out": "y"}


def fresh_body():
    """A new function object with ``body``'s code: what a fresh trace means for both sides (xmap and jit
    share compiled programs between wrappers of one function, so reusing ``body`` would time a cache hit)."""
    return types.FunctionType(body.__code__, body.__globals__, "body")


def hand_written(mesh, fn=body):
    """``fn`` under three nested vmaps; on ``mesh`` (``None``: one device) batch on ``x`` and out on ``y``."""
    on_mesh = mesh is not None
    inner = jax.vmap(fn, in_axes=(None, 0, 0), out_axes=0, axis_name="out", spmd_axis_name="y" if on_mesh else None)
    mid = jax.vmap(inner, in_axes=(0, 0, None), out_axes=None, axis_name="feat")
    outer = jax.vmap(
        mid, in_axes=(0, None, None), out_axes=0, axis_name="batch", spmd_axis_name="x" if on_mesh else None
    )
    return jax.jit(outer, out_shardings=NamedSharding(mesh, P("x", "y"))) if on_mesh else jax.jit(outer)


def fresh_xmap(fn=body, resources=RESOURCES):
    return tx.xmap(fn, in_axes=IN_AXES, out_axes=["batch", "out", ...], axis_resources=resources)


def one_device(x, w, b) -> None:
    """The same call without a mesh (one device, no axis_resources): a dispatch about 30x cheaper, where
    xmap's own Python per call (a check of the call, then the program) shows."""
    x, w, b = (np.asarray(v) for v in (x, w, b))
    x, w, b = (jax.device_put(v, jax.devices()[0]) for v in (x, w, b))
    hw, xm = hand_written(None), fresh_xmap(resources=None)
    np.testing.assert_allclose(xm(x, w, b), hw(x, w, b), rtol=1e-5)
    cases = {"hand-written jit, one device": lambda: hw(x, w, b), "tx.xmap, one device": lambda: xm(x, w, b)}
    times = interleaved(cases, rounds=41, calls=300)
    print_table("dispatch only, one device (no mesh)", times, "hand-written jit, one device")


def main() -> int:
    mesh = bench_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))
    rng = np.random.default_rng(0)
    with jax.set_mesh(mesh):
        x = jax.device_put(rng.normal(size=(8, 4)).astype(np.float32), NamedSharding(mesh, P("x", None)))
        w = jax.device_put(rng.normal(size=(4, 6)).astype(np.float32), NamedSharding(mesh, P(None, "y")))
        b = jax.device_put(rng.normal(size=(6,)).astype(np.float32), NamedSharding(mesh, P("y")))
        xm = fresh_xmap()
        hw, hw_again = hand_written(mesh), hand_written(mesh, fresh_body())
        np.testing.assert_allclose(xm(x, w, b), hw(x, w, b), rtol=1e-5)
        # The same hand-written program twice: how far apart two identical programs measure here.
        times = interleaved(
            {
                "hand-written jax.jit(vmap(vmap(vmap)))": lambda: hw(x, w, b).block_until_ready(),
                "the same, a second jit (noise floor)": lambda: hw_again(x, w, b).block_until_ready(),
                "tx.xmap (cached)": lambda: xm(x, w, b).block_until_ready(),
            },
            rounds=121,
            calls=40,
        )
        print_table(
            f"cached call + block, {mesh.devices.size}-device mesh, small inputs",
            times,
            "hand-written jax.jit(vmap(vmap(vmap)))",
            goal="<= 1.05x",
        )
        dispatch = interleaved(
            {
                "hand-written jit, dispatch only": lambda: hw(x, w, b),
                "the same, a second jit (noise floor)": lambda: hw_again(x, w, b),
                "tx.xmap, dispatch only": lambda: xm(x, w, b),
            },
            rounds=121,
            calls=40,
        )
        print_table("dispatch only (no block)", dispatch, "hand-written jit, dispatch only")

        compile_times: dict[str, list[float]] = {"hand-written jit(vmap)": [], "tx.xmap": []}
        for _ in range(5):
            for name, make in (
                ("hand-written jit(vmap)", lambda: hand_written(mesh, fresh_body())),
                ("tx.xmap", lambda: fresh_xmap(fresh_body())),
            ):
                fn = make()
                start = time.perf_counter()
                fn.lower(x, w, b).compile()
                compile_times[name].append(time.perf_counter() - start)
        medians = {name: statistics.median(v) for name, v in compile_times.items()}
        print_table("trace + lower + compile (fresh function)", medians, "hand-written jit(vmap)")
    one_device(x, w, b)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
