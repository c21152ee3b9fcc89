"""A ``*rest`` group goes through every operation: inside a function whose signature declares the group
(``x: NamedArray[f32, "*rest height width chan"]``), every operation of the table of operations
(``_algebra/_operations.py``) and the ``tx`` functions with sizes keep the group and the axes they name, as at run
time, where the group stands for the caller's other axes.

One mypy run checks every operation (the calls of tests/test_plugin_names_first.py, their arguments literal), each
three times: on ``x`` with a ``batch`` axis; on ``x`` with the group ``*rest`` in its place, whose result must have
the same axis names, ``*rest`` for ``batch``; and, where the call names ``height``, on the grouped ``x`` with the call
naming ``depth`` instead, an axis ``x`` does not show but its group may hold: never an error there (the result's
named shape is unknown, or known where the group's axes do not matter), but where the change makes the call wrong
whatever the group holds (``WRONG_WITH_DEPTH``).

A group hides an error only from its own operand: every operation that takes two arrays (``BLAME``, one case per
row of the table whose call above takes two, and the ``tx`` and method calls that do) is written twice, with an
operand that has a group next to one that has none: an axis missing from the operand without a group, or one
every operand has (a clash), is an error (``[named-axis-missing]``) whatever the group holds; an axis missing only
from the operand with the group is not.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mypy import api
from test_plugin_names_first import HEADER, MARK, TX_CALLS, _names, calls_of

from typed_xmap._algebra import TNP_OPERATIONS

ROOT = Path(__file__).resolve().parents[1]
PLAIN = 'x: NamedArray[f32, "batch=2 height=8 width=8 chan=3"]'
GROUPED = 'x: NamedArray[f32, "*rest height=8 width=8 chan=3"]'
PARAMETERS = (
    "cfg: Config, key: jax.Array, {x}, "
    'kernel: NamedArray[f32, "kh=3 kw=3 chan=3 out=4"], t: NamedArray[i32, "tb=2 seq=5"]'
)
UNKNOWN_WITH_GROUP = {'tx.broadcast_to(x, {"batch"': "the target lists the axes the group stands for"}
"""Calls whose result is rightly unknown on a grouped ``x`` (and why): the call names the group's own axes."""
WRONG_WITH_DEPTH = {'tx.broadcast_to(x, {"batch"': "x's own 'height' is missing from the target"}
"""Calls that ``depth`` for ``height`` makes wrong whatever the group holds (and why): an error, never hidden."""

