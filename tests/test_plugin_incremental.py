"""Incremental mode gives what a cold run gives, and a changed annotation reaches its callers."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _plugin_debug(monkeypatch):
    """A plugin hook that fails raises (mypy INTERNAL ERROR) instead of degrading quietly."""
    monkeypatch.setenv("TYPED_XMAP_PLUGIN_DEBUG", "1")


LAYERS = textwrap.dedent(
    """
    import typed_xmap.numpy as tnp
    from typed_xmap import NamedArray, f32

    def project(x: NamedArray[f32, "batch in"], w: NamedArray[f32, "in out"]) -> NamedArray[f32, "batch out"]:
        return tnp.einsum("{in},{in,out}->{out}", x, w)
    """
)
CALLER = textwrap.dedent(
    """
    import typed_xmap.numpy as tnp
    from typed_xmap import NamedArray, f32
    from layers import project

    def loss(x: NamedArray[f32, "batch in"], w: NamedArray[f32, "in out"]) -> NamedArray[f32, ""]:
        return tnp.sum(tnp.sum(project(x, w), "out"), "batch")
    """
)


def _run(tmp_path: Path, *extra: str) -> str:
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nplugins = typed_xmap.plugin\nmypy_path = {ROOT / 'stubs'}\nstrict = True\n")
    stdout, stderr, _ = api.run(
        [
            "--config-file",
            str(config),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-error-summary",
            *extra,
            str(tmp_path / "layers.py"),
            str(tmp_path / "caller.py"),
        ]
    )
    return (stdout + stderr).replace(str(tmp_path), "")


def test_second_run_and_edits_match_cold_runs(tmp_path):
    (tmp_path / "layers.py").write_text(LAYERS)
    (tmp_path / "caller.py").write_text(CALLER)
    first = _run(tmp_path)
    assert first == ""
    assert _run(tmp_path) == first  # warm: replayed from the cache

    # change the callee's declared return: the caller, unchanged, must now report
    (tmp_path / "layers.py").write_text(
        LAYERS.replace('"batch out"]:', '"batch hidden"]:')
        .replace("{out}", "{hidden}")
        .replace('"in out"]) ->', '"in hidden"]) ->')
    )
    warm = _run(tmp_path)
    assert "tnp.sum(project(...), axis='out') reduces over axis 'out'" in warm
    assert "[named-axis-missing]" in warm and "caller.py:7" in warm
    cold = _run(tmp_path, "--no-incremental")
    assert warm == cold
    assert _run(tmp_path) == cold


def test_report_config_data_carries_version_and_options(tmp_path):
    from mypy.options import Options

    from typed_xmap import __version__
    from typed_xmap.plugin import TypedXmapPlugin

    config = tmp_path / "setup.cfg"
    config.write_text("[mypy]\n[typed_xmap]\nbody_checks = false\n")
    options = Options()
    options.config_file = str(config)
    data = TypedXmapPlugin(options).report_config_data(None)  # type: ignore[arg-type]
    assert data["typed_xmap"] == __version__ and data["body_checks"] is False and data["call_notes"] is True


def test_bad_plugin_option_is_a_clear_error(tmp_path):
    import pytest
    from mypy.options import Options

    from typed_xmap.plugin import TypedXmapPlugin

    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.typed_xmap]\nbody_check = true\n")
    options = Options()
    options.config_file = str(config)
    with pytest.raises(ValueError, match="unknown option 'body_check'; the options are annotated_calls"):
        TypedXmapPlugin(options)


SYMBOLIC_LAYERS = textwrap.dedent(
    """
    from dataclasses import dataclass
    import jax.numpy as jnp
    import typed_xmap.numpy as tnp

    @dataclass(frozen=True)
    class Config:
        mlp: int

    CFG = Config(mlp=64)
    W_UP = tnp.zeros({"embed": 8, "mlp": CFG.mlp}, jnp.float32)
    """
)
SYMBOLIC_CALLER = textwrap.dedent(
    """
    import jax.numpy as jnp
    import typed_xmap.numpy as tnp
    from layers import CFG, W_UP

    def down() -> None:
        w_down = tnp.zeros({"mlp": CFG.mlp // 2, "embed": 8}, jnp.float32)
        tnp.einsum("{embed,mlp},{mlp,embed}->{embed}", W_UP, w_down)
    """
)


def test_symbolic_sizes_survive_the_cache(tmp_path):
    """``W_UP``'s type, read back from mypy's cache when only the caller changes, still carries ``CFG.mlp``."""
    (tmp_path / "layers.py").write_text(SYMBOLIC_LAYERS)
    (tmp_path / "caller.py").write_text(SYMBOLIC_CALLER.replace("CFG.mlp // 2", "CFG.mlp"))
    assert _run(tmp_path) == ""
    (tmp_path / "caller.py").write_text(SYMBOLIC_CALLER)  # layers.py comes from the cache now
    warm = _run(tmp_path)
    assert "axis 'mlp' has size CFG.mlp in W_UP" in warm and "CFG.mlp // 2 in w_down" in warm, warm
    assert "caller.py:8" in warm and "[named-axis-size]" in warm
    assert warm == _run(tmp_path, "--no-incremental")


WHOLE_LAYERS = textwrap.dedent(
    """
    import typed_xmap as tx
    from typed_xmap import NamedArray, f32

    def gathered(x: NamedArray[f32, "batch@() embed"]) -> NamedArray[f32, "batch@() embed"]:
        return x

    def placed(x: NamedArray[f32, "batch embed"]) -> NamedArray[f32, "batch@() embed@model"]:
        return tx.constrain(x, {"embed": "model"})
    """
)
WHOLE_CALLER = textwrap.dedent(
    """
    from typed_xmap import NamedArray, f32
    from layers import gathered, placed

    def split(x: NamedArray[f32, "batch@data embed"]) -> None: ...

    def run(x: NamedArray[f32, "batch@data embed"], y: NamedArray[f32, "batch embed"]) -> None:
        gathered(x)
        split(placed(y))
    """
)


def test_known_whole_survives_the_cache(tmp_path):
    """``batch@()`` in ``layers``' signatures, read back from mypy's cache when only the caller changes, is still
    known whole: a split value passed to it, and its whole result passed where a split is declared, are errors."""
    (tmp_path / "layers.py").write_text(WHOLE_LAYERS)
    (tmp_path / "caller.py").write_text(WHOLE_CALLER.replace("split(placed(y))", "placed(y)"))
    cold_first = _run(tmp_path)
    assert "axis 'batch' is split over mesh axis 'data', but the annotation declares it whole ('batch@()')" in (
        cold_first
    )
    (tmp_path / "caller.py").write_text(WHOLE_CALLER)  # layers.py comes from the cache now
    warm = _run(tmp_path)
    assert "caller.py:8" in warm and "caller.py:9" in warm, warm
    assert "axis 'batch' is whole (replicated) here, but the annotation declares 'batch@data'" in warm, warm
    assert warm == _run(tmp_path, "--no-incremental")
