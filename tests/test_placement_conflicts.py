"""A resource conflict arising inside a computation is a static error on the operation's line, for every family
of operations that combines placed operands (issue 30's "Done when").

Each row is one tiny program line: ``conflict`` meets two different axes on one mesh axis (``data``) and must be
``[axis-resource-conflict]`` on that line; ``clean``, its twin, places the second axis on another mesh axis and
must be free of errors. All rows of a column are checked in one mypy run (one function each). ``RESOLVED`` rows
are updates and gathers whose two axes on one mesh axis JAX runs (no conflict): both their lines must be clean.

``tx.scan`` has no row: it combines no operands itself (its final carry is ``init``'s type, placement included,
and ``f``'s body is checked as its own function, where these rows apply); NamedArray has no ``@`` operator."""

from __future__ import annotations

from pathlib import Path
from textwrap import indent

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[1]

PRELUDE = """\
from typing import TypedDict
import jax
import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

EXPERTS_ON_DATA = {"batch": "data", "expert": "data"}
EXPERTS_ON_MODEL = {"batch": "data", "expert": "model"}


def per_example(x: NamedArray[f32, "embed"]) -> NamedArray[f32, "heads@data"]: ...


def per_example_model(x: NamedArray[f32, "embed"]) -> NamedArray[f32, "heads@model"]: ...

"""
PARAMETERS = (
    'a: NamedArray[f32, "batch@data heads seq"], b: NamedArray[f32, "batch heads@data seq"], '
    'c: NamedArray[f32, "batch heads@model seq"], q: NamedArray[f32, "heads@data"], r: NamedArray[f32, "heads@model"], '
    'w: NamedArray[f32, "seq heads@data"], v: NamedArray[f32, "seq heads@model"], '
    'img: NamedArray[f32, "batch@data height width chan"], k: NamedArray[f32, "kh=3 kw=3 chan out@data"], '
    'k2: NamedArray[f32, "kh=3 kw=3 chan out@model"], emb: NamedArray[f32, "vocab embed@data"], '
    'emb2: NamedArray[f32, "vocab embed@model"], t: NamedArray[i32, "batch@data seq"], '
    'x: NamedArray[f32, "batch@data embed"], logits: NamedArray[f32, "batch seq expert"], '
    'xs: NamedArray[f32, "batch seq embed"]'
)

ROWS: list[tuple[str, str, str]] = [
    ("operator", "a + q", "a + r"),
    ("operator, reflected", "2.0 * a * q", "2.0 * a * r"),
    ("comparison", "a < q", "a < r"),
    ("tnp elementwise", "tnp.maximum(a, q)", "tnp.maximum(a, r)"),
    ("tnp.where", "tnp.where(a > 0, a, q)", "tnp.where(a > 0, a, r)"),
    ("tnp.clip", "tnp.clip(a, q, 1.0)", "tnp.clip(a, r, 1.0)"),
    (
        "tnp.einsum",
        'tnp.einsum("{batch,heads,seq},{seq,heads}->{batch,heads}", a, w)',
        'tnp.einsum("{batch,heads,seq},{seq,heads}->{batch,heads}", a, v)',
    ),
    (
        "tnp.einsum, one operand placed",
        'tnp.einsum("{batch,embed},{heads}->{batch,embed,heads}", x, q)',
        'tnp.einsum("{batch,embed},{heads}->{batch,embed,heads}", x, r)',
    ),
    ("tnp.dot", 'tnp.dot(a, w, axis="seq")', 'tnp.dot(a, v, axis="seq")'),
    ("tnp.stack", 'tnp.stack([a, b], "layers")', 'tnp.stack([a, c], "layers")'),
    ("tnp.concatenate", 'tnp.concatenate((a, b), "seq")', 'tnp.concatenate((a, c), "seq")'),
    (
        "tnp.conv",
        'tnp.conv(img, k, {"height": "kh", "width": "kw"}, "chan")',
        'tnp.conv(img, k2, {"height": "kh", "width": "kw"}, "chan")',
    ),
    (
        "tnp.conv_transpose",
        'tnp.conv_transpose(img, k, {"height": "kh", "width": "kw"}, "chan")',
        'tnp.conv_transpose(img, k2, {"height": "kh", "width": "kw"}, "chan")',
    ),
    (
        "tx.moe_dispatch",
        "tx.moe_dispatch(xs, tx.moe_route(logits, 2, 4)[0], resources=EXPERTS_ON_DATA)",
        "tx.moe_dispatch(xs, tx.moe_route(logits, 2, 4)[0], resources=EXPERTS_ON_MODEL)",
    ),
    (
        "tx.vmap",
        'tx.vmap(per_example, axis="batch", axis_resources={"batch": "data"})',
        'tx.vmap(per_example_model, axis="batch", axis_resources={"batch": "data"})',
    ),
]
"""(family, a line making a conflict, its twin without one)."""

