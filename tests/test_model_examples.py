"""examples/vit.py and examples/moe.py are real programs: each trains the same on one device and on a 2x4 mesh,
uses no positional escape, is clean under ``typed-xmap check --strict`` (a planted mistake is caught on its
line), and its guide quotes it verbatim. The MoE layer's compiled step sends tokens to their experts with an
all-to-all each way and never all-gathers the token activations."""

from __future__ import annotations

import ast
import collections
import re
from pathlib import Path

import jax
import numpy as np
import pytest
from example_programs import check_strict, load
from jax.sharding import AxisType

import typed_xmap as tx

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = {"vit": ROOT / "examples" / "vit.py", "moe": ROOT / "examples" / "moe.py"}
MODEL = {
    "vit": ("norm", "patches", "attention", "mlp", "loss"),
    "moe": ("norm", "attention", "experts", "loss"),
}
GUIDES = {"vit": "vision-transformer.md", "moe": "mixture-of-experts.md"}


def _load(name: str):
    return load(EXAMPLES[name], f"{name}_example")


@pytest.fixture(scope="module", params=["vit", "moe"])
def example(request):
    return request.param, _load(request.param)


def test_equal_losses_on_one_device_and_a_mesh_and_the_loss_falls(example):
    name, module = example
    results = {placement: module.train(module.Config(), 8, mesh)[1] for placement, mesh in module.meshes().items()}
    first = results["one device"]
    assert first[-1] < first[0] - 0.1, first
    for placement, losses in results.items():
        np.testing.assert_allclose(losses, first, rtol=2e-4, err_msg=f"{name} on {placement}")


def _collectives(text: str) -> dict[str, list[str]]:
    """Collective opcode -> the result types of its instructions in an HLO module's text."""
    found = collections.defaultdict(list)
    for result, opcode in re.findall(
        r"=\s*(\([^=]*?\)|\S+)\s+(all-to-all|all-gather|all-reduce|reduce-scatter)(?:-start)?\(", text
    ):
        found[opcode].append(result)
    return found


@pytest.mark.skipif(len(jax.devices()) < 8, reason="needs the 8 emulated devices")
@pytest.mark.parametrize("axis_type", [AxisType.Explicit, AxisType.Auto], ids=["explicit", "auto"])
def test_moe_dispatch_is_an_all_to_all_and_never_gathers_activations_or_experts(axis_type):
    """The compiled forward and backward step on a 2x4 mesh of either kind: tokens move by all-to-all, the token
    activations and the expert weights are never all-gathered (on Auto meshes XLA's propagation did both until
    moe_dispatch/moe_combine pinned ``from_resources``), and loss and gradients equal the one-device step's."""
    moe = _load("moe")
    c = moe.Config(mlp=48)  # expert weights (expert, embed, mlp) of a shape nothing else has
    params, (tokens, targets) = moe.init(c, jax.random.key(0)), next(moe.batches(c))
    step = jax.jit(jax.value_and_grad(moe.loss), static_argnames="capacity")
    loss, grads = step(params, tokens, targets, capacity=c.capacity)
    with jax.set_mesh(jax.make_mesh((2, 4), ("data", "model"), axis_types=(axis_type,) * 2)):
        placed = moe.place(params)
        placed_tokens, placed_targets = tx.shard((tokens, targets), moe.TOKENS)
        text = step.lower(placed, placed_tokens, placed_targets, capacity=c.capacity).compile().as_text()
        sharded_loss, sharded_grads = step(placed, placed_tokens, placed_targets, capacity=c.capacity)
    found = _collectives(text)
    assert len(found["all-to-all"]) >= 4, found  # dispatch and combine, forward and backward
    activation = re.compile(rf"f32\[[^\]]*\b{c.seq}\b[^\]]*\b{c.embed}\b")  # (.., seq, .., embed)
    gathered = [shape for shape in found["all-gather"] if activation.match(shape)]
    assert not gathered, found
    expert_weights = sorted((c.experts, c.embed, c.mlp))
    gathered = [shape for shape in found["all-gather"] if sorted(_dims(shape)) == expert_weights]
    assert not gathered, found
    assert tx.resources_of(sharded_grads["expert_in"]) == {"expert": "model"}
    np.testing.assert_allclose(sharded_loss, loss, rtol=1e-5)
    for name in grads:
        names = list(grads[name].axes)
        np.testing.assert_allclose(
            tx.positional(sharded_grads[name], names), tx.positional(grads[name], names), rtol=2e-4, atol=1e-6
        )