BLAME: dict[str, tuple[str, str, str]] = {
    "concatenate": (
        'a: NamedArray[f32, "*rest time chan"], b: NamedArray[f32, "batch chan"], '
        'c: NamedArray[f32, "batch time chan"]',
        'tnp.concatenate([a, b], "time")',  # b lacks 'time', and has no group
        'tnp.concatenate([c, a], "time")',  # a's group may hold 'batch'
    ),
    "stack": (
        'a: NamedArray[f32, "*rest chan"], b: NamedArray[f32, "layer chan"]',
        'tnp.stack([a, b], "layer")',  # b has 'layer' already, whatever a's group holds
        'tnp.stack([a, b], "depth")',  # a's group may hold 'layer'
    ),
    "einsum": (
        'x: NamedArray[f32, "*rest chan"], k: NamedArray[f32, "kh out"]',
        'tnp.einsum("{chan},{chan,out}->{out}", x, k)',  # k lacks 'chan'
        'tnp.einsum("{kh},{kh,out}->{out}", x, k)',  # x's group may hold 'kh'
    ),
    "dot": (
        'x: NamedArray[f32, "*rest chan"], k: NamedArray[f32, "kh out"]',
        'tnp.dot(x, k, axis="chan")',
        'tnp.dot(x, k, axis="kh")',
    ),
    "take": (
        'x: NamedArray[f32, "height chan"], t: NamedArray[i32, "*rest seq"]',
        'tnp.take(x, t, "depth")',  # x lacks 'depth' and has no group: t's group does not hold x's axes
        'tnp.take(x, t, "height")',
    ),
    "dynamic_update_slice": (
        'x: NamedArray[f32, "height chan"], u: NamedArray[f32, "*rest height depth"]',
        'tnp.dynamic_update_slice(x, u, {"height": 1})',  # u's 'depth' is not x's
        'tnp.dynamic_update_slice(u, x, {"height": 1})',  # u's group may hold 'chan'
    ),
    "conv": (
        'x: NamedArray[f32, "*rest height width chan"], k: NamedArray[f32, "kh kw cin out"]',
        'tnp.conv(x, k, {"height": "kh", "width": "kw"}, "chan")',  # k lacks 'chan'
        'tnp.conv(x, k, {"height": "kh", "width": "kw"}, "cin")',  # x's group may hold 'cin'
    ),
    "conv_transpose": (
        'x: NamedArray[f32, "*rest height width chan"], k: NamedArray[f32, "kh kw cin out"]',
        'tnp.conv_transpose(x, k, {"height": "kh", "width": "kw"}, "chan")',
        'tnp.conv_transpose(x, k, {"height": "kh", "width": "kw"}, "cin")',
    ),
    "segment_sum": (
        'x: NamedArray[f32, "*rest seq"], ids: NamedArray[i32, "tok"]',
        'tnp.segment_sum(x, ids, 4, "seq", "seg")',  # ids lacks 'seq', and has no group
        'tnp.segment_sum(x, ids, 4, "tok", "seg")',  # ids carries 'tok' only: x's group may hold it
    ),
    "at.set": (
        'x: NamedArray[f32, "time chan"], v: NamedArray[f32, "*rest tyme"]',
        'x.at[{"time": 0}].set(v)',  # x lacks v's 'tyme', and has no group
        'v.at[{"tyme": 0}].set(x)',  # v's group may hold 'chan'
    ),
    "rename": (
        'x: NamedArray[f32, "*rest a b"], y: NamedArray[f32, "*rest a c"]',
        'tx.rename(x, {"a": "b"})',  # x has 'b': a clash whatever the group holds
        'tx.rename(y, {"depth": "b"})',  # the group may hold 'depth'
    ),
    "rename two": (
        'x: NamedArray[f32, "*rest a c"], y: NamedArray[f32, "*rest a"]',
        'tx.rename(x, {"a": "b", "c": "b"})',  # two axes to one name
        'tx.rename(y, {"a": "b", "depth": "c"})',
    ),
    "concatenate size clash": (
        'a: NamedArray[f32, "*rest chan=3"], b: NamedArray[f32, "time=5 chan=4"], c: NamedArray[f32, "*rest chan=4"]',
        'tnp.concatenate([a, b], "time")',  # 'chan' is 3 in a, 4 in b: a clash whatever a's group holds
        'tnp.concatenate([c, b], "time")',  # c's group may hold 'time'
    ),
    "stack size clash": (
        'a: NamedArray[f32, "*rest chan=3"], b: NamedArray[f32, "chan=4"], c: NamedArray[f32, "*rest chan=4"]',
        'tnp.stack([b, a], "layer")',  # 'chan' is 4 in b, 3 in a, and a's group may be empty
        'tnp.stack([b, c], "layer")',  # c's group may be empty
    ),
}
"""(parameters, a call wrong whatever the group holds, a call right where the group holds what it needs), by
operation of the table that takes two arrays (and ``tx`` and method calls that do)."""
CODES = {"concatenate size clash": "named-axis-size", "stack size clash": "named-axis-size"}
"""The error code of the wrong call where it is not ``named-axis-missing``."""
ARRAY = re.compile(r"\b(?:x|kernel|t)\b(?! >)|tnp\.zeros\(")
"""An array operand in a call of ``calls_of`` (``x > 0``, a condition, aside)."""


def _program(calls: list[str]) -> tuple[str, list[tuple[int, str, str]]]:
    """A program with one function per call and variant; its cases: (first line of the function, variant, call)."""
    program, cases = HEADER, []
    for call in calls:
        variants = [("plain", PLAIN, call), ("grouped", GROUPED, call)]
        if '"height"' in call:
            variants.append(("hidden", GROUPED, call.replace('"height"', '"depth"')))
        for n, (how, x, written) in enumerate(variants):
            cases.append((program.count("\n") + 1, how, written))
            program += f"def f{len(cases)}_{n}({PARAMETERS.format(x=x)}) -> None:\n    reveal_type({written})\n\n"
    return program, cases