RESOLVED: list[tuple[str, str, str]] = [
    ("x.at[].set", 'a.at[{"seq": 0}].set(q)', 'a.at[{"seq": 0}].set(r)'),
    ("x.at[].add", 'a.at[{"seq": 0}].add(b[{"seq": 0}])', 'a.at[{"seq": 0}].add(c[{"seq": 0}])'),
    (
        "tnp.dynamic_update_slice",
        'tnp.dynamic_update_slice(a, b, {"seq": 0})',
        'tnp.dynamic_update_slice(a, c, {"seq": 0})',
    ),
    ("tnp.take", 'tnp.take(emb, t, "vocab")', 'tnp.take(emb2, t, "vocab")'),
    ("gather by a dict", 'emb[{"vocab": t}]', 'emb2[{"vocab": t}]'),
]
"""(family, a line where two axes land on ``data``, which JAX runs, and its twin): no conflict. An update's result
is placed as its operand (the update is moved); a gather's clash between a kept axis and the indices' is resolved
by JAX/XLA (the indices' placement wins on an Explicit mesh, the operand's on an Auto one). Both lines are clean:
they are checked in the clean column's run."""


def _program(column: int) -> tuple[str, dict[int, str]]:
    """The rows' lines of ``column``, each in a function of its own; the clean column (2) adds both lines of each
    ``RESOLVED`` row (by family: ``"<family>, clash"`` and ``"<family>, twin"``)."""
    lines = PRELUDE.splitlines()
    rows: dict[int, str] = {}
    entries = [(row[0], row[column]) for row in ROWS]
    if column == 2:
        entries += [(f"{row[0]}, {kind}", row[at]) for row in RESOLVED for kind, at in (("clash", 1), ("twin", 2))]
    for index, (family, line) in enumerate(entries):
        lines += ["", "", f"def row_{index}({PARAMETERS}) -> None:"]
        lines.append(indent(line, "    "))
        rows[len(lines)] = family
    return "\n".join(lines) + "\n", rows


def _errors(tmp_path: Path, column: int) -> tuple[dict[str, list[str]], list[str]]:
    """Each row's error lines (by family) and the lines outside any row."""
    source, rows = _program(column)
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nplugins = typed_xmap.plugin\nmypy_path = {ROOT / 'stubs'}\n")
    program = tmp_path / f"rows_{column}.py"
    program.write_text(source)
    out, err, _ = api.run(
        ["--config-file", str(config), "--no-incremental", "--no-error-summary", "--hide-error-context", str(program)]
    )
    found: dict[str, list[str]] = {family: [] for family in rows.values()}
    outside = []
    for line in (out + err).splitlines():
        parts = line.split(":", 2)
        number = int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None
        if number in rows:
            found[rows[number]].append(line)
        elif "empty-body" not in line:
            outside.append(line)
    return found, outside


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("conflicts")
    return _errors(tmp, 1), _errors(tmp, 2)


@pytest.mark.parametrize("family", [row[0] for row in ROWS])
def test_a_conflict_is_reported_on_the_operations_line(checked, family):
    (conflicts, outside), _ = checked
    assert not outside
    assert len(conflicts[family]) == 1, conflicts[family]
    assert conflicts[family][0].endswith("[axis-resource-conflict]")
    assert "mesh axis 'data'" in conflicts[family][0]


@pytest.mark.parametrize("family", [row[0] for row in ROWS])
def test_its_twin_without_the_conflict_is_clean(checked, family):
    _, (clean, outside) = checked
    assert not outside
    assert clean[family] == []


@pytest.mark.parametrize("family", [f"{row[0]}, {kind}" for row in RESOLVED for kind in ("clash", "twin")])
def test_an_update_or_gather_that_jax_runs_is_clean(checked, family):
    _, (clean, outside) = checked
    assert not outside
    assert family in clean
    assert clean[family] == []