def _dims(shape: str) -> list[int]:
    """The dims of one HLO array type (``f32[4,32,48]{2,1,0}``); none for a tuple."""
    match = re.fullmatch(r"\w+\[([\d,]*)\](\{.*\})?", shape)
    return [int(d) for d in match.group(1).split(",") if d] if match else []


def test_moe_routing_keeps_capacity_and_balances():
    """Each expert takes at most ``capacity`` tokens of a sequence, each token at most 2 experts, and the
    dispatch and combine tables agree (combine holds the gates where dispatch is 1)."""
    moe = _load("moe")
    logits = tx.random.normal(jax.random.key(1), {"batch": 2, "seq": 16, "expert": 4})
    dispatch, combine, balance = tx.moe_route(logits, 2, 5)
    table = np.asarray(tx.positional(dispatch, ["batch", "seq", "expert", "slot"]))
    assert set(np.unique(table)) <= {0.0, 1.0}
    assert table.sum(axis=(1,)).max() <= 1  # one token per slot
    assert table.sum(axis=(2, 3)).max() <= 2  # two experts per token
    assert table.sum(axis=(1, 3)).max() <= 5  # capacity per expert
    gates = np.asarray(tx.positional(combine, ["batch", "seq", "expert", "slot"]))
    np.testing.assert_array_equal(gates > 0, table > 0)
    assert balance.named_shape == {} and float(balance.data) >= 1.0 - 1e-6
    assert moe.Config().capacity * moe.Config().experts >= 2 * moe.Config().seq  # the example drops no token


def test_the_models_use_no_positional_escape(example):
    """No tx.positional anywhere, and no positional index (an int or a slice) on any value in the model."""
    name, _ = example
    tree = ast.parse(EXAMPLES[name].read_text())
    assert "positional" not in {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    for function in MODEL[name]:
        for node in (n for statement in functions[function].body for n in ast.walk(statement)):
            if isinstance(node, ast.Subscript):
                index = node.slice
                assert not isinstance(index, (ast.Slice, ast.Tuple)), (function, ast.unparse(node))
                assert not (isinstance(index, ast.Constant) and isinstance(index.value, int)), ast.unparse(node)


@pytest.mark.parametrize(
    ("name", "bug", "code"),
    [
        ("vit", None, None),
        ("vit", ('"channels", strides=2', '"embed", strides=2'), "named-axis-missing"),
        ("moe", None, None),
        ("moe", ("{embed},{embed,expert}->{expert}", "{embed},{embed,experts}->{experts}"), "named-axis-missing"),
    ],
    ids=["vit-clean", "vit-stem-contracts-embed", "moe-clean", "moe-router-misnames-expert"],
)
def test_typed_xmap_check_strict(tmp_path, mypy_cache, name, bug, code):
    """Clean under typed-xmap check --strict; a planted mistake is caught on its line with its code."""
    check_strict(tmp_path, mypy_cache, EXAMPLES[name], bug, code)


@pytest.mark.parametrize("name", ["vit", "moe"])
def test_the_guide_quotes_the_example_verbatim(name):
    guide = (ROOT / "docs" / "guide" / GUIDES[name]).read_text()
    excerpts = re.findall(r"^```py\n(.*?)^```", guide, re.S | re.M)
    assert len(excerpts) >= 3
    source = EXAMPLES[name].read_text()
    for excerpt in excerpts:
        assert excerpt in source, excerpt
