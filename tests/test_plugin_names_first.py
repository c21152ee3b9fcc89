"""Names first, for every argument: every operation of the table of operations (``_algebra/_operations.py``)
keeps its axis names when an argument other than the names (a size, window, stride, padding, dilation, ``k``,
fill value, scalar operand or dtype) is not a literal.

One mypy run checks every operation. Each operation has a call (``CALLS``; the test fails for a row of the table
without one) whose arguments that are not names are marked ``<<...>>``. For every marked argument the program
holds the call four times: all literal; that argument a value only known at run time (a config's field); that
argument a module-level ``Final`` constant; and a local bound once. The three must have the literal call's axis
names, and the two constants its whole type, sizes included (a layout held in a constant is the literal).
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from mypy import api

from typed_xmap._algebra import TNP_OPERATIONS, OpKind

ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"<<(.+?)>>")

_CALL: dict[OpKind, str] = {
    OpKind.REDUCTION: 'tnp.{name}(x, "chan", keepdims=<<False>>)',
    OpKind.INDEX_REDUCTION: 'tnp.{name}(x, "chan", keepdims=<<False>>)',
    OpKind.SHAPE_KEEPING: 'tnp.{name}(x, "chan")',
    OpKind.SELECTION: 'tnp.{name}(x, "chan")',
}
"""The call of every operation of a kind whose non-name arguments are the same."""

CALLS: dict[str, list[str]] = {
    "einsum": ['tnp.einsum("{chan},{chan,out}->{out}", x, kernel, preferred_element_type=<<jnp.float32>>)'],
    "dot": ['tnp.dot(x, kernel, axis="chan", preferred_element_type=<<jnp.float32>>)'],
    "take": ['tnp.take(x, t, "height")'],
    "dynamic_slice": ['tnp.dynamic_slice(x, {"height": <<1>>}, {"height": <<4>>})'],
    "dynamic_update_slice": ['tnp.dynamic_update_slice(x, tnp.zeros({"height": 2}), {"height": <<1>>})'],
    "stack": ['tnp.stack([x, x], "layer")'],
    "concatenate": ['tnp.concatenate([x, x], "height")'],
    "split": ['tnp.split(x, "height", <<2>>)', 'tnp.split(x, "height", [<<3>>, 5])'],
    "roll": ['tnp.roll(x, <<1>>, "height")'],
    "pad": ['tnp.pad(x, {"height": (<<1>>, 2)}, value=<<0.0>>)', 'tnp.pad(x, {"height": <<(1, 2)>>})'],
    "cumsum": ['tnp.cumsum(x, "height", dtype=<<jnp.float32>>)'],
    "cumprod": ['tnp.cumprod(x, "height", dtype=<<jnp.float32>>)'],
    "zeros": ['tnp.zeros({"a": <<2>>, "b": 3}, <<jnp.float32>>)'],
    "ones": ['tnp.ones({"a": <<2>>, "b": 3}, <<jnp.float32>>)'],
    "full": ['tnp.full({"a": <<2>>}, <<1.0>>, <<jnp.float32>>)'],
    "zeros_like": ['tnp.zeros_like(x, <<jnp.float32>>, new_axes={"node": <<5>>})'],
    "ones_like": ['tnp.ones_like(x, <<jnp.float32>>, new_axes={"node": <<5>>})'],
    "full_like": ['tnp.full_like(x, <<0.0>>, <<jnp.float32>>, new_axes={"node": <<5>>})'],
    "arange": ['tnp.arange("i", <<1>>, <<9>>, <<2>>, dtype=<<jnp.int32>>)'],
    "one_hot": ['tnp.one_hot(t, "vocab", <<10>>, dtype=<<jnp.float32>>)'],
    "causal_mask": ['tnp.causal_mask("q", "k", <<4>>)'],
    "conv": [
        'tnp.conv(x, kernel, {"height": "kh", "width": "kw"}, "chan", strides=<<2>>, padding=<<"SAME">>, '
        "dilation=<<1>>, feature_group_count=<<1>>, preferred_element_type=<<jnp.float32>>)",
        'tnp.conv(x, kernel, {"height": "kh", "width": "kw"}, "chan", strides={"height": <<2>>}, '
        'padding={"width": (<<1>>, 1)}, dilation={"width": <<2>>})',
    ],
    "conv_transpose": [
        'tnp.conv_transpose(x, kernel, {"height": "kh", "width": "kw"}, "chan", strides=<<2>>, padding=<<"SAME">>, '
        "dilation=<<1>>)",
        'tnp.conv_transpose(x, kernel, {"height": "kh", "width": "kw"}, "chan", strides={"width": <<2>>})',
    ],
    "max_pool": [
        'tnp.max_pool(x, {"height": <<2>>, "width": 2}, <<2>>, <<"VALID">>)',
        'tnp.max_pool(x, {"height": 2}, {"height": <<1>>})',
    ],
    "avg_pool": ['tnp.avg_pool(x, {"height": <<2>>, "width": 2}, <<2>>, <<"SAME">>)'],
    "top_k": ['tnp.top_k(x, <<2>>, "chan", "best")'],
    "where": ["tnp.where(x > 0, x, <<0.0>>)"],
    "clip": ["tnp.clip(x, <<0.0>>, <<1.0>>)"],
}
"""The call of each other operation."""

TX_CALLS = [
    'tx.random.randint(key, {"a": <<2>>}, <<0>>, <<10>>, dtype=<<jnp.int32>>)',
    'tx.random.normal(key, {"a": <<2>>}, <<jnp.float32>>)',
    'tx.random.uniform(key, {"a": <<2>>}, <<jnp.float32>>)',
    'tx.random.bernoulli(key, <<0.5>>, {"a": <<2>>})',
    'tx.split_axis(x, "chan", {"c1": <<1>>, "c3": 3})',
    'tx.broadcast_to(x, {"batch": <<2>>, "height": 8, "width": 8, "chan": 3, "new": 2})',
]
"""``tx`` functions with sizes and dtypes, held to the same rule."""

HEADER = """\
from dataclasses import dataclass
from typing import Any, Final
import jax
import jax.numpy as jnp
import typed_xmap as tx
import typed_xmap.numpy as tnp
from typed_xmap import NamedArray, f32, i32

