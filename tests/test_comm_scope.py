"""``typed-xmap check --comm`` inside mapped and scanned bodies and in functions a transform defines, against XLA:
for each function of tests/programs/scope_comm.py jitted alone on the 8-device (data=4, model=2) mesh, Explicit
and Auto, the collectives listed in it and in the bodies it runs (BODIES: an xmapped or ``tx.vmap``'d function's
body, a ``tx.scan``'s step, which compiles once in the loop's body) equal the compiled HLO's, by (kind, mesh axes)
and count. And the types behind them: an xmap's constant ``axis_resources``, a scan step's dict slices, a stored
``tx.vmap``'s results."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter

import jax
import jax.numpy as jnp
import pytest
from example_programs import load
from hlo_collectives import MESH, ROOT, compiled, listed
from jax.sharding import AxisType

import typed_xmap as tx

PROGRAM = ROOT / "tests" / "programs" / "scope_comm.py"

BODIES = {
    "entropy": ("_entropy",),
    "decorated_entropy": (),
    "best": ("_best",),
    "spread": ("_spread",),
    "scores": ("_scores",),
    "running": ("_running",),
    "shift": ("_shift",),
    "ring": ("_ring",),
    "totals": ("_totals",),
    "both": ("_both",),
    "exchange": ("_exchange",),
    "whole": ("_whole",),
    "per_example": ("_example",),
    "stored_total": ("_row",),
    "local_total": ("_row",),
    "microbatches": (),
    "layers": ("_layer",),
}
"""Each jitted function -> the bodies whose listing its compiled program holds."""
UNLISTED = {"running": Counter({("all-gather", ("model",)): 1})}
"""What XLA compiles that ``--comm`` does not list, with why. ``running``: in an xmapped body an operation along a
mapped axis that keeps it (``tnp.cumsum``; ``cumprod`` and ``sort`` alike) works on the axis gathered into
each element's value (the all-gather listed); where the result meets the mapped layout again (here the body's
output) each element takes its own row back, which XLA compiles as one more all-gather. The types do not hold
whether a value is gathered or mapped."""


def _arguments() -> dict[str, tuple[object, ...]]:
    def value(sizes: dict[str, int], placement: dict[str, str]) -> tx.NamedArray:
        return tx.shard(tx.random.normal(jax.random.key(len(sizes)), sizes), placement)

    blocks = (jnp.ones((8, 2, 4)),)
    return {
        "entropy": (jnp.ones((8, 16)),),
        "decorated_entropy": (value({"batch": 8, "vocab": 16}, {}),),
        "best": (jnp.ones((8, 16)),),
        "spread": (jnp.ones((8, 16)),),
        "scores": (jnp.ones((8, 16)), jnp.ones((16, 4))),
        "running": (jnp.ones((8, 16)),),
        "shift": blocks,
        "ring": blocks,
        "totals": blocks,
        "both": blocks,
        "exchange": (jnp.ones((8, 2, 4, 6)),),
        "whole": blocks,
        "per_example": (value({"batch": 8, "vocab": 16}, {"batch": "data", "vocab": "model"}),),
        "stored_total": (value({"batch": 8, "embed": 4}, {"batch": "data"}),),
        "local_total": (value({"batch": 8, "embed": 4}, {"batch": "model"}),),
        "microbatches": (
            value({"micro": 4, "batch": 8, "embed": 16}, {"batch": "data"}),
            value({"embed": 16, "label": 8}, {}),
            value({"micro": 4, "batch": 8, "label": 8}, {"batch": "data"}),
        ),
        "layers": (
            value({"batch": 8, "embed": 16}, {}),
            value({"layers": 3, "embed": 16, "mlp": 32}, {"mlp": "model"}),
            value({"layers": 3, "mlp": 32, "embed": 16}, {"mlp": "model"}),
        ),
    }


@pytest.fixture(scope="module")
def program():
    return load(PROGRAM, "scope_comm_program")


@pytest.fixture(scope="module")
def static():
    return listed(PROGRAM)


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["Explicit", "Auto"])
def test_listed_collectives_in_bodies_equal_the_compiled_hlos(program, static, axis_type):
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    with jax.set_mesh(mesh):
        calls = _arguments()
        hlo = {name: compiled(jax.jit(getattr(program, name)), *args) for name, args in calls.items()}
    expected = {
        name: sum((static.get(f, Counter()) for f in (name, *BODIES[name])), UNLISTED.get(name, Counter()))
        for name in calls
    }
    assert hlo["ring"] == Counter({("all-gather", ("data",)): 3})  # the programs do communicate
    assert hlo["whole"] == Counter()
    assert expected == hlo


def _check(source: str, tmp_path) -> str:
    path = tmp_path / "probe.py"
    path.write_text(textwrap.dedent(source))
    command = [sys.executable, "-m", "typed_xmap._tools._cli", "check", "--comm", str(path)]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False, timeout=600).stdout


HEADER = """
    import typed_xmap as tx
    import typed_xmap.numpy as tnp
    from typed_xmap import NamedArray, f32

    Scalar = NamedArray[f32, ""]
