"""examples/transformer.py is a real program: it trains the same on one device, on a 2x4 Explicit mesh and on a
2x4 Auto mesh, round-trips through orbax, its per-example gradients are each example's own, and it type-checks
under --strict with no positional escape."""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import jax
import numpy as np
import pytest
from example_programs import check_strict, load

import typed_xmap as tx

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "transformer.py"


@pytest.fixture(scope="module")
def example():
    return load(EXAMPLE, "transformer_example")


@pytest.fixture(scope="module")
def trained(example):
    config = example.Config()
    return {name: example.train(config, 6, mesh) for name, mesh in example.meshes().items()}


def test_equal_losses_on_every_placement_and_the_loss_falls(trained):
    first = trained["one device"][1]
    assert first[-1] < first[0] - 0.5  # it learns the counting task
    for name, (_, losses) in trained.items():
        np.testing.assert_allclose(losses, first, rtol=2e-4, err_msg=name)


def test_parameters_are_placed_by_name(trained):
    params = trained["Explicit mesh"][0]
    assert tx.resources_of(params["embed"]) == {"vocab": "model"}
    assert tx.resources_of(params["layers"]["query"]) == {"heads": "model"}
    assert tx.resources_of(params["layers"]["mlp_in"]) == {"mlp": "model"}
    assert params["layers"]["query"].named_shape == {"layers": 2, "embed": 32, "heads": 4, "head_dim": 8}


def test_orbax_round_trip_keeps_values_names_and_placement(example, trained):
    params = trained["Explicit mesh"][0]
    with tempfile.TemporaryDirectory() as directory:
        restored = example.checkpoint_round_trip(params, directory)
    assert jax.tree.structure(restored) == jax.tree.structure(params)
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(restored), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert a.sharding == b.sharding


def test_per_example_gradient_norms_are_each_examples_own(example, trained):
    params = trained["one device"][0]
    tokens, targets = next(example.batches(example.Config(), seed=1))
    norms = np.asarray(tx.positional(example.per_example_gradient_norms(params, tokens, targets), ["batch"]))
    for i in (0, 5):  # one example alone, through plain jax.grad
        one = {"batch": slice(i, i + 1)}
        grads = jax.grad(example.loss)(params, tokens[one], targets[one])
        expected = np.sqrt(sum(float((np.asarray(g) ** 2).sum()) for g in jax.tree.leaves(grads)))
        assert norms[i] == pytest.approx(expected, rel=1e-4)


MODEL = (
    "layer_norm",
    "attention",
    "mlp",
    "block",
    "logits",
    "token_losses",
    "loss",
    "example_loss",
    "per_example_gradient_norms",
)


def test_the_model_uses_no_positional_escape():
    """No tx.positional anywhere, and no positional index (an int or a slice) on any value in the model."""
    tree = ast.parse(EXAMPLE.read_text())
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert "positional" not in attributes
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert set(MODEL) <= set(functions)
    for name in MODEL:
        for node in (n for statement in functions[name].body for n in ast.walk(statement)):
            if isinstance(node, ast.Subscript):
                index = node.slice
                assert not isinstance(index, (ast.Slice, ast.Tuple)), (name, ast.unparse(node))
                assert not (isinstance(index, ast.Constant) and isinstance(index.value, int)), (name, ast.unparse(node))


@pytest.mark.parametrize(
    ("bug", "code"),
    [
        (None, None),
        (("weights, v)", "weights, q)"), "named-axis-missing"),
        (('layer_norm(x, p["attention_norm"])', 'layer_norm(x, p["query"])'), "arg-type"),
    ],
    ids=["clean", "mixing-with-queries", "norm-scale-of-a-projection"],
)
def test_typed_xmap_check_strict(tmp_path, mypy_cache, bug, code):
    """Clean under typed-xmap check --strict; a seeded bug is caught on its line with its code."""
    check_strict(tmp_path, mypy_cache, EXAMPLE, bug, code)


def test_the_guide_quotes_the_example_verbatim():
    """docs/guide/training-a-transformer.md's ```py excerpts are the example's own code, line for line."""
    import re

    guide = (ROOT / "docs" / "guide" / "training-a-transformer.md").read_text()
    excerpts = re.findall(r"^```py\n(.*?)^```", guide, re.S | re.M)
    assert len(excerpts) >= 6
    source = EXAMPLE.read_text()
    for excerpt in excerpts:
        assert excerpt in source, excerpt