@dataclass(frozen=True)
class Config:
    i: int
    f: float
    s: str
    b: bool
    pair: tuple[int, int]
    other: Any

"""
PARAMETERS = (
    'cfg: Config, key: jax.Array, x: NamedArray[f32, "batch=2 height=8 width=8 chan=3"], '
    'kernel: NamedArray[f32, "kh=3 kw=3 chan=3 out=4"], t: NamedArray[i32, "batch=2 seq=5"]'
)


def _elementwise(name: str) -> list[str]:
    arrays = TNP_OPERATIONS[name].arrays
    return [f"tnp.{name}(x)"] if arrays == 1 else [f"tnp.{name}(x, <<2.0>>)", f"tnp.{name}(<<2.0>>, x)"]


def calls_of(name: str) -> list[str]:
    """The calls that hold operation ``name`` (a row of the table) to the rule."""
    kind = TNP_OPERATIONS[name].kind
    if name in CALLS:
        return CALLS[name]
    if kind is OpKind.ELEMENTWISE:
        return _elementwise(name)
    return [_CALL[kind].format(name=name)]


def _field(literal: str) -> str:
    """A config field of the literal's type: a value only known at run time."""
    value = ast.literal_eval(literal) if not literal.startswith("jnp.") else None
    kind = {bool: "b", int: "i", float: "f", str: "s", tuple: "pair"}.get(type(value), "other")
    return f"cfg.{kind}"


