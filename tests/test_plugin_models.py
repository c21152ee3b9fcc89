"""Three model programs written as a user would (``tests/models/``: a ViT classifier, a top-2 mixture of
experts, a GRU with per-example gradients), every size from a config dataclass. ``typed-xmap check`` reports
nothing on them, reports each planted mistake on its line with its code (and nothing else), and the clean
programs run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "tests" / "models"

# program -> [(kind, text to replace, its replacement, the code, a text on the line the error must be on)]
PLANTED = {
    "vit.py": [
        (
            "split_axis with a misspelt axis",
            'tx.split_axis(images, "height",',
            'tx.split_axis(images, "hieght",',
            "named-axis-missing",
            '"hieght"',
        ),
        (
            "weights whose sizes disagree (cfg.embed vs cfg.embed // 2)",
            '"token": cfg.grid * cfg.grid, "embed": cfg.embed}',
            '"token": cfg.grid * cfg.grid, "embed": cfg.embed // 2}',
            "named-axis-size",
            'tokens=tnp.concatenate([cls, positions], axis="token")',
        ),
        (
            "attention keys not renamed",
            '    k = tx.rename(k, {"token": "kv_token"})\n',
            "",
            "named-axis-missing",
            "scores = tnp.einsum",
        ),
        (
            "a return that forgets the pooling",
            'pooled = tnp.mean(x, "token")',
            "pooled = x",
            "return-value",
            'return tnp.einsum("{embed},{embed,classes}->{classes}", pooled',
        ),
    ],
    "moe.py": [
        (
            "a reduction over the wrong axis",
            '"{embed},{embed,expert}->{expert}", x, params.router), "expert")',
            '"{embed},{embed,expert}->{expert}", x, params.router), "embed")',
            "named-axis-missing",
            "probs = tnp.softmax",
        ),
        (
            "a sharding conflict",
            'tx.constrain(hidden, {"batch": "data", "expert": "model"})',
            'tx.constrain(hidden, {"batch": "model", "expert": "model"})',
            "axis-resource-conflict",
            "hidden = tx.constrain",
        ),
        (
            "an index by a misspelt axis",
            'share[{"expert": 0}]',
            'share[{"experts": 0}]',
            "named-axis-missing",
            'share[{"experts": 0}]',
        ),
    ],
    "gru.py": [
        (
            "gate weights whose sizes disagree (cfg.hidden vs cfg.hidden // 2)",
            'u_r = tx.random.normal(keys[4], {"hidden_in": cfg.hidden, "hidden": cfg.hidden})',
            'u_r = tx.random.normal(keys[4], {"hidden_in": cfg.hidden, "hidden": cfg.hidden // 2})',
            "named-axis-size",
            'w_h=tnp.stack([u_z, u_r, u_n], axis="gate")',
        ),
        (
            "a scan step that returns the input as the carry",
            "        return h, h\n",
            "        return x, h\n",
            "return-value",
            "return x, h",
        ),
        (
            "an einsum output axis no operand has",
            '"{hidden},{hidden,classes}->{classes}", encode(',
            '"{hidden},{hidden,classes}->{class}", encode(',
            "named-axis-missing",
            "logits = tnp.einsum",
        ),
    ],
}
KINDS = {kind for mistakes in PLANTED.values() for kind, *_ in mistakes}


def _check(*paths: Path, cache: Path) -> tuple[list[tuple[str, int, str]], str]:
    """``typed-xmap check --strict`` on ``paths``: its errors as (file name, line, code), and its output."""
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "typed-xmap"),
            "check",
            "--strict",
            "--cache-dir",
            str(cache),
            *map(str, paths),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    found = re.findall(r"^(?:.*/)?([\w.]+):(\d+): error: .*\[([\w-]+)\]$", result.stdout, flags=re.MULTILINE)
    return [(name, int(line), code) for name, line, code in found], result.stdout + result.stderr


def _planted(tmp_path: Path) -> tuple[list[Path], list[tuple[str, int, str]]]:
    """Each program with all its mistakes planted, and the errors expected: one per mistake, on its line."""
    paths, expected = [], []
    for name, mistakes in PLANTED.items():
        text = (MODELS / name).read_text()
        for _, old, new, _, _ in mistakes:
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        lines = text.splitlines()
        for _, _, _, code, marker in mistakes:
            (line,) = [i for i, line in enumerate(lines, 1) if marker in line]
            expected.append((name, line, code))
        path = tmp_path / "planted" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        paths.append(path)
    return paths, sorted(expected)


def test_the_planted_mistakes_cover_nine_kinds():
    assert len(KINDS) >= 9


def test_clean_programs_check_clean(mypy_cache):
    errors, output = _check(*sorted(MODELS.glob("[a-z]*.py")), cache=mypy_cache / "examples-strict")
    assert errors == [] and "Success: no issues found in 3 source files" in output, output


def test_each_planted_mistake_is_reported_on_its_line(tmp_path, mypy_cache):
    paths, expected = _planted(tmp_path)
    errors, output = _check(*paths, cache=mypy_cache / "examples-strict")
    assert sorted(errors) == expected, output


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_clean_programs_run():
    import jax
    import jax.numpy as jnp

    import typed_xmap as tx
    from tests.models import gru, moe, vit

    cfg = vit.ViTConfig()
    params = vit.init(cfg, jax.random.key(0))
    images = tx.named(jnp.ones((2, cfg.image, cfg.image, cfg.channels)), ["batch", "height", "width", "channel"])
    assert vit.classify(cfg, params, images).named_shape == {"batch": 2, "classes": cfg.classes}
    labels = tx.named(jax.nn.one_hot(jnp.array([1, 2]), cfg.classes), ["batch", "classes"])
    grads = jax.grad(lambda p: vit.loss(cfg, p, images, labels))(params)
    assert grads.w_patch.named_shape == params.w_patch.named_shape

    mcfg = moe.MoEConfig()
    with jax.set_mesh(jax.make_mesh((2, 4), ("data", "model"))):
        mparams, x = moe.place(
            moe.init(mcfg, jax.random.key(1)), tx.named(jnp.ones((8, mcfg.embed)), ["batch", "embed"])
        )
        assert jax.jit(lambda p, x: moe.moe_layer(mcfg, p, x))(mparams, x).named_shape == {"batch": 8, "embed": 8}
        gates = tx.positional(moe.top2_gates(mcfg, mparams, x), ["batch", "expert"])
        assert ((gates > 0).sum(1) == 2).all()
        assert jnp.allclose(gates.sum(1), 1.0)

    gcfg = gru.GRUConfig()
    gparams = gru.init(gcfg, jax.random.key(2))
    xs = tx.named(jnp.ones((5, 7, gcfg.embed)), ["batch", "time", "embed"])
    ys = tx.named(jax.nn.one_hot(jnp.arange(5) % gcfg.classes, gcfg.classes), ["batch", "classes"])
    per_example = gru.per_example_grads(gcfg, gparams, xs, ys)
    assert per_example.w_out.named_shape == {"batch": 5, "hidden": gcfg.hidden, "classes": gcfg.classes}