def _check(tmp_path: Path, cache: Path, program: str) -> list[str]:
    (tmp_path / "mypy.ini").write_text(f"[mypy]\nplugins = typed_xmap.plugin\nmypy_path = {ROOT / 'stubs'}\n")
    (tmp_path / "program.py").write_text(program)
    os.environ["TYPED_XMAP_PLUGIN_DEBUG"] = "1"
    try:
        config = str(tmp_path / "mypy.ini")
        out, err, _ = api.run(["--config-file", config, "--cache-dir", str(cache), str(tmp_path / "program.py")])
    finally:
        del os.environ["TYPED_XMAP_PLUGIN_DEBUG"]
    assert "Traceback" not in out + err, out + err
    return out.splitlines()


def test_every_operation_keeps_a_group_and_the_axes_it_names(tmp_path, mypy_cache):
    calls = [MARK.sub(lambda m: m.group(1), call) for name in TNP_OPERATIONS for call in calls_of(name)]
    calls += [MARK.sub(lambda m: m.group(1), call) for call in TX_CALLS]
    program, cases = _program(calls)
    lines = _check(tmp_path, mypy_cache / "plugin-ini", program)
    reveals, errors = {}, {}
    for line in lines:
        hit = re.match(r".*program\.py:(\d+): (note|error): (.*)$", line)
        if hit and hit.group(2) == "note" and hit.group(3).startswith("Revealed type is"):
            reveals[int(hit.group(1))] = hit.group(3).removeprefix("Revealed type is ").strip('"')
        elif hit and hit.group(2) == "error":
            errors.setdefault(int(hit.group(1)), []).append(hit.group(3))
    failures, plain = [], None
    for first, how, call in cases:
        revealed = reveals.get(first + 1, "?")
        wrong = errors.get(first + 1)
        if how == "plain":
            plain = _names(revealed)
            if plain is None or wrong:
                failures.append(f"{call}: the call on a value without a group is not known ({revealed}; {wrong})")
        elif how == "hidden" and any(call.startswith(prefix) for prefix in WRONG_WITH_DEPTH):
            if not wrong:
                failures.append(f"{call} (hidden): no error, but the call is wrong whatever the group holds")
        elif wrong:
            failures.append(f"{call} ({how}): an error where the group may hold the axis: {wrong}")
        elif how == "grouped" and plain is not None:
            expected = [frozenset("*rest" if n == "batch" else n for n in names) for names in plain]
            if any(call.startswith(prefix) for prefix in UNKNOWN_WITH_GROUP):
                expected = None
            if _names(revealed) != expected:
                failures.append(f"{call} (grouped): {revealed}, expected the names {expected}")
    assert not failures, "\n".join(failures)


def test_a_group_hides_an_error_only_from_its_own_operand(tmp_path, mypy_cache):
    two = {name for name in TNP_OPERATIONS for call in calls_of(name) if len(ARRAY.findall(call)) > 1}
    assert not two - set(BLAME), f"operations taking two arrays without a case in BLAME: {sorted(two - set(BLAME))}"
    program, cases = "from typing import Any\n" + HEADER, []
    for name, (parameters, wrong, right) in BLAME.items():
        for how, call in (("wrong", wrong), ("right", right)):
            cases.append((program.count("\n") + 2, name, how, call))
            program += f"def f{len(cases)}({parameters}) -> None:\n    reveal_type({call})\n\n"
    errors: dict[int, list[str]] = {}
    for line in _check(tmp_path, mypy_cache / "plugin-ini", program):
        hit = re.match(r".*program\.py:(\d+): error: (.*)$", line)
        if hit:
            errors.setdefault(int(hit.group(1)), []).append(hit.group(2))
    failures = []
    for line, name, how, call in cases:
        found = errors.get(line, [])
        code = CODES.get(name, "named-axis-missing")
        if how == "wrong" and not any(e.endswith(f"[{code}]") for e in found):
            failures.append(f"{name}: {call} is wrong whatever the group holds, but no {code}: {found}")
        if how == "right" and found:
            failures.append(f"{name}: {call} may be right (the group may hold the axis), but: {found}")
    assert not failures, "\n".join(failures)