def _variants(call: str) -> list[tuple[str, str, str]]:
    """(the literal call, one marked argument given another way, how) for every marked argument."""
    marks = [m.start() for m in MARK.finditer(call)]
    literal = MARK.sub(lambda m: m.group(1), call)
    found = []
    for mark, written in zip(marks, MARK.findall(call), strict=True):

        def replace(by: str, at: int = mark) -> str:
            return MARK.sub(lambda m: by if m.start() == at else m.group(1), call)

        found.append((literal, replace(_field(written)), "runtime"))
        found.append((literal, replace("C{n}"), f"constant:{written}"))
        found.append((literal, replace("v"), f"local:{written}"))
    return found or [(literal, literal, "literal")]


def _program(calls: list[str]) -> tuple[str, list[tuple[str, str, str]]]:
    """A program revealing every call's variants, one function each; its cases by reveal line."""
    constants, functions, cases = [], [], []
    lines = HEADER.count("\n")
    for call in calls:
        for n, (literal, written, how) in enumerate(_variants(call)):
            body, variant = [], written
            if how.startswith("constant:"):
                constants.append(f"C{len(constants)}: Final = {how.split(':', 1)[1]}")
                variant = written.replace("C{n}", f"C{len(constants) - 1}")
            if how.startswith("local:"):
                body.append(f"    v = {how.split(':', 1)[1]}")
            body += [f"    reveal_type({literal})", f"    reveal_type({variant})"]
            functions.append((f"def f{len(functions)}_{n}({PARAMETERS}) -> None:", body, (literal, variant, how)))
    program = HEADER + "\n".join(constants) + "\n\n"
    lines = program.count("\n")
    for header, body, case in functions:
        program += header + "\n" + "\n".join(body) + "\n\n"
        cases.append((lines + len(body) - 1 + 1, case))  # the line of the first reveal (1-based)
        lines += len(body) + 2
    return program, cases


def _reveals(tmp_path: Path, cache: Path, program: str) -> dict[int, str]:
    (tmp_path / "mypy.ini").write_text(f"[mypy]\nplugins = typed_xmap.plugin\nmypy_path = {ROOT / 'stubs'}\n")
    (tmp_path / "program.py").write_text(program)
    os.environ["TYPED_XMAP_PLUGIN_DEBUG"] = "1"
    try:
        out, err, _ = api.run(
            [
                "--config-file",
                str(tmp_path / "mypy.ini"),
                "--cache-dir",
                str(cache),
                str(tmp_path / "program.py"),
            ]
        )
    finally:
        del os.environ["TYPED_XMAP_PLUGIN_DEBUG"]
    assert "Traceback" not in out + err, out + err
    found = {}
    for line in out.splitlines():
        hit = re.match(r".*program\.py:(\d+): note: Revealed type is \"(.*)\"$", line)
        if hit:
            found[int(hit.group(1))] = hit.group(2)
    return found


def _names(revealed: str) -> list[frozenset[str]] | None:
    """The axis names of each NamedArray in a revealed type; ``None`` when one's named shape is unknown."""
    arrays = re.findall(r'NamedArray\[[^,\]]+, "([^"]*)"', revealed)
    if not arrays or revealed.count("NamedArray") != len(arrays):
        return None
    return [frozenset(token.split("=")[0] for token in spec.split()) for spec in arrays]


def test_every_operation_keeps_its_names_whatever_its_other_arguments(tmp_path, mypy_cache):
    missing = [n for n, op in TNP_OPERATIONS.items() if n not in CALLS and op.kind not in (OpKind.ELEMENTWISE, *_CALL)]
    assert not missing, f"operations of the table without a call in CALLS: {missing}"
    calls = [call for name in TNP_OPERATIONS for call in calls_of(name)] + TX_CALLS
    program, cases = _program(calls)
    reveals = _reveals(tmp_path, mypy_cache / "plugin-ini", program)
    failures = []
    for line, (literal, variant, how) in cases:
        expected, got = reveals.get(line, "?"), reveals.get(line + 1, "?")
        if _names(expected) is None:
            failures.append(f"{literal}: the literal call has no known named shape ({expected})")
        elif _names(got) != _names(expected) or (how.startswith(("constant:", "local:")) and got != expected):
            failures.append(f"{variant} ({how}): {got}, but the literal call is {expected}")
    assert not failures, "\n".join(failures)
