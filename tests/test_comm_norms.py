"""``typed-xmap check --comm`` against XLA for global norms, label-smoothed losses over a split vocabulary and
values met with a ``jax.Array`` operand (tests/programs/norm_comm.py), on an 8-device mesh (data=4, model=2),
Explicit and Auto: ``--comm`` lists one collective per value it reduces, and XLA's all-reduce combiner packs
the independent all-reduces over the same devices into one tuple all-reduce and merges no two, so the HLO's
collectives are counted per value they carry (``compiled(combined=False)``)."""

from __future__ import annotations

import functools
from collections import Counter

import jax
import jax.numpy as jnp
import pytest
from hlo_collectives import MESH, ROOT, Listed, compiled, listed
from jax.sharding import AxisType

import typed_xmap as tx

PROGRAM = ROOT / "tests" / "programs" / "norm_comm.py"
DATA, MODEL = ("all-reduce", ("data",)), ("all-reduce", ("model",))


@functools.cache
def _listed() -> dict[str, Listed]:
    return listed(PROGRAM)


@pytest.fixture(scope="module")
def program():
    from test_comm_hlo import _imported

    return _imported(PROGRAM)


def _value(axes: list[str], placement: dict[str, str]) -> tx.NamedArray:
    return tx.shard(tx.named(jnp.ones((8,) * len(axes)), axes), placement)


@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_norms_and_losses_list_one_collective_per_reduced_value(program, axis_type):
    static = _listed()
    mesh = jax.make_mesh(tuple(MESH.values()), tuple(MESH), axis_types=(axis_type,) * len(MESH))
    with jax.set_mesh(mesh):
        w_in = _value(["embed", "mlp"], {"embed": "data", "mlp": "model"})
        w_out = _value(["mlp", "embed"], {"embed": "data", "mlp": "model"})
        logits = _value(["batch", "vocab"], {"batch": "data", "vocab": "model"})
        calls = {
            "norm_on_one_line": (w_in, w_out),
            "norm_of_leaves": (w_in, _value(["mlp"], {"mlp": "model"}), _value(["embed"], {"embed": "data"})),
            "smoothed": (logits,),
            "tempered": (logits, jnp.float32(0.5)),
            "masked_heads": (_value(["batch", "kv", "heads"], {"batch": "data", "heads": "model"}), jnp.int32(3)),
            "standardised": (logits.rename({"vocab": "embed"}),),
        }
        ops = {name: compiled(jax.jit(getattr(program, name)), *args) for name, args in calls.items()}
        per_value = {
            name: compiled(jax.jit(getattr(program, name)), *args, combined=False) for name, args in calls.items()
        }
    # two sums over both mesh axes on one line: four notes, as four values are reduced (mypy would keep one of
    # two identical notes on a line); the sums' all-reduces over model are independent: XLA packs them into one,
    # while the second sum's over data waits for its own over model, so XLA runs three all-reduces
    assert static["norm_on_one_line"] == Counter({DATA: 2, MODEL: 2})
    assert ops["norm_on_one_line"] == Counter({DATA: 2, MODEL: 1})
    # three leaves' sums, independent: each mesh axis's become one tuple all-reduce
    assert ops["norm_of_leaves"] == Counter({DATA: 1, MODEL: 1})
    # the log-softmax's maximum and sum of exponentials, the mean along the vocabulary, the batch's mean
    assert static["smoothed"] == Counter({MODEL: 3, DATA: 1})
    # a jax.Array operand keeps the placement: the softmax's two, the sums over both axes; the masked sum
    assert static["tempered"] == Counter({MODEL: 3, DATA: 1})
    assert static["masked_heads"] == Counter({MODEL: 1})
    # the mean's sum, all-reduced twice by XLA (it merges no collectives), is one value: two values, two ops
    assert static["standardised"] == ops["standardised"] == Counter({MODEL: 2})
    assert {name: static.get(name, Counter()) for name in calls} == per_value
