"""The demo and the examples run on the devices a machine has (issue 22): one, two or eight, each mesh fitted.

``tx.fitting_mesh`` shrinks a mesh to the devices at hand, every axis a divisor of the size asked for; the
demo and examples/ build their meshes with it and print what ran where. The programs run here as a user runs
them, in a fresh Python with ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` (what a laptop, a one-GPU
box or an 8-device host gives); each exits non-zero when one of its own checks fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

import typed_xmap as tx
from typed_xmap._ops._devices import describe_mesh, fitting_shape

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("shape", "count", "fitted"),
    [
        ((4, 2), 8, (4, 2)),
        ((4, 2), 16, (4, 2)),
        ((4, 2), 2, (2, 1)),
        ((4, 2), 1, (1, 1)),
        ((4, 2), 3, (2, 1)),  # 3 divides neither 4 nor 2: the largest mesh that fits is 2 devices
        ((4, 2), 4, (4, 1)),
        ((2, 4), 4, (2, 2)),
        ((2, 2, 2), 2, (2, 1, 1)),
        ((6,), 4, (3,)),
        ((10_000_000,), 3, (2,)),  # a bench's batch over 3 GPUs: 2 of them
    ],
)
def test_fitting_shape_is_the_largest_mesh_of_divisors(shape, count, fitted):
    assert fitting_shape(shape, count) == fitted


def test_fitting_mesh_uses_the_devices_at_hand():
    mesh = tx.fitting_mesh((4, 2), ("x", "y"))
    assert dict(mesh.shape) == {"x": 4, "y": 2} and mesh.devices.size == jax.device_count() == 8
    small = tx.fitting_mesh((4, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    assert dict(small.shape) == {"x": 4, "y": 2}
    assert small.axis_types == (jax.sharding.AxisType.Auto,) * 2
    assert describe_mesh(small) == "cpu, 8 devices, mesh x=4 y=2"


def test_with_one_accelerator_a_sharding_section_runs_on_the_emulated_cpu_devices(monkeypatch):
    """One GPU as the default backend (its one device played by CPU device 0) beside 8 emulated CPU devices:
    compute meshes fit the GPU (1x1); ``emulate=True`` puts a mesh on the 8 CPU devices instead."""
    cpu = jax.devices("cpu")
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(jax, "devices", lambda backend=None: cpu if backend == "cpu" else cpu[:1])
    assert dict(tx.fitting_mesh((4, 2), ("x", "y")).shape) == {"x": 1, "y": 1}
    emulated = tx.fitting_mesh((4, 2), ("x", "y"), emulate=True)
    assert dict(emulated.shape) == {"x": 4, "y": 2} and set(emulated.devices.flat) == set(cpu)
    assert dict(tx.fitting_mesh((1, 1), ("x", "y"), emulate=True).shape) == {"x": 1, "y": 1}  # the GPU suffices


def test_a_fitted_mesh_shards_a_value_that_divides_the_mesh_asked_for():
    mesh = tx.fitting_mesh((16, 1), ("x", "y"))  # 8 of the 16 asked for
    with jax.set_mesh(mesh):
        x = tx.shard(tx.named(jax.numpy.ones((16, 4)), ["batch", "feat"]), {"batch": "x"})
    assert tx.resources_of(x) == {"batch": "x"} and len(x.data.sharding.device_set) == 8


def _run(args: list[str], devices: int) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env["COLUMNS"] = "200"  # rich wraps at the terminal width; one line per message keeps the checks simple
    result = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=600, check=False, env=env)
    assert result.returncode == 0, f"with {devices} device(s):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


MESH_OF = {1: "x=1 y=1", 2: "x=2 y=1", 8: "x=4 y=2"}


@pytest.mark.slow
@pytest.mark.parametrize("devices", [1, 2])  # 8: tests/test_packaging.py::test_demo_runs
def test_the_demo_finishes_on_a_few_devices(devices):
    out = _run([sys.executable, "-m", "typed_xmap._tools._cli", "demo"], devices).stdout
    assert f"{devices} cpu devices" in out
    assert f"the sharding below runs on cpu, {devices} device" in out and f"mesh {MESH_OF[devices]}" in out
    assert "equals a @ b: True" in out and "equal: True" in out and "AxisResourceConflict" in out
    assert "demo finished" in out


@pytest.mark.slow
@pytest.mark.parametrize("devices", [1, 2, 8])
def test_the_parallelism_styles_example_agrees_on_any_device_count(devices):
    out = _run([sys.executable, "examples/parallelism_styles.py"], devices).stdout
    x, y = MESH_OF[devices].replace("x=", "").replace("y=", "").split()
    assert f"on cpu, mesh {{'x': {x}, 'y': {y}}}" in out
    assert out.count("equal to the unsharded result") == 4 and "DIFFERENT" not in out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("devices", "mesh"),
    [(1, "{'data': 1, 'model': 1}"), (2, "{'data': 2, 'model': 1}"), (8, "{'data': 2, 'model': 4}")],
)
def test_the_transformer_example_trains_on_any_device_count(devices, mesh):
    out = _run([sys.executable, "examples/transformer.py", "8"], devices).stdout  # 8 steps: compiling dominates
    assert f"Explicit mesh: cpu, mesh {mesh} ({devices} devices at hand)" in out
    assert "orbax round trip: same values and named shapes: True" in out
