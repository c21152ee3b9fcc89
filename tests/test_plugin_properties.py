"""The plugin never crashes mypy: random spec strings and random small programs built from the typed surface
give a report or a clean pass, never an internal error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from mypy import api

ROOT = Path(__file__).resolve().parents[1]

SPEC_CHARS = "ab_= 0123456789,.{}-><|?xyz\\'\"\t"
specs = st.text(alphabet=SPEC_CHARS, max_size=14)
names = st.sampled_from(["a", "b", "batch", "x", "a=2", "a=3", "b=4", "..."])
spec_words = st.lists(names, max_size=3).map(" ".join)


def _run(tmp_path: Path, cache: Path, source: str) -> tuple[str, int]:
    os.environ["TYPED_XMAP_PLUGIN_DEBUG"] = "1"  # a hook that fails surfaces here instead of degrading quietly
    config = tmp_path / "mypy.ini"
    if not config.exists():
        config.write_text(f"[mypy]\nplugins = typed_xmap.plugin\nmypy_path = {ROOT / 'stubs'}\n")
    program = tmp_path / "program.py"
    program.write_text(source)
    try:
        stdout, stderr, status = api.run(
            [
                "--config-file",
                str(config),
                "--cache-dir",
                str(cache),
                "--no-error-summary",
                "--show-traceback",
                str(program),
            ]
        )
    finally:
        del os.environ["TYPED_XMAP_PLUGIN_DEBUG"]
    return stdout + stderr, status


def _assert_no_crash(output: str, status: int) -> None:
    assert "INTERNAL ERROR" not in output and "Traceback" not in output, output
    assert status in (0, 1), output


HEADER = "import typed_xmap as tx\nimport typed_xmap.numpy as tnp\nfrom typed_xmap import NamedArray, f32\n"


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(named=specs, positional=st.one_of(st.none(), specs), einsum=specs, axis=specs)
def test_random_spec_strings_never_crash(tmp_path, mypy_cache, named, positional, einsum, axis):
    args = repr(named) if positional is None else f"{named!r}, {positional!r}"
    source = HEADER + (
        f"Alias = NamedArray[f32, {args}]\n"
        f"def f(x: NamedArray[f32, {args}], y: Alias) -> None:\n"
        f"    tnp.einsum({einsum!r}, x, y)\n"
        f"    tnp.sum(x, {axis!r})\n"
        f"    tnp.dot(x, y, axis={axis!r})\n"
        f"    tx.named(x, [{axis!r}, ...])\n"
        f"    tx.xmap(f, in_axes=[[{axis!r}, ...]], out_axes={{0: {axis!r}}}, axis_resources={{{axis!r}: 'x'}})\n"
    )
    _assert_no_crash(*_run(tmp_path, mypy_cache / "plugin-ini", source))


EXPRESSIONS = [
    "x + y",
    "x * 2.0",
    "1.0 - y",
    "x < y",
    "-x",
    "tnp.exp(x)",
    "tnp.add(x, y)",
    "tnp.where(x > 0, x, y)",
    "tnp.sum(x, {a})",
    "tnp.mean(y, ({a}, 0))",
    "tnp.softmax(x, {a})",
    "tnp.argmax(x, {a})",
    "tnp.einsum('{{{n}}},{{{n}}}->{{}}', x, y)",
    "tnp.dot(x, y, axis={a})",
    "tnp.dot(x, y)",
    "tx.named(x, [{a}, ...])",
    "tx.positional(x, [{a}])",
    "g(x, y)",
    "tnp.clip(x, 0, 1)",
    "tnp.max(x, keepdims=True)",
]


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    x=spec_words,
    y=spec_words,
    ret=spec_words,
    body=st.lists(
        st.tuples(st.sampled_from(EXPRESSIONS), st.sampled_from(["'a'", "'b'", "'batch'", "1", "-1"])),
        min_size=1,
        max_size=5,
    ),
    resources=st.sampled_from(["", ", axis_resources={'a': 'x', 'b': 'x'}", ", axis_resources={'a': ('x', 'y')}"]),
)
def test_random_programs_never_crash(tmp_path, mypy_cache, x, y, ret, body, resources):
    lines = [f"    v{i} = {expr.format(a=axis, n=axis.strip(chr(39)))}" for i, (expr, axis) in enumerate(body)]
    source = HEADER + (
        f"def g(x: NamedArray[f32, {x!r}], y: NamedArray[f32, {y!r}]) -> NamedArray[f32, {ret!r}]:\n"
        + "\n".join(lines)
        + f"\n    return v{len(lines) - 1}\n"
        f"m = tx.xmap(g, in_axes=(['a', ...], ['b', ...]), out_axes=['a', ...]{resources})\n"
    )
    _assert_no_crash(*_run(tmp_path, mypy_cache / "plugin-ini", source))
