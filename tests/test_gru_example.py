"""examples/gru.py is a real program written as the typing guide teaches (TypedDict parameters checked by
``@tx.typed``, a NamedTuple carry through ``tx.scan``, per-example gradients by ``tx.vmap``, placement by a
module-level ``RESOURCES``): it trains the same on one device and on a 2x4 mesh, its per-example gradients are
each example's own, it is clean under ``typed-xmap check --strict``, and seeded mistakes are caught on their line."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import jax
import numpy as np
import pytest
from example_programs import load

import typed_xmap as tx

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gru.py"


@pytest.fixture(scope="module")
def gru():
    return load(EXAMPLE, "gru_example")


def test_trains_the_same_on_one_device_and_on_a_mesh(gru):
    config = gru.Config()
    _, losses = gru.train(config, 4)
    sharded, mesh_losses = gru.train(config, 4, jax.make_mesh((2, 4), ("data", "model")))
    assert losses[-1] < losses[0]
    np.testing.assert_allclose(mesh_losses, losses, rtol=1e-4)
    assert tx.resources_of(sharded["update"]["w"]) == {"next": "model"}


def test_per_example_gradients_are_each_examples_own(gru):
    config = gru.Config()
    params = gru.init(config, jax.random.key(0))
    tokens, labels, lengths = gru.batch(config, jax.random.key(1))
    grads = tx.vmap(jax.grad(gru.example_loss), axis="batch")(params, tokens, labels, lengths)
    assert grads["update"]["u"].named_shape == {"batch": 8, "hidden": 24, "next": 24}
    for i in (0, 5):
        one = [v[{"batch": i}] for v in (tokens, labels, lengths)]
        alone = jax.grad(gru.example_loss)(params, *one)
        for path in (("embed",), ("candidate", "w"), ("head",)):
            mapped, own = grads, alone
            for key in path:
                mapped, own = mapped[key], own[key]
            axes = [a for a in mapped.named_shape if a != "batch"]
            np.testing.assert_allclose(
                tx.positional(mapped[{"batch": i}], axes), tx.positional(own, axes), rtol=1e-4, atol=1e-6
            )


def test_typed_dict_parameters_are_checked_at_run_time(gru):
    config = gru.Config()
    params = gru.init(config, jax.random.key(0))
    tokens, labels, lengths = gru.batch(config, jax.random.key(1))
    wrong = {**params, "reset": {**params["reset"], "u": params["reset"]["u"].rename({"hidden": "h"})}}
    with pytest.raises(tx.NamedShapeError, match=r"example_loss\(\) argument params\['reset'\]\['u'\] is NamedArray"):
        tx.vmap(gru.example_loss, axis="batch")(wrong, tokens, labels, lengths)


@pytest.mark.parametrize(
    ("bug", "code"),
    [
        (None, None),
        (('states[{"time": last}]', 'states[{"tme": last}]'), "named-axis-missing"),
        (
            ('RESOURCES = {"batch": "data",', 'RESOURCES = {"embed": "model", "batch": "data",'),
            "axis-resource-conflict",
        ),
        (
            ('embed_grads: NamedArray[f32, "batch vocab embed"]', 'embed_grads: NamedArray[f32, "vocab embed"]'),
            "assignment",
        ),
        (("(params, tokens, labels, lengths)", "(params, labels, tokens, lengths)"), "arg-type"),
        (('"{hidden},{hidden,classes}->{classes}"', '"{hidden},{hidden,classes}->{clases}"'), "named-axis-missing"),
    ],
    ids=["clean", "index-axis", "resources-constant", "vmap-result", "vmap-arguments", "einsum-output"],
)
def test_typed_xmap_check_strict(tmp_path, mypy_cache, bug, code):
    """Clean under typed-xmap check --strict; a seeded mistake is caught with its code (the line of the
    mistake, or of the tx.shard call its RESOURCES reaches)."""
    from typed_xmap._tools._check import run_check

    source = EXAMPLE.read_text()
    if bug is not None:
        assert source.count(bug[0]) == 1
        source = source.replace(bug[0], bug[1])
    path = tmp_path / "gru.py"
    path.write_text(source)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # the worker's cache of the examples' strict checks (tests/example_programs.py): the same flags and config
        status = run_check([str(path)], ["--strict", "--cache-dir", str(mypy_cache / "examples-strict")])
    text = out.getvalue()
    if bug is None:
        assert status == 0, text
        return
    marker = "tx.shard(params, RESOURCES)" if code == "axis-resource-conflict" else bug[1]
    line = next(i for i, row in enumerate(source.splitlines(), 1) if marker in row)
    errors = [row for row in text.splitlines() if ": error:" in row]
    assert errors and f"gru.py:{line}: error:" in errors[0] and errors[0].endswith(f"[{code}]"), text
