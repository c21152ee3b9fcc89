"""The typed examples check clean under --strict (with the plugin, and without it on the stubs alone), and a
seeded bug in each is reported with the right code on the right line."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _plugin_debug(monkeypatch):
    """A plugin hook that fails raises (mypy INTERNAL ERROR) instead of degrading quietly."""
    monkeypatch.setenv("TYPED_XMAP_PLUGIN_DEBUG", "1")


EXAMPLES = ROOT / "examples" / "typed"

# example -> (text to replace, its replacement, the code, the line the error must be on: a text on it)
SEEDED_BUGS = {
    "train_step.py": ("b - lr * gb", "b - lr * gw", "return-value", "return w - lr * gw, b - lr * gw"),
    "regression.py": (
        'error * error, "batch")',
        'error * error, "batches")',
        "named-axis-missing",
        'tnp.mean(error * error, "batches")',
    ),
    "mlp.py": (
        'w2: NamedArray[f32, "hidden classes=10"]',
        'w2: NamedArray[f32, "hidden=256 classes=10"]',
        "named-axis-size",
        "logits = tnp.einsum",
    ),
    "attention.py": ("weights, v2)", "weights, v)", "named-axis-missing", "mixed = tnp.einsum"),
    "layer_norm.py": (
        'centered * centered, "embed")',
        'centered * centered, "embd")',
        "named-axis-missing",
        "variance = tnp.mean",
    ),
    # a "*rest" helper's body: summing seq away is not the declared "*rest seq head_dim"
    "generic_helpers.py": (
        '->{seq,head_dim}", weights, v)',
        '->{head_dim}", weights, v)',
        "return-value",
        '->{head_dim}", weights, v)',
    ),
    "tree_helpers.py": ("    return x * s", "    return x > s", "return-value", "return x > s"),
    # checking holds on typed values around an Any (the einsum before the Any division)
    "gradual.py": ("{kv,head_dim}->{seq,kv}", "{kv,head_dim}->{seq,kvv}", "named-axis-missing", "scores = tnp.einsum"),
    # a bug through a rebound accumulator: batch not reduced reaches the return
    "rebinding.py": (
        'total = total + tnp.sum(per_example_loss(x, target, w_in, w_out), "batch")',
        "total = total + per_example_loss(x, target, w_in, w_out)",
        "return-value",
        "return total /",
    ),
    "sharding.py": ('"ffn": "model"})', '"ffn": "data"})', "axis-resource-conflict", "return tx.constrain"),
}


def _check(tmp_path: Path, cache: Path, files: list[Path], *, plugin: bool = True) -> tuple[str, int]:
    config = tmp_path / "mypy.ini"
    config.write_text(
        "[mypy]\n"
        + ("plugins = typed_xmap.plugin\n" if plugin else "")
        + f"mypy_path = {ROOT / 'stubs'}\n"
        + "allow_redefinition = true\n"  # the recommended config (docs/typing): models rebind names
    )
    stdout, stderr, status = api.run(
        ["--config-file", str(config), "--strict", "--cache-dir", str(cache / f"examples-{plugin}"), *map(str, files)]
    )
    return stdout + stderr, status


@pytest.mark.parametrize("plugin", [True, False], ids=["plugin", "stubs-only"])
def test_examples_check_clean_under_strict(tmp_path, mypy_cache, plugin):
    output, status = _check(tmp_path, mypy_cache, sorted(EXAMPLES.glob("*.py")), plugin=plugin)
    assert status == 0, output
    assert f"Success: no issues found in {len(list(EXAMPLES.glob('*.py')))} source files" in output


@pytest.mark.parametrize("example", sorted(SEEDED_BUGS))
def test_seeded_bug_is_reported_on_its_line(tmp_path, mypy_cache, example):
    old, new, code, marker = SEEDED_BUGS[example]
    source = (EXAMPLES / example).read_text()
    assert old in source
    buggy = source.replace(old, new)
    line = next(i for i, text in enumerate(buggy.splitlines(), 1) if marker in text)
    path = tmp_path / example
    path.write_text(buggy)
    output, status = _check(tmp_path, mypy_cache, [path])
    assert status == 1
    errors = [row for row in output.splitlines() if ": error:" in row]
    assert errors and all(f"{example}:{line}: error:" in row and row.endswith(f"[{code}]") for row in errors), output


def _load_example(name: str):
    """Import ``examples/typed/NAME.py`` as a module (the examples folder is not a package)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(f"typed_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_examples_run(tmp_path):
    """The examples are real programs: run the regression and layer norm on small arrays."""
    import jax.numpy as jnp

    import typed_xmap as tx

    modules = {name: _load_example(name) for name in ("regression", "layer_norm")}
    x = tx.named(jnp.ones((4, 3)), ["batch", "in_features"])
    y = tx.named(jnp.full((4,), 2.0), ["batch"])
    w = tx.named(jnp.ones((3,)), ["in_features"])
    b = tx.named(jnp.zeros(()), [])
    loss = modules["regression"].loss(x, y, w, b)
    assert loss.named_shape == {} and float(loss.data) == pytest.approx(1.0)
    t = tx.named(jnp.arange(24.0).reshape(2, 3, 4), ["batch", "seq", "embed"])
    out = modules["layer_norm"].layer_norm(t, tx.named(jnp.ones(4), ["embed"]), tx.named(jnp.zeros(4), ["embed"]))
    assert out.named_shape == {"batch": 2, "seq": 3, "embed": 4}
    import typed_xmap.numpy as tnp

    assert float(jnp.max(jnp.abs(tnp.mean(out, "embed").data))) < 1e-5  # normalised: zero mean per position


def test_generic_helpers_run():
    """The "*rest" example is a real program: one block through layer_norm and attend, checked by @tx.typed."""
    import jax.numpy as jnp

    import typed_xmap as tx

    module = _load_example("generic_helpers")
    x = tx.named(jnp.ones((2, 3, 4)), ["batch", "seq", "embed"])
    scale = tx.named(jnp.ones(4), ["embed"])
    wq = tx.named(jnp.ones((4, 2, 5)), ["embed", "heads", "head_dim"])
    wo = tx.named(jnp.ones((2, 5, 4)), ["heads", "head_dim", "embed"])
    assert module.block(x, scale, wq, wo).named_shape == {"batch": 2, "seq": 3, "embed": 4}
    assert module.layer_norm(tx.named(jnp.ones(4), ["embed"]), scale).named_shape == {"embed": 4}


def test_tree_helpers_run():
    """The TypeVar example is a real program: an SGD step over a dict with jax.tree.map and tx.AnyNamedArray."""
    import jax.numpy as jnp

    import typed_xmap as tx

    module = _load_example("tree_helpers")
    w = tx.named(jnp.ones((3, 2)), ["embed", "out"])
    stepped = module.sgd({"w": w}, {"w": w}, 0.1)
    assert stepped["w"].named_shape == {"embed": 3, "out": 2}
    assert float(stepped["w"].data[0, 0]) == pytest.approx(0.9)
    assert isinstance(w, tx.AnyNamedArray) and not isinstance(jnp.ones(2), tx.AnyNamedArray)
    assert module.head(w, tx.named(jnp.ones((4, 3)), ["batch", "embed"])).named_shape == {"batch": 4, "out": 2}


def test_train_step_runs_through_the_transforms():
    """The transforms example is a real program: a jitted SGD step with gradients by name."""
    import jax.numpy as jnp

    import typed_xmap as tx

    module = _load_example("train_step")
    w = tx.named(jnp.zeros((3, 2)), ["embed", "out"])
    b = tx.named(jnp.zeros(2), ["out"])
    x = tx.named(jnp.ones((4, 3)), ["batch", "embed"])
    y = tx.named(jnp.ones((4, 2)), ["batch", "out"])
    before = float(module.loss(w, b, x, y))
    w2, b2 = module.train(w, b, x, y, 3)
    assert w2.named_shape == {"embed": 3, "out": 2} and b2.named_shape == {"out": 2}
    assert float(module.loss(w2, b2, x, y)) < before
    _, _, value, mean_error = module.step_with_report(w, b, x, y)
    assert mean_error.named_shape == {"out": 2} and float(value) == pytest.approx(before)


def test_gradual_example_runs():
    """The Any example is a real program: causal attention weights from an untyped loader's batch."""
    import jax.numpy as jnp
    import numpy as np

    import typed_xmap as tx

    module = _load_example("gradual")
    k = tx.named(jnp.ones((2, 4, 8)), ["batch", "kv", "head_dim"])
    weights = module.weights_for_batch(0, k)
    assert weights.named_shape == {"batch": 2, "seq": 4, "kv": 4}
    rows = tx.positional(weights, ["batch", "seq", "kv"])
    np.testing.assert_allclose(np.asarray(rows[0, 1]), [0.5, 0.5, 0.0, 0.0], atol=1e-6)  # causal, equal keys


def test_rebinding_example_runs():
    """The rebinding example is a real program: its loop accumulator equals the mean over all examples."""
    import jax.numpy as jnp
    import numpy as np

    import typed_xmap as tx

    module = _load_example("rebinding")
    rng = np.random.default_rng(0)
    xs = [tx.named(jnp.asarray(rng.normal(size=(3, 4)), jnp.float32), ["batch", "embed"]) for _ in range(2)]
    ts = [tx.named(jnp.zeros((3, 4)), ["batch", "embed"]) for _ in range(2)]
    w_in = tx.named(jnp.asarray(rng.normal(size=(4, 5)), jnp.float32), ["embed", "mlp"])
    w_out = tx.named(jnp.asarray(rng.normal(size=(5, 4)), jnp.float32), ["mlp", "embed"])
    per_example = [module.per_example_loss(x, t, w_in, w_out) for x, t in zip(xs, ts, strict=True)]
    expected = np.mean(np.concatenate([np.asarray(tx.positional(p, ["batch"])) for p in per_example]))
    total = module.mean_loss(xs, ts, w_in, w_out)
    assert total.named_shape == {} and float(total.data) == pytest.approx(float(expected), rel=1e-5)


def test_sharding_example_runs_on_a_mesh():
    """The sharding example is a real program: on a 2x4 mesh the parameters and activations split by name."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import PartitionSpec as P

    import typed_xmap as tx

    module = _load_example("sharding")
    params = {"w": tx.named(jnp.ones((4, 8)), ["embed", "ffn"])}
    x = tx.named(jnp.ones((2, 4)), ["batch", "embed"])
    with jax.set_mesh(jax.make_mesh((2, 4), ("data", "model"))):
        params, x = module.place(params, x)
        h = module.hidden(params, x)
    assert h.named_shape == {"batch": 2, "ffn": 8} and float(np.asarray(h.data)[0, 0]) == pytest.approx(4.0)
    assert params["w"].data.sharding.spec == P(None, "model")  # named dims sorted: embed, ffn
    assert h.data.sharding.spec == P("data", "model")  # batch, ffn