"""


def test_a_scan_steps_dict_read_keeps_its_declared_type_where_the_step_is_also_called_directly(tmp_path):
    """The body is typed once: a direct call may hand it other values, so its reads stay as declared."""
    out = _check(
        HEADER
        + """
    def step(total: NamedArray[f32, ""], mb: dict[str, NamedArray[f32, "batch *rest"]]) -> tuple[Scalar, None]:
        reveal_type(mb["x"])
        return total + tnp.sum(mb["x"], "batch").sum("embed"), None

    def scanned(xs: NamedArray[f32, "micro batch@data embed"]) -> NamedArray[f32, ""]:
        total, _ = tx.scan(step, tnp.zeros({}), {"x": xs}, axis="micro")
        return total

    def direct(x: NamedArray[f32, "batch embed"]) -> NamedArray[f32, ""]:
        total, _ = step(tnp.zeros({}), {"x": x})
        return total
    """,
        tmp_path,
    )
    assert 'Revealed type is "NamedArray[f32, "batch *rest"]"' in out, out
    assert "collective:" not in out, out


def test_a_scan_steps_dict_read_has_its_slices_type(tmp_path):
    out = _check(
        HEADER
        + """
    def scanned(xs: NamedArray[f32, "micro batch@data embed"], ys: NamedArray[f32, "micro batch embed@model"]) -> None:
        def step(total: Scalar, mb: dict[str, NamedArray[f32, "batch *rest"]]) -> tuple[Scalar, None]:
            reveal_type(mb["x"])
            reveal_type(mb["y"])
            return total, None

        tx.scan(step, tnp.zeros({}), {"x": xs, "y": ys}, axis="micro")
    """,
        tmp_path,
    )
    assert 'Revealed type is "NamedArray[f32, "batch@data embed"]"' in out, out
    assert 'Revealed type is "NamedArray[f32, "batch embed@model"]"' in out, out


def test_a_scan_steps_dict_read_after_the_parameter_is_rebound_keeps_its_declared_type(tmp_path):
    """``mb = {...}`` in the body: a later ``mb["x"]`` reads the new dict, not the scanned item."""
    out = _check(
        HEADER
        + """
    def scanned(xs: NamedArray[f32, "micro batch@data embed"], other: NamedArray[f32, "batch embed"]) -> None:
        def step(total: Scalar, mb: dict[str, NamedArray[f32, "batch *rest"]]) -> tuple[Scalar, None]:
            mb = {"x": other}
            reveal_type(mb["x"])
            return total, None

        tx.scan(step, tnp.zeros({}), {"x": xs}, axis="micro")
    """,
        tmp_path,
    )
    assert "Revealed type is" in out and "batch@data" not in out, out


def test_a_stored_vmaps_result_conflicting_with_its_own_axes_is_reported_at_the_call(tmp_path):
    """The mapped axis placed by the argument (data) meets the result's own embed@data: the conflict, on the
    line of the call."""
    out = _check(
        HEADER
        + """
    def _row(x: NamedArray[f32, "embed"]) -> NamedArray[f32, "embed@data"]:
        return tx.shard(x, {"embed": "data"})

    per_row = tx.vmap(_row, axis="batch")

    def use(x: NamedArray[f32, "batch@data embed"]) -> None:
        per_row(x)
    """,
        tmp_path,
    )
    assert "probe.py:14: error:" in out and "axis-resource-conflict" in out, out
